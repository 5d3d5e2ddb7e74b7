//! OTLP/HTTP on port 4318: `POST /v1/logs`, `/v1/traces`, `/v1/metrics`, with
//! `application/x-protobuf` or `application/json` bodies, optionally gzip-compressed.
//!
//! Answers: 200 with the export response (in the request's encoding; `partialSuccess` when
//! items were refused) once the rows are durable; 400 for a malformed body; 413 over the size
//! limit; 415 for another content type; 503 with `Retry-After` when the data could not be
//! stored (the sender retries). Error bodies are `google.rpc.Status`, as OTLP asks.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use prost::Message;
pub use trawl_common::Signal;
use trawl_common::{ErrorCode, TrawlError};
use trawl_ingest::{Ack, Admitted, Credentials, RequestKey};
use trawl_intake::otlp::{self, PayloadFormat};
use trawl_intake::{ColumnsOutput, IntakeOutput};
use trawl_proto::otlp::collector::logs::v1::{ExportLogsPartialSuccess, ExportLogsServiceResponse};
use trawl_proto::otlp::collector::metrics::v1::{ExportMetricsPartialSuccess, ExportMetricsServiceResponse};
use trawl_proto::otlp::collector::trace::v1::{ExportTracePartialSuccess, ExportTraceServiceResponse};

use crate::compression::decode_body;
use crate::state::IngestState;

/// `google.rpc.Status`, the error body of OTLP/HTTP.
#[derive(Clone, PartialEq, prost::Message, serde::Serialize)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// What one export request mapped to: log records and spans are written straight into
/// columns; metric data points as rows.
#[derive(Debug)]
pub enum Mapped {
    Rows(IntakeOutput),
    Columns(ColumnsOutput),
}

impl Mapped {
    /// Stores the rows through `admitted` and answers with the acknowledgement and the
    /// partial-success message of the items the mapping refused.
    pub async fn store(self, admitted: &Admitted, key: RequestKey) -> Result<(Ack, String), TrawlError> {
        match self {
            Mapped::Rows(output) => admitted
                .accept(output.rows, key, output.rejected)
                .await
                .map(|ack| (ack, output.error_message)),
            Mapped::Columns(output) => admitted
                .accept_columns(output.columns, key, output.rejected)
                .await
                .map(|ack| (ack, output.error_message)),
        }
    }
}

/// Decodes and maps one export request of `signal`.
pub fn map_request(signal: Signal, body: &[u8], format: PayloadFormat, now: i64) -> Result<Mapped, TrawlError> {
    Ok(match signal {
        Signal::Logs if format == PayloadFormat::Protobuf => {
            Mapped::Columns(otlp::logs_protobuf_to_columns(body, now)?)
        }
        Signal::Logs => Mapped::Columns(otlp::logs_to_columns(&otlp::decode_logs(body, format)?, now)),
        Signal::Traces if format == PayloadFormat::Protobuf => {
            Mapped::Columns(otlp::traces_protobuf_to_columns(body, now)?)
        }
        Signal::Traces => Mapped::Columns(otlp::traces_to_columns(&otlp::decode_traces(body, format)?, now)),
        Signal::Metrics => Mapped::Rows(otlp::metrics_to_rows(&otlp::decode_metrics(body, format)?, now)),
    })
}

pub fn router(state: IngestState) -> Router {
    let probes = crate::probes::routes(state.readiness.clone(), state.info.clone());
    Router::new()
        .route(
            "/v1/logs",
            post(|s: State<IngestState>, h: HeaderMap, b: Bytes| export(s, h, b, Signal::Logs)),
        )
        .route(
            "/v1/traces",
            post(|s: State<IngestState>, h: HeaderMap, b: Bytes| export(s, h, b, Signal::Traces)),
        )
        .route(
            "/v1/metrics",
            post(|s: State<IngestState>, h: HeaderMap, b: Bytes| export(s, h, b, Signal::Metrics)),
        )
        .route(crate::log_push::PATH, post(crate::log_push::push))
        .layer(DefaultBodyLimit::max(state.max_body_bytes))
        .layer(axum::middleware::from_fn(crate::panics::catch_panics))
        .layer(axum::middleware::from_fn(|request, next| {
            crate::ingest_metrics::http("otlp_http", request, next)
        }))
        .with_state(state)
        .merge(probes)
}

