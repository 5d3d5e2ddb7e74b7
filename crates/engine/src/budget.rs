//! The memory budget of `summarize`: every final grouping aggregation of a query holds its
//! groups within `summarize_memory_limit_bytes`. Past it the aggregation stops (and its node
//! records that it tripped, [`tripped`]) instead of spilling or growing; the engine then runs
//! the same plan rewritten to keep only the groups whose key hash falls in half the hash range
//! (then a quarter, …; `trawl_planner::budget`) and says so with a `SummarizeMemoryLimit`
//! warning. Whole groups are dropped, never parts of one, and the server never runs out of
//! memory for a summarize.
//!
//! [`BudgetAggregates`] is a physical optimizer rule that wraps each final (or single-stage)
//! grouped `AggregateExec` in a [`ContextExec`]; that node runs the aggregate in a
//! task context whose memory pool counts its reservations against the budget and whose disk
//! manager allows no spilling (so the aggregate reports the overrun rather than spilling).
//! Sorts and joins keep the shared pool and spill as before.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};

use crate::memory::{Limit, LimitedPool, MemoryUse};

/// Part of the error an aggregation over its budget stops with.
pub(crate) const BUDGET_EXCEEDED: &str = "summarize memory budget exceeded";

/// The budget of a budgeted aggregate of `plan` that went over it while it ran.
pub(crate) fn tripped(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    let mut tripped = None;
    let _ = plan.apply(|node| {
        if let Some(context) = node.downcast_ref::<ContextExec>()
            && let Context::Budget {
                tripped: flag, limit, ..
            } = &context.context
            && flag.load(Ordering::Acquire)
        {
            tripped = Some(*limit);
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    tripped
}

/// `plan` with the budgets the query's summarizes asked for (`hint.budget`): a budgeted
/// aggregate whose group keys are named as a hint's keys gets the smaller of the two limits.
pub(crate) fn with_hints(
    plan: Arc<dyn ExecutionPlan>,
    hints: &[trawl_planner::SummarizeBudget],
) -> Result<Arc<dyn ExecutionPlan>> {
    if hints.is_empty() {
        return Ok(plan);
    }
    plan.transform_up(|node| {
        let Some(context) = node.downcast_ref::<ContextExec>() else {
            return Ok(Transformed::no(node));
        };
        let (Context::Budget { limit, .. }, Some(aggregate)) =
            (&context.context, context.inner.downcast_ref::<AggregateExec>())
        else {
            return Ok(Transformed::no(node));
        };
        let names: Vec<&str> = aggregate
            .group_expr()
            .expr()
            .iter()
            .map(|(_, name)| name.as_str())
            .collect();
        let hinted = hints
            .iter()
            .filter(|hint| hint.keys.iter().map(String::as_str).eq(names.iter().copied()))
            .map(|hint| hint.bytes)
            .min();
        match hinted {
            Some(bytes) if bytes < *limit => Ok(Transformed::yes(ContextExec::wrap(
                Arc::clone(&context.inner),
                Context::Budget {
                    used: Arc::new(MemoryUse::default()),
                    limit: bytes,
                    tripped: Arc::new(AtomicBool::new(false)),
                },
            ))),
            _ => Ok(Transformed::no(node)),
        }
    })
    .data()
}

/// Whether a budgeted aggregate on a worker of a distributed plan refused memory.
pub(crate) fn tripped_on_worker(error: &DataFusionError) -> bool {
    // Another node's error arrives as its variant and text: the budget's own error is a
    // `ResourcesExhausted` that starts with its marker.
    error.iter().any(|cause| match cause {
        DataFusionError::ResourcesExhausted(message) => message.starts_with(BUDGET_EXCEEDED),
        DataFusionError::Shared(inner) => tripped_on_worker(inner),
        _ => false,
    })
}

/// The error of a summarize still over its budget with the fewest groups tried.
pub(crate) fn too_large(error: &DataFusionError) -> trawl_common::TrawlError {
    trawl_common::TrawlError::new(
        trawl_common::ErrorCode::BadRequest,
        format!(
            "a summarize needs more memory than its budget even with 1/{} of its groups: {}",
            1u64 << MAX_FRACTION_BITS,
            error.find_root()
        ),
    )
}

/// Halvings of the groups tried before the query fails (down to 1 group in 64).
pub(crate) const MAX_FRACTION_BITS: u32 = 6;

/// The warning of a result that kept 1 of 2^`bits` of its groups.
pub(crate) fn warning(bits: u32, limit_bytes: usize) -> trawl_planner::QueryWarning {
    let limit = if limit_bytes >= 1 << 20 {
        format!("{} MiB", limit_bytes >> 20)
    } else {
        format!("{} KiB", limit_bytes >> 10)
    };
    trawl_planner::QueryWarning {
        kind: "SummarizeMemoryLimit".into(),
        message: format!(
            "a summarize needed more than its memory budget ({limit}): the result keeps the groups \
             whose key hash falls in 1/{} of the hash range and drops the others whole; group by \
             fewer or coarser keys, filter first, or raise the budget (summarize hint.budget, \
             up to the server's summarize_memory_limit)",
            1u64 << bits
        ),
        location: None,
    }
}

/// The rule; see the module documentation.
#[derive(Debug)]
pub(crate) struct BudgetAggregates {
    pub limit_bytes: usize,
}

impl PhysicalOptimizerRule for BudgetAggregates {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            let grouped = !aggregate.group_expr().expr().is_empty();
            let holds_groups = !matches!(aggregate.mode(), AggregateMode::Partial);
            if !grouped || !holds_groups {
                return Ok(Transformed::no(node));
            }
            // The aggregate's input runs in the query's own context again.
            let children: Vec<Arc<dyn ExecutionPlan>> = node
                .children()
                .into_iter()
                .map(|child| ContextExec::wrap(Arc::clone(child), Context::Query))
                .collect();
            let node = datafusion::physical_plan::execution_plan::replace_children_if_necessary(node, children)?;
            let wrapped = ContextExec::wrap(
                node,
                Context::Budget {
                    used: Arc::new(MemoryUse::default()),
                    limit: self.limit_bytes,
                    tripped: Arc::new(AtomicBool::new(false)),
                },
            );
            Ok(Transformed::yes(wrapped))
        })
        .data()
    }

    fn name(&self) -> &str {
        "summarize_memory_budget"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The task context a [`ContextExec`] runs its input in.
#[derive(Debug, Clone)]
enum Context {
    /// The aggregate's budget: bytes its partitions hold now, the limit, and whether it was
    /// reached.
    Budget {
        used: Arc<MemoryUse>,
        limit: usize,
        tripped: Arc<AtomicBool>,
    },
    /// The query's own context again (below a budgeted aggregate).
    Query,
}

/// The query's own task context, carried inside a budgeted one.
#[derive(Debug)]
struct QueryContext(Arc<TaskContext>);

/// Runs its input in another task context: a budgeted aggregate, or the input below it.
#[derive(Debug)]
pub(crate) struct ContextExec {
    inner: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    context: Context,
}

impl ContextExec {
    fn wrap(inner: Arc<dyn ExecutionPlan>, context: Context) -> Arc<dyn ExecutionPlan> {
        Arc::new(ContextExec {
            properties: Arc::clone(inner.properties()),
            inner,
            context,
        })
    }

    /// The node as another query node sent it: a budget of `limit` bytes of its own (a
    /// worker's share of the aggregate), or the query's own context when `None`.
    pub(crate) fn decoded(inner: Arc<dyn ExecutionPlan>, limit: Option<usize>) -> Arc<dyn ExecutionPlan> {
        let context = match limit {
            Some(limit) => Context::Budget {
                used: Arc::new(MemoryUse::default()),
                limit,
                tripped: Arc::new(AtomicBool::new(false)),
            },
            None => Context::Query,
        };
        ContextExec::wrap(inner, context)
    }

    /// The budget's limit, when the node runs a budgeted aggregate.
    pub(crate) fn budget_limit(&self) -> Option<usize> {
        match &self.context {
            Context::Budget { limit, .. } => Some(*limit),
            Context::Query => None,
        }
    }

    /// `context` with a pool that counts against the budget and no spilling; the query's own
    /// context rides along for the input.
    fn budgeted(
        context: Arc<TaskContext>,
        used: &Arc<MemoryUse>,
        limit: usize,
        tripped: &Arc<AtomicBool>,
    ) -> Result<Arc<TaskContext>> {
        let base = context.runtime_env();
        let pool: Arc<dyn MemoryPool> = Arc::new(
            LimitedPool::new(Arc::clone(&base.memory_pool), Arc::clone(used), limit, Limit::Summarize)
                .tripping(Arc::clone(tripped)),
        );
        let runtime = RuntimeEnvBuilder::from_runtime_env(&base)
            .with_memory_pool(pool)
            .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled))
            .build_arc()?;
        let config = context
            .session_config()
            .clone()
            .with_extension(Arc::new(QueryContext(Arc::clone(&context))));
        Ok(Arc::new(TaskContext::new(
            context.task_id(),
            context.session_id(),
            config,
            context.scalar_functions().clone(),
            context.higher_order_functions().clone(),
            context.aggregate_functions().clone(),
            context.window_functions().clone(),
            runtime,
        )))
    }
}

impl DisplayAs for ContextExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.context {
            Context::Budget { limit, .. } => write!(f, "BudgetedAggregateExec: limit={limit} bytes"),
            Context::Query => write!(f, "OwnContextExec"),
        }
    }
}

impl ExecutionPlan for ContextExec {
    fn name(&self) -> &str {
        match self.context {
            Context::Budget { .. } => "BudgetedAggregateExec",
            Context::Query => "OwnContextExec",
        }
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.inner]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(inner) = children.into_iter().next() else {
            return Err(DataFusionError::Internal("a context node needs its input".into()));
        };
        Ok(ContextExec::wrap(inner, self.context.clone()))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let context = match &self.context {
            Context::Budget { used, limit, tripped } => ContextExec::budgeted(context, used, *limit, tripped)?,
            Context::Query => match context.session_config().get_extension::<QueryContext>() {
                Some(query) => Arc::clone(&query.0),
                None => context,
            },
        };
        self.inner.execute(partition, context)
    }
}
