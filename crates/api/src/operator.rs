//! The operator port 9511: `/metrics` (every subsystem's metrics, see
//! `trawl_common::metrics`, in the OpenMetrics text format that Prometheus scrapes),
//! `/debug/pprof/profile`, the probes, and with `--fault-injection` (tests only)
//! `GET`/`POST /debug/faults` (`trawl_common::faults`).

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use trawl_common::faults::{FaultSpec, Faults};
use trawl_common::metrics::METRICS;

use crate::state::{Readiness, ServiceInfo};

/// The content type of the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub fn router(
    ingestor: Option<trawl_ingest::Ingestor>,
    readiness: Arc<Readiness>,
    info: ServiceInfo,
    faults: Option<Arc<Faults>>,
) -> Router {
    let probes = crate::probes::routes(readiness, info);
    let router = match faults {
        Some(faults) => Router::new().route(
            "/debug/faults",
            get({
                let faults = faults.clone();
                move || async move { Json(faults.report()) }
            })
            .post(move |Json(spec): Json<FaultSpec>| async move {
                tracing::warn!(?spec, "injecting faults");
                Json(faults.apply(&spec))
            }),
        ),
        None => Router::new(),
    };
    router
        .route(
            "/metrics",
            get(move || {
                if let Some(ingestor) = &ingestor {
                    METRICS.ingest_buffered_rows.set(gauge(ingestor.buffered_rows()));
                    METRICS.ingest_buffered_bytes.set(gauge(ingestor.buffered_bytes()));
                }
                record_memory();
                let text = METRICS.render();
                async move { ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response() }
            }),
        )
        .route("/debug/pprof/profile", get(crate::pprof::profile))
        .route("/debug/pprof/heap", get(crate::pprof_heap::heap))
        .merge(probes)
}

/// Sets the memory gauges: the process's resident set from `/proc/self/status`, and the
/// allocator's own figures when jemalloc is the allocator.
fn record_memory() {
    if let Some(resident) = std::fs::read_to_string("/proc/self/status")
        .ok()
        .as_deref()
        .and_then(resident_bytes)
    {
        METRICS.memory_resident_bytes.set(bytes_gauge(resident));
    }
    if let Ok(heap) = trawl_heap::stats() {
        METRICS.memory_heap_allocated_bytes.set(bytes_gauge(heap.allocated));
        METRICS.memory_heap_resident_bytes.set(bytes_gauge(heap.resident));
        METRICS.memory_heap_retained_bytes.set(bytes_gauge(heap.retained));
    }
}

/// `VmRSS` of a `/proc/<pid>/status` text, in bytes.
fn resident_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

fn bytes_gauge(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn gauge(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_from_the_status_file() {
        let status = "Name:\ttrawl\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nThreads:\t9\n";
        assert_eq!(resident_bytes(status), Some(123_456 * 1024));
        assert_eq!(resident_bytes("Name:\ttrawl\n"), None);
        assert_eq!(resident_bytes("VmRSS:\t12 pages\n"), None);
        assert_eq!(resident_bytes("VmRSS:\t99999999999999999999 kB\n"), None);
        let own = std::fs::read_to_string("/proc/self/status").ok();
        assert!(own.as_deref().and_then(resident_bytes).is_some_and(|bytes| bytes > 0));
    }
}
