//! Planning work stops when its query is given up.
//!
//! Planning and optimizing run on a blocking thread (`off_runtime`), where dropping the
//! waiting future — a query past its time limit, or whose client went away — does not stop
//! them. Some plans are slow to optimize (DataFusion derives the field of every nested
//! expression afresh, so a long pipeline of filters over computed columns costs O(n³)), and
//! a hostile query would then burn a core long after its caller got its timeout. The
//! planning thread knows its query's [`Abandoned`] flag through a thread-local; a check runs
//! between every two optimizer rules and fails the optimization once the flag is set.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::common::tree_node::Transformed;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

thread_local! {
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Set when the future waiting for a piece of planning work is dropped.
#[derive(Default)]
pub(crate) struct Abandoned(Arc<AtomicBool>);

impl Abandoned {
    /// Runs `work` on this thread with this flag as the current one; the flag is cleared
    /// from the thread afterwards, even when `work` panics.
    pub(crate) fn scope<T>(flag: Arc<AtomicBool>, work: impl FnOnce() -> T) -> T {
        struct Clear;
        impl Drop for Clear {
            fn drop(&mut self) {
                CURRENT.with(|current| current.borrow_mut().take());
            }
        }
        CURRENT.with(|current| *current.borrow_mut() = Some(flag));
        let _clear = Clear;
        work()
    }

    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Whether the planning work on this thread was given up.
pub(crate) fn abandoned() -> bool {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    })
}

/// The optimizer rule between every two of DataFusion's: fails when the query was given up.
#[derive(Debug)]
pub(crate) struct StopWhenAbandoned;

/// The message of the error a given-up optimization ends with (nobody reads it: the query's
/// caller already has its answer).
const STOPPED: &str = "the query was given up while it was being optimized";

impl OptimizerRule for StopWhenAbandoned {
    fn name(&self) -> &str {
        "trawl_stop_when_abandoned"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(&self, plan: LogicalPlan, _config: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        if abandoned() {
            return Err(DataFusionError::Execution(STOPPED.to_string()));
        }
        Ok(Transformed::no(plan))
    }
}

/// `rules` with [`StopWhenAbandoned`] before each.
pub(crate) fn interleave(
    rules: Vec<Arc<dyn OptimizerRule + Send + Sync>>,
) -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let check: Arc<dyn OptimizerRule + Send + Sync> = Arc::new(StopWhenAbandoned);
    rules.into_iter().flat_map(|rule| [Arc::clone(&check), rule]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_seen_inside_its_scope_only() {
        let abandoned_flag = Abandoned::default();
        let flag = abandoned_flag.flag();
        assert!(!Abandoned::scope(Arc::clone(&flag), super::abandoned));
        drop(abandoned_flag);
        assert!(Abandoned::scope(Arc::clone(&flag), super::abandoned));
        assert!(!super::abandoned(), "the thread forgets the flag after its scope");
        let panicked = std::panic::catch_unwind(|| Abandoned::scope(flag, || panic!("inside")));
        assert!(panicked.is_err());
        assert!(!super::abandoned(), "the thread forgets the flag after a panic too");
    }

    #[test]
    fn an_abandoned_optimization_stops_at_the_next_rule() -> Result<()> {
        use datafusion::execution::SessionStateBuilder;
        use datafusion::logical_expr::{LogicalPlanBuilder, col, lit};

        let state = SessionStateBuilder::new().with_default_features().build();
        let rules = interleave(state.optimizers().to_vec());
        assert!(rules.len() > 10, "DataFusion's rules with a check before each");
        let state = SessionStateBuilder::new_from_existing(state)
            .with_optimizer_rules(rules)
            .build();
        let plan = LogicalPlanBuilder::empty(true)
            .project(vec![lit(1i64).alias("x")])?
            .filter(col("x").gt(lit(0i64)))?
            .build()?;
        let running = Abandoned::default();
        Abandoned::scope(running.flag(), || state.optimize(&plan))?;
        let given_up = Abandoned::default();
        let flag = given_up.flag();
        drop(given_up);
        let stopped = Abandoned::scope(flag, || state.optimize(&plan));
        let error = stopped.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains(STOPPED), "{error}");
        Ok(())
    }
}
