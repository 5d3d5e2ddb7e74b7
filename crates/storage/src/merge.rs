//! Background merge of small segments, and deletion of tombstoned objects after a grace
//! period (so queries in flight keep reading them).
//!
//! Policy: per table, live segments under `small_segment_rows` are taken in time order and
//! cut into groups of at most `max_output_rows`; a group of at least `min_inputs` segments is
//! rewritten as one time-sorted segment, registered together with the tombstones of its
//! inputs in one catalog transaction. A crash before that commit leaves an unregistered
//! object (ignored by queries); after it, the inputs are tombstoned. Either way every row is
//! counted exactly once.

use std::sync::Arc;
use std::time::Duration;

use datafusion::logical_expr::{SortExpr, ident};
use datafusion::prelude::SessionContext;
use trawl_catalog::{Catalog, SegmentMeta};
use trawl_common::TIME_COLUMN;

use crate::Result;
use crate::schema::{table_schema, union_columns};
use crate::segment::SegmentWriter;
use crate::table::TrawlTable;

/// When and how much to merge.
#[derive(Debug, Clone)]
pub struct MergePolicy {
    /// Segments with fewer rows than this are merge candidates.
    pub small_segment_rows: u64,
    /// Upper bound of rows in one merged segment.
    pub max_output_rows: u64,
    /// Fewest inputs worth a merge.
    pub min_inputs: usize,
    /// How long tombstoned objects stay readable before deletion.
    pub grace: Duration,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            small_segment_rows: 1_000_000,
            max_output_rows: 2_000_000,
            min_inputs: 4,
            grace: Duration::from_secs(300),
        }
    }
}

/// What one merge pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MergeReport {
    pub merges: usize,
    pub inputs: usize,
    pub rows: u64,
}

/// Merges small segments of every table.
#[derive(Clone)]
pub struct Merger {
    catalog: Arc<dyn Catalog>,
    writer: SegmentWriter,
    context: SessionContext,
    policy: MergePolicy,
}

impl std::fmt::Debug for Merger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Merger")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Merger {
    pub fn new(catalog: Arc<dyn Catalog>, writer: SegmentWriter, policy: MergePolicy) -> Result<Merger> {
        let context = SessionContext::new();
        writer.store().register_with(context.runtime_env().as_ref())?;
        Ok(Merger {
            catalog,
            writer,
            context,
            policy,
        })
    }

    /// One pass over every table.
    pub async fn merge_once(&self) -> Result<MergeReport> {
        let mut report = MergeReport::default();
        for database in self.catalog.databases().await? {
            for table in self.catalog.tables(&database).await? {
                let segments = self.catalog.live_segments(&database, &table.name, None).await?;
                for group in self.plan_groups(segments) {
                    report.inputs += group.len();
                    report.rows += self.merge_group(&database, &table.name, group).await?;
                    report.merges += 1;
                }
            }
        }
        Ok(report)
    }

    fn plan_groups(&self, segments: Vec<SegmentMeta>) -> Vec<Vec<SegmentMeta>> {
        let mut groups = Vec::new();
        let mut current: Vec<SegmentMeta> = Vec::new();
        let mut current_rows = 0;
        for segment in segments.into_iter().filter(|s| s.rows < self.policy.small_segment_rows) {
            if current_rows + segment.rows > self.policy.max_output_rows && !current.is_empty() {
                groups.push(std::mem::take(&mut current));
                current_rows = 0;
            }
            current_rows += segment.rows;
            current.push(segment);
        }
        groups.push(current);
        groups.retain(|g| g.len() >= self.policy.min_inputs);
        groups
    }

    async fn merge_group(&self, database: &str, table: &str, group: Vec<SegmentMeta>) -> Result<u64> {
        let columns = union_columns(group.iter().map(|s| s.columns.as_slice()));
        let min_time = group.iter().map(|s| s.min_time).min().unwrap_or(i64::MIN);
        let max_time = group.iter().map(|s| s.max_time).max().unwrap_or(i64::MAX);
        let merge_level = group.iter().map(|s| s.merge_level).max().unwrap_or(0) + 1;
        let inputs: Vec<String> = group.iter().map(|s| s.id.clone()).collect();
        let provider = TrawlTable::with_segments(table_schema(&columns), group);
        let mut frame = self.context.read_table(Arc::new(provider))?;
        if columns.iter().any(|c| c.name == TIME_COLUMN) {
            frame = frame.sort(vec![SortExpr::new(ident(TIME_COLUMN), true, true)])?;
        }
        let batches = frame.collect().await?;
        let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
        let merged = self
            .writer
            .write_batches(database, table, batches, columns, min_time, max_time, merge_level)
            .await?;
        self.catalog.commit_segments(&[merged], &inputs).await?;
        tracing::info!(database, table, inputs = inputs.len(), rows, "merged segments");
        Ok(rows)
    }

    /// Deletes objects of segments tombstoned longer ago than the grace period.
    pub async fn purge_once(&self) -> Result<usize> {
        let grace = i64::try_from(self.policy.grace.as_nanos()).unwrap_or(i64::MAX);
        let cutoff = trawl_common::time::now_nanos().saturating_sub(grace);
        let dead = self.catalog.tombstoned_before(cutoff).await?;
        let mut ids = Vec::with_capacity(dead.len());
        for segment in dead {
            self.writer.store().delete(&segment.path).await?;
            ids.push(segment.id);
        }
        self.catalog.forget_segments(&ids).await?;
        Ok(ids.len())
    }
}
