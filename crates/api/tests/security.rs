//! The query port answers only gateway-signed requests; ingest needs a valid ingest token.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use prost::Message;
use tower::ServiceExt;
use trawl_api::signed::SignatureCheck;
use trawl_api::state::Readiness;
use trawl_api::{IngestState, QueryState};
use trawl_auth::token::{self as auth, GatewayKey, Identity, TokenKind};
use trawl_catalog::{Catalog, Directory, GatewayKeyRecord, IngestTokenRecord, SqlCatalog};
use trawl_engine::{Engine, EngineConfig};
use trawl_ingest::{ByteBudget, Door, IngestAuth, IngestConfig, Ingestor};
use trawl_proto::query::query_service_client::QueryServiceClient;
use trawl_storage::{SegmentStore, SegmentWriter};

use crate::TestResult;

struct Setup {
    _dir: tempfile::TempDir,
    catalog: Arc<dyn Catalog>,
    directory: Arc<dyn Directory>,
    objects: Arc<dyn trawl_catalog::Objects>,
    store: SegmentStore,
}

async fn setup() -> Result<Setup, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let sqlite = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    Ok(Setup {
        _dir: dir,
        catalog: sqlite.clone(),
        directory: sqlite.clone(),
        objects: sqlite,
        store,
    })
}

fn query_router(setup: &Setup) -> Result<axum::Router, Box<dyn std::error::Error>> {
    let state = QueryState {
        engine: Engine::new(setup.catalog.clone(), &setup.store, EngineConfig::default())?,
        database: "default".into(),
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
        signatures: Some(SignatureCheck::new(setup.directory.clone())),
        objects: None,
        restore_window: std::time::Duration::from_secs(3600),
        runs: None,
    };
    Ok(trawl_api::query_http::router(state))
}

fn now_secs() -> i64 {
    trawl_common::time::now_nanos() / 1_000_000_000
}

