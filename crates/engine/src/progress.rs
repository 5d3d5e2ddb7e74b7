//! Progress of a running query, sampled from what its scans decided while it was planned
//! ([`ScanCounters`]) and from the live metrics of its physical plans.
//!
//! A [`Progress`] is cumulative: each report holds the totals so far, so the latest one is
//! the one to show. What each counter means is in `docs/api.md` ("Progress").

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::datasource::physical_plan::ParquetSource;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::metrics::MetricValue;
use trawl_planner::Binning;
use trawl_storage::progress::ChunkRange;
use trawl_storage::{ScanCounters, ScanTotals, read_metrics, segment_scan};

use crate::memory::MemoryUse;

/// One progress report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// Rows the scans produced.
    pub rows_processed: u64,
    /// Chunks (Parquet row groups) of the segments in the query's time window.
    pub chunks_total: u64,
    /// Chunks read or being read.
    pub chunks_scanned: u64,
    /// Chunks skipped because their statistics rule out the filters (time range included).
    pub chunks_skipped_range: u64,
    /// Chunks skipped by a bloom filter.
    pub chunks_skipped_bloom: u64,
    /// Chunks skipped because their segment lacks a column the filters need.
    pub chunks_skipped_required_fields: u64,
    /// Rows the filters were evaluated on.
    pub predicate_checks: u64,
    /// The query finished before reading every planned chunk (a `take` or `limit` sufficed).
    pub short_circuit_completion: bool,
    /// Compressed bytes read.
    pub chunk_scanned_compressed_size: u64,
    /// Compressed bytes of skipped chunks.
    pub chunk_skipped_compressed_size: u64,
    /// Uncompressed bytes (the row groups' `total_byte_size`) of the chunks read or being
    /// read, and of the chunks skipped.
    pub chunk_scanned_raw_body_size: u64,
    pub chunk_skipped_raw_body_size: u64,
    /// Bytes of bloom filters evaluated: token-index filters the scans consulted to skip
    /// chunks and blocks, and Parquet bloom filters the readers fetched.
    pub bloom_filter_bytes: u64,
    /// Time the scans spent reading and decoding, summed over scan threads.
    pub chunk_scan_time_nanos: u64,
    /// Wall-clock time since the query arrived.
    pub query_time_nanos: u64,
    /// Time spent merging partial results (final aggregation, merges of sorted or parallel
    /// streams), summed over threads.
    pub merge_time_nanos: u64,
    /// Time spent waiting for a query slot, when the query had to wait.
    pub queue_wait_nanos: Option<u64>,
    /// Segments classified and listed, while the query is being planned.
    pub planning: Option<PlanningProgress>,
    /// Completion by bin, for queries that summarize by `bin()`, `bin_at()` or `bin_auto()`
    /// of a stored column (see [`BinProgress`]).
    pub bins: Option<BinProgress>,
    /// Per operator of the running plans: output rows, compute time, spills.
    pub operators: Vec<OperatorDiagnostics>,
    /// Of `rows_processed` and `chunk_scanned_compressed_size`: what scans of distributed
    /// plans read, which the node that ran each one counted in its own metrics.
    pub counted_rows: u64,
    pub counted_bytes: u64,
    /// Bytes the query holds on this node now (what its work allocated and has not freed,
    /// or what its operators reserved when that is more: hash tables, sort buffers, function
    /// results, ...), and the most it held at once so far. Scans of a distributed plan on
    /// other nodes count against those nodes' limits and are not included.
    pub memory_reserved_bytes: u64,
    pub memory_peak_bytes: u64,
}

/// Segments whose chunks are classified, of those listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanningProgress {
    pub segments_done: u64,
    pub segments_total: u64,
}

/// Completion by bin: bin `i` covers `[first_bin_start + i * bin_span, ... + bin_span)` and is
/// `completion[i]` percent read: of the segments (binned by `timestamp`) or chunks (binned by
/// another column) that may hold rows in it, the share that is read; 100 when all are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinProgress {
    pub first_bin_start: i64,
    pub bin_span: i64,
    pub completion: Vec<u8>,
    /// Whether the bins are of time (a datetime or timespan column; the bounds are then
    /// nanoseconds) rather than of a number (the bounds in its own units).
    pub time: bool,
}

