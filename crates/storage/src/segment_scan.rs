//! [`SegmentScanExec`]: a scan of listed segments whose pruning is decided where it runs.
//!
//! A [`crate::TrawlTable`] scan normally reads the footers of every segment it lists while
//! the query is planned, and plans Parquet reads of the chunks its filters may pass. A
//! distributed query must not do that on the node that plans it: the footers, bloom filters
//! and chunk statistics of a segment are read by the node that scans it, whose local cache
//! holds them. So in a session marked with [`LazyScans`], the table plans this node instead:
//! the listed segments, the columns wanted, the filters and the row limit. When a partition is
//! executed, its segments are classified and read there, exactly as the eager scan would
//! (the same code: `TrawlTable::plan_listed`).
//!
//! The node knows nothing of the network; the engine's codec carries it to workers, and
//! splits its segments among them (`segments`, `with_segments`).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, Statistics};
use datafusion::error::DataFusionError;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, MetricValue, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties};
use futures::{StreamExt, TryStreamExt};
use trawl_catalog::SegmentMeta;
use trawl_common::metrics::METRICS;

use crate::live_scans::{self, LiveTotals, ScanTotals};
use crate::progress::ScanCounters;
use crate::table::TrawlTable;

/// Marks a session whose table scans plan [`SegmentScanExec`] nodes instead of reading
/// footers while planning.
#[derive(Debug, Default, Clone)]
pub struct LazyScans {
    /// The query the scans belong to: they add what they read to its live totals
    /// ([`crate::live_scans`]) on whichever node runs them.
    pub query: Option<String>,
}

/// What one scan reads: everything but where its segments are.
#[derive(Debug, Clone)]
pub struct ScanSpec {
    pub database: String,
    pub table: String,
    /// The table's schema.
    pub schema: SchemaRef,
    /// Indices of the columns the scan returns, in order.
    pub projection: Vec<usize>,
    /// The filters pushed into the scan (the table answered `Exact` for those statistics can
    /// decide: the scan applies them).
    pub filters: Vec<Expr>,
    pub limit: Option<usize>,
    /// See [`LazyScans::query`].
    pub query: Option<String>,
}