async fn export(State(state): State<IngestState>, headers: HeaderMap, body: Bytes, signal: Signal) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let admitted = match state.door.admit(Credentials { authorization }, signal).await {
        Ok(admitted) => admitted,
        Err(error) => {
            let format = PayloadFormat::from_content_type(content_type).unwrap_or(PayloadFormat::Json);
            return error_response(&error, format);
        }
    };
    let Some(format) = PayloadFormat::from_content_type(content_type) else {
        let error = TrawlError::new(
            ErrorCode::UnsupportedMediaType,
            format!("expected Content-Type application/x-protobuf or application/json, found '{content_type}'"),
        );
        return error_response(&error, PayloadFormat::Json);
    };
    let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    let body = match decode_body(encoding, body, state.max_body_bytes) {
        Ok(body) => body,
        Err(error) => return error_response(&error.into(), format),
    };
    let _held = match state.door.hold(body.len()) {
        Ok(held) => held,
        Err(error) => return error_response(&error, format),
    };
    let now = trawl_common::time::now_nanos();
    let mapped = match map_request(signal, &body, format, now) {
        Ok(mapped) => mapped,
        Err(error) => return error_response(&error, format),
    };
    let key = RequestKey::of_body(&format!("otlp/{signal:?}"), &body);
    drop(body); // the rows own everything they need; free the payload while they wait
    match mapped.store(&admitted, key).await {
        Ok((ack, message)) => success_response(signal, format, ack.refused, message),
        Err(error) => error_response(&error, format),
    }
}

/// An error as OTLP/HTTP answers it: the status of its code, a `google.rpc.Status` body in
/// the request's format, and `Retry-After` when the sender should retry.
fn error_response(error: &TrawlError, format: PayloadFormat) -> Response {
    let body = RpcStatus {
        code: error.code.grpc_code(),
        message: error.message.clone(),
    };
    let mut response = encoded(
        crate::errors::http_status(error.code),
        format,
        body.encode_to_vec(),
        || serde_json::to_vec(&body),
    );
    crate::errors::add_retry_after(error.code, response.headers_mut());
    response
}

fn encoded(
    status: StatusCode,
    format: PayloadFormat,
    protobuf: Vec<u8>,
    json: impl FnOnce() -> serde_json::Result<Vec<u8>>,
) -> Response {
    match format {
        PayloadFormat::Protobuf => {
            (status, [(header::CONTENT_TYPE, "application/x-protobuf")], protobuf).into_response()
        }
        PayloadFormat::Json => match json() {
            Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
            Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "could not encode the response").into_response(),
        },
    }
}

fn success_response(signal: Signal, format: PayloadFormat, rejected: i64, error_message: String) -> Response {
    let response = ExportResponse::new(signal, rejected, error_message);
    encoded(StatusCode::OK, format, response.encode_to_vec(), || response.to_json())
}

/// The `Export*ServiceResponse` of a signal, with partial success when items were refused.
#[derive(Debug, Clone)]
pub enum ExportResponse {
    Logs(ExportLogsServiceResponse),
    Traces(ExportTraceServiceResponse),
    Metrics(ExportMetricsServiceResponse),
}

impl ExportResponse {
    pub fn new(signal: Signal, rejected: i64, error_message: String) -> ExportResponse {
        let partial = rejected > 0 || !error_message.is_empty();
        match signal {
            Signal::Logs => ExportResponse::Logs(ExportLogsServiceResponse {
                partial_success: partial.then_some(ExportLogsPartialSuccess {
                    rejected_log_records: rejected,
                    error_message,
                }),
            }),
            Signal::Traces => ExportResponse::Traces(ExportTraceServiceResponse {
                partial_success: partial.then_some(ExportTracePartialSuccess {
                    rejected_spans: rejected,
                    error_message,
                }),
            }),
            Signal::Metrics => ExportResponse::Metrics(ExportMetricsServiceResponse {
                partial_success: partial.then_some(ExportMetricsPartialSuccess {
                    rejected_data_points: rejected,
                    error_message,
                }),
            }),
        }
    }

    pub fn encode_to_vec(&self) -> Vec<u8> {
        match self {
            ExportResponse::Logs(r) => r.encode_to_vec(),
            ExportResponse::Traces(r) => r.encode_to_vec(),
            ExportResponse::Metrics(r) => r.encode_to_vec(),
        }
    }

    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            ExportResponse::Logs(r) => serde_json::to_vec(r),
            ExportResponse::Traces(r) => serde_json::to_vec(r),
            ExportResponse::Metrics(r) => serde_json::to_vec(r),
        }
    }
}