/// Most bins a progress report describes; finer binnings get none.
pub const MAX_REPORTED_BINS: i64 = 10_000;

/// What one operator of a physical plan did so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OperatorDiagnostics {
    /// The operator's kind, such as `AggregateExec` or `DataSourceExec`.
    pub kind: String,
    /// Pre-order position in the plans of the query's result tables, in order.
    pub operator_id: u32,
    pub values: Vec<(String, String)>,
}

impl Progress {
    /// Completion estimate 0-100: chunks read of those to read.
    pub fn percent(&self) -> f64 {
        let skipped = self.chunks_skipped_range + self.chunks_skipped_bloom + self.chunks_skipped_required_fields;
        let to_read = self.chunks_total.saturating_sub(skipped);
        if to_read == 0 {
            return if self.planning.is_some() { 0.0 } else { 100.0 };
        }
        (self.chunks_scanned as f64 * 100.0 / to_read as f64).min(100.0)
    }
}

/// Samples the progress of one query.
pub(crate) struct Tracker {
    counters: Arc<ScanCounters>,
    arrived: Instant,
    queued_since: Option<Instant>,
    queue_wait: Option<Duration>,
    pub(crate) planning: bool,
    /// See `trawl_planner::PlannedQuery::time_bin`.
    pub(crate) time_bin: Option<Binning>,
    /// Plans of the result tables run or running, in order, with what the scans of a
    /// distributed one read on every node so far (their metrics arrive when they end).
    plans: Vec<(Arc<dyn ExecutionPlan>, Option<LiveTotals>)>,
    /// What the query's plans reserve (they all count against it).
    memory: Arc<MemoryUse>,
}

/// See [`crate::distributed::Watch`].
type LiveTotals = Arc<std::sync::Mutex<ScanTotals>>;

impl Tracker {
    #[cfg(test)]
    pub(crate) fn new(counters: Arc<ScanCounters>, arrived: Instant) -> Tracker {
        Tracker::with_memory(counters, arrived, Arc::default())
    }

    /// A tracker whose plans reserve their memory in `memory`.
    pub(crate) fn with_memory(counters: Arc<ScanCounters>, arrived: Instant, memory: Arc<MemoryUse>) -> Tracker {
        Tracker {
            counters,
            arrived,
            queued_since: None,
            queue_wait: None,
            planning: true,
            time_bin: None,
            plans: Vec::new(),
            memory,
        }
    }

    /// Where the query's plans count the memory they reserve.
    pub(crate) fn memory(&self) -> Arc<MemoryUse> {
        Arc::clone(&self.memory)
    }

    pub(crate) fn counters(&self) -> Arc<ScanCounters> {
        self.counters.clone()
    }

    pub(crate) fn queued(&mut self) {
        self.queued_since = Some(Instant::now());
    }

    pub(crate) fn admitted(&mut self) {
        if let Some(since) = self.queued_since.take() {
            self.queue_wait = Some(since.elapsed());
        }
    }

    pub(crate) fn running(&mut self, plan: Arc<dyn ExecutionPlan>, live: Option<LiveTotals>) {
        self.plans.push((plan, live));
    }

    /// Replaces the plan running last by the same plan with more metrics (a distributed
    /// plan with its workers' metrics).
    pub(crate) fn replace_last(&mut self, plan: Arc<dyn ExecutionPlan>) {
        if let Some(last) = self.plans.last_mut() {
            last.0 = plan;
        }
    }

