//! The operator port 9511: `/metrics` (every subsystem's metrics, see
//! `trawl_common::metrics`, in the OpenMetrics text format that Prometheus scrapes), and the
//! probes.

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use trawl_common::metrics::METRICS;

use crate::state::{Readiness, ServiceInfo};

/// The content type of the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub fn router(ingestor: Option<trawl_ingest::Ingestor>, readiness: Arc<Readiness>, info: ServiceInfo) -> Router {
    let probes = crate::probes::routes(readiness, info);
    Router::new()
        .route(
            "/metrics",
            get(move || {
                if let Some(ingestor) = &ingestor {
                    METRICS.ingest_buffered_rows.set(gauge(ingestor.buffered_rows()));
                    METRICS.ingest_buffered_bytes.set(gauge(ingestor.buffered_bytes()));
                }
                let text = METRICS.render();
                async move { ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response() }
            }),
        )
        .route("/debug/pprof/profile", get(crate::pprof::profile))
        .merge(probes)
}

fn gauge(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
