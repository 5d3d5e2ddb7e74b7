//! gRPC answers written by hand, for refusals made before a request reaches a service.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;

/// Whether a request is gRPC (gRPC-web included) by its content type.
pub fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// A trailers-only gRPC answer with status `code` and `message`.
pub fn grpc_refusal(code: i32, message: &str) -> Response {
    let mut response = Response::new(Body::empty());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(code));
    if let Ok(value) = HeaderValue::from_str(message) {
        headers.insert("grpc-message", value);
    }
    response
}