/// The scan; see the module documentation.
#[derive(Debug)]
pub struct SegmentScanExec {
    spec: Arc<ScanSpec>,
    /// The segments of each output partition.
    partitions: Vec<Vec<SegmentMeta>>,
    /// The worker this copy of the scan is meant for, when the engine split a scan among
    /// workers (it routes the copy there).
    worker: Option<String>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl SegmentScanExec {
    /// A scan of `segments` spread over `partitions` output partitions, balancing bytes.
    pub fn new(spec: ScanSpec, segments: Vec<SegmentMeta>, partitions: usize) -> Result<SegmentScanExec> {
        SegmentScanExec::with_partitions(Arc::new(spec), spread(segments, partitions), None)
    }

    /// A scan of exactly these partitions, meant for `worker`.
    pub fn with_partitions(
        spec: Arc<ScanSpec>,
        partitions: Vec<Vec<SegmentMeta>>,
        worker: Option<String>,
    ) -> Result<SegmentScanExec> {
        let output = Arc::new(spec.schema.project(&spec.projection)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(output),
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(SegmentScanExec {
            spec,
            partitions,
            worker,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    pub fn spec(&self) -> &Arc<ScanSpec> {
        &self.spec
    }

    /// The segments of each output partition.
    pub fn partitions(&self) -> &[Vec<SegmentMeta>] {
        &self.partitions
    }

    /// Every segment the scan reads.
    pub fn segments(&self) -> impl Iterator<Item = &SegmentMeta> {
        self.partitions.iter().flatten()
    }

    /// Bytes of every segment the scan reads.
    pub fn bytes(&self) -> u64 {
        self.segments().map(|s| s.bytes).sum()
    }

    pub fn worker(&self) -> Option<&str> {
        self.worker.as_deref()
    }

    /// The same scan over `segments`, with the same number of partitions, meant for `worker`.
    pub fn with_segments(&self, segments: Vec<SegmentMeta>, worker: Option<String>) -> Result<SegmentScanExec> {
        let partitions = spread(segments, self.partitions.len().max(1));
        SegmentScanExec::with_partitions(Arc::clone(&self.spec), partitions, worker)
    }

    fn exact_rows(&self, partition: Option<usize>) -> Option<usize> {
        if !self.spec.filters.is_empty() || self.spec.limit.is_some() {
            return None;
        }
        let rows: u64 = match partition {
            Some(index) => self.partitions.get(index)?.iter().map(|s| s.rows).sum(),
            None => self.segments().map(|s| s.rows).sum(),
        };
        usize::try_from(rows).ok()
    }
}

/// `segments` in `count` groups of about equal bytes (each group in time order).
fn spread(segments: Vec<SegmentMeta>, count: usize) -> Vec<Vec<SegmentMeta>> {
    let sized = segments.into_iter().map(|s| (s.bytes, s)).collect();
    let mut groups = balanced(sized, count.max(1));
    for group in &mut groups {
        group.sort_by_key(|s| s.min_time);
    }
    groups
}

/// `items` (each with its size) in `count` groups of about equal total size: the largest
/// first, each into the group smallest so far.
pub(crate) fn balanced<T>(mut items: Vec<(u64, T)>, count: usize) -> Vec<Vec<T>> {
    let mut groups: Vec<(u64, Vec<T>)> = (0..count).map(|_| (0, Vec::new())).collect();
    items.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    for (size, item) in items {
        if let Some(group) = groups.iter_mut().min_by_key(|g| g.0) {
            group.0 += size;
            group.1.push(item);
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

impl DisplayAs for SegmentScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let segments = self.segments().count();
        write!(
            f,
            "SegmentScanExec: table={}, segments={segments}, bytes={}, partitions={}",
            self.spec.table,
            self.bytes(),
            self.partitions.len()
        )?;
        if !self.spec.filters.is_empty() {
            let filters: Vec<String> = self.spec.filters.iter().map(|f| f.to_string()).collect();
            write!(f, ", filters=[{}]", filters.join(", "))?;
        }
        if let Some(limit) = self.spec.limit {
            write!(f, ", limit={limit}")?;
        }
        if let Some(worker) = &self.worker {
            write!(f, ", worker={worker}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for SegmentScanExec {
    fn name(&self) -> &str {
        "SegmentScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut statistics = Statistics::new_unknown(&self.schema());
        if let Some(rows) = self.exact_rows(partition) {
            statistics.num_rows = Precision::Exact(rows);
        }
        Ok(Arc::new(statistics))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let segments = self.partitions.get(partition).cloned().unwrap_or_default();
        let spec = Arc::clone(&self.spec);
        let schema = self.schema();
        let rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        let scanned = Scanned::new(&self.metrics, partition);
        let live = spec.query.as_deref().map(live_scans::totals_of);
        let stream = futures::stream::once(async move {
            if segments.is_empty() {
                return Ok(futures::stream::empty().boxed());
            }
            let counters = Arc::new(ScanCounters::default());
            let state = SessionStateBuilder::new()
                .with_config(context.session_config().clone())
                .with_runtime_env(context.runtime_env())
                .build();
            let table = TrawlTable::assigned(&spec, Arc::clone(&counters));
            let plan = table
                .plan_listed(&state, segments.clone(), &spec.projection, &spec.filters, spec.limit)
                .await?;
            let chunks = scanned.planned(&segments, &counters, live.as_deref());
            let count = plan.output_partitioning().partition_count();
            let streams = (0..count)
                .map(|index| plan.execute(index, Arc::clone(&context)))
                .collect::<Result<Vec<_>>>()?;
            // Counts what the plan read when the stream ends or is dropped (a limit met), and
            // as it goes into the query's live totals.
            let mut done = Finished {
                plan,
                scanned,
                live,
                chunks,
                reported: ScanTotals::default(),
            };
            let stream = futures::stream::iter(streams).flatten().map(move |batch| {
                if done.live.is_some() {
                    done.report();
                }
                batch
            });
            Ok::<_, DataFusionError>(stream.boxed())
        })
        .try_flatten()
        .inspect_ok(move |batch| rows.add(batch.num_rows()));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// What a partition of the scan read, kept in its metrics (which travel back from workers)
/// and counted into this node's metrics.
struct Scanned {
    rows: Count,
    bytes: Count,
    segments: Count,
    unreadable: Count,
    chunks_read: Count,
    skipped_range: Count,
    skipped_bloom: Count,
    skipped_required_fields: Count,
    skipped_bytes: Count,
    raw_bytes: Count,
    skipped_raw_bytes: Count,
    bloom_bytes: Count,
    predicate_checks: Count,
    scan_nanos: Count,
}

impl Scanned {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Scanned {
        let count = |name: &'static str| MetricBuilder::new(metrics).counter(name, partition);
        Scanned {
            rows: count(ROWS_READ),
            bytes: count(BYTES_READ),
            segments: count(SEGMENTS_READ),
            unreadable: count(SEGMENTS_UNREADABLE),
            chunks_read: count(CHUNKS_READ),
            skipped_range: count(CHUNKS_SKIPPED_RANGE),
            skipped_bloom: count(CHUNKS_SKIPPED_BLOOM),
            skipped_required_fields: count(CHUNKS_SKIPPED_REQUIRED_FIELDS),
            skipped_bytes: count(SKIPPED_BYTES),
            raw_bytes: count(RAW_BYTES_READ),
            skipped_raw_bytes: count(SKIPPED_RAW_BYTES),
            bloom_bytes: count(BLOOM_BYTES),
            predicate_checks: count(PREDICATE_CHECKS),
            scan_nanos: count(SCAN_NANOS),
        }
    }

    /// Counts what planning the partition decided (into `live` too: the chunks skipped);
    /// returns the chunks it reads.
    fn planned(&self, segments: &[SegmentMeta], counters: &ScanCounters, live: Option<&LiveTotals>) -> u64 {
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let unreadable = counters.take_unreadable();
        for segment in &unreadable {
            tracing::warn!(segment = %segment.id, message = %segment.message, "a query leaves out an unreadable segment");
        }
        self.segments.add(segments.len().saturating_sub(unreadable.len()));
        self.unreadable.add(unreadable.len());
        let chunks = counters.planned_total();
        let skipped = ScanTotals {
            skipped_range: load(&counters.chunks_skipped_range),
            skipped_bloom: load(&counters.chunks_skipped_bloom),
            skipped_required_fields: load(&counters.chunks_skipped_required_fields),
            skipped_bytes: load(&counters.skipped_compressed_bytes),
            skipped_raw_bytes: load(&counters.skipped_raw_bytes),
            bloom_bytes: load(&counters.index_bytes),
            ..ScanTotals::default()
        };
        self.chunks_read.add(size(chunks));
        self.skipped_range.add(size(skipped.skipped_range));
        self.skipped_bloom.add(size(skipped.skipped_bloom));
        self.skipped_required_fields.add(size(skipped.skipped_required_fields));
        self.skipped_bytes.add(size(skipped.skipped_bytes));
        self.skipped_raw_bytes.add(size(skipped.skipped_raw_bytes));
        self.bloom_bytes.add(size(skipped.bloom_bytes));
        if let Some(live) = live {
            live.add(skipped);
        }
        chunks
    }
}

/// Names of the metrics a [`SegmentScanExec`] keeps (beside `output_rows`), which travel
/// back from workers with the plan's other metrics.
pub const SEGMENTS_READ: &str = "segments_read";
pub const SEGMENTS_UNREADABLE: &str = "segments_unreadable";
pub const CHUNKS_READ: &str = "chunks_read";
pub const CHUNKS_SKIPPED_RANGE: &str = "chunks_skipped_range";
pub const CHUNKS_SKIPPED_BLOOM: &str = "chunks_skipped_bloom";
pub const CHUNKS_SKIPPED_REQUIRED_FIELDS: &str = "chunks_skipped_required_fields";
pub const SKIPPED_BYTES: &str = "chunk_skipped_compressed_bytes";
/// Uncompressed bytes of the chunks read and skipped.
pub const RAW_BYTES_READ: &str = "chunk_scanned_raw_bytes";
pub const SKIPPED_RAW_BYTES: &str = "chunk_skipped_raw_bytes";
/// Bytes of bloom filters (the token index's and Parquet's) evaluated.
pub const BLOOM_BYTES: &str = "bloom_filter_bytes";
/// Rows the scan's filters were evaluated on.
pub const PREDICATE_CHECKS: &str = "segment_predicate_checks";
/// Nanoseconds the scan's Parquet readers spent reading and decoding.
pub const SCAN_NANOS: &str = "segment_scan_nanos";

/// Records what a partition's plan read: into the query's live totals as it goes, into the
/// scan's metrics and this node's once it is done with.
struct Finished {
    plan: Arc<dyn ExecutionPlan>,
    scanned: Scanned,
    live: Option<Arc<LiveTotals>>,
    /// Chunks the plan reads (counted live when it is done).
    chunks: u64,
    /// What was already added to the live totals.
    reported: ScanTotals,
}

impl Finished {
    /// Adds what the plan read since the last call to the live totals.
    fn report(&mut self) -> ScanTotals {
        let read = read_by(self.plan.as_ref());
        if let Some(live) = &self.live {
            live.add(read.minus(self.reported));
        }
        self.reported = read.max(self.reported);
        read
    }
}

impl Drop for Finished {
    fn drop(&mut self) {
        let read = self.report();
        if let Some(live) = &self.live {
            live.add(ScanTotals {
                chunks_read: self.chunks,
                ..ScanTotals::default()
            });
        }
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        self.scanned.rows.add(size(read.rows));
        self.scanned.bytes.add(size(read.bytes));
        self.scanned.raw_bytes.add(size(read.raw_bytes));
        self.scanned.skipped_raw_bytes.add(size(read.skipped_raw_bytes));
        self.scanned.bloom_bytes.add(size(read.bloom_bytes));
        self.scanned.predicate_checks.add(size(read.predicate_checks));
        self.scanned.scan_nanos.add(size(read.scan_nanos));
        METRICS.query_scanned_rows.inc_by(read.rows);
        METRICS.query_scanned_bytes.inc_by(read.bytes);
    }
}

/// Name of the metric of the rows a [`SegmentScanExec`] read from segments (before the
/// filters it applies).
pub const ROWS_READ: &str = "segment_rows_read";
/// Name of the metric of the compressed segment bytes a [`SegmentScanExec`] read.
pub const BYTES_READ: &str = "segment_bytes_read";

/// What the Parquet readers under `plan` produced and fetched: rows, compressed bytes, the
/// uncompressed bytes of the chunks read (those the readers pruned counted as skipped), the
/// bytes of Parquet bloom filters evaluated, the rows the plan's filters were evaluated on,
/// and the readers' time. Chunk counts are not among them (the planning counts those).
pub fn read_by(plan: &dyn ExecutionPlan) -> ScanTotals {
    let mut totals = ScanTotals {
        predicate_checks: crate::read_metrics::predicate_checks(plan),
        ..ScanTotals::default()
    };
    if plan.name() == "DataSourceExec"
        && let Some(metrics) = plan.metrics()
    {
        totals.rows += metrics.output_rows().unwrap_or(0) as u64;
        for metric in metrics.iter() {
            match metric.value() {
                MetricValue::Count { name, count } if name == "bytes_scanned" => totals.bytes += count.value() as u64,
                MetricValue::Time { name, time } if name == "time_elapsed_scanning_total" => {
                    totals.scan_nanos += time.value() as u64;
                }
                _ => {}
            }
        }
        let read = crate::read_metrics::read_totals(&metrics);
        totals.raw_bytes += read.raw_bytes;
        totals.skipped_raw_bytes += read.pruned_raw_bytes;
        totals.bloom_bytes += read.bloom_filter_bytes;
    }
    for child in plan.children() {
        totals += read_by(child.as_ref());
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(id: &str, bytes: u64, min_time: i64) -> SegmentMeta {
        SegmentMeta {
            id: id.to_string(),
            database: "d".into(),
            table: "t".into(),
            path: id.to_string(),
            min_time,
            max_time: min_time,
            rows: 10,
            bytes,
            columns: Vec::new(),
            merge_level: 0,
            state: trawl_catalog::SegmentState::Live,
            created_at: 0,
            tombstoned_at: None,
            signal: None,
        }
    }

    #[test]
    fn spread_balances_bytes_and_keeps_time_order() {
        let segments = vec![
            segment("a", 100, 3),
            segment("b", 60, 1),
            segment("c", 50, 2),
            segment("d", 10, 0),
        ];
        let groups = spread(segments, 2);
        let bytes: Vec<u64> = groups.iter().map(|g| g.iter().map(|s| s.bytes).sum()).collect();
        assert_eq!(bytes, vec![110, 110]);
        for group in &groups {
            assert!(group.windows(2).all(|w| w[0].min_time <= w[1].min_time));
        }
        assert_eq!(spread(Vec::new(), 3).len(), 3);
    }
}
