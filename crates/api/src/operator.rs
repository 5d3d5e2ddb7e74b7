//! The operator port 9511: `/metrics` in the Prometheus text format, and the probes.

use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::state::{IngestCounters, Readiness, ServiceInfo};

pub fn router(
    counters: Arc<IngestCounters>,
    ingestor: Option<trawl_ingest::Ingestor>,
    readiness: Arc<Readiness>,
    info: ServiceInfo,
) -> Router {
    let probes = crate::probes::routes(readiness, info);
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let text = render(&counters, ingestor.as_ref());
                async move { ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response() }
            }),
        )
        .merge(probes)
}

fn render(counters: &IngestCounters, ingestor: Option<&trawl_ingest::Ingestor>) -> String {
    let mut out = String::new();
    let mut counter = |name: &str, help: &str, value: u64| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
    };
    counter(
        "trawl_ingest_requests_total",
        "Ingest requests received.",
        counters.requests.load(Relaxed),
    );
    counter(
        "trawl_ingest_rows_total",
        "Rows stored durably.",
        counters.rows.load(Relaxed),
    );
    counter(
        "trawl_ingest_rejected_rows_total",
        "Items refused by protocol mappings.",
        counters.rejected_rows.load(Relaxed),
    );
    counter(
        "trawl_ingest_failed_requests_total",
        "Ingest requests answered with an error.",
        counters.failed_requests.load(Relaxed),
    );
    if let Some(ingestor) = ingestor {
        let _ = writeln!(
            out,
            "# HELP trawl_ingest_buffered_rows Rows accepted and not yet durable.\n# TYPE trawl_ingest_buffered_rows gauge\ntrawl_ingest_buffered_rows {}",
            ingestor.buffered_rows()
        );
    }
    out
}
