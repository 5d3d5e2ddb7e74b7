//! The functions every query node knows by name: DataFusion's own, the JSON functions and
//! KQL's. A plan names a function when it travels to a worker, and the worker looks the
//! name up here; so a function may travel by name only when the instance in the plan is the
//! one registered under its name (some KQL functions are built per query, with settings of
//! their own: those make the query run on the node that planned it).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};

/// The registered functions, by name.
#[derive(Debug)]
pub(crate) struct Shelf {
    pub(crate) scalars: HashMap<String, Arc<ScalarUDF>>,
    pub(crate) aggregates: HashMap<String, Arc<AggregateUDF>>,
    pub(crate) windows: HashMap<String, Arc<WindowUDF>>,
}

/// The process's shelf, built once.
pub(crate) static SHELF: LazyLock<Shelf> = LazyLock::new(Shelf::build);

impl Shelf {
    fn build() -> Shelf {
        let mut state = SessionStateBuilder::new().with_default_features().build();
        let _ = datafusion_functions_json::register_all(&mut state);
        let mut scalars: HashMap<String, Arc<ScalarUDF>> = state.scalar_functions().clone();
        let mut aggregates: HashMap<String, Arc<AggregateUDF>> = state.aggregate_functions().clone();
        let windows: HashMap<String, Arc<WindowUDF>> = state.window_functions().clone();
        let mut add = |udf: ScalarUDF| {
            scalars.insert(udf.name().to_string(), Arc::new(udf));
        };
        for function in trawl_functions::registry::all() {
            add((function.udf)());
        }
        for udf in trawl_functions::scalar_udfs() {
            add(udf);
        }
        for udf in trawl_planner::shared_functions() {
            add(udf);
        }
        for aggregate in trawl_functions::aggregate_registry::AGGREGATES {
            let udaf = (aggregate.udaf)();
            aggregates.insert(udaf.name().to_string(), Arc::new(udaf));
        }
        Shelf {
            scalars,
            aggregates,
            windows,
        }
    }

    /// Whether `udf` may travel by name: the instance registered under its name is equal.
    pub(crate) fn knows_scalar(&self, udf: &ScalarUDF) -> bool {
        self.scalars.get(udf.name()).is_some_and(|known| known.as_ref() == udf)
    }

    pub(crate) fn knows_aggregate(&self, udaf: &AggregateUDF) -> bool {
        self.aggregates
            .get(udaf.name())
            .is_some_and(|known| known.as_ref() == udaf)
    }

    pub(crate) fn knows_window(&self, udwf: &WindowUDF) -> bool {
        self.windows
            .get(udwf.name())
            .is_some_and(|known| known.as_ref() == udwf)
    }

    /// The builder with every function of the shelf registered.
    pub(crate) fn register(&self, builder: SessionStateBuilder) -> SessionStateBuilder {
        builder
            .with_scalar_functions(self.scalars.values().cloned().collect())
            .with_aggregate_functions(self.aggregates.values().cloned().collect())
            .with_window_functions(self.windows.values().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kql_functions_travel_by_name_and_per_query_ones_do_not() {
        let has = ScalarUDF::from(trawl_functions::strings::HasUdf::new(false));
        assert!(SHELF.knows_scalar(&has));
        let upper = datafusion::functions::string::upper();
        assert!(SHELF.knows_scalar(&upper));
        let count = datafusion::functions_aggregate::count::count_udaf();
        assert!(SHELF.knows_aggregate(&count));
        let first = trawl_functions::aggregate_registry::AGGREGATES
            .first()
            .map(|a| (a.udaf)())
            .expect("aggregates are registered");
        assert!(SHELF.knows_aggregate(&first));
    }
}
