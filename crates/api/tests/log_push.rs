//! `POST /lgx/api/v1/push` on the OTLP/HTTP router: JSON and Snappy protobuf, tokens, errors.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;
use trawl_api::IngestState;
use trawl_api::ingest_auth::IngestAuth;
use trawl_api::state::{IngestCounters, Readiness};
use trawl_catalog::{Catalog, Directory, IngestTokenRecord, SqliteCatalog};
use trawl_common::auth::{self, TokenKind};
use trawl_ingest::{IngestConfig, Ingestor};
use trawl_proto::logproto;
use trawl_storage::{SegmentStore, SegmentWriter};

use crate::TestResult;

#[tokio::test]
async fn pushes_are_stored_in_the_tokens_table_and_answered_204() -> TestResult {
    let dir = tempfile::tempdir()?;
    let sqlite = Arc::new(SqliteCatalog::open(&dir.path().join("catalog.db")).await?);
    let catalog: Arc<dyn Catalog> = sqlite.clone();
    let directory: Arc<dyn Directory> = sqlite.clone();
    let (token, parsed) = auth::token_text(TokenKind::Ingest, [1; 8], [2; 32]);
    directory
        .add_ingest_token(&IngestTokenRecord {
            id: parsed.id.clone(),
            secret_hash: auth::hash_secret(&parsed.secret),
            name: "push".into(),
            database: "default".into(),
            table: "pushed".into(),
            allow_table_override: false,
            created_at: 0,
            revoked_at: None,
        })
        .await?;
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    let config = IngestConfig {
        flush_interval: Duration::from_millis(20),
        ..IngestConfig::default()
    };
    let state = IngestState {
        ingestor: Ingestor::start(SegmentWriter::new(store), catalog.clone(), config),
        auth: Arc::new(IngestAuth::required(directory, sqlite)),
        max_body_bytes: 1 << 20,
        counters: Arc::new(IngestCounters::default()),
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
    };
    let router = trawl_api::otlp_http::router(state);
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
    let rows: u64 = catalog
        .live_segments("default", "pushed", None)
        .await?
        .iter()
        .map(|s| s.rows)
        .sum();
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