    /// The totals so far; `finished` once every table has been read.
    pub(crate) fn snapshot(&self, finished: bool) -> Progress {
        let counters = &self.counters;
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        let mut sample = Sample::default();
        let mut operators = Vec::new();
        for (index, (plan, live)) in self.plans.iter().enumerate() {
            sample.running = !finished && index + 1 == self.plans.len();
            let before = sample.lazy;
            sample.walk(plan.as_ref(), &mut operators);
            if let Some(live) = live.as_ref().and_then(|live| live.lock().ok().map(|totals| *totals)) {
                // The plan's own metrics are complete once its workers' arrived; until then
                // the nodes' live totals run ahead of them.
                sample.lazy = before + sample.lazy.minus(before).max(live);
            }
        }
        let opened: u64 = sample
            .files
            .iter()
            .map(|path| counters.planned_chunks(path))
            .sum::<u64>()
            + sample.lazy.chunks_read;
        let pruned = sample.pruned_statistics + sample.pruned_bloom;
        let queue_wait = match (self.queue_wait, self.queued_since) {
            (Some(wait), _) => Some(wait),
            (None, Some(since)) => Some(since.elapsed()),
            (None, None) => None,
        };
        Progress {
            rows_processed: sample.rows + sample.lazy.rows,
            counted_rows: sample.lazy.rows,
            counted_bytes: sample.lazy.bytes,
            chunks_total: load(&counters.chunks_total),
            chunks_scanned: opened.saturating_sub(pruned),
            chunks_skipped_range: load(&counters.chunks_skipped_range)
                + sample.pruned_statistics
                + sample.lazy.skipped_range,
            chunks_skipped_bloom: load(&counters.chunks_skipped_bloom)
                + sample.pruned_bloom
                + sample.lazy.skipped_bloom,
            chunks_skipped_required_fields: load(&counters.chunks_skipped_required_fields)
                + sample.lazy.skipped_required_fields,
            predicate_checks: sample.predicate_checks + sample.lazy.predicate_checks,
            short_circuit_completion: finished && sample.lazy.chunks_read == 0 && opened < counters.planned_total(),
            chunk_scanned_compressed_size: sample.bytes_scanned + sample.lazy.bytes,
            chunk_skipped_compressed_size: load(&counters.skipped_compressed_bytes) + sample.lazy.skipped_bytes,
            chunk_scanned_raw_body_size: sample.raw_bytes + sample.lazy.raw_bytes,
            chunk_skipped_raw_body_size: load(&counters.skipped_raw_bytes)
                + sample.pruned_raw_bytes
                + sample.lazy.skipped_raw_bytes,
            bloom_filter_bytes: load(&counters.index_bytes) + sample.bloom_bytes + sample.lazy.bloom_bytes,
            chunk_scan_time_nanos: sample.scan_nanos + sample.lazy.scan_nanos,
            query_time_nanos: nanos(self.arrived.elapsed()),
            merge_time_nanos: sample.merge_nanos,
            queue_wait_nanos: queue_wait.map(nanos),
            planning: self.planning.then(|| PlanningProgress {
                segments_done: load(&counters.segments_done),
                segments_total: load(&counters.segments_total),
            }),
            bins: self
                .time_bin
                .as_ref()
                .and_then(|binning| bin_progress(binning, counters, &sample.unfinished)),
            operators,
            memory_reserved_bytes: self.memory.held(),
            memory_peak_bytes: self.memory.held_peak(),
        }
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// Totals gathered from plan metrics.
#[derive(Default)]
struct Sample {
    rows: u64,
    bytes_scanned: u64,
    scan_nanos: u64,
    merge_nanos: u64,
    pruned_statistics: u64,
    pruned_bloom: u64,
    predicate_checks: u64,
    /// Uncompressed bytes of the chunks the Parquet readers read, and of those they pruned.
    raw_bytes: u64,
    pruned_raw_bytes: u64,
    /// Bytes of Parquet bloom filters the readers evaluated.
    bloom_bytes: u64,
    /// Segment files the scans opened.
    files: HashSet<String>,
    /// Whether the plan being walked is still running.
    running: bool,
    /// Segment files of running plans not yet read to the end.
    unfinished: HashSet<String>,
    /// What scans that decide their pruning as they run read ([`SegmentScanExec`]).
    lazy: ScanTotals,
}

/// Adds the [`SegmentScanExec`] metrics among `metrics` to `totals`.
fn add_scan_metrics(totals: &mut ScanTotals, metrics: &datafusion::physical_plan::metrics::MetricsSet) {
    for metric in metrics.iter() {
        let MetricValue::Count { name, count } = metric.value() else {
            continue;
        };
        let value = count.value() as u64;
        match name.as_ref() {
            segment_scan::ROWS_READ => totals.rows += value,
            segment_scan::BYTES_READ => totals.bytes += value,
            segment_scan::CHUNKS_READ => totals.chunks_read += value,
            segment_scan::CHUNKS_SKIPPED_RANGE => totals.skipped_range += value,
            segment_scan::CHUNKS_SKIPPED_BLOOM => totals.skipped_bloom += value,
            segment_scan::CHUNKS_SKIPPED_REQUIRED_FIELDS => totals.skipped_required_fields += value,
            segment_scan::SKIPPED_BYTES => totals.skipped_bytes += value,
            segment_scan::RAW_BYTES_READ => totals.raw_bytes += value,
            segment_scan::SKIPPED_RAW_BYTES => totals.skipped_raw_bytes += value,
            segment_scan::BLOOM_BYTES => totals.bloom_bytes += value,
            segment_scan::PREDICATE_CHECKS => totals.predicate_checks += value,
            segment_scan::SCAN_NANOS => totals.scan_nanos += value,
            _ => {}
        }
    }
}

impl Sample {
    fn walk(&mut self, plan: &dyn ExecutionPlan, operators: &mut Vec<OperatorDiagnostics>) {
        let metrics = plan.metrics();
        let mut values = Vec::new();
        if let Some(metrics) = &metrics {
            let output_rows = metrics.output_rows().unwrap_or(0) as u64;
            let compute = metrics.elapsed_compute().unwrap_or(0) as u64;
            values.push(("output_rows".to_string(), output_rows.to_string()));
            values.push(("elapsed_compute_nanos".to_string(), compute.to_string()));
            if let Some(spills) = metrics.spill_count().filter(|n| *n > 0) {
                values.push(("spill_count".to_string(), spills.to_string()));
                let bytes = metrics.spilled_bytes().unwrap_or(0);
                values.push(("spilled_bytes".to_string(), bytes.to_string()));
            }
            if is_merge(plan) {
                self.merge_nanos += compute;
            }
        }
        operators.push(OperatorDiagnostics {
            kind: plan.name().to_string(),
            operator_id: operators.len() as u32,
            values,
        });
        if let Some(scan) = plan.downcast_ref::<DataSourceExec>() {
            if let Some(metrics) = &metrics {
                self.scan(metrics);
            }
            if self.running {
                self.unfinished_files(scan);
            }
        }
        // A segment scan's metrics, on the node itself or (a distributed plan's, sent back by
        // the workers) on the node standing for it.
        if let Some(metrics) = &metrics {
            add_scan_metrics(&mut self.lazy, metrics);
        }
        if plan.name() == "FilterExec" {
            self.predicate_checks += read_metrics::predicate_checks(plan);
        }
        for child in plan.children() {
            self.walk(child.as_ref(), operators);
        }
    }

    fn scan(&mut self, metrics: &datafusion::physical_plan::metrics::MetricsSet) {
        self.rows += metrics.output_rows().unwrap_or(0) as u64;
        let read = read_metrics::read_totals(metrics);
        self.raw_bytes += read.raw_bytes;
        self.pruned_raw_bytes += read.pruned_raw_bytes;
        self.bloom_bytes += read.bloom_filter_bytes;
        // Filters evaluated inside the reader.
        self.predicate_checks += read.pushdown_checks;
        for metric in metrics.iter() {
            if let Some(label) = metric.labels().iter().find(|l| l.name() == "filename")
                && !self.files.contains(label.value())
            {
                self.files.insert(label.value().to_string());
            }
            match metric.value() {
                MetricValue::PruningMetrics { name, pruning_metrics } => match name.as_ref() {
                    "row_groups_pruned_statistics" => self.pruned_statistics += pruning_metrics.pruned() as u64,
                    "row_groups_pruned_bloom_filter" => self.pruned_bloom += pruning_metrics.pruned() as u64,
                    _ => {}
                },
                MetricValue::Count { name, count } if name == "bytes_scanned" => {
                    self.bytes_scanned += count.value() as u64;
                }
                MetricValue::Time { name, time } if name == "time_elapsed_scanning_total" => {
                    self.scan_nanos += time.value() as u64;
                }
                _ => {}
            }
        }
    }
}

impl Sample {
    /// Files of `scan` not known to be read to the end: each partition reads its files in
    /// order, so a file is done once a later file of its partition is opened.
    fn unfinished_files(&mut self, scan: &DataSourceExec) {
        let Some((config, _)) = scan.downcast_to_file_source::<ParquetSource>() else {
            return;
        };
        for group in &config.file_groups {
            let paths: Vec<String> = group
                .files()
                .iter()
                .map(|f| f.object_meta.location.to_string())
                .collect();
            let last_opened = paths.iter().rposition(|p| self.files.contains(p));
            let first_unfinished = last_opened.unwrap_or(0);
            self.unfinished.extend(paths.into_iter().skip(first_unfinished));
        }
    }
}

/// Completion of each bin of `binning` over what is planned for reading; `None` when nothing
/// tells where the rows fall, or there are too many bins.
///
/// Binned by `timestamp`, the planned segments' time ranges (from the catalog) say which bins
/// each may hold rows of. Binned by another column, the statistics of the planned chunks in
/// their segments' footers do (a chunk whose statistics do not tell counts in every bin, and
/// so does every chunk of a segment whose footer is not at hand). A segment or chunk is read
/// once its scan has moved past its file.
fn bin_progress(binning: &Binning, counters: &ScanCounters, unfinished: &HashSet<String>) -> Option<BinProgress> {
    let segments = counters.planned_segments();
    // Per segment: whether it is read, and the ranges of its segment or chunks (`None`: any).
    let mut ranges = Vec::with_capacity(segments.len());
    for (path, segment) in &segments {
        let finished = !unfinished.contains(path);
        let values = if binning.time && binning.column == trawl_common::TIME_COLUMN {
            vec![Some((segment.min_time, segment.max_time))]
        } else {
            match counters.chunk_ranges(path, &binning.column) {
                Some(chunks) => chunks
                    .iter()
                    .map(|range| match *range {
                        ChunkRange::Within(min, max) => Some((min, max)),
                        ChunkRange::Unknown => None,
                    })
                    .collect(),
                None => vec![None; usize::try_from(segment.chunks).unwrap_or(1)],
            }
        };
        ranges.push((finished, values));
    }
    bins_of(binning, &ranges)
}

/// Per planned segment, whether it is read and the ranges of values it may hold (of the
/// segment, or of each planned chunk; `None`: any value).
type PlannedRanges = [(bool, Vec<Option<(i64, i64)>>)];

/// The completion of each bin of `binning` over `ranges`; `None` when no range is known, or
/// there are too many bins.
fn bins_of(binning: &Binning, ranges: &PlannedRanges) -> Option<BinProgress> {
    let known = || ranges.iter().flat_map(|(_, values)| values.iter().flatten());
    let low = known().map(|(min, _)| *min).min()?;
    let high = known().map(|(_, max)| *max).max()?;
    let (span, origin) = (i128::from(binning.span), i128::from(binning.origin));
    if span <= 0 {
        return None;
    }
    let bin_of = |value: i64| (i128::from(value) - origin).div_euclid(span);
    let first_bin = bin_of(low);
    let count = bin_of(high) - first_bin + 1;
    if count > i128::from(MAX_REPORTED_BINS) {
        return None;
    }
    let first = i64::try_from(origin + first_bin * span).ok()?;
    let count = count as usize;
    let mut total = vec![0u32; count];
    let mut done = vec![0u32; count];
    for (finished, values) in ranges {
        for value in values {
            let (from, to) = match value {
                Some((min, max)) => ((bin_of(*min) - first_bin) as usize, (bin_of(*max) - first_bin) as usize),
                None => (0, count - 1),
            };
            for bin in from..=to.min(count - 1) {
                total[bin] += 1;
                done[bin] += u32::from(*finished);
            }
        }
    }
    let completion = total
        .iter()
        .zip(&done)
        .map(|(&total, &done)| (done * 100).checked_div(total).map_or(100, |p| p as u8))
        .collect();
    Some(BinProgress {
        first_bin_start: first,
        bin_span: binning.span,
        completion,
        time: binning.time,
    })
}

/// Operators that merge partial results of several threads.
fn is_merge(plan: &dyn ExecutionPlan) -> bool {
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        return matches!(aggregate.mode(), AggregateMode::Final | AggregateMode::FinalPartitioned);
    }
    matches!(plan.name(), "SortPreservingMergeExec" | "CoalescePartitionsExec")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_plan::empty::EmptyExec;

    use super::*;

    #[test]
    fn a_distributed_plan_counts_the_nodes_live_totals_until_its_metrics_arrive() {
        let mut tracker = Tracker::new(Arc::new(ScanCounters::default()), Instant::now());
        tracker.planning = false;
        let live = Arc::new(Mutex::new(ScanTotals {
            rows: 70,
            bytes: 900,
            chunks_read: 3,
            ..ScanTotals::default()
        }));
        let plan: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
        tracker.running(plan, Some(Arc::clone(&live)));
        let progress = tracker.snapshot(false);
        assert_eq!(progress.rows_processed, 70);
        assert_eq!(progress.counted_rows, 70);
        assert_eq!(progress.chunk_scanned_compressed_size, 900);
        assert_eq!(progress.chunks_scanned, 3);
        if let Ok(mut totals) = live.lock() {
            totals.rows = 100;
        }
        assert_eq!(tracker.snapshot(true).rows_processed, 100);
    }

    #[test]
    fn a_distributed_plan_counts_what_its_nodes_report_of_raw_bytes_blooms_and_filters() {
        let mut tracker = Tracker::new(Arc::new(ScanCounters::default()), Instant::now());
        tracker.planning = false;
        let live = Arc::new(Mutex::new(ScanTotals {
            raw_bytes: 4_000,
            skipped_raw_bytes: 1_000,
            bloom_bytes: 96,
            predicate_checks: 50,
            scan_nanos: 7,
            ..ScanTotals::default()
        }));
        let plan: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
        tracker.running(plan, Some(live));
        let progress = tracker.snapshot(true);
        assert_eq!(progress.chunk_scanned_raw_body_size, 4_000);
        assert_eq!(progress.chunk_skipped_raw_body_size, 1_000);
        assert_eq!(progress.bloom_filter_bytes, 96);
        assert_eq!(progress.predicate_checks, 50);
        assert_eq!(progress.chunk_scan_time_nanos, 7);
    }

    fn number_bins(span: i64, origin: i64) -> Binning {
        Binning {
            column: "n".into(),
            time: false,
            span,
            origin,
        }
    }

    #[test]
    fn number_bins_complete_as_the_chunks_that_may_hold_their_values_are_read() -> Result<(), String> {
        // Read: a chunk of 0..=19 and one of 40..=45; not yet: a chunk of 15..=29.
        let ranges = [
            (true, vec![Some((0, 19)), Some((40, 45))]),
            (false, vec![Some((15, 29))]),
        ];
        let bins = bins_of(&number_bins(10, 0), &ranges).ok_or("bins")?;
        assert_eq!((bins.first_bin_start, bins.bin_span, bins.time), (0, 10, false));
        // Bins 0-9 and 40-49 are read; 10-19 half (one of two chunks); 20-29 not; 30-39 holds
        // no chunk's values, so nothing is left to read.
        assert_eq!(bins.completion, vec![100, 50, 0, 100, 100]);
        // `bin_at(n, 10, 5)`: bins start at 5 + 10k.
        let bins = bins_of(&number_bins(10, 5), &ranges).ok_or("bins")?;
        assert_eq!(bins.first_bin_start, -5);
        assert_eq!(bins.completion, vec![100, 100, 50, 0, 100, 100]);
        // A chunk whose statistics do not tell counts in every bin.
        let unknown = [(true, vec![Some((0, 19))]), (false, vec![None])];
        let bins = bins_of(&number_bins(10, 0), &unknown).ok_or("bins")?;
        assert_eq!(bins.completion, vec![50, 50]);
        // Nothing known, or too many bins: no report.
        assert_eq!(bins_of(&number_bins(10, 0), &[(false, vec![None])]), None);
        assert_eq!(bins_of(&number_bins(1, 0), &[(true, vec![Some((0, MAX_REPORTED_BINS))])]), None);
        assert_eq!(bins_of(&number_bins(1, 0), &[(true, vec![Some((i64::MIN, i64::MAX))])]), None);
        Ok(())
    }
}
