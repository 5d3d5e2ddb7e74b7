//! The registry of KQL scalar functions implemented as UDFs.
//!
//! The planner lowers a call of a registered function by converting each argument to the
//! [`ArgKind`] the function declares, then calling its UDF. So a UDF body can rely on:
//!
//! | kind | Arrow input |
//! |---|---|
//! | `String` | Utf8 / Utf8View / LargeUtf8, plain text (never null: absent strings are `""`) |
//! | `Dynamic` | Utf8 / Utf8View, JSON text (null when absent) |
//! | `Real` | Float64 |
//! | `Long` | Int64 |
//! | `Bool` | Boolean |
//! | `DateTime` | Timestamp(ns, UTC) |
//! | `Timespan` | Duration(ns) |
//! | `Any` | whatever the argument is (the UDF must accept every type it may meet) |
//!
//! and must return `types::arrow_type(kql_type)` of its declared return type: Dynamic and
//! String as Utf8View (Dynamic as JSON text), Long as Int64, Real as Float64, and so on.
//! Adding a function: implement `ScalarUDFImpl` in a module of this crate, then add one
//! [`KqlFunction`] entry to [`FUNCTIONS`].

use datafusion::logical_expr::ScalarUDF;
use trawl_common::KqlType;

/// How the planner converts an argument before the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Any,
    String,
    Dynamic,
    Real,
    Long,
    Bool,
    DateTime,
    Timespan,
}

/// The KQL type of a call's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnRule {
    Fixed(KqlType),
    /// The type of argument `n` (after conversion).
    SameAsArg(usize),
}

/// One registered function.
#[derive(Debug, Clone, Copy)]
pub struct KqlFunction {
    /// The KQL name.
    pub name: &'static str,
    /// Argument kinds; when `variadic`, the last kind repeats.
    pub params: &'static [ArgKind],
    /// Fewest arguments.
    pub min_args: usize,
    /// Whether the last parameter repeats without bound.
    pub variadic: bool,
    pub returns: ReturnRule,
    /// Builds the UDF.
    pub udf: fn() -> ScalarUDF,
}

/// The kind of argument `index` of a parameter list whose last kind repeats when `variadic`.
pub fn kind_at(params: &[ArgKind], variadic: bool, index: usize) -> Option<ArgKind> {
    match params.get(index) {
        Some(kind) => Some(*kind),
        None if variadic => params.last().copied(),
        None => None,
    }
}

impl KqlFunction {
    /// The kind of argument `index`, or `None` past the end.
    pub fn kind_of(&self, index: usize) -> Option<ArgKind> {
        kind_at(self.params, self.variadic, index)
    }

    pub fn max_args(&self) -> Option<usize> {
        (!self.variadic).then_some(self.params.len())
    }
}

/// A [`KqlFunction`] evaluated row by row by a [`crate::rowfn::RowFn`]:
/// `f!(name, [kinds], min_args, variadic, returns, body)`. Shared with `registry_more`.
macro_rules! f {
    ($name:literal, [$($kind:ident),*], $min:expr, $variadic:expr, $returns:expr, $body:path) => {
        $crate::registry::KqlFunction {
            name: $name,
            params: &[$($crate::registry::ArgKind::$kind),*],
            min_args: $min,
            variadic: $variadic,
            returns: $returns,
            udf: {
                fn build() -> ::datafusion::logical_expr::ScalarUDF {
                    $crate::rowfn::RowUdf::udf(concat!("kql_", $name), $returns, $body)
                }
                build
            },
        }
    };
}
pub(crate) use f as registry_entry;

pub(crate) const DYNAMIC: ReturnRule = ReturnRule::Fixed(KqlType::Dynamic);
pub(crate) const STRING: ReturnRule = ReturnRule::Fixed(KqlType::String);
pub(crate) const LONG: ReturnRule = ReturnRule::Fixed(KqlType::Long);
pub(crate) const INT: ReturnRule = ReturnRule::Fixed(KqlType::Int);
pub(crate) const REAL: ReturnRule = ReturnRule::Fixed(KqlType::Real);
pub(crate) const BOOL: ReturnRule = ReturnRule::Fixed(KqlType::Bool);
pub(crate) const DATETIME: ReturnRule = ReturnRule::Fixed(KqlType::DateTime);
pub(crate) const TIMESPAN: ReturnRule = ReturnRule::Fixed(KqlType::Timespan);
pub(crate) const GUID: ReturnRule = ReturnRule::Fixed(KqlType::Guid);
pub(crate) const SAME: ReturnRule = ReturnRule::SameAsArg(0);

