//! More registered scalar functions (series, compression, conversions, …), kept apart from
//! [`crate::registry::FUNCTIONS`] so both lists can grow independently. Same contract as
//! `registry.rs`; [`crate::registry::lookup`] searches both. Keep sorted by name.

use crate::registry::{ArgKind, KqlFunction, ReturnRule};
use crate::{
    bits, bytes as by, compress as cz, conversions as cv, distributions as dist, ipv6 as v6, random, regexes as rx,
    series as se, series_analysis as sa, series_decompose as sd, series_poly as sp, units as un,
};
use trawl_common::KqlType;

use crate::registry::{BOOL, DYNAMIC, GUID, LONG, REAL, STRING, registry_entry as f};

pub static FUNCTIONS_MORE: &[KqlFunction] = &[
    f!(
        "__range_count",
        [Any, Any, Any],
        3,
        false,
        LONG,
        crate::ranges::range_count
    ),
    f!(
        "__series_decompose",
        [Dynamic, Long, String, Long, Real],
        1,
        false,
        DYNAMIC,
        sd::series_decompose_bag
    ),
    f!(
        "__series_decompose_anomalies",
        [Dynamic, Real, Long, String, Long, String, Real],
        1,
        false,
        DYNAMIC,
        sd::series_decompose_anomalies_bag
    ),
    f!(
        "__series_fft",
        [Dynamic, Dynamic],
        1,
        false,
        DYNAMIC,
        crate::series_fft::series_fft_bag
    ),
    f!(
        "__series_fit_poly",
        [Dynamic, Dynamic, Long],
        1,
        false,
        DYNAMIC,
        sp::series_fit_poly_bag
    ),
    f!(
        "__series_ifft",
        [Dynamic, Dynamic],
        1,
        false,
        DYNAMIC,
        crate::series_fft::series_ifft_bag
    ),
    f!(
        "__series_periods_detect",
        [Dynamic, Real, Real, Long],
        4,
        false,
        DYNAMIC,
        sd::series_periods_detect_bag
    ),
    f!(
        "__series_periods_validate",
        [Dynamic, Real],
        2,
        true,
        DYNAMIC,
        sd::series_periods_validate_bag
    ),
    f!("around", [Any, Any, Any], 3, false, BOOL, cv::around),
    f!("beta_cdf", [Real, Real, Real], 3, false, REAL, dist::beta_cdf),
    f!("beta_inv", [Real, Real, Real], 3, false, REAL, dist::beta_inv),
    f!("beta_pdf", [Real, Real, Real], 3, false, REAL, dist::beta_pdf),
    f!("binary_and", [Long, Long], 2, false, LONG, bits::binary_and),
    f!("binary_not", [Long], 1, false, LONG, bits::binary_not),
    f!("binary_or", [Long, Long], 2, false, LONG, bits::binary_or),
    f!(
        "binary_shift_left",
        [Long, Long],
        2,
        false,
        LONG,
        bits::binary_shift_left
    ),
    f!(
        "binary_shift_right",
        [Long, Long],
        2,
        false,
        LONG,
        bits::binary_shift_right
    ),
    f!("binary_xor", [Long, Long], 2, false, LONG, bits::binary_xor),
    f!(
        "convert_angle",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_angle
    ),
    f!(
        "convert_energy",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_energy
    ),
    f!(
        "convert_force",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_force
    ),
    f!(
        "convert_length",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_length
    ),
    f!("convert_mass", [Real, String, String], 3, false, REAL, un::convert_mass),
    f!(
        "convert_speed",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_speed
    ),
    f!(
        "convert_temperature",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_temperature
    ),
    f!(
        "convert_volume",
        [Real, String, String],
        3,
        false,
        REAL,
        un::convert_volume
    ),
    f!(
        "datetime_list_timezones",
        [],
        0,
        false,
        DYNAMIC,
        crate::datetime::datetime_list_timezones
    ),
    KqlFunction {
        name: "estimate_data_size",
        params: &[ArgKind::Any],
        min_args: 1,
        variadic: true,
        returns: LONG,
        udf: cv::EstimateDataSizeUdf::udf,
    },
    f!(
        "extract_json",
        [String, String],
        2,
        false,
        STRING,
        crate::bags::extract_json
    ),
    f!(
        "extract_log_template",
        [String],
        1,
        false,
        STRING,
        crate::log_templates::extract_log_template
    ),
    f!("format_bytes", [Real, Long, String], 1, false, STRING, by::format_bytes),
    f!(
        "gzip_compress_to_base64_string",
        [String],
        1,
        false,
        STRING,
        cz::gzip_compress_to_base64_string
    ),
    f!(
        "gzip_decompress_from_base64_string",
        [String],
        1,
        false,
        STRING,
        cz::gzip_decompress_from_base64_string
    ),
    f!(
        "has_any_index",
        [String, Dynamic],
        2,
        false,
        LONG,
        crate::strings_more::has_any_index
    ),
    f!("hash_combine", [Long, Long], 2, true, LONG, cv::hash_combine),
    f!("hash_many", [Any], 1, true, LONG, cv::hash_many),
    f!("hash_sha1", [String], 1, false, STRING, crate::encoding::hash_sha1),
    f!(
        "indexof_regex",
        [String, String, Long, Long, Long],
        2,
        false,
        LONG,
        rx::indexof_regex
    ),
    f!(
        "ipv4_netmask_suffix",
        [String],
        1,
        false,
        LONG,
        crate::ip::ipv4_netmask_suffix
    ),
    f!(
        "ipv4_range_to_cidr_list",
        [String, String],
        2,
        false,
        DYNAMIC,
        v6::ipv4_range_to_cidr_list
    ),
    f!("ipv6_compare", [String, String, Long], 2, false, LONG, v6::ipv6_compare),
    f!(
        "ipv6_is_in_any_range",
        [String, Dynamic],
        2,
        true,
        BOOL,
        v6::ipv6_is_in_any_range
    ),
    f!(
        "ipv6_is_in_range",
        [String, String],
        2,
        false,
        BOOL,
        v6::ipv6_is_in_range
    ),
    f!(
        "ipv6_is_match",
        [String, String, Long],
        2,
        false,
        BOOL,
        v6::ipv6_is_match
    ),
    f!("isutf8", [String], 1, false, BOOL, crate::strings_more::isutf8),
    f!(
        "log_template_hash",
        [String],
        1,
        false,
        LONG,
        crate::log_templates::log_template_hash
    ),
    f!(
        "log_template_regex",
        [String],
        1,
        false,
        STRING,
        crate::log_templates::log_template_regex
    ),
    KqlFunction {
        name: "new_guid",
        params: &[],
        min_args: 0,
        variadic: false,
        returns: GUID,
        udf: || crate::rowfn::RowUdf::volatile_udf("kql_new_guid", GUID, random::new_guid),
    },
    f!(
        "parse_command_line",
        [String, String],
        2,
        false,
        DYNAMIC,
        crate::strings_more::parse_command_line
    ),
    f!("parse_csv", [String], 1, false, DYNAMIC, cz::parse_csv),
    f!("parse_ipv6", [String], 1, false, STRING, v6::parse_ipv6),
    f!("parse_ipv6_mask", [String, Long], 2, false, STRING, v6::parse_ipv6_mask),
    f!("parse_path", [String], 1, false, DYNAMIC, cz::parse_path),
    f!("parse_xml", [String], 1, false, DYNAMIC, crate::xml::parse_xml),
    f!(
        "percentrank_tdigest",
        [Dynamic, Any],
        2,
        false,
        REAL,
        crate::tdigest::percentrank_tdigest
    ),
    f!(
        "punycode_domain_from_string",
        [String],
        1,
        false,
        STRING,
        cz::punycode_domain_from_string
    ),
    f!(
        "punycode_domain_to_string",
        [String],
        1,
        false,
        STRING,
        cz::punycode_domain_to_string
    ),
    f!(
        "punycode_from_string",
        [String],
        1,
        false,
        STRING,
        cz::punycode_from_string
    ),
    f!("punycode_to_string", [String], 1, false, STRING, cz::punycode_to_string),
    KqlFunction {
        name: "rand",
        params: &[ArgKind::Long],
        min_args: 0,
        variadic: false,
        returns: ReturnRule::Fixed(KqlType::Real),
        udf: || crate::rowfn::RowUdf::volatile_udf("kql_rand", ReturnRule::Fixed(KqlType::Real), random::rand),
    },
    f!("range", [Any, Any, Any], 2, false, DYNAMIC, se::range),
    f!("regex_quote", [String], 1, false, STRING, rx::regex_quote),
    f!("repeat", [Dynamic, Long], 2, false, DYNAMIC, crate::arrays::repeat),
    f!("series_abs", [Dynamic], 1, false, DYNAMIC, se::series_abs),
    f!("series_acos", [Dynamic], 1, false, DYNAMIC, se::series_acos),
    f!("series_add", [Dynamic, Dynamic], 2, false, DYNAMIC, se::series_add),
    f!("series_asin", [Dynamic], 1, false, DYNAMIC, se::series_asin),
    f!("series_atan", [Dynamic], 1, false, DYNAMIC, se::series_atan),
    f!("series_avg", [Dynamic], 1, false, REAL, se::series_avg),
    f!("series_ceiling", [Dynamic], 1, false, DYNAMIC, se::series_ceiling),
    f!("series_cos", [Dynamic], 1, false, DYNAMIC, se::series_cos),
    f!(
        "series_cosine_similarity",
        [Dynamic, Dynamic, Real, Real],
        2,
        false,
        REAL,
        se::series_cosine_similarity
    ),
    f!(
        "series_decompose_forecast",
        [Dynamic, Long, Long, String, Real],
        2,
        false,
        DYNAMIC,
        sd::series_decompose_forecast
    ),
    f!(
        "series_divide",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_divide
    ),
    f!(
        "series_dot_product",
        [Dynamic, Dynamic],
        2,
        false,
        REAL,
        se::series_dot_product
    ),
    f!(
        "series_equals",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_equals
    ),
    f!("series_exp", [Dynamic], 1, false, DYNAMIC, se::series_exp),
    f!(
        "series_fill_backward",
        [Dynamic, Any],
        1,
        false,
        DYNAMIC,
        se::series_fill_backward
    ),
    f!(
        "series_fill_const",
        [Dynamic, Any, Any],
        2,
        false,
        DYNAMIC,
        se::series_fill_const
    ),
    f!(
        "series_fill_forward",
        [Dynamic, Any],
        1,
        false,
        DYNAMIC,
        se::series_fill_forward
    ),
    f!(
        "series_fill_linear",
        [Dynamic, Any, Bool, Any],
        1,
        false,
        DYNAMIC,
        se::series_fill_linear
    ),
    f!(
        "series_fir",
        [Dynamic, Dynamic, Bool, Bool],
        2,
        false,
        DYNAMIC,
        sa::series_fir
    ),
    f!(
        "series_fit_2lines_dynamic",
        [Dynamic],
        1,
        false,
        DYNAMIC,
        sa::series_fit_2lines_dynamic
    ),
    f!(
        "series_fit_line_dynamic",
        [Dynamic],
        1,
        false,
        DYNAMIC,
        sa::series_fit_line_dynamic
    ),
    f!("series_floor", [Dynamic], 1, false, DYNAMIC, se::series_floor),
    f!(
        "series_greater",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_greater
    ),
    f!(
        "series_greater_equals",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_greater_equals
    ),
    f!(
        "series_iir",
        [Dynamic, Dynamic, Dynamic],
        3,
        false,
        DYNAMIC,
        sa::series_iir
    ),
    f!("series_less", [Dynamic, Dynamic], 2, false, DYNAMIC, se::series_less),
    f!(
        "series_less_equals",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_less_equals
    ),
    f!("series_log", [Dynamic], 1, false, DYNAMIC, se::series_log),
    f!("series_magnitude", [Dynamic], 1, false, REAL, se::series_magnitude),
    f!("series_max", [Dynamic], 1, false, REAL, se::series_max),
    f!("series_min", [Dynamic], 1, false, REAL, se::series_min),
    f!(
        "series_multiply",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_multiply
    ),
    f!(
        "series_not_equals",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_not_equals
    ),
    f!(
        "series_outliers",
        [Dynamic, String, Real, Real, Real],
        1,
        false,
        DYNAMIC,
        sa::series_outliers
    ),
    f!(
        "series_pearson_correlation",
        [Dynamic, Dynamic],
        2,
        false,
        REAL,
        se::series_pearson_correlation
    ),
    f!("series_pow", [Dynamic, Dynamic], 2, false, DYNAMIC, se::series_pow),
    f!("series_product", [Dynamic], 1, false, REAL, se::series_product),
    f!(
        "series_seasonal",
        [Dynamic, Long],
        1,
        false,
        DYNAMIC,
        sd::series_seasonal
    ),
    f!("series_sign", [Dynamic], 1, false, DYNAMIC, se::series_sign),
    f!("series_sin", [Dynamic], 1, false, DYNAMIC, se::series_sin),
    f!(
        "series_stats_dynamic",
        [Dynamic, Bool],
        1,
        false,
        DYNAMIC,
        se::series_stats_dynamic
    ),
    f!("series_stdev", [Dynamic], 1, false, REAL, se::series_stdev),
    f!(
        "series_subtract",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        se::series_subtract
    ),
    f!("series_sum", [Dynamic], 1, false, REAL, se::series_sum),
    f!("series_tan", [Dynamic], 1, false, DYNAMIC, se::series_tan),
    f!("series_variance", [Dynamic], 1, false, REAL, se::series_variance),
    f!("strcmp", [String, String], 2, false, LONG, crate::strings_more::strcmp),
    f!("todecimal", [Any], 1, false, REAL, cv::todecimal),
    f!("treepath", [Dynamic], 1, false, DYNAMIC, crate::bags::treepath),
    f!(
        "welch_test",
        [Real, Real, Real, Real, Real, Real],
        6,
        false,
        REAL,
        dist::welch_test
    ),
    f!(
        "zlib_compress_to_base64_string",
        [String],
        1,
        false,
        STRING,
        cz::zlib_compress_to_base64_string
    ),
    f!(
        "zlib_decompress_from_base64_string",
        [String],
        1,
        false,
        STRING,
        cz::zlib_decompress_from_base64_string
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_names_are_sorted_unique_and_build() {
        let names: Vec<&str> = FUNCTIONS_MORE.iter().map(|f| f.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "FUNCTIONS_MORE is not sorted or has duplicates");
        for function in FUNCTIONS_MORE {
            assert!(
                !crate::registry::FUNCTIONS.iter().any(|f| f.name == function.name),
                "{} is registered twice",
                function.name
            );
            let udf = (function.udf)();
            assert!(!udf.name().is_empty());
            assert!(
                function.min_args <= function.params.len() || function.variadic,
                "{}",
                function.name
            );
        }
    }
}
