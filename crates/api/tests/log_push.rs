//! `POST /lgx/api/v1/push` on the OTLP/HTTP router: JSON and Snappy protobuf, tokens, errors.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;
use trawl_proto::logproto;

use crate::TestResult;
use crate::support::ingest_setup;

#[tokio::test]
async fn pushes_are_stored_in_the_tokens_table_and_answered_204() -> TestResult {
    let setup = ingest_setup("pushed").await?;
    let token = setup.token.clone();
    let router = trawl_api::otlp_http::router(setup.state.clone());
    let push = |content_type: &str, authorization: Option<&str>, encoding: Option<&str>, body: Vec<u8>| {
        let mut request = Request::post("/lgx/api/v1/push")
            .header("content-type", content_type)
            .header("x-scope-orgid", "other-tenant");
        if let Some(value) = authorization {
            request = request.header("authorization", format!("Bearer {value}"));
        }
        if let Some(value) = encoding {
            request = request.header("content-encoding", value);
        }
        request.body(Body::from(body))
    };
    let status = |request: Request<Body>| {
        let router = router.clone();
        async move { router.oneshot(request).await.map(|r| r.status()) }
    };
    let json = serde_json::json!({"streams": [{"stream": {"job": "api", "level": "info"}, "values": [["1700000000000000000", "hello"]]}]});
    let json = json.to_string().into_bytes();

    let response = router
        .clone()
        .oneshot(push("application/json", Some(&token), None, json.clone())?)
        .await?;
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert!(axum::body::to_bytes(response.into_body(), 1024).await?.is_empty());
    let request = logproto::PushRequest {
        streams: vec![logproto::StreamAdapter {
            labels: r#"{job="api"}"#.into(),
            entries: vec![logproto::EntryAdapter {
                timestamp: Some(prost_types::Timestamp {
                    seconds: 1_700_000_001,
                    nanos: 0,
                }),
                line: "from protobuf".into(),
                structured_metadata: Vec::new(),
            }],
            hash: 0,
        }],
    };
    let snappy = snap::raw::Encoder::new().compress_vec(&prost::Message::encode_to_vec(&request))?;
    assert_eq!(
        status(push("application/x-protobuf", Some(&token), None, snappy.clone())?).await?,
        StatusCode::NO_CONTENT
    );
    let rows = setup.rows("pushed").await?;
    assert_eq!(
        rows, 2,
        "both pushes landed in the token's table, whatever the tenant header said"
    );

    assert_eq!(
        status(push("application/json", None, None, json.clone())?).await?,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(push("application/json", Some(&token), None, b"{".to_vec())?).await?,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        status(push("text/plain", Some(&token), None, json.clone())?).await?,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        status(push("application/x-protobuf", Some(&token), Some("gzip"), snappy)?).await?,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        status(push("application/x-protobuf", Some(&token), None, b"garbage".to_vec())?).await?,
        StatusCode::BAD_REQUEST
    );
    let big = snap::raw::Encoder::new().compress_vec(&vec![b'x'; 2 << 20])?;
    assert_eq!(
        status(push("application/x-protobuf", Some(&token), None, big)?).await?,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    Ok(())
}
