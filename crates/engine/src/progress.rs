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
use trawl_storage::{ScanCounters, ScanTotals, segment_scan};

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
    /// Completion by time bin, for queries that summarize by `bin(timestamp, span)`.
    pub bins: Option<BinProgress>,
    /// Per operator of the running plans: output rows, compute time, spills.
    pub operators: Vec<OperatorDiagnostics>,
    /// Of `rows_processed` and `chunk_scanned_compressed_size`: what scans of distributed
    /// plans read, which the node that ran each one counted in its own metrics.
    pub counted_rows: u64,
    pub counted_bytes: u64,
    /// Bytes the query's operators hold reserved on this node now (hash tables, sort
    /// buffers, ...), and the most they held at once so far. Scans of a distributed plan on
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

/// Completion by time bin: bin `i` covers `[first_bin_start + i * bin_span, ... + bin_span)`
/// (nanoseconds since the Unix epoch) and is `completion[i]` percent read (100: every
/// segment with rows in it is read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinProgress {
    pub first_bin_start: i64,
    pub bin_span: i64,
    pub completion: Vec<u8>,
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
    pub(crate) time_bin: Option<i64>,
    /// Plans of the result tables run or running, in order, with what the scans of a
    /// distributed one read on every node so far (their metrics arrive when they end).
    plans: Vec<(Arc<dyn ExecutionPlan>, Option<LiveTotals>)>,
    /// What the query's plans reserve (they all count against it).
    memory: Arc<MemoryUse>,
}

/// See [`crate::distributed::Watch`].
type LiveTotals = Arc<std::sync::Mutex<ScanTotals>>;

impl Tracker {
    pub(crate) fn new(counters: Arc<ScanCounters>, arrived: Instant) -> Tracker {
        Tracker {
            counters,
            arrived,
            queued_since: None,
            queue_wait: None,
            planning: true,
            time_bin: None,
            plans: Vec::new(),
            memory: Arc::default(),
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
            predicate_checks: sample.predicate_checks,
            short_circuit_completion: finished && sample.lazy.chunks_read == 0 && opened < counters.planned_total(),
            chunk_scanned_compressed_size: sample.bytes_scanned + sample.lazy.bytes,
            chunk_skipped_compressed_size: load(&counters.skipped_compressed_bytes) + sample.lazy.skipped_bytes,
            chunk_scan_time_nanos: sample.scan_nanos,
            query_time_nanos: nanos(self.arrived.elapsed()),
            merge_time_nanos: sample.merge_nanos,
            queue_wait_nanos: queue_wait.map(nanos),
            planning: self.planning.then(|| PlanningProgress {
                segments_done: load(&counters.segments_done),
                segments_total: load(&counters.segments_total),
            }),
            bins: self
                .time_bin
                .and_then(|span| bin_progress(span, counters, &sample.unfinished)),
            operators,
            memory_reserved_bytes: self.memory.reserved() as u64,
            memory_peak_bytes: self.memory.peak() as u64,
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
            for child in plan.children() {
                let rows = child.metrics().and_then(|m| m.output_rows()).unwrap_or(0);
                self.predicate_checks += rows as u64;
            }
        }
        for child in plan.children() {
            self.walk(child.as_ref(), operators);
        }
    }

    fn scan(&mut self, metrics: &datafusion::physical_plan::metrics::MetricsSet) {
        self.rows += metrics.output_rows().unwrap_or(0) as u64;
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

/// Completion of each `span`-wide time bin over the planned segments; `None` when there
/// are none, or too many bins.
fn bin_progress(span: i64, counters: &ScanCounters, unfinished: &HashSet<String>) -> Option<BinProgress> {
    let segments = counters.planned_segments();
    let low = segments.iter().map(|(_, s)| s.min_time).min()?;
    let high = segments.iter().map(|(_, s)| s.max_time).max()?;
    let first = low.div_euclid(span) * span;
    let count = (high - first) / span + 1;
    if count > MAX_REPORTED_BINS {
        return None;
    }
    let mut total = vec![0u32; count as usize];
    let mut done = vec![0u32; count as usize];
    for (path, segment) in &segments {
        let from = ((segment.min_time - first) / span) as usize;
        let to = ((segment.max_time - first) / span) as usize;
        let finished = !unfinished.contains(path);
        for bin in from..=to.min(total.len() - 1) {
            total[bin] += 1;
            done[bin] += u32::from(finished);
        }
    }
    let completion = total
        .iter()
        .zip(&done)
        .map(|(&total, &done)| (done * 100).checked_div(total).map_or(100, |p| p as u8))
        .collect();
    Some(BinProgress {
        first_bin_start: first,
        bin_span: span,
        completion,
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
}
