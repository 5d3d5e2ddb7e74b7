//! The vendor-compatible intake on port 9552 (off by default): what the Datadog Agent and
//! its client libraries send. The key (`VX-API-KEY`, or the vendor's own `DD-API-KEY`) is an
//! ingest token; missing or rejected: 403 (so agents report a bad key). Stored: 202 `{}`.
//!
//! Served so far: `/api/v2/logs` (JSON; gzip, deflate, zstd), `/api/v1/validate`
//! (`?api_key=` too), `/_health`, and the routes answered 202 and discarded
//! (`/api/v1/check_run`, `/intake/`, `/api/v1/metadata`, `/api/v0.2/stats`). Everything
//! else, including the JSON series `/api/v1/series` and `/api/v1/distribution_points`, is
//! 404; the metric, sketch and trace routes are not served yet (404).

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{any, get, post};
use serde_json::json;
use trawl_common::{ErrorCode, TrawlError};
use trawl_intake::vendor;

use crate::compression::{BodyError, decode_body};
use crate::ingest_auth::IngestRoute;
use crate::state::IngestState;

pub fn router(state: IngestState) -> Router {
    let discarded = || any(discard);
    Router::new()
        .route("/api/v2/logs", post(logs))
        .route("/api/v1/validate", get(validate).post(validate))
        .route("/_health", get(|| async { Json(json!({})) }))
        .route("/api/v1/check_run", discarded())
        .route("/intake/", discarded())
        .route("/api/v1/metadata", discarded())
        .route("/api/v0.2/stats", discarded())
        .fallback(not_served)
        // Bodies are bounded after decompression; this bounds the compressed bytes read.
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .with_state(state)
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    answer(status, json!({"errors": [message.into()]}))
}

fn from_trawl(e: &TrawlError) -> Response {
    let status = match e.code {
        // Agents are told about a bad key with 403, not 401.
        ErrorCode::Unauthenticated => StatusCode::FORBIDDEN,
        code => StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
    };
    error(status, e.message.clone())
}

/// The key of a request: `VX-API-KEY`, `DD-API-KEY`, or (validate only) `?api_key=`.
fn key<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<&'a str> {
    ["vx-api-key", "dd-api-key"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .or(query)
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

async fn route(state: &IngestState, key: Option<&str>) -> Result<IngestRoute, TrawlError> {
    match key {
        Some(key) => state.auth.route(Some(&format!("Bearer {key}"))).await,
        None => Err(TrawlError::new(
            ErrorCode::Unauthenticated,
            "missing API key: send VX-API-KEY",
        )),
    }
}

async fn validate(
    State(state): State<IngestState>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    match route(&state, key(&headers, query.get("api_key").map(String::as_str))).await {
        Ok(_) => answer(StatusCode::OK, json!({"valid": true})),
        Err(e) if e.code == ErrorCode::Unauthenticated => answer(StatusCode::FORBIDDEN, json!({"valid": false})),
        Err(e) => from_trawl(&e),
    }
}

async fn discard(State(state): State<IngestState>, headers: HeaderMap) -> Response {
    match route(&state, key(&headers, None)).await {
        Ok(_) => answer(StatusCode::ACCEPTED, json!({})),
        Err(e) => from_trawl(&e),
    }
}

async fn not_served() -> Response {
    error(StatusCode::NOT_FOUND, "not served by this intake")
}

async fn logs(State(state): State<IngestState>, headers: HeaderMap, body: Bytes) -> Response {
    state.counters.requests.fetch_add(1, Relaxed);
    let route = match route(&state, key(&headers, None)).await {
        Ok(route) => route,
        Err(e) => return from_trawl(&e),
    };
    let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    let body = match decode_body(encoding, body, state.max_body_bytes) {
        Ok(body) => body,
        Err(BodyError::TooLarge(limit)) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than {limit} bytes"),
            );
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let _held = match state.budget.reserve(body.len()) {
        Ok(held) => held,
        Err(e) => return from_trawl(&e),
    };
    let entries = match vendor::logs::decode(&body) {
        Ok(entries) => entries,
        Err(e) => {
            state.counters.failed_requests.fetch_add(1, Relaxed);
            return error(StatusCode::BAD_REQUEST, e.to_string());
        }
    };
    drop(body);
    let output = vendor::logs::to_rows(entries, trawl_common::time::now_nanos());
    let rows = output.rows.len() as u64;
    if let Err(e) = state.auth.submit(&state.ingestor, &route, output.rows).await {
        state.counters.failed_requests.fetch_add(1, Relaxed);
        return from_trawl(&e);
    }
    state.counters.rows.fetch_add(rows, Relaxed);
    answer(StatusCode::ACCEPTED, json!({}))
}
