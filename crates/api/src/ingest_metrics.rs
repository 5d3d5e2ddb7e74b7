//! Ingest request metrics, recorded once per request at the edge of each face: requests by
//! protocol and outcome, refusals by reason (from the answer's status), body bytes as received,
//! and items the mappings refused inside accepted requests. Records stored by signal are
//! counted by the ingestor once they are durable.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use trawl_common::metrics::{METRICS, label, labels};

/// The outcome and refusal reason an answer's status stands for.
fn outcome(status: StatusCode) -> (&'static str, Option<&'static str>) {
    match status.as_u16() {
        200..=299 => ("stored", None),
        401 | 403 => ("refused", Some("unauthenticated")),
        413 => ("refused", Some("too_large")),
        400 | 404 | 415 | 422 => ("refused", Some("malformed")),
        429 | 503 => ("failed", Some("unavailable")),
        _ => ("failed", Some("internal")),
    }
}

/// Records one answered request of `protocol`.
pub fn record(protocol: &'static str, status: StatusCode, body_bytes: u64) {
    let (outcome, reason) = outcome(status);
    METRICS
        .ingest_requests
        .get_or_create(&labels(("protocol", protocol), ("outcome", outcome)))
        .inc();
    METRICS
        .ingest_bytes
        .get_or_create(&label("protocol", protocol))
        .inc_by(body_bytes);
    if let Some(reason) = reason {
        METRICS.ingest_rejections.get_or_create(&label("reason", reason)).inc();
    }
}

/// Middleware of the HTTP ingest routers: the protocol is the log-push API under its path,
/// else `protocol`.
pub async fn http(protocol: &'static str, request: Request, next: Next) -> Response {
    let protocol = if request.uri().path().starts_with("/lgx/") {
        "log_push"
    } else {
        protocol
    };
    let bytes = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let response = next.run(request).await;
    record(protocol, response.status(), bytes);
    response
}
