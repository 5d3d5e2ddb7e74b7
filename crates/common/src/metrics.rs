//! The process's Prometheus metrics: one registry, one field per metric, recorded where the
//! work happens and rendered by the operator port's `/metrics` in the text exposition format.
//!
//! Names follow Prometheus conventions: `trawl_<subsystem>_<what>_<unit>`, counters end in
//! `_total`, durations are histograms in seconds. Labels stay few and bounded (protocol,
//! signal, reason, face, error code): never a table name, a token or a query text.
//! `docs/operations.md` lists every metric; `docs/grafana-dashboard.json` charts them.

use std::sync::LazyLock;
use std::time::Instant;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Label pairs of one series.
pub type Labels = Vec<(&'static str, String)>;

/// A histogram of seconds from 1 ms to about 33 s (16 doubling buckets).
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// Every metric of the process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Ingest requests by `protocol` and `outcome` (`stored`, `refused`, `failed`).
    pub ingest_requests: Family<Labels, Counter>,
    /// Records stored durably, by `signal`.
    pub ingest_records: Family<Labels, Counter>,
    /// Request body bytes received (after decompression), by `protocol`.
    pub ingest_bytes: Family<Labels, Counter>,
    /// Requests refused, by `reason` (`unauthenticated`, `malformed`, `too_large`,
    /// `backpressure`, `unavailable`), and items refused inside accepted requests (`item`).
    pub ingest_rejections: Family<Labels, Counter>,
    /// Time from a buffer's flush start to its segment registered in the catalog.
    pub ingest_flush_seconds: Histogram,
    /// Rows accepted and not yet durable.
    pub ingest_buffered_rows: Gauge,
    /// Approximate bytes of rows accepted and not yet durable.
    pub ingest_buffered_bytes: Gauge,
    /// Flushes that failed (the waiting requests were answered 503).
    pub ingest_flush_errors: Counter,
    /// Segments written (by ingest and by merges), and their bytes.
    pub storage_segments_written: Counter,
    pub storage_segment_bytes_written: Counter,
    /// Merges done, and the segments they replaced.
    pub storage_merges: Counter,
    pub storage_segments_merged: Counter,
    /// Segment objects deleted after their grace period.
    pub storage_segments_deleted: Counter,
    /// Objects deleted because no segment of the catalog names them (written, never registered).
    pub storage_orphans_deleted: Counter,
    /// Whether this process holds the janitor's lease (1) or not (0).
    pub janitor_lease_held: Gauge,
    /// Live segments of every table, and the small ones among them (merge candidates), as
    /// the janitor's last merge pass left them.
    pub storage_segments_live: Gauge,
    pub storage_segments_small: Gauge,
    /// Object store requests by `operation` (put, get, head, list, delete, copy, rename): latency.
    pub storage_request_seconds: HistogramFamily,
    /// Object store requests that failed, by `operation`.
    pub storage_request_errors: Family<Labels, Counter>,
    /// Segment bytes read through the local segment cache, by `source` (`cache` or `store`).
    pub storage_cache_read_bytes: Family<Labels, Counter>,
    /// Bytes the local segment cache holds on disk.
    pub storage_cache_bytes: Gauge,
    /// Bytes the local segment cache evicted to stay within its size.
    pub storage_cache_evicted_bytes: Counter,
    /// Puts and catalog commits of ingest flushes retried after a failure, by `part`.
    pub ingest_retries: Family<Labels, Counter>,
    /// Ingest requests acknowledged without storing again: the same body was stored already.
    pub ingest_deduplicated: Counter,
    /// Catalog commits (segments registered or tombstoned) and how long they took.
    pub catalog_commit_seconds: Histogram,
    /// Catalog operations that failed.
    pub catalog_errors: Counter,
    /// Queries running now, and waiting for a slot.
    pub query_running: Gauge,
    pub query_queued: Gauge,
    /// Query durations by `face` (`grpc`, `http`, `adx`), from arrival to the last row.
    pub query_seconds: HistogramFamily,
    /// Queries by `face` and `outcome` (`ok` or the error code).
    pub queries: Family<Labels, Counter>,
    /// Rows read by scans, compressed bytes of the chunks they read, and chunks skipped by
    /// `reason` (`range`, `bloom`, `required_fields`).
    pub query_scanned_rows: Counter,
    pub query_scanned_bytes: Counter,
    pub query_chunks_skipped: Family<Labels, Counter>,
    /// The process's resident memory, and the allocator's live, resident and retained bytes
    /// (set when `/metrics` is scraped).
    pub memory_resident_bytes: Gauge,
    pub memory_heap_allocated_bytes: Gauge,
    pub memory_heap_resident_bytes: Gauge,
    pub memory_heap_retained_bytes: Gauge,
    /// Requests the gateway refused, by `reason`.
    pub gateway_auth_failures: Family<Labels, Counter>,
    /// Requests the gateway signed and forwarded, by `route` (`grpc`, `v1`, `v2`, `mgmt`).
    pub gateway_forwarded: Family<Labels, Counter>,
    /// Requests the gateway sent to another query node because one could not be reached.
    pub gateway_retries: Counter,
    /// Members meta lists, by `role` (on meta).
    pub cluster_members: Family<Labels, Gauge>,
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("trawl");
        let ingest_requests = Family::<Labels, Counter>::default();
        let ingest_records = Family::<Labels, Counter>::default();
        let ingest_bytes = Family::<Labels, Counter>::default();
        let ingest_rejections = Family::<Labels, Counter>::default();
        let ingest_flush_seconds = seconds_histogram();
        let ingest_buffered_rows = Gauge::default();
        let ingest_buffered_bytes = Gauge::default();
        let ingest_flush_errors = Counter::default();
        let storage_segments_written = Counter::default();
        let storage_segment_bytes_written = Counter::default();
        let storage_merges = Counter::default();
        let storage_segments_merged = Counter::default();
        let storage_segments_deleted = Counter::default();
        let storage_orphans_deleted = Counter::default();
        let janitor_lease_held = Gauge::default();
        let storage_segments_live = Gauge::default();
        let storage_segments_small = Gauge::default();
        let storage_request_seconds: HistogramFamily = Family::new_with_constructor(seconds_histogram);
        let storage_request_errors = Family::<Labels, Counter>::default();
        let storage_cache_read_bytes = Family::<Labels, Counter>::default();
        let storage_cache_bytes = Gauge::default();
        let storage_cache_evicted_bytes = Counter::default();
        let ingest_retries = Family::<Labels, Counter>::default();
        let ingest_deduplicated = Counter::default();
        let catalog_commit_seconds = seconds_histogram();
        let catalog_errors = Counter::default();
        let query_running = Gauge::default();
        let query_queued = Gauge::default();
        let query_seconds: HistogramFamily = Family::new_with_constructor(seconds_histogram);
        let queries = Family::<Labels, Counter>::default();
        let query_scanned_rows = Counter::default();
        let query_scanned_bytes = Counter::default();
        let query_chunks_skipped = Family::<Labels, Counter>::default();
        let memory_resident_bytes = Gauge::default();
        let memory_heap_allocated_bytes = Gauge::default();
        let memory_heap_resident_bytes = Gauge::default();
        let memory_heap_retained_bytes = Gauge::default();
        let gateway_auth_failures = Family::<Labels, Counter>::default();
        let gateway_forwarded = Family::<Labels, Counter>::default();
        let gateway_retries = Counter::default();
        let cluster_members = Family::<Labels, Gauge>::default();

        let r = &mut registry;
        r.register(
            "ingest_requests",
            "Ingest requests by protocol and outcome",
            ingest_requests.clone(),
        );
        r.register(
            "ingest_records",
            "Records stored durably, by signal",
            ingest_records.clone(),
        );
        r.register(
            "ingest_bytes",
            "Ingest request body bytes after decompression, by protocol",
            ingest_bytes.clone(),
        );
        r.register(
            "ingest_rejections",
            "Ingest requests and items refused, by reason",
            ingest_rejections.clone(),
        );
        r.register(
            "ingest_flush_seconds",
            "Time to write and register one ingest segment",
            ingest_flush_seconds.clone(),
        );
        r.register(
            "ingest_buffered_rows",
            "Rows accepted and not yet durable",
            ingest_buffered_rows.clone(),
        );
        r.register(
            "ingest_buffered_bytes",
            "Approximate bytes of rows accepted and not yet durable",
            ingest_buffered_bytes.clone(),
        );
        r.register(
            "memory_resident_bytes",
            "Resident memory of the process (VmRSS)",
            memory_resident_bytes.clone(),
        );
        r.register(
            "memory_heap_allocated_bytes",
            "Bytes in live allocations, as the allocator counts them",
            memory_heap_allocated_bytes.clone(),
        );
        r.register(
            "memory_heap_resident_bytes",
            "Resident bytes the allocator maps, its free pages not yet returned included",
            memory_heap_resident_bytes.clone(),
        );
        r.register(
            "memory_heap_retained_bytes",
            "Virtual memory the allocator keeps mapped after returning its pages to the system",
            memory_heap_retained_bytes.clone(),
        );
        r.register(
            "ingest_flush_errors",
            "Flushes that failed; their requests were answered 503",
            ingest_flush_errors.clone(),
        );
        r.register(
            "storage_segments_written",
            "Segments written, by ingest and merges",
            storage_segments_written.clone(),
        );
        r.register(
            "storage_segment_bytes_written",
            "Bytes of segments written",
            storage_segment_bytes_written.clone(),
        );
        r.register(
            "storage_merges",
            "Merges of small segments done",
            storage_merges.clone(),
        );
        r.register(
            "storage_segments_merged",
            "Segments replaced by merges",
            storage_segments_merged.clone(),
        );
        r.register(
            "storage_segments_deleted",
            "Segment objects deleted after their grace period",
            storage_segments_deleted.clone(),
        );
        r.register(
            "storage_orphans_deleted",
            "Objects deleted because no segment of the catalog names them",
            storage_orphans_deleted.clone(),
        );
        r.register(
            "janitor_lease_held",
            "Whether this process holds the janitor's lease",
            janitor_lease_held.clone(),
        );
        r.register(
            "storage_segments_live",
            "Live segments of every table after the janitor's last merge pass",
            storage_segments_live.clone(),
        );
        r.register(
            "storage_segments_small",
            "Live segments still small enough to merge after the janitor's last merge pass",
            storage_segments_small.clone(),
        );
        r.register(
            "storage_request_seconds",
            "Object store request latency, by operation",
            storage_request_seconds.clone(),
        );
        r.register(
            "storage_request_errors",
            "Object store requests that failed, by operation",
            storage_request_errors.clone(),
        );
        r.register(
            "storage_cache_read_bytes",
            "Segment bytes read through the local segment cache, by source (cache or store)",
            storage_cache_read_bytes.clone(),
        );
        r.register(
            "storage_cache_bytes",
            "Bytes the local segment cache holds on disk",
            storage_cache_bytes.clone(),
        );
        r.register(
            "storage_cache_evicted_bytes",
            "Bytes the local segment cache evicted to stay within its size",
            storage_cache_evicted_bytes.clone(),
        );
        r.register(
            "ingest_retries",
            "Ingest flush steps retried after a failure, by part (store or catalog)",
            ingest_retries.clone(),
        );
        r.register(
            "ingest_deduplicated",
            "Ingest requests acknowledged without storing again (the same body was stored already)",
            ingest_deduplicated.clone(),
        );
        r.register(
            "catalog_commit_seconds",
            "Time of catalog commits of segments",
            catalog_commit_seconds.clone(),
        );
        r.register(
            "catalog_errors",
            "Catalog operations that failed",
            catalog_errors.clone(),
        );
        r.register("query_running", "Queries running", query_running.clone());
        r.register(
            "query_queued",
            "Queries waiting for a slot under the concurrency limit",
            query_queued.clone(),
        );
        r.register(
            "query_seconds",
            "Query duration from arrival to the last row, by face",
            query_seconds.clone(),
        );
        r.register(
            "queries",
            "Queries by face and outcome (ok or the error code)",
            queries.clone(),
        );
        r.register(
            "query_scanned_rows",
            "Segment rows read on this node, by any query (as coordinator or as worker)",
            query_scanned_rows.clone(),
        );
        r.register(
            "query_scanned_bytes",
            "Compressed segment bytes read on this node, by any query (as coordinator or as worker)",
            query_scanned_bytes.clone(),
        );
        r.register(
            "query_chunks_skipped",
            "Chunks query scans skipped, by reason",
            query_chunks_skipped.clone(),
        );
        r.register(
            "gateway_auth_failures",
            "Requests the gateway refused, by reason",
            gateway_auth_failures.clone(),
        );
        r.register(
            "gateway_forwarded",
            "Requests the gateway signed and forwarded, by route",
            gateway_forwarded.clone(),
        );
        r.register(
            "gateway_retries",
            "Requests the gateway sent to another query node because one could not be reached",
            gateway_retries.clone(),
        );
        r.register(
            "cluster_members",
            "Members meta lists, by role",
            cluster_members.clone(),
        );
        Metrics {
            registry,
            ingest_requests,
            ingest_records,
            ingest_bytes,
            ingest_rejections,
            ingest_flush_seconds,
            ingest_buffered_rows,
            ingest_buffered_bytes,
            ingest_flush_errors,
            storage_segments_written,
            storage_segment_bytes_written,
            storage_merges,
            storage_segments_merged,
            storage_segments_deleted,
            storage_orphans_deleted,
            janitor_lease_held,
            storage_segments_live,
            storage_segments_small,
            storage_request_seconds,
            storage_request_errors,
            storage_cache_read_bytes,
            storage_cache_bytes,
            storage_cache_evicted_bytes,
            ingest_retries,
            ingest_deduplicated,
            catalog_commit_seconds,
            catalog_errors,
            query_running,
            query_queued,
            query_seconds,
            queries,
            query_scanned_rows,
            query_scanned_bytes,
            query_chunks_skipped,
            memory_resident_bytes,
            memory_heap_allocated_bytes,
            memory_heap_resident_bytes,
            memory_heap_retained_bytes,
            gateway_auth_failures,
            gateway_forwarded,
            gateway_retries,
            cluster_members,
        }
    }

    /// Every metric in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// One label pair.
pub fn label(name: &'static str, value: impl Into<String>) -> Labels {
    vec![(name, value.into())]
}

/// Two label pairs.
pub fn labels(first: (&'static str, &str), second: (&'static str, &str)) -> Labels {
    vec![(first.0, first.1.to_string()), (second.0, second.1.to_string())]
}

/// Seconds since `started`, for histograms.
pub fn seconds_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_in_the_text_format_with_their_labels() {
        METRICS.ingest_records.get_or_create(&label("signal", "logs")).inc_by(3);
        METRICS
            .query_seconds
            .get_or_create(&label("face", "grpc"))
            .observe(0.25);
        let text = METRICS.render();
        assert!(text.contains("# TYPE trawl_ingest_records counter"), "{text}");
        assert!(text.contains("trawl_ingest_records_total{signal=\"logs\"}"), "{text}");
        assert!(
            text.contains("trawl_query_seconds_bucket{le=\"0.256\",face=\"grpc\"} 1"),
            "{text}"
        );
        assert!(text.contains("# EOF"), "{text}");
    }
}
