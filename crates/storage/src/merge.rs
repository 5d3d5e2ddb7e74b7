//! Background merge of small segments, and deletion of tombstoned objects after a grace
//! period (so queries in flight keep reading them).
//!
//! Policy (per table and kind of rows): a live segment under `small_segment_rows` is small.
//! Small segments are taken in time order, in windows of neighbours of at most `max_inputs`
//! segments and `max_output_rows` rows. A window of at least `min_inputs` segments, or of two
//! or more holding half of `max_output_rows`, is rewritten as one time-sorted segment (a
//! streaming merge of the time-sorted inputs, encoded batch by batch), unless one input holds
//! most of its rows (over 60%): a big segment is not rewritten to take in a few small ones
//! each time they arrive beside it, it waits for neighbours of its own size. A row is so
//! rewritten a few times on its way to a large segment (each merge multiplies its segment's
//! rows by 1.7 or more, about 4 at a steady rate), not once per pass. Once a kind of rows has
//! had no new small segment for `idle_after`, its small segments are merged whatever their
//! sizes, so a table that went quiet ends with few segments.
//! The merged segment is registered together with the tombstones of its inputs in one catalog
//! transaction. A crash before that commit leaves an unregistered object (ignored by
//! queries); after it, the inputs are tombstoned. Either way every row is counted exactly once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use trawl_common::metrics::{METRICS, seconds_since};

use datafusion::logical_expr::{SortExpr, ident};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::{FutureExt, StreamExt};
use trawl_catalog::{Catalog, SegmentMeta};
use trawl_common::TIME_COLUMN;
use trawl_common::shred::is_hidden_column;

use crate::schema::{row_kind, table_schema, union_columns};
use crate::segment::{SegmentEncoder, SegmentWriter};
use crate::shred::Shredder;
use crate::table::TrawlTable;
use crate::{Result, StorageError};

/// When and how much to merge.
#[derive(Debug, Clone)]
pub struct MergePolicy {
    /// Segments with fewer rows than this are merge candidates.
    pub small_segment_rows: u64,
    /// Upper bound of rows in one merged segment.
    pub max_output_rows: u64,
    /// Most segments merged at once. A merge streams its inputs but holds the pages being
    /// decoded of each (~20 MB per input for log rows), so this bounds its memory.
    pub max_inputs: usize,
    /// Fewest inputs worth a merge.
    pub min_inputs: usize,
    /// How long tombstoned objects stay readable before deletion.
    pub grace: Duration,
    /// A kind of rows of a table with no new small segment for this long is quiet: its small
    /// segments are merged whatever their sizes.
    pub idle_after: Duration,
    /// Fresh segments (merge level 0) are written with a faster codec than merged ones
    /// ([`crate::SegmentCodec`]): a quiet table's fresh segment that has no neighbour to
    /// merge with is rewritten alone, so no segment stays under the fresh codec.
    pub rewrite_lone_fresh: bool,
}

impl Default for MergePolicy {
    fn default() -> Self {
        MergePolicy {
            small_segment_rows: 500_000,
            max_output_rows: 1_000_000,
            max_inputs: 6,
            min_inputs: 4,
            grace: Duration::from_secs(300),
            idle_after: Duration::from_secs(300),
            rewrite_lone_fresh: false,
        }
    }
}

/// The most of a merge's rows one input may hold (outside quiet tables): a big segment is not
/// rewritten to take in a few small ones; it waits for inputs of its own size.
const MOST_FROM_ONE_INPUT: f64 = 0.6;

impl MergePolicy {
    /// Whether a segment of `rows` rows is a merge candidate.
    pub fn is_small(&self, rows: u64) -> bool {
        rows < self.small_segment_rows
    }

    /// The groups of `segments` (the live segments of one table) to merge now: per kind of
    /// rows (the signal the catalog recorded; for segments registered before it did,
    /// [`row_kind`] of their columns), see the module's documentation. `now` is in
    /// nanoseconds since the epoch, as `created_at`.
    pub fn plan(&self, segments: Vec<SegmentMeta>, now: i64) -> Vec<Vec<SegmentMeta>> {
        let mut by_kind: BTreeMap<&'static str, Vec<SegmentMeta>> = BTreeMap::new();
        for segment in segments.into_iter().filter(|s| self.is_small(s.rows)) {
            let kind = segment
                .signal
                .map(|signal| signal.row_kind())
                .unwrap_or_else(|| row_kind(segment.columns.iter().map(|c| c.name.as_str())));
            by_kind.entry(kind).or_default().push(segment);
        }
        by_kind
            .into_values()
            .flat_map(|kind| self.plan_kind(kind, now))
            .collect()
    }

