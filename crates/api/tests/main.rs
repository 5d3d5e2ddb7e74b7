//! OTLP faces against a real ingestor and catalog on a temporary directory, and the query
//! service's gRPC stream.

mod adx;
mod catalog;
mod log_push;
mod meta;
mod query_grpc;
mod query_http;
mod security;
mod support;
mod vendor;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use prost::Message;
use tower::ServiceExt;
use trawl_api::IngestState;
use trawl_api::otlp_grpc::{Logs, Metrics, OtlpGrpcServer, RawCodec, Traces};
use trawl_api::state::Readiness;
use trawl_catalog::{Catalog, Directory, SqlCatalog};
use trawl_ingest::{ByteBudget, Door, IngestAuth, IngestConfig, Ingestor};
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::collector::logs::v1::logs_service_client::LogsServiceClient;
use trawl_proto::otlp::common::v1::{AnyValue, any_value};
use trawl_proto::otlp::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use trawl_storage::{SegmentStore, SegmentWriter};

type TestResult = Result<(), Box<dyn std::error::Error>>;

struct Setup {
    _dir: tempfile::TempDir,
    catalog: Arc<dyn Catalog>,
    state: IngestState,
}

async fn setup() -> Result<Setup, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let sqlite = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
    let catalog: Arc<dyn Catalog> = sqlite.clone();
    let directory: Arc<dyn Directory> = sqlite.clone();
    let objects: Arc<dyn trawl_catalog::Objects> = sqlite;
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    let config = IngestConfig {
        flush_interval: Duration::from_millis(20),
        ..IngestConfig::default()
    };
    let ingestor = Ingestor::start(SegmentWriter::new(store), catalog.clone(), config).await;
    let state = IngestState {
        door: Door::new(
            ingestor,
            IngestAuth::anonymous(directory, objects, "default", "default"),
            ByteBudget::new(64 << 20),
        ),
        max_body_bytes: 1 << 20,
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
    };
    Ok(Setup {
        _dir: dir,
        catalog,
        state,
    })
}

fn logs_request(bodies: &[&str]) -> ExportLogsServiceRequest {
    let records = bodies
        .iter()
        .map(|body| LogRecord {
            time_unix_nano: 1_700_000_000_000_000_000,
            body: Some(AnyValue {
                value: Some(any_value::Value::StringValue(body.to_string())),
            }),
            ..Default::default()
        })
        .collect();
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: records,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

async fn stored_rows(catalog: &Arc<dyn Catalog>) -> Result<u64, Box<dyn std::error::Error>> {
    Ok(catalog
        .live_segments("default", "default", None)
        .await?
        .iter()
        .map(|s| s.rows)
        .sum())
}

#[tokio::test]
async fn grpc_export_stores_rows_and_malformed_is_invalid_argument() -> TestResult {
    let setup = setup().await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let server = tonic::transport::Server::builder()
        .add_service(OtlpGrpcServer::<Logs>::new(setup.state.clone()))
        .add_service(OtlpGrpcServer::<Traces>::new(setup.state.clone()))
        .add_service(OtlpGrpcServer::<Metrics>::new(setup.state.clone()))
        .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener));
    let server = tokio::spawn(server);

    let endpoint = format!("http://{address}");
    let mut client = LogsServiceClient::connect(endpoint.clone())
        .await?
        .send_compressed(tonic::codec::CompressionEncoding::Gzip);
    let response = client.export(logs_request(&["one", "two"])).await?;
    assert!(response.get_ref().partial_success.is_none());
    assert_eq!(stored_rows(&setup.catalog).await?, 2);

    // Garbage bytes on the same method: INVALID_ARGUMENT, and the server keeps serving.
    let channel = tonic::transport::Endpoint::from_shared(endpoint)?.connect().await?;
    let mut raw = tonic::client::Grpc::new(channel);
    raw.ready().await?;
    let path = http::uri::PathAndQuery::from_static("/opentelemetry.proto.collector.logs.v1.LogsService/Export");
    let garbage = raw
        .unary(tonic::Request::new(vec![0xff_u8, 0xff, 0xff, 0x01]), path, RawCodec)
        .await;
    assert_eq!(garbage.err().map(|s| s.code()), Some(tonic::Code::InvalidArgument));
    client.export(logs_request(&["three"])).await?;
    assert_eq!(stored_rows(&setup.catalog).await?, 3);
    server.abort();
    Ok(())
}

#[tokio::test]
async fn http_export_protobuf_json_and_errors() -> TestResult {
    let setup = setup().await?;
    let router = trawl_api::otlp_http::router(setup.state.clone());
    let post = |content_type: &str, body: Vec<u8>| {
        Request::post("/v1/logs")
            .header("content-type", content_type)
            .body(Body::from(body))
    };

    let response = router
        .clone()
        .oneshot(post("application/x-protobuf", logs_request(&["a"]).encode_to_vec())?)
        .await?;
    assert_eq!(response.status(), StatusCode::OK);

    let json = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"1700000000000000000","body":{"stringValue":"b"}}]}]}]}"#;
    let response = router
        .clone()
        .oneshot(post("application/json", json.as_bytes().to_vec())?)
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(stored_rows(&setup.catalog).await?, 2);

    let response = router
        .clone()
        .oneshot(post("application/x-protobuf", vec![0xff, 0xff, 0xff])?)
        .await?;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = router.clone().oneshot(post("text/plain", b"hello".to_vec())?).await?;
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let big = logs_request(&[&"x".repeat(2 << 20)]).encode_to_vec();
    let response = router.clone().oneshot(post("application/x-protobuf", big)?).await?;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(stored_rows(&setup.catalog).await?, 2);

    // After shutdown nothing can be stored: 503 with Retry-After, so senders retry.
    setup.state.door.ingestor().shutdown().await;
    let response = router
        .clone()
        .oneshot(post("application/x-protobuf", logs_request(&["c"]).encode_to_vec())?)
        .await?;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
    Ok(())
}
