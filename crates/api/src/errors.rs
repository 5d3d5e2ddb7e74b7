//! How an error reaches the wire in the api faces: the HTTP status (and `Retry-After` when the
//! caller should retry) and the gRPC status. What each code means on every wire (HTTP status,
//! gRPC code, ADX exception, title, whether to retry) is `trawl_common::ErrorCode`'s, the one
//! place the gateway reads too; faces build their bodies (OTLP's `google.rpc.Status`, problem
//! details, ADX's error object) from these.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use trawl_common::{ErrorCode, TrawlError};

/// The HTTP status of `code`.
pub fn http_status(code: ErrorCode) -> StatusCode {
    StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Adds `Retry-After: 1` to an error answer when its code says the caller should retry.
pub fn add_retry_after(code: ErrorCode, headers: &mut HeaderMap) {
    if code.retryable() && !headers.contains_key(header::RETRY_AFTER) {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
}

/// The gRPC status of an error.
pub fn grpc_status(error: &TrawlError) -> tonic::Status {
    tonic::Status::new(tonic::Code::from(error.code.grpc_code()), error.message.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_face_maps_a_code_the_same_way() {
        let unavailable = TrawlError::unavailable("down");
        assert_eq!(http_status(unavailable.code), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(grpc_status(&unavailable).code(), tonic::Code::Unavailable);
        let mut headers = HeaderMap::new();
        add_retry_after(unavailable.code, &mut headers);
        assert_eq!(
            headers.get(header::RETRY_AFTER).map(|v| v.as_bytes()),
            Some(b"1".as_slice())
        );
        let media = TrawlError::new(ErrorCode::UnsupportedMediaType, "x");
        assert_eq!(http_status(media.code), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(grpc_status(&media).code(), tonic::Code::InvalidArgument);
        let mut none = HeaderMap::new();
        add_retry_after(media.code, &mut none);
        assert!(none.is_empty());
        assert_eq!(
            grpc_status(&TrawlError::new(ErrorCode::PayloadTooLarge, "x")).code(),
            tonic::Code::ResourceExhausted
        );
        assert!(!ErrorCode::Timeout.permanent() && ErrorCode::SyntaxError.permanent());
    }
}