    /// Windows of neighbours in time, oldest first: from each start, as many segments as one
    /// merge may take; merged when worth it, else the window starts one segment later.
    fn plan_kind(&self, mut segments: Vec<SegmentMeta>, now: i64) -> Vec<Vec<SegmentMeta>> {
        segments.sort_by(|a, b| (a.min_time, a.max_time, &a.id).cmp(&(b.min_time, b.max_time, &b.id)));
        let idle = i64::try_from(self.idle_after.as_nanos()).unwrap_or(i64::MAX);
        let newest = segments.iter().map(|s| s.created_at).max().unwrap_or(i64::MIN);
        let quiet = now.saturating_sub(newest) >= idle;
        let mut chosen: Vec<std::ops::Range<usize>> = Vec::new();
        let mut start = 0;
        while start < segments.len() {
            let (mut end, mut rows, mut biggest) = (start, 0u64, 0u64);
            while end < segments.len()
                && end - start < self.max_inputs.max(2)
                && rows + segments[end].rows <= self.max_output_rows
            {
                rows += segments[end].rows;
                biggest = biggest.max(segments[end].rows);
                end += 1;
            }
            let inputs = end - start;
            let enough =
                inputs >= self.min_inputs.max(2) || (inputs >= 2 && (quiet || rows >= self.max_output_rows / 2));
            let balanced = quiet || biggest as f64 <= rows as f64 * MOST_FROM_ONE_INPUT;
            let lone_fresh = quiet && self.rewrite_lone_fresh && inputs == 1 && segments[start].merge_level == 0;
            if (enough && balanced) || lone_fresh {
                chosen.push(start..end);
                start = end;
            } else {
                start += 1;
            }
        }
        let mut groups = Vec::with_capacity(chosen.len());
        for range in chosen.into_iter().rev() {
            groups.push(segments.drain(range).collect());
        }
        groups.reverse();
        groups
    }
}

/// What one merge pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MergeReport {
    pub merges: usize,
    pub inputs: usize,
    pub rows: u64,
    /// Groups that could not be merged this pass (logged; their segments stay).
    pub failed: usize,
    /// Live segments of every table after the pass.
    pub live: usize,
    /// Of those, the small ones (under `small_segment_rows`): what merging has yet to do.
    pub small: usize,
}

/// Merges small segments of every table.
#[derive(Clone)]
pub struct Merger {
    catalog: Arc<dyn Catalog>,
    writer: SegmentWriter,
    context: SessionContext,
    policy: MergePolicy,
    /// Where merges read, sort and encode, when not on the caller's runtime.
    runtime: Option<tokio::runtime::Handle>,
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
        // Small batches and no splitting of files: every input stays one time-ordered stream.
        let mut config = SessionConfig::new()
            .with_batch_size(4096)
            .with_repartition_file_scans(false);
        // Plain strings: a string view would keep whole decoded pages of every input alive.
        config.options_mut().execution.parquet.schema_force_view_types = false;
        let context = SessionContext::new_with_config(config);
        writer.store().register_with(context.runtime_env().as_ref())?;
        Ok(Merger {
            catalog,
            writer,
            context,
            policy,
            runtime: None,
        })
    }

    /// Merges read, sort and encode their rows on `runtime` (a runtime of lower priority, so
    /// they take the CPU ingest and queries leave idle); the catalog is read and written from
    /// the caller's. The store's requests of a merge are made from `runtime` too: give the
    /// merger a store client of its own.
    pub fn on_runtime(mut self, runtime: tokio::runtime::Handle) -> Merger {
        self.runtime = Some(runtime);
        self
    }

    /// One pass over every table.
    pub async fn merge_once(&self) -> Result<MergeReport> {
        let mut report = MergeReport::default();
        for database in self.catalog.databases().await? {
            for table in self.catalog.tables(&database).await? {
                let segments = self.catalog.live_segments(&database, &table.name, None).await?;
                report.live += segments.len();
                report.small += segments.iter().filter(|s| self.policy.is_small(s.rows)).count();
                let now = trawl_common::time::now_nanos();
                for group in self.policy.plan(segments, now) {
                    let inputs = group.len();
                    // A group that cannot be merged (a damaged input, even one a decoder panics
                    // on) stays as it is; the other groups are merged.
                    let merged = std::panic::AssertUnwindSafe(self.merge_group(&database, &table.name, group))
                        .catch_unwind()
                        .await;
                    match merged {
                        Ok(Ok(rows)) => {
                            report.inputs += inputs;
                            report.rows += rows;
                            report.merges += 1;
                            report.live = report.live + 1 - inputs;
                            report.small = report.small + usize::from(self.policy.is_small(rows)) - inputs;
                        }
                        Ok(Err(error)) => {
                            tracing::warn!(database, table = table.name, %error, "a merge failed; its segments stay as they are");
                            report.failed += 1;
                        }
                        Err(_) => {
                            tracing::error!(
                                database,
                                table = table.name,
                                "a merge failed: a segment's decoder panicked (a damaged file?); its segments stay as they are"
                            );
                            report.failed += 1;
                        }
                    }
                }
            }
        }
        Ok(report)
    }

    async fn merge_group(&self, database: &str, table: &str, group: Vec<SegmentMeta>) -> Result<u64> {
        let inputs: Vec<String> = group.iter().map(|s| s.id.clone()).collect();
        let build = merged_segment(
            self.context.clone(),
            self.writer.clone(),
            database.to_string(),
            table.to_string(),
            group,
        );
        let merged = match &self.runtime {
            Some(runtime) => match runtime.spawn(build).await {
                Ok(merged) => merged?,
                // As if it had panicked here: the pass counts the group as failed.
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                Err(error) => return Err(StorageError::Invalid(format!("the merge was stopped: {error}"))),
            },
            None => build.await?,
        };
        let rows = merged.rows;
        let committing = std::time::Instant::now();
        let committed = self.catalog.commit_segments(&[merged], &inputs).await;
        METRICS.catalog_commit_seconds.observe(seconds_since(committing));
        if committed.is_err() {
            METRICS.catalog_errors.inc();
        }
        committed?;
        METRICS.storage_merges.inc();
        METRICS.storage_segments_merged.inc_by(inputs.len() as u64);
        tracing::info!(database, table, inputs = inputs.len(), rows, "merged segments");
        Ok(rows)
    }

    /// Deletes segment objects no segment of the catalog names — written, then never
    /// registered (a crash between the put and the commit, or a commit that failed for good) —
    /// once they are older than `older_than`, so an object whose commit is on its way is left
    /// alone. The store is listed before the catalog is read, so an object registered in
    /// between is seen as registered. Returns how many were deleted.
    pub async fn sweep_orphans(&self, older_than: std::time::Duration) -> Result<usize> {
        use futures::TryStreamExt;
        let cutoff = chrono::Utc::now() - chrono::Duration::from_std(older_than).unwrap_or(chrono::Duration::MAX);
        let store = self.writer.store().object_store();
        let candidates: Vec<object_store::ObjectMeta> = store
            .list(None)
            .try_filter(|object| {
                std::future::ready(object.location.as_ref().ends_with(".parquet") && object.last_modified < cutoff)
            })
            .try_collect()
            .await?;
        if candidates.is_empty() {
            return Ok(0);
        }
        let known: std::collections::HashSet<String> = self.catalog.segment_paths().await?.into_iter().collect();
        let mut deleted = 0;
        for object in candidates {
            let path = object.location.to_string();
            if known.contains(&path) {
                continue;
            }
            tracing::info!(%path, modified = %object.last_modified, "deleting an object no segment names");
            self.writer.store().delete(&path).await?;
            deleted += 1;
        }
        METRICS.storage_orphans_deleted.inc_by(deleted as u64);
        Ok(deleted)
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
        METRICS.storage_segments_deleted.inc_by(ids.len() as u64);
        Ok(ids.len())
    }
}

