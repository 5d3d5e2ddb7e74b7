//! Operators that multiply rows yield to the runtime as they produce.
//!
//! DataFusion makes its leaves cooperative (each batch a scan sends spends the task's
//! budget), but an operator that makes many batches from one input batch (a join with many
//! matches per key, `mv-expand` of long arrays) can then run for minutes without reaching an
//! await point. A task that never yields cannot be stopped: a query past its time limit, or
//! whose client went away, would go on burning a core. [`CooperativeMultipliers`] wraps each
//! such operator in a `CooperativeExec`, so every batch it produces spends the budget and the
//! task yields, and a cancelled query stops within one batch.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, SortMergeJoinExec, SymmetricHashJoinExec,
};
use datafusion::physical_plan::unnest::UnnestExec;

/// The rule; see the module documentation. Runs after DataFusion's own rules.
#[derive(Debug)]
pub(crate) struct CooperativeMultipliers;

/// Whether `plan` can produce many batches per input batch.
fn multiplies_rows(plan: &dyn ExecutionPlan) -> bool {
    plan.downcast_ref::<HashJoinExec>().is_some()
        || plan.downcast_ref::<NestedLoopJoinExec>().is_some()
        || plan.downcast_ref::<CrossJoinExec>().is_some()
        || plan.downcast_ref::<SortMergeJoinExec>().is_some()
        || plan.downcast_ref::<SymmetricHashJoinExec>().is_some()
        || plan.downcast_ref::<UnnestExec>().is_some()
}

impl PhysicalOptimizerRule for CooperativeMultipliers {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if multiplies_rows(node.as_ref()) {
                Ok(Transformed::yes(
                    Arc::new(CooperativeExec::new(node)) as Arc<dyn ExecutionPlan>
                ))
            } else {
                Ok(Transformed::no(node))
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "cooperative_multipliers"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