/// Nonces of the requests [`signed`] makes: each is new.
static NONCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A request as a gateway with `key` would send it.
fn signed(
    key: &GatewayKey,
    key_id: &str,
    path: &str,
    body: &str,
    issued_at: i64,
) -> Result<Request<Body>, http::Error> {
    let identity = Identity {
        username: "ann".into(),
        client: "test".into(),
        role: "observer".into(),
    };
    let nonce = format!("{:032x}", NONCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let canonical = auth::canonical_request(
        "POST",
        path,
        &identity,
        issued_at,
        &nonce,
        &auth::body_digest(body.as_bytes()),
    );
    Request::post(path)
        .header("content-type", "application/json")
        .header(auth::USERNAME_HEADER, &identity.username)
        .header(auth::CLIENT_HEADER, &identity.client)
        .header(auth::ROLE_HEADER, &identity.role)
        .header(auth::KEY_ID_HEADER, key_id)
        .header(auth::ISSUED_AT_HEADER, issued_at.to_string())
        .header(auth::NONCE_HEADER, nonce)
        .header(auth::SIGNATURE_HEADER, key.sign(&canonical))
        .body(Body::from(body.to_string()))
}

#[tokio::test]
async fn the_query_port_answers_only_gateway_signed_requests() -> TestResult {
    let setup = setup().await?;
    let key = GatewayKey::from_seed([3; 32]);
    setup
        .directory
        .register_gateway_key(&GatewayKeyRecord {
            key_id: key.key_id.clone(),
            public_key: key.public_key(),
            created_at: 0,
        })
        .await?;
    let router = query_router(&setup)?;
    let body = r#"{"query": "print 1"}"#;
    let status = |request: Request<Body>| {
        let router = router.clone();
        async move { router.oneshot(request).await.map(|r| r.status()) }
    };

    // Probes stay open.
    assert_eq!(
        status(Request::get("/health").body(Body::empty())?).await?,
        StatusCode::OK
    );
    assert_eq!(
        status(Request::get("/info").body(Body::empty())?).await?,
        StatusCode::OK
    );
    // Unsigned: 401 with a problem body.
    let unsigned = Request::post("/query")
        .header("content-type", "application/json")
        .header(auth::USERNAME_HEADER, "admin")
        .body(Body::from(body))?;
    let response = router.clone().oneshot(unsigned).await?;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let problem: serde_json::Value =
        serde_json::from_slice(&axum::body::to_bytes(response.into_body(), 1 << 20).await?)?;
    assert_eq!(problem["code"], "Unauthenticated");
    // Signed: answered.
    let now = now_secs();
    assert_eq!(
        status(signed(&key, &key.key_id, "/query", body, now)?).await?,
        StatusCode::OK
    );
    // Forged with another key under the registered id, an unknown id, stale, or with the
    // body changed after signing: 401.
    let stranger = GatewayKey::from_seed([4; 32]);
    assert_eq!(
        status(signed(&stranger, &key.key_id, "/query", body, now)?).await?,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(signed(&stranger, &stranger.key_id, "/query", body, now)?).await?,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status(signed(&key, &key.key_id, "/query", body, now - 3600)?).await?,
        StatusCode::UNAUTHORIZED
    );
    let mut tampered = signed(&key, &key.key_id, "/query", body, now)?;
    *tampered.body_mut() = Body::from(r#"{"query": "print 2"}"#);
    assert_eq!(status(tampered).await?, StatusCode::UNAUTHORIZED);
    // The same signed request again (a captured request replayed): 401, though it is valid.
    let original = signed(&key, &key.key_id, "/query", body, now)?;
    let (parts, _) = original.into_parts();
    let copy = |parts: &http::request::Parts| {
        let mut request = Request::post("/query").body(Body::from(body));
        if let Ok(request) = request.as_mut() {
            *request.headers_mut() = parts.headers.clone();
        }
        request
    };
    assert_eq!(status(copy(&parts)?).await?, StatusCode::OK);
    assert_eq!(status(copy(&parts)?).await?, StatusCode::UNAUTHORIZED);
    // Without its nonce: 401.
    let mut bare = signed(&key, &key.key_id, "/query", body, now)?;
    bare.headers_mut().remove(auth::NONCE_HEADER);
    assert_eq!(status(bare).await?, StatusCode::UNAUTHORIZED);
    // Signed for one path, sent to another.
    let mut moved = signed(&key, &key.key_id, "/plan", body, now)?;
    *moved.uri_mut() = "/query".parse()?;
    assert_eq!(status(moved).await?, StatusCode::UNAUTHORIZED);

    // gRPC without a signature: UNAUTHENTICATED.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let mut client = QueryServiceClient::connect(format!("http://{address}")).await?;
    let refused = client
        .execute_query(trawl_proto::query::ExecuteQueryRequest {
            query: "print 1".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(refused.err().map(|s| s.code()), Some(tonic::Code::Unauthenticated));
    server.abort();
    Ok(())
}

fn logs(body: &str) -> Vec<u8> {
    use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
    use trawl_proto::otlp::common::v1::{AnyValue, any_value};
    use trawl_proto::otlp::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: vec![LogRecord {
                    time_unix_nano: 1_700_000_000_000_000_000,
                    body: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(body.into())),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

#[tokio::test]
async fn ingest_needs_a_valid_token_which_routes_the_rows() -> TestResult {
    let setup = setup().await?;
    let (text, token) = auth::token_text(TokenKind::Ingest, [5; 8], [6; 32]);
    setup
        .directory
        .add_ingest_token(&IngestTokenRecord {
            id: token.id.clone(),
            secret_hash: auth::hash_secret(&token.secret),
            name: "t".into(),
            database: "default".into(),
            table: "routed".into(),
            allow_table_override: false,
            signal_tables: Default::default(),
            created_at: 0,
            revoked_at: None,
        })
        .await?;
    let config = IngestConfig {
        flush_interval: Duration::from_millis(20),
        ..IngestConfig::default()
    };
    let ingestor = Ingestor::start(SegmentWriter::new(setup.store.clone()), setup.catalog.clone(), config).await;
    let state = IngestState {
        door: Door::new(
            ingestor,
            IngestAuth::required(setup.directory.clone(), setup.objects.clone()),
            ByteBudget::new(64 << 20),
        ),
        max_body_bytes: 1 << 20,
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
    };
    let router = trawl_api::otlp_http::router(state.clone());
    let post = |authorization: Option<String>| {
        let mut request = Request::post("/v1/logs").header("content-type", "application/x-protobuf");
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.body(Body::from(logs("x")))
    };
    let status = |request: Request<Body>| {
        let router = router.clone();
        async move { router.oneshot(request).await.map(|r| r.status()) }
    };
    assert_eq!(status(post(None)?).await?, StatusCode::UNAUTHORIZED);
    assert_eq!(
        status(post(Some("Bearer nonsense".into()))?).await?,
        StatusCode::UNAUTHORIZED
    );
    let wrong_secret = format!("{}A", &text[..text.len() - 1]);
    let wrong_secret = if wrong_secret == text {
        format!("{}B", &text[..text.len() - 1])
    } else {
        wrong_secret
    };
    assert_eq!(
        status(post(Some(format!("Bearer {wrong_secret}")))?).await?,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(status(post(Some(format!("Bearer {text}")))?).await?, StatusCode::OK);
    let rows: u64 = setup
        .catalog
        .live_segments("default", "routed", None)
        .await?
        .iter()
        .map(|s| s.rows)
        .sum();
    assert_eq!(rows, 1, "the token's table holds the row");
    assert!(
        setup
            .catalog
            .live_segments("default", "default", None)
            .await?
            .is_empty()
    );
    setup.directory.revoke_ingest_token(&token.id, 1).await?;
    assert_eq!(
        status(post(Some(format!("Bearer {text}")))?).await?,
        StatusCode::UNAUTHORIZED
    );

    // OTLP/gRPC without a token: UNAUTHENTICATED.
    use trawl_api::otlp_grpc::{Logs, OtlpGrpcServer};
    use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
    use trawl_proto::otlp::collector::logs::v1::logs_service_client::LogsServiceClient;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(OtlpGrpcServer::<Logs>::new(state))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let mut client = LogsServiceClient::connect(format!("http://{address}")).await?;
    let refused = client
        .export(ExportLogsServiceRequest::decode(logs("y").as_slice())?)
        .await;
    assert_eq!(refused.err().map(|s| s.code()), Some(tonic::Code::Unauthenticated));
    server.abort();
    Ok(())
}
