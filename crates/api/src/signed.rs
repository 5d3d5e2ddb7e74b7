//! The query service answers only requests the gateway signed (SPEC "Authentication"):
//! every route but `/health*` and `/info` checks the `x-svc-*` signature headers against the
//! keys gateways registered in the catalog ([`SignatureCheck`]). A missing, forged, stale or
//! unknown-key signature is 401 (HTTP) or UNAUTHENTICATED (gRPC).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
pub use trawl_auth::signatures::SignatureCheck;
use trawl_common::{ErrorCode, TrawlError};
use trawl_gateway::grpc_reply::{grpc_refusal, is_grpc};

use crate::problem::Problem;

/// Largest request body the check reads (queries are small).
const MAX_SIGNED_BODY: usize = 16 << 20;

/// Paths open without a signature: probes.
fn is_open(path: &str) -> bool {
    path == "/health" || path.starts_with("/health/") || path == "/info"
}

/// Middleware: refuses unsigned requests; passes signed ones on with their body intact and
/// the [`Identity`] in the request's extensions.
pub async fn require_signature(State(check): State<Arc<SignatureCheck>>, request: Request, next: Next) -> Response {
    if is_open(request.uri().path()) {
        return next.run(request).await;
    }
    let grpc = is_grpc(request.headers());
    let (mut parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_SIGNED_BODY).await else {
        return refuse(
            grpc,
            TrawlError::new(ErrorCode::PayloadTooLarge, "the request body is too large"),
        );
    };
    match check.check_request(&parts, &body).await {
        Ok(identity) => {
            parts.extensions.insert(identity);
            next.run(Request::from_parts(parts, Body::from(body))).await
        }
        Err(error) => {
            tracing::debug!(%error, path = %parts.uri.path(), "refused an unsigned request");
            refuse(grpc, TrawlError::new(ErrorCode::Unauthenticated, error.to_string()))
        }
    }
}

fn refuse(grpc: bool, error: TrawlError) -> Response {
    if grpc {
        return grpc_refusal(error.code.grpc_code(), &error.message);
    }
    Problem(error).into_response()
}
