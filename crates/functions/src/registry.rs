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

impl KqlFunction {
    /// The kind of argument `index`, or `None` past the end.
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

/// Every registered function. Keep sorted by name.
pub static FUNCTIONS: &[KqlFunction] = &[];

/// The registered function called `name`, if any.
pub fn lookup(name: &str) -> Option<&'static KqlFunction> {
    FUNCTIONS.iter().find(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_udfs_build() {
        let mut names: Vec<&str> = FUNCTIONS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let before = names.len();
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
