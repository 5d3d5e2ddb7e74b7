//! The vendor-compatible intake router: keys (403), logs (202 `{}`), validate, discards, 404s.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

use crate::TestResult;
use crate::support::ingest_setup;

#[tokio::test]
async fn keys_logs_validate_and_the_routes_not_served() -> TestResult {
    let setup = ingest_setup("vendor").await?;
    let key = setup.token.clone();
    let router = trawl_api::vendor::router(setup.state.clone());
    let call = |request: Request<Body>| {
        let router = router.clone();
        async move {
            let response = router.oneshot(request).await?;
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await?;
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            Ok::<_, Box<dyn std::error::Error>>((status, body))
        }
    };

    let (status, body) = call(
        Request::get("/api/v1/validate")
            .header("DD-API-KEY", &key)
            .body(Body::empty())?,
    )
    .await?;
    assert_eq!((status, body), (StatusCode::OK, serde_json::json!({"valid": true})));
    let by_query = format!("/api/v1/validate?api_key={key}");
    assert_eq!(
        call(Request::get(by_query.as_str()).body(Body::empty())?).await?.0,
        StatusCode::OK
    );
    let (status, body) = call(
        Request::get("/api/v1/validate")
            .header("VX-API-KEY", "wrong")
            .body(Body::empty())?,
    )
    .await?;
    assert_eq!(
        (status, body),
        (StatusCode::FORBIDDEN, serde_json::json!({"valid": false}))
    );

    let logs = serde_json::json!([{"message": "hello", "service": "agent", "ddtags": "env:test"}]).to_string();
    let compressed = zstd::encode_all(logs.as_bytes(), 1)?;
    let request = Request::post("/api/v2/logs")
        .header("VX-API-KEY", &key)
        .header("content-type", "application/json")
        .header("content-encoding", "zstd")
        .body(Body::from(compressed))?;
    let (status, body) = call(request).await?;
    assert_eq!((status, body), (StatusCode::ACCEPTED, serde_json::json!({})));
    let rows = setup.rows("vendor").await?;
    assert_eq!(rows, 1);

    let no_key = Request::post("/api/v2/logs").body(Body::from(logs.clone()))?;
    assert_eq!(call(no_key).await?.0, StatusCode::FORBIDDEN);
    let garbage = Request::post("/api/v2/logs")
        .header("DD-API-KEY", &key)
        .body(Body::from("{"))?;
    assert_eq!(call(garbage).await?.0, StatusCode::BAD_REQUEST);
    for path in ["/api/v1/check_run", "/intake/", "/api/v1/metadata", "/api/v0.2/stats"] {
        let request = Request::post(path).header("DD-API-KEY", &key).body(Body::from("{}"))?;
        assert_eq!(call(request).await?.0, StatusCode::ACCEPTED, "{path}");
    }
    for path in ["/api/v1/series", "/api/v1/distribution_points", "/nope"] {
        let request = Request::post(path).header("DD-API-KEY", &key).body(Body::from("{}"))?;
        assert_eq!(call(request).await?.0, StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(
        call(Request::get("/_health").body(Body::empty())?).await?.0,
        StatusCode::OK
    );
    Ok(())
}

#[tokio::test]
async fn a_spent_budget_answers_503_with_retry_after() -> TestResult {
    let mut setup = ingest_setup("busy").await?;
    setup.state.budget = trawl_api::budget::ByteBudget::new(100);
    let _held = setup.state.budget.reserve(40)?;
    let logs = serde_json::json!([{"message": "x".repeat(100)}]).to_string();
    let vendor = trawl_api::vendor::router(setup.state.clone());
    let request = Request::post("/api/v2/logs")
        .header("DD-API-KEY", &setup.token)
        .body(Body::from(logs.clone()))?;
    let response = vendor.oneshot(request).await?;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
    let push = serde_json::json!({"streams": [{"stream": {}, "values": [["1", "x".repeat(100)]]}]}).to_string();
    let request = Request::post("/lgx/api/v1/push")
        .header("authorization", format!("Bearer {}", setup.token))
        .header("content-type", "application/json")
        .body(Body::from(push))?;
    let response = trawl_api::otlp_http::router(setup.state.clone())
        .oneshot(request)
        .await?;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
    assert_eq!(setup.rows("busy").await?, 0);
    Ok(())
}
