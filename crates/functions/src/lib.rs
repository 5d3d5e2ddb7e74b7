//! KQL's scalar and aggregate functions as DataFusion UDFs, the KQL ↔ Arrow type mapping,
//! and the term tokenizer that `has` and the storage bloom index share.
//!
//! Must not know storage or the catalog.

pub mod aggregate_registry;
pub mod aggregates;
pub mod arrays;
pub mod bags;
pub mod bits;
pub mod bytes;
pub mod compress;
pub mod contains;
pub mod conversions;
pub mod datetime;
pub mod datetime_format;
pub mod distributions;
pub mod dynamic;
pub mod encoding;
pub mod fieldstats;
pub mod funnel;
pub mod geo;
pub mod graph_components;
pub mod graph_match;
pub mod hll;
pub mod ip;
pub mod ipv6;
pub mod json;
pub mod kv;
pub mod lists;
pub mod log_templates;
pub mod math;
pub mod memo;
pub mod mining;
pub mod otel;
pub mod random;
pub mod ranges;
pub mod reduce;
pub mod regexes;
pub mod registry;
pub mod registry_more;
pub mod rowfn;
pub mod series;
pub mod series_analysis;
pub mod series_decompose;
pub mod series_fft;
pub mod series_poly;
pub mod short_eq;
pub mod strcat;
pub mod strings;
pub mod strings_more;
pub mod tdigest;
#[cfg(test)]
mod testing;
pub mod tokenizer;
pub mod trace_find;
pub mod types;
pub mod udaf;
pub mod units;
mod util;
pub mod xml;

use datafusion::logical_expr::ScalarUDF;

/// Every scalar UDF of this crate, to register with a session.
pub fn scalar_udfs() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::from(strings::HasUdf::new(false)),
        ScalarUDF::from(strings::HasUdf::new(true)),
        ScalarUDF::from(contains::ContainsUdf::new(false)),
        ScalarUDF::from(contains::ContainsUdf::new(true)),
        ScalarUDF::from(contains::ContainsUdf::dynamic(false)),
        ScalarUDF::from(contains::ContainsUdf::dynamic(true)),
        ScalarUDF::from(dynamic::DynamicToStringUdf::new()),
        ScalarUDF::from(dynamic::ToJsonStringUdf::new()),
        ScalarUDF::from(short_eq::ShortEqUdf::new()),
        ScalarUDF::from(strcat::StrcatUdf::new()),
    ]
}
