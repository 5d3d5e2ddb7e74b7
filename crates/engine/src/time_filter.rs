//! `MissingTimeFilter`: advice for a query that reads a large table with no bound on its
//! `timestamp` (every segment of the table is listed). A warning by default; with
//! `EngineConfig::require_time_filter` the query is refused instead.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::LogicalPlan;
use trawl_common::{ErrorCode, TrawlError};
use trawl_storage::TrawlTable;

/// A table an optimized plan reads whole: its name and the bytes of its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unbounded {
    pub(crate) table: String,
    pub(crate) bytes: u64,
}

/// The tables of `plan` (optimized, so its scans carry their filters) read with no time bound
/// and at least `threshold` bytes large.
pub(crate) async fn unbounded_scans(plan: &LogicalPlan, threshold: Option<u64>) -> Result<Vec<Unbounded>> {
    let Some(threshold) = threshold else {
        return Ok(Vec::new());
    };
    let mut scans = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && trawl_storage::time_bounds_of_filters(&scan.filters).is_none()
        {
            scans.push((Arc::clone(&scan.source), scan.filters.clone()));
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    let mut found: Vec<Unbounded> = Vec::new();
    for (source, filters) in scans {
        let provider = source_as_provider(&source)?;
        let Some(table) = provider.downcast_ref::<TrawlTable>() else {
            continue;
        };
        let (_, bytes) = table.listed_size(&filters).await?;
        if bytes >= threshold && !found.iter().any(|u| u.table == table.name()) {
            found.push(Unbounded {
                table: table.name().to_string(),
                bytes,
            });
        }
    }
    Ok(found)
}

fn message(unbounded: &Unbounded) -> String {
    format!(
        "the query reads all of table '{}' ({:.1} MB): add a time filter, such as \
         `| where timestamp > ago(1h)`, or pick a time range",
        unbounded.table,
        unbounded.bytes as f64 / 1e6
    )
}

/// The advice for one table read whole.
pub(crate) fn warning(unbounded: &Unbounded) -> crate::QueryWarning {
    crate::QueryWarning {
        kind: "MissingTimeFilter".into(),
        message: message(unbounded),
        location: None,
    }
}

/// The refusal of a query that reads a table whole, in strict mode.
pub(crate) fn refusal(unbounded: &Unbounded) -> TrawlError {
    TrawlError::new(
        ErrorCode::BadRequest,
        format!("MissingTimeFilter: {}", message(unbounded)),
    )
}
