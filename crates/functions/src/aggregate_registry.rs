//! The registry of KQL aggregate functions implemented as UDAFs, the aggregate counterpart of
//! [`crate::registry`]. The planner converts each argument to the declared [`ArgKind`] (the
//! same rules as for scalar functions), calls the UDAF in `summarize`, and names the output
//! `<name>_<column>` (or `<name>_` when the first argument is not a column) unless the query
//! names it. The UDAF must return `types::arrow_type` of its declared KQL return type
//! (dynamic results as JSON text in Utf8View).
//!
//! Adding an aggregate: implement `AggregateUDFImpl` in a module of this crate, then add one
//! [`KqlAggregate`] entry to [`AGGREGATES`] (sorted by name).

use datafusion::logical_expr::AggregateUDF;

use trawl_common::KqlType;

use crate::mining::{autocluster as ac, basket as bk, diffpatterns as dp};
use crate::registry::{ArgKind, ReturnRule};
use crate::udaf::RowUdaf;
use crate::{aggregates as s, funnel as fu, hll as h, otel as o, tdigest as t};

/// One registered aggregate.
#[derive(Debug, Clone, Copy)]
pub struct KqlAggregate {
    pub name: &'static str,
    pub params: &'static [ArgKind],
    pub min_args: usize,
    pub variadic: bool,
    pub returns: ReturnRule,
    pub udaf: fn() -> AggregateUDF,
}

impl KqlAggregate {
    pub fn kind_of(&self, index: usize) -> Option<ArgKind> {
        crate::registry::kind_at(self.params, self.variadic, index)
    }

    pub fn max_args(&self) -> Option<usize> {
        (!self.variadic).then_some(self.params.len())
    }
}

/// A [`KqlAggregate`] computed by a [`crate::udaf::RowAgg`]:
/// `a!(name, [kinds], min_args, variadic, returns, make)`.
macro_rules! a {
    ($name:literal, [$($kind:ident),*], $min:expr, $variadic:expr, $returns:expr, $make:path) => {
        KqlAggregate {
            name: $name,
            params: &[$(ArgKind::$kind),*],
            min_args: $min,
            variadic: $variadic,
            returns: $returns,
            udaf: {
                fn build() -> AggregateUDF {
                    RowUdaf::udaf(concat!("kql_", $name), $returns, $make)
                }
                build
            },
        }
    };
}

const DYNAMIC: ReturnRule = ReturnRule::Fixed(KqlType::Dynamic);
const LONG: ReturnRule = ReturnRule::Fixed(KqlType::Long);
const REAL: ReturnRule = ReturnRule::Fixed(KqlType::Real);
const SAME: ReturnRule = ReturnRule::SameAsArg(0);

