//! A panic while answering one request is that request's internal error, not a dropped
//! connection: [`catch_panics`] answers 500 (problem details) and logs what panicked. The
//! process keeps serving either way (the runtime catches panics in tasks); this makes the
//! client see a proper answer. A panic in the body of a streamed response, after the head
//! went out, still ends that response early.

use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use trawl_common::TrawlError;

use crate::problem::Problem;

/// Middleware: runs the rest of the stack, turning a panic into a 500.
pub async fn catch_panics(request: Request, next: Next) -> Response {
    let route = request.uri().path().to_string();
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            tracing::error!(%route, panic = %what, "a request panicked");
            Problem(TrawlError::internal(
                "the request failed unexpectedly; the server log has details",
            ))
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tower::ServiceExt;

    #[allow(clippy::panic)]
    async fn panicking() -> &'static str {
        panic!("a fault in one request")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_and_the_router_keeps_serving() {
        let router = Router::new()
            .route("/boom", get(panicking))
            .route("/fine", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn(super::catch_panics));
        let request = |path: &str| axum::http::Request::get(path).body(Body::empty());
        let boom = router
            .clone()
            .oneshot(request("/boom").expect("request"))
            .await
            .expect("answer");
        assert_eq!(boom.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let fine = router
            .oneshot(request("/fine").expect("request"))
            .await
            .expect("answer");
        assert_eq!(fine.status(), StatusCode::OK);
    }
}