use crate::{
    arrays as a, bags as b, datetime as t, datetime_format as tf, encoding as e, hll, ip, math as m, strings_more as s,
    tdigest as td,
};

/// Every registered function. Keep sorted by name.
pub static FUNCTIONS: &[KqlFunction] = &[
    // Internal: the further arrays of a multi-array `array_sort_asc`/`_desc` (planner).
    f!(
        "__array_sort_by_asc",
        [Dynamic, Dynamic, Bool],
        2,
        false,
        DYNAMIC,
        a::array_sort_by_asc
    ),
    f!(
        "__array_sort_by_desc",
        [Dynamic, Dynamic, Bool],
        2,
        false,
        DYNAMIC,
        a::array_sort_by_desc
    ),
    // Internal: `pack_all(true)`, a bag without null or empty values (planner).
    f!("__bag_pack_dense", [Dynamic], 0, true, DYNAMIC, b::bag_pack_dense),
    // Internal: `gettype` of a dynamic value (planner).
    f!("__gettype_dynamic", [Any], 1, false, STRING, b::gettype_dynamic),
    f!("abs", [Any], 1, false, SAME, m::abs),
    f!("acos", [Real], 1, false, REAL, m::acos),
    f!("array_concat", [Dynamic], 1, true, DYNAMIC, a::array_concat),
    f!(
        "array_iff",
        [Dynamic, Dynamic, Dynamic],
        3,
        false,
        DYNAMIC,
        a::array_iff
    ),
    f!(
        "array_iif",
        [Dynamic, Dynamic, Dynamic],
        3,
        false,
        DYNAMIC,
        a::array_iff
    ),
    f!(
        "array_index_of",
        [Dynamic, Dynamic, Long, Long, Long],
        2,
        false,
        LONG,
        a::array_index_of
    ),
    f!("array_length", [Dynamic], 1, false, LONG, a::array_length),
    f!("array_reverse", [Dynamic], 1, false, DYNAMIC, a::array_reverse),
    f!(
        "array_rotate_left",
        [Dynamic, Long],
        2,
        false,
        DYNAMIC,
        a::array_rotate_left
    ),
    f!(
        "array_rotate_right",
        [Dynamic, Long],
        2,
        false,
        DYNAMIC,
        a::array_rotate_right
    ),
    f!(
        "array_shift_left",
        [Dynamic, Long, Dynamic],
        2,
        false,
        DYNAMIC,
        a::array_shift_left
    ),
    f!(
        "array_shift_right",
        [Dynamic, Long, Dynamic],
        2,
        false,
        DYNAMIC,
        a::array_shift_right
    ),
    f!("array_slice", [Dynamic, Long, Long], 3, false, DYNAMIC, a::array_slice),
    f!("array_sort_asc", [Dynamic, Any], 1, true, DYNAMIC, a::array_sort_asc),
    f!("array_sort_desc", [Dynamic, Any], 1, true, DYNAMIC, a::array_sort_desc),
    f!("array_split", [Dynamic, Dynamic], 2, false, DYNAMIC, a::array_split),
    f!("array_sum", [Dynamic], 1, false, REAL, a::array_sum),
    f!("asin", [Real], 1, false, REAL, m::asin),
    f!("atan", [Real], 1, false, REAL, m::atan),
    f!("atan2", [Real, Real], 2, false, REAL, m::atan2),
    f!("bag_has_key", [Dynamic, String], 2, false, BOOL, b::bag_has_key),
    f!("bag_keys", [Dynamic], 1, false, DYNAMIC, b::bag_keys),
    f!("bag_merge", [Dynamic], 2, true, DYNAMIC, b::bag_merge),
    f!("bag_pack", [Dynamic], 0, true, DYNAMIC, b::bag_pack),
    f!(
        "bag_remove_keys",
        [Dynamic, Dynamic],
        2,
        false,
        DYNAMIC,
        b::bag_remove_keys
    ),
    f!(
        "bag_set_key",
        [Dynamic, String, Dynamic],
        3,
        false,
        DYNAMIC,
        b::bag_set_key
    ),
    f!("bag_zip", [Dynamic, Dynamic], 2, false, DYNAMIC, b::bag_zip),
    f!(
        "base64_decode_toarray",
        [String],
        1,
        false,
        DYNAMIC,
        e::base64_decode_toarray
    ),
    f!(
        "base64_decode_toguid",
        [String],
        1,
        false,
        GUID,
        e::base64_decode_toguid
    ),
    f!(
        "base64_decode_tostring",
        [String],
        1,
        false,
        STRING,
        e::base64_decode_tostring
    ),
    f!(
        "base64_encode_fromarray",
        [Dynamic],
        1,
        false,
        STRING,
        e::base64_encode_fromarray
    ),
    f!(
        "base64_encode_fromguid",
        [String],
        1,
        false,
        STRING,
        e::base64_encode_fromguid
    ),
    f!(
        "base64_encode_tostring",
        [String],
        1,
        false,
        STRING,
        e::base64_encode_tostring
    ),
    f!("bin_at", [Any, Any, Any], 3, false, SAME, t::bin_at),
    f!("bitset_count_ones", [Long], 1, false, LONG, m::bitset_count_ones),
    f!("ceiling", [Any], 1, false, SAME, m::ceiling),
    f!("cos", [Real], 1, false, REAL, m::cos),
    f!("cot", [Real], 1, false, REAL, m::cot),
    f!("countof", [String, String, String], 2, false, LONG, s::countof),
    f!(
        "datetime_add",
        [String, Long, DateTime],
        3,
        false,
        DATETIME,
        t::datetime_add
    ),
    f!(
        "datetime_diff",
        [String, DateTime, DateTime],
        3,
        false,
        LONG,
        t::datetime_diff
    ),
    f!(
        "datetime_local_to_utc",
        [DateTime, String],
        2,
        false,
        DATETIME,
        t::datetime_local_to_utc
    ),
    f!("datetime_part", [String, DateTime], 2, false, INT, t::datetime_part),
    f!(
        "datetime_utc_to_local",
        [DateTime, String],
        2,
        false,
        DATETIME,
        t::datetime_utc_to_local
    ),
    f!("dayofmonth", [DateTime], 1, false, INT, t::dayofmonth),
    f!("dayofweek", [DateTime], 1, false, TIMESPAN, t::dayofweek),
    f!("dayofyear", [DateTime], 1, false, INT, t::dayofyear),
    f!("dcount_hll", [Dynamic], 1, false, LONG, hll::dcount_hll),
    f!("degrees", [Real], 1, false, REAL, m::degrees),
    f!("dynamic_to_json", [Dynamic], 1, false, STRING, b::dynamic_to_json),
    f!("endofday", [DateTime, Long], 1, false, DATETIME, t::endofday),
    f!("endofmonth", [DateTime, Long], 1, false, DATETIME, t::endofmonth),
    f!("endofweek", [DateTime, Long], 1, false, DATETIME, t::endofweek),
    f!("endofyear", [DateTime, Long], 1, false, DATETIME, t::endofyear),
    f!("erf", [Real], 1, false, REAL, m::erf),
    f!("erfc", [Real], 1, false, REAL, m::erfc),
    f!("exp", [Real], 1, false, REAL, m::exp),
    f!("exp10", [Real], 1, false, REAL, m::exp10),
    f!("exp2", [Real], 1, false, REAL, m::exp2),
    f!("extract", [String, Long, String, Any], 3, false, STRING, s::extract),
    f!("extract_all", [String, Any, String], 2, false, DYNAMIC, s::extract_all),
    f!(
        "format_datetime",
        [DateTime, String],
        2,
        false,
        STRING,
        tf::format_datetime
    ),
    f!("format_ipv4", [Any, Long], 1, false, STRING, ip::format_ipv4),
    f!("format_ipv4_mask", [Any, Long], 1, false, STRING, ip::format_ipv4_mask),
    f!(
        "format_timespan",
        [Timespan, String],
        2,
        false,
        STRING,
        tf::format_timespan
    ),
    f!("gamma", [Real], 1, false, REAL, m::gamma),
    f!("getmonth", [DateTime], 1, false, INT, t::getmonth),
    f!("getyear", [DateTime], 1, false, INT, t::getyear),
    f!("has_any_ipv4", [String, Dynamic], 2, true, BOOL, ip::has_any_ipv4),
    f!(
        "has_any_ipv4_prefix",
        [String, Dynamic],
        2,
        true,
        BOOL,
        ip::has_any_ipv4_prefix
    ),
    f!("has_ipv4", [String, Dynamic], 2, false, BOOL, ip::has_any_ipv4),
    f!(
        "has_ipv4_prefix",
        [String, Dynamic],
        2,
        false,
        BOOL,
        ip::has_any_ipv4_prefix
    ),
    f!("hash", [Any, Long], 1, false, LONG, e::hash_xxhash64),
    f!("hash_md5", [String], 1, false, STRING, e::hash_md5),
    f!("hash_sha256", [String], 1, false, STRING, e::hash_sha256),
    f!("hash_xxhash64", [Any, Long], 1, false, LONG, e::hash_xxhash64),
    f!("hll_merge", [Dynamic], 1, true, DYNAMIC, hll::hll_merge_scalar),
    f!("hourofday", [DateTime], 1, false, INT, t::hourofday),
    f!(
        "indexof",
        [String, String, Long, Long, Long],
        2,
        false,
        LONG,
        s::indexof
    ),
    f!("ipv4_compare", [String, String, Long], 2, false, LONG, ip::ipv4_compare),
    f!(
        "ipv4_is_in_any_range",
        [String, Dynamic],
        2,
        true,
        BOOL,
        ip::ipv4_is_in_any_range
    ),
    f!(
        "ipv4_is_in_range",
        [String, String],
        2,
        false,
        BOOL,
        ip::ipv4_is_in_range
    ),
    f!(
        "ipv4_is_match",
        [String, String, Long],
        2,
        false,
        BOOL,
        ip::ipv4_is_match
    ),
    f!("ipv4_is_private", [String], 1, false, BOOL, ip::ipv4_is_private),
    f!("isascii", [String], 1, false, BOOL, s::isascii),
    f!("isfinite", [Real], 1, false, BOOL, m::isfinite),
    f!("isinf", [Real], 1, false, BOOL, m::isinf),
    f!("isnan", [Real], 1, false, BOOL, m::isnan),
    f!("jaccard_index", [Dynamic, Dynamic], 2, false, REAL, a::jaccard_index),
    f!("log", [Real], 1, false, REAL, m::log),
    f!("log10", [Real], 1, false, REAL, m::log10),
    f!("log2", [Real], 1, false, REAL, m::log2),
    f!("loggamma", [Real], 1, false, REAL, m::loggamma),
    f!(
        "make_datetime",
        [Long, Long, Long, Long, Long, Real],
        3,
        false,
        DATETIME,
        t::make_datetime
    ),
    f!(
        "make_timespan",
        [Real, Real, Real, Real],
        2,
        false,
        TIMESPAN,
        t::make_timespan
    ),
    f!("max_of", [Any], 1, true, SAME, m::max_of),
    f!("merge_tdigest", [Dynamic], 1, true, DYNAMIC, td::tdigest_merge_scalar),
    f!("min_of", [Any], 1, true, SAME, m::min_of),
    f!("monthofyear", [DateTime], 1, false, INT, t::getmonth),
    f!("pack", [Dynamic], 0, true, DYNAMIC, b::bag_pack),
    f!("pack_array", [Dynamic], 0, true, DYNAMIC, a::pack_array),
    f!("parse_ipv4", [String], 1, false, LONG, ip::parse_ipv4),
    f!("parse_ipv4_mask", [String, Long], 2, false, LONG, ip::parse_ipv4_mask),
    f!("parse_json", [String], 1, false, DYNAMIC, b::parse_json),
    f!("parse_url", [String], 1, false, DYNAMIC, e::parse_url),
    f!("parse_urlquery", [String], 1, false, DYNAMIC, e::parse_urlquery),
    f!(
        "percentile_tdigest",
        [Dynamic, Real, Any],
        2,
        false,
        REAL,
        td::percentile_tdigest
    ),
    f!(
        "percentiles_array_tdigest",
        [Dynamic, Dynamic],
        2,
        true,
        DYNAMIC,
        td::percentiles_array_tdigest
    ),
    f!("pi", [], 0, false, REAL, m::pi),
    f!("pow", [Real, Real], 2, false, REAL, m::pow),
    f!("radians", [Real], 1, false, REAL, m::radians),
    f!("rank_tdigest", [Dynamic, Any], 2, false, LONG, td::rank_tdigest),
    f!(
        "replace_regex",
        [String, String, String],
        3,
        false,
        STRING,
        s::replace_regex
    ),
    f!(
        "replace_string",
        [String, String, String],
        3,
        false,
        STRING,
        s::replace_string
    ),
    f!(
        "replace_strings",
        [String, Dynamic, Dynamic],
        3,
        false,
        STRING,
        s::replace_strings
    ),
    f!("reverse", [String], 1, false, STRING, s::reverse),
    f!("round", [Real, Long], 1, false, REAL, m::round),
    f!("set_difference", [Dynamic], 2, true, DYNAMIC, a::set_difference),
    f!(
        "set_has_element",
        [Dynamic, Dynamic],
        2,
        false,
        BOOL,
        a::set_has_element
    ),
    f!("set_intersect", [Dynamic], 2, true, DYNAMIC, a::set_intersect),
    f!("set_union", [Dynamic], 2, true, DYNAMIC, a::set_union),
    f!("sign", [Real], 1, false, REAL, m::sign),
    f!("sin", [Real], 1, false, REAL, m::sin),
    f!("split", [String, String, Long], 2, false, DYNAMIC, a::split),
    f!("sqrt", [Real], 1, false, REAL, m::sqrt),
    f!("startofday", [DateTime, Long], 1, false, DATETIME, t::startofday),
    f!("startofmonth", [DateTime, Long], 1, false, DATETIME, t::startofmonth),
    f!("startofweek", [DateTime, Long], 1, false, DATETIME, t::startofweek),
    f!("startofyear", [DateTime, Long], 1, false, DATETIME, t::startofyear),
    f!("strcat_array", [Dynamic, String], 2, false, STRING, a::strcat_array),
    f!("strcat_delim", [String], 2, true, STRING, s::strcat_delim),
    f!("string_size", [String], 1, false, LONG, s::string_size),
    f!("strrep", [String, Long, String], 2, false, STRING, s::strrep),
    f!("substring", [String, Long, Long], 2, false, STRING, s::substring),
    f!("tan", [Real], 1, false, REAL, m::tan),
    f!("tdigest_merge", [Dynamic], 1, true, DYNAMIC, td::tdigest_merge_scalar),
    f!("todatetime", [String], 1, false, DATETIME, t::todatetime),
    f!("todynamic", [String], 1, false, DYNAMIC, b::parse_json),
    f!("toguid", [String], 1, false, GUID, e::toguid),
    f!("tohex", [Long, Long], 1, false, STRING, e::tohex),
    f!("totimespan", [Any], 1, false, TIMESPAN, t::totimespan),
    f!("translate", [String, String, String], 3, false, STRING, s::translate),
    f!("trim", [String, String], 2, false, STRING, s::trim),
    f!("trim_end", [String, String], 2, false, STRING, s::trim_end),
    f!("trim_start", [String, String], 2, false, STRING, s::trim_start),
    f!(
        "unicode_codepoints_from_string",
        [String],
        1,
        false,
        DYNAMIC,
        s::unicode_codepoints_from_string
    ),
    f!(
        "unicode_codepoints_to_string",
        [Dynamic],
        1,
        true,
        STRING,
        s::unicode_codepoints_to_string
    ),
    f!(
        "unixtime_microseconds_todatetime",
        [Real],
        1,
        false,
        DATETIME,
        t::unixtime_microseconds_todatetime
    ),
    f!(
        "unixtime_milliseconds_todatetime",
        [Real],
        1,
        false,
        DATETIME,
        t::unixtime_milliseconds_todatetime
    ),
    f!(
        "unixtime_nanoseconds_todatetime",
        [Real],
        1,
        false,
        DATETIME,
        t::unixtime_nanoseconds_todatetime
    ),
    f!(
        "unixtime_seconds_todatetime",
        [Real],
        1,
        false,
        DATETIME,
        t::unixtime_seconds_todatetime
    ),
    f!("url_decode", [String], 1, false, STRING, e::url_decode),
    f!("url_encode", [String], 1, false, STRING, e::url_encode),
    f!(
        "url_encode_component",
        [String],
        1,
        false,
        STRING,
        e::url_encode_component
    ),
    f!("week_of_year", [DateTime], 1, false, INT, t::weekofyear),
    f!("weekofyear", [DateTime], 1, false, INT, t::weekofyear),
    f!("zip", [Dynamic], 2, true, DYNAMIC, a::zip),
];

/// The registered function called `name`, if any.
pub fn lookup(name: &str) -> Option<&'static KqlFunction> {
    all().find(|f| f.name == name)
}

/// Every registered scalar function.
pub fn all() -> impl Iterator<Item = &'static KqlFunction> {
    FUNCTIONS
        .iter()
        .chain(crate::registry_more::FUNCTIONS_MORE)
        .chain(crate::geo::FUNCTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_udfs_build() {
        let mut names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let before = names.len();
        let sorted: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
        assert_eq!(sorted, names, "FUNCTIONS is not sorted by name");
        names.dedup();
        assert_eq!(before, names.len(), "duplicate function names");
        for function in FUNCTIONS {
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