/// Every registered aggregate, sorted by name.
pub static AGGREGATES: &[KqlAggregate] = &[
    // Internal: `evaluate autocluster` (planner).
    a!(
        "__autocluster",
        [Dynamic, Real, Real, Long],
        1,
        false,
        DYNAMIC,
        ac::make_autocluster
    ),
    // Internal: `evaluate basket` (planner).
    a!(
        "__basket",
        [Dynamic, Real, Real, Long],
        1,
        false,
        DYNAMIC,
        bk::make_basket
    ),
    // Internal: `evaluate diffpatterns` (planner).
    a!(
        "__diffpatterns",
        [Dynamic, Real, Long, Real, Long],
        1,
        false,
        DYNAMIC,
        dp::make_diffpatterns
    ),
    // Internal: the `fieldstats` operator (planner).
    a!(
        "__fieldstats",
        [Dynamic, String],
        1,
        false,
        DYNAMIC,
        crate::fieldstats::make_fieldstats
    ),
    // Internal: `evaluate funnel_sequence_completion` (planner).
    a!(
        "__funnel_reach",
        [Long, String, String, Long],
        4,
        false,
        LONG,
        fu::make_funnel_reach
    ),
    // Internal: `graph-mark-components` (planner).
    a!(
        "__graph_components",
        [String, String, Bool],
        3,
        false,
        DYNAMIC,
        crate::graph_components::make_graph_components
    ),
    // Internal: `graph-match` (planner).
    a!(
        "__graph_match",
        [Long, String, String, Dynamic, String],
        5,
        false,
        DYNAMIC,
        crate::graph_match::make_graph_match
    ),
    // Internal: the `reduce` operator (planner).
    a!(
        "__reduce",
        [String, Real, String, Bool],
        1,
        false,
        DYNAMIC,
        crate::reduce::make_reduce
    ),
    // Internal: the `trace-find` operator (planner).
    a!(
        "__trace_find",
        [String, String, DateTime, Long, String, Long],
        5,
        false,
        DYNAMIC,
        crate::trace_find::make_trace_find
    ),
    a!("binary_all_and", [Long], 1, false, LONG, s::make_binary_all_and),
    a!("binary_all_or", [Long], 1, false, LONG, s::make_binary_all_or),
    a!("binary_all_xor", [Long], 1, false, LONG, s::make_binary_all_xor),
    a!("buildschema", [Dynamic], 1, false, DYNAMIC, s::make_buildschema),
    a!("count_distinct", [Any], 1, false, LONG, s::make_count_distinct),
    a!(
        "count_distinctif",
        [Any, Bool],
        2,
        false,
        LONG,
        s::make_count_distinctif
    ),
    a!("covariance", [Real, Real], 2, false, REAL, s::make_covariance),
    a!("covarianceif", [Real, Real, Bool], 3, false, REAL, s::make_covarianceif),
    a!("covariancep", [Real, Real], 2, false, REAL, s::make_covariancep),
    a!(
        "covariancepif",
        [Real, Real, Bool],
        3,
        false,
        REAL,
        s::make_covariancepif
    ),
    a!("hll", [Any, Long], 1, false, DYNAMIC, h::make_hll),
    a!("hll_if", [Any, Bool, Long], 2, false, DYNAMIC, h::make_hll_if),
    a!("hll_merge", [Dynamic], 1, false, DYNAMIC, h::make_hll_merge),
    a!("merge_tdigest", [Dynamic], 1, false, DYNAMIC, t::make_tdigest_merge),
    // The otel_* aggregates take, after the user's arguments, the query window's start and a
    // warning key, both added by the planner.
    a!("otel_delta", [Dynamic, Long, Long], 1, false, REAL, o::make_delta),
    a!(
        "otel_histogram_merge",
        [Dynamic, Long, Long],
        1,
        false,
        DYNAMIC,
        o::make_histogram_merge
    ),
    a!(
        "otel_histogram_percentile",
        [Dynamic, Real, Long, Long],
        2,
        false,
        REAL,
        o::make_histogram_percentile
    ),
    a!("otel_increase", [Dynamic, Long, Long], 1, false, REAL, o::make_increase),
    a!("otel_rate", [Dynamic, Long, Long], 1, false, REAL, o::make_rate),
    a!("percentilew", [Any, Long, Real], 3, false, SAME, t::make_percentilew),
    a!("stdevpif", [Real, Bool], 2, false, REAL, s::make_stdevpif),
    a!("tdigest", [Any, Long], 1, false, DYNAMIC, t::make_tdigest),
    a!("tdigest_merge", [Dynamic], 1, false, DYNAMIC, t::make_tdigest_merge),
    a!("variancepif", [Real, Bool], 2, false, REAL, s::make_variancepif),
];

/// The registered aggregate called `name`, if any.
pub fn lookup(name: &str) -> Option<&'static KqlAggregate> {
    AGGREGATES.iter().find(|a| a.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_are_sorted_unique_and_build() {
        let names: Vec<&str> = AGGREGATES.iter().map(|a| a.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted, "AGGREGATES must be sorted and unique");
        for aggregate in AGGREGATES {
            assert!(!(aggregate.udaf)().name().is_empty());
        }
    }
}
