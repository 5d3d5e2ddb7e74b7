//! The vendor-compatible intake on port 9552 (off by default): what the Datadog Agent and
//! its client libraries send. The key (`VX-API-KEY`, or the vendor's own `DD-API-KEY`) is an
//! ingest token; missing or rejected: 403 (so agents report a bad key). Stored: 202 `{}`.
//!
//! Served: `/api/v2/logs` (JSON), `/api/v2/series` (protobuf; a JSON body is 400),
//! `/api/intake/metrics/{v3,v3beta}/{series,sketches}` (the columnar payload),
//! `/api/beta/sketches`, `/api/v0.2/traces` (bodies plain,
//! gzip, deflate or zstd), `/api/v1/validate` (`?api_key=` too), `/_health`, and the routes
//! answered 202 and discarded (`/api/v1/check_run`, `/intake/`, `/api/v1/metadata`,
//! `/api/v0.2/stats`). Everything else, including the JSON series `/api/v1/series` and
//! `/api/v1/distribution_points`, is 404. The token routes each signal (logs, metrics,
//! traces) to its own table when it names one, else to its table.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{MethodRouter, any, get, post};
use serde_json::json;
use trawl_common::{ErrorCode, Signal, TrawlError};
use trawl_ingest::{Admitted, Credentials, RequestKey};
use trawl_intake::{IntakeError, IntakeOutput, vendor};

use crate::compression::decode_body;

use crate::state::IngestState;

pub fn router(state: IngestState) -> Router {
    let discarded = || any(discard);
    let mut router = Router::new();
    // One columnar payload for all four: the Agent sends its sketches there too when told to.
    for path in [
        "/api/intake/metrics/v3/series",
        "/api/intake/metrics/v3beta/series",
        "/api/intake/metrics/v3/sketches",
        "/api/intake/metrics/v3beta/sketches",
    ] {
        router = router.route(path, store(Signal::Metrics, series_v3_mapping));
    }
    router
        .route("/api/v2/logs", store(Signal::Logs, logs_mapping))
        .route("/api/v2/series", store(Signal::Metrics, series_v2_mapping))
        .route("/api/beta/sketches", store(Signal::Metrics, sketches_mapping))
        .route("/api/v0.2/traces", store(Signal::Traces, traces_mapping))
        .route("/api/v1/validate", get(validate).post(validate))
        .route("/_health", get(|| async { Json(json!({})) }))
        .route("/api/v1/check_run", discarded())
        .route("/intake/", discarded())
        .route("/api/v1/metadata", discarded())
        .route("/api/v0.2/stats", discarded())
        .fallback(not_served)
        // Bodies are bounded after decompression; this bounds the compressed bytes read.
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(axum::middleware::from_fn(crate::panics::catch_panics))
        .layer(axum::middleware::from_fn(|request, next| {
            crate::ingest_metrics::http("vendor", request, next)
        }))
        .with_state(state)
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    (status, Json(body)).into_response()
}

/// An error as the intake answers it: `{"errors": [message]}` with its code's status (a bad
/// key is 403 to agents, not 401) and `Retry-After` when the sender should retry.
fn from_trawl(e: &TrawlError) -> Response {
    let status = match e.code {
        ErrorCode::Unauthenticated => StatusCode::FORBIDDEN,
        code => crate::errors::http_status(code),
    };
    let mut response = answer(status, json!({"errors": [e.message.clone()]}));
    crate::errors::add_retry_after(e.code, response.headers_mut());
    response
}

