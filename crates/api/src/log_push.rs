//! The log-push API on the OTLP/HTTP port: `POST /lgx/api/v1/push` with a JSON envelope
//! (`Content-Type: application/json`, gzip accepted) or Snappy-compressed protobuf
//! (`application/x-protobuf`, no `Content-Encoding`). The bearer ingest token routes the rows;
//! a tenant header (`X-Scope-OrgID`) never selects a database.
//!
//! Answers: 204 without a body once the rows are durable; 400 for a malformed body, 413 over
//! the size limit, 415 for another content type, 401 without a valid token, 404 for a deleted
//! destination, 503 with `Retry-After` when the data could not be stored. Error bodies are
//! plain text (the message).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use trawl_common::{ErrorCode, Signal, TrawlError};
use trawl_ingest::{Credentials, RequestKey};
use trawl_intake::logpush;

use crate::compression::decode_body;
use crate::state::IngestState;

/// The route of the push API.
pub const PATH: &str = "/lgx/api/v1/push";

/// An error as a plain-text answer with its code's status (and `Retry-After` when the sender
/// should retry).
fn error(error: &TrawlError) -> Response {
    let mut response = (
        crate::errors::http_status(error.code),
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        error.message.clone(),
    )
        .into_response();
    crate::errors::add_retry_after(error.code, response.headers_mut());
    response
}

fn refuse(code: ErrorCode, message: impl Into<String>) -> Response {
    error(&TrawlError::new(code, message.into()))
}

pub async fn push(State(state): State<IngestState>, headers: HeaderMap, body: Bytes) -> Response {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let admitted = match state.door.admit(Credentials { authorization }, Signal::Logs).await {
        Ok(route) => route,
        Err(e) => return error(&e),
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    let mut body_len = body.len();
    // Computed on the body as sent (the protobuf body is Snappy compressed; so is its retry).
    let mut key = RequestKey::of_body("push", &body);
    let streams = match content_type.as_str() {
        "application/json" => {
            let body = match decode_body(encoding, body, state.max_body_bytes) {
                Ok(body) => body,
                Err(e) => return error(&e.into()),
            };
            body_len = body.len();
            key = RequestKey::of_body("push", &body);
            logpush::decode_json(&body)
        }
        "application/x-protobuf" | "application/protobuf" => {
            if encoding.is_some_and(|e| !e.eq_ignore_ascii_case("identity")) {
                return refuse(
                    ErrorCode::UnsupportedMediaType,
                    "protobuf pushes are Snappy block compressed inside the body; send no Content-Encoding",
                );
            }
            // Snappy states its decompressed length up front: refuse before allocating.
            match snap::raw::decompress_len(&body) {
                Ok(len) if len > state.max_body_bytes => {
                    return refuse(
                        ErrorCode::PayloadTooLarge,
                        format!("the request body is larger than {} bytes", state.max_body_bytes),
                    );
                }
                Ok(len) => body_len = len,
                Err(_) => {}
            }
            logpush::decode_protobuf(&body)
        }
        other => {
            return refuse(
                ErrorCode::UnsupportedMediaType,
                format!("expected Content-Type application/json or application/x-protobuf, found '{other}'"),
            );
        }
    };
    let _held = match state.door.hold(body_len) {
        Ok(held) => held,
        Err(e) => return error(&e),
    };
    let streams = match streams {
        Ok(streams) => streams,
        Err(e) => return refuse(ErrorCode::BadRequest, e.to_string()),
    };
    let output = logpush::streams_to_rows(&streams, trawl_common::time::now_nanos());
    drop(streams);
    if let Err(e) = admitted.accept(output.rows, key, output.rejected).await {
        return error(&e);
    }
    StatusCode::NO_CONTENT.into_response()
}
