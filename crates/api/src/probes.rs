//! `/health` (liveness), `/health/ready` (readiness) and `/info`, on every HTTP port.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json};
use axum::routing::get;

use crate::state::{Readiness, ServiceInfo};

/// Routes of the probes, to merge into a port's router.
pub fn routes<S: Clone + Send + Sync + 'static>(readiness: Arc<Readiness>, info: ServiceInfo) -> Router<S> {
    Router::new()
        .route("/health", get(|| async { Json(serde_json::json!({"status": "ok"})) }))
        .route(
            "/health/ready",
            get(move || {
                let ready = readiness.get();
                async move {
                    if ready {
                        (StatusCode::OK, Json(serde_json::json!({"status": "ready"}))).into_response()
                    } else {
                        (
                            StatusCode::SERVICE_UNAVAILABLE,
                            Json(serde_json::json!({"status": "starting"})),
                        )
                            .into_response()
                    }
                }
            }),
        )
        .route(
            "/info",
            get(move || {
                let info = info.clone();
                async move { Json(info) }
            }),
        )
}