fn error(code: ErrorCode, message: impl Into<String>) -> Response {
    from_trawl(&TrawlError::new(code, message.into()))
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

/// Lets in a request with this API key (an ingest token) for `signal`.
async fn admit(state: &IngestState, key: Option<&str>, signal: Signal) -> Result<Admitted, TrawlError> {
    let Some(key) = key else {
        return Err(TrawlError::new(
            ErrorCode::Unauthenticated,
            "missing API key: send VX-API-KEY",
        ));
    };
    let authorization = format!("Bearer {key}");
    let credentials = Credentials {
        authorization: Some(&authorization),
    };
    state.door.admit(credentials, signal).await
}

async fn validate(
    State(state): State<IngestState>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    // Any signal: only the key is checked.
    match admit(
        &state,
        key(&headers, query.get("api_key").map(String::as_str)),
        Signal::Logs,
    )
    .await
    {
        Ok(_) => answer(StatusCode::OK, json!({"valid": true})),
        Err(e) if e.code == ErrorCode::Unauthenticated => answer(StatusCode::FORBIDDEN, json!({"valid": false})),
        Err(e) => from_trawl(&e),
    }
}

async fn discard(State(state): State<IngestState>, headers: HeaderMap) -> Response {
    match admit(&state, key(&headers, None), Signal::Logs).await {
        Ok(_) => answer(StatusCode::ACCEPTED, json!({})),
        Err(e) => from_trawl(&e),
    }
}

async fn not_served() -> Response {
    error(ErrorCode::NotFound, "not served by this intake")
}

/// Decodes and maps a body to rows, or says why the body is malformed.
type Mapping = fn(&[u8], i64) -> Result<IntakeOutput, IntakeError>;

fn logs_mapping(body: &[u8], now: i64) -> Result<IntakeOutput, IntakeError> {
    Ok(vendor::logs::to_rows(vendor::logs::decode(body)?, now))
}

fn series_v2_mapping(body: &[u8], now: i64) -> Result<IntakeOutput, IntakeError> {
    Ok(vendor::metrics::series_v2_to_rows(
        &vendor::metrics::decode_series_v2(body)?,
        now,
    ))
}

fn series_v3_mapping(body: &[u8], now: i64) -> Result<IntakeOutput, IntakeError> {
    vendor::series_v3::to_rows(&vendor::series_v3::decode(body)?, now)
}

fn sketches_mapping(body: &[u8], now: i64) -> Result<IntakeOutput, IntakeError> {
    Ok(vendor::metrics::sketches_to_rows(
        &vendor::metrics::decode_sketches(body)?,
        now,
    ))
}

fn traces_mapping(body: &[u8], now: i64) -> Result<IntakeOutput, IntakeError> {
    Ok(vendor::traces::to_rows(&vendor::traces::decode(body)?, now))
}

/// A POST handler storing one signal with `mapping`.
fn store(signal: Signal, mapping: Mapping) -> MethodRouter<IngestState> {
    post(
        move |State(state): State<IngestState>, headers: HeaderMap, body: Bytes| async move {
            ingest(&state, &headers, body, signal, mapping).await
        },
    )
}

/// Authenticates, decompresses within the size and in-flight budgets, maps and stores; 202
/// `{}` once the rows are durable. Items a mapping refuses are logged; a body of nothing but
/// refused items is a 400.
async fn ingest(state: &IngestState, headers: &HeaderMap, body: Bytes, signal: Signal, mapping: Mapping) -> Response {
    let admitted = match admit(state, key(headers, None), signal).await {
        Ok(admitted) => admitted,
        Err(e) => return from_trawl(&e),
    };
    let admitted = match admitted.to_signal_table().await {
        Ok(admitted) => admitted,
        Err(e) => return from_trawl(&e),
    };
    let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    let body = match decode_body(encoding, body, state.max_body_bytes) {
        Ok(body) => body,
        Err(e) => return from_trawl(&e.into()),
    };
    let _held = match state.door.hold(body.len()) {
        Ok(held) => held,
        Err(e) => return from_trawl(&e),
    };
    let key = RequestKey::of_body(&format!("vendor/{signal:?}"), &body);
    let output = match mapping(&body, trawl_common::time::now_nanos()) {
        Ok(output) => output,
        Err(e) => return error(ErrorCode::BadRequest, e.to_string()),
    };
    drop(body);
    if output.rejected > 0 {
        if output.rows.is_empty() {
            return error(ErrorCode::BadRequest, output.error_message);
        }
        tracing::warn!(table = %admitted.route().table, "vendor intake: {}", output.error_message);
    }
    if let Err(e) = admitted.accept(output.rows, key, output.rejected).await {
        return from_trawl(&e);
    }
    answer(StatusCode::ACCEPTED, json!({}))
}
