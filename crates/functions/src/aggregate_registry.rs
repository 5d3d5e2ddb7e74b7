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

use crate::registry::{ArgKind, ReturnRule};

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
        match self.params.get(index) {
            Some(kind) => Some(*kind),
            None if self.variadic => self.params.last().copied(),
            None => None,
        }
    }

    pub fn max_args(&self) -> Option<usize> {
        (!self.variadic).then_some(self.params.len())
    }
}

/// Every registered aggregate, sorted by name.
pub static AGGREGATES: &[KqlAggregate] = &[];

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
