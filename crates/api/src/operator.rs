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
                let text = METRICS.render();
                async move { ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response() }
            }),
        )
        .route("/debug/pprof/profile", get(crate::pprof::profile))
        .route("/debug/pprof/heap", get(crate::pprof_heap::heap))
        .merge(probes)
}

fn gauge(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