/// The segment `group` merges into, written to the store (not registered).
async fn merged_segment(
    context: SessionContext,
    writer: SegmentWriter,
    database: String,
    table: String,
    group: Vec<SegmentMeta>,
) -> Result<SegmentMeta> {
    let columns = union_columns(group.iter().map(|s| s.columns.as_slice()));
    let min_time = group.iter().map(|s| s.min_time).min().unwrap_or(i64::MIN);
    let max_time = group.iter().map(|s| s.max_time).max().unwrap_or(i64::MAX);
    let merge_level = group.iter().map(|s| s.merge_level).max().unwrap_or(0) + 1;
    let group_rows: u64 = group.iter().map(|s| s.rows).sum();
    let input_bytes: u64 = group.iter().map(|s| s.bytes).sum();
    // One kind of rows per group; the signal is kept when the inputs recorded it.
    let signal = group.iter().find_map(|s| s.signal);
    // Hidden columns are computed again from the bags, so rows of segments written before
    // a key was shredded get theirs too.
    let columns: Vec<_> = columns.into_iter().filter(|c| !is_hidden_column(&c.name)).collect();
    let provider = TrawlTable::with_segments(table_schema(&columns), group);
    let mut frame = context.read_table(Arc::new(provider))?;
    if columns.iter().any(|c| c.name == TIME_COLUMN) {
        frame = frame.sort(vec![SortExpr::new(ident(TIME_COLUMN), true, true)])?;
    }
    let expected_rows = usize::try_from(group_rows).unwrap_or(usize::MAX);
    // The plan is a streaming merge of the inputs (each time-sorted), not a full sort.
    let mut stream = frame.execute_stream().await?;
    let shredder = Shredder::new(&stream.schema());
    let columns = shredder.columns(&columns);
    let mut encoder = SegmentEncoder::new(shredder.schema(), expected_rows)?
        .with_capacity(usize::try_from(input_bytes + input_bytes / 16).unwrap_or(0));
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        encoder.write(&shredder.shred(&batch)?)?;
    }
    if rows != group_rows {
        return Err(StorageError::Invalid(format!(
            "merge read {rows} rows from segments that hold {group_rows}; nothing changed"
        )));
    }
    let bytes = encoder.finish()?;
    let mut merged = writer
        .write_encoded(&database, &table, bytes, columns, min_time, max_time, rows, merge_level)
        .await?;
    merged.signal = signal;
    METRICS.storage_segments_written.inc();
    METRICS.storage_segment_bytes_written.inc_by(merged.bytes);
    Ok(merged)
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
