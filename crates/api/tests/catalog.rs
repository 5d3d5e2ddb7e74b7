//! `GET /catalog` and `GET /v1/datasources` as clients reach them: through the gateway with a
//! bearer token, the query port checking the gateway's signature.

use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value as Json, json};
use trawl_api::QueryState;
use trawl_api::signed::SignatureCheck;
use trawl_api::state::Readiness;
use trawl_auth::issue_access_token;
use trawl_auth::token::{GatewayKey, Role};
use trawl_catalog::{Catalog, Directory, Principal, PrincipalKind, SqlCatalog};
use trawl_common::{Row, Value};
use trawl_engine::{Engine, EngineConfig};
use trawl_gateway::{Gateway, GatewayConfig};
use trawl_storage::{SegmentStore, SegmentWriter};

use crate::TestResult;
use crate::support::serve;

struct Setup {
    _dir: tempfile::TempDir,
    gateway_url: String,
    /// An observer's access token.
    token: String,
    http: Client<HttpConnector, Full<bytes::Bytes>>,
}

fn rows(n: i64) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let mut row = Row::default();
            row.push("timestamp", Value::DateTime(1_700_000_000_000_000_000 + i));
            row.push("body", Value::String(format!("line {i}")));
            row
        })
        .collect()
}

/// Tables `default.default` (3 rows) and `other.t` (2 rows), a query port that answers only
/// signed requests, and a gateway in front of it.
async fn setup() -> Result<Setup, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let sqlite = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
    let catalog: Arc<dyn Catalog> = sqlite.clone();
    let directory: Arc<dyn Directory> = sqlite;
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    let writer = SegmentWriter::new(store.clone());
    let first = writer.write_rows("default", "default", rows(3)).await?;
    let second = writer.write_rows("other", "t", rows(2)).await?;
    catalog.commit_segments(&[first, second], &[]).await?;
    let now = trawl_common::time::now_nanos();
    directory
        .add_principal(&Principal {
            id: "id-obs".into(),
            name: "obs".into(),
            kind: PrincipalKind::ServiceAccount,
            role: Role::Observer,
            password_hash: None,
            sso_subject: None,
            created_at: now,
        })
        .await?;
    let token = issue_access_token(directory.as_ref(), "id-obs", None, now).await?;
    let state = QueryState {
        engine: Engine::new(catalog, &store, EngineConfig::default())?,
        database: "default".into(),
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
        signatures: Some(SignatureCheck::new(directory.clone())),
        objects: None,
        restore_window: std::time::Duration::from_secs(3600),
        runs: None,
    };
    let query_url = serve(trawl_api::query_http::router(state)).await?;
    let gateway = Gateway::new(
        directory,
        GatewayKey::from_seed([5; 32]),
        GatewayConfig {
            upstream: trawl_gateway::Upstreams::fixed([query_url.clone()]),
            meta_upstream: query_url,
            max_body_bytes: 1 << 20,
            version: "test".into(),
            commit: "test".into(),
            session_secret: None,
        },
    );
    gateway.register(now).await?;
    Ok(Setup {
        _dir: dir,
        gateway_url: serve(gateway.router()).await?,
        token,
        http: Client::builder(TokioExecutor::new()).build_http(),
    })
}

impl Setup {
    /// `GET path` through the gateway, with the observer's token when `signed_in`.
    async fn get(&self, path: &str, signed_in: bool) -> Result<(u16, Json), Box<dyn std::error::Error>> {
        let mut request = http::Request::get(format!("{}{path}", self.gateway_url));
        if signed_in {
            request = request.header("authorization", format!("Bearer {}", self.token));
        }
        let response = self.http.request(request.body(Full::new(bytes::Bytes::new()))?).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, serde_json::from_slice(&body)?))
    }
}

/// `(database, name, rows)` of a datasources page.
fn items(page: &Json) -> Vec<(String, String, u64)> {
    page["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    (
                        item["database"].as_str().unwrap_or_default().to_string(),
                        item["name"].as_str().unwrap_or_default().to_string(),
                        item["rows"].as_u64().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn signed_in_callers_reach_the_catalog_through_the_gateway() -> TestResult {
    let setup = setup().await?;
    // Not signed in: refused by the gateway.
    for path in ["/catalog", "/v1/datasources", "/v1/datasources?limit=1"] {
        let (status, body) = setup.get(path, false).await?;
        assert_eq!(status, 401, "{path}: {body}");
    }

    let (status, body) = setup.get("/catalog", true).await?;
    assert_eq!(status, 200, "{body}");
    let tables = body["tables"].as_array().ok_or("tables")?;
    assert_eq!(tables.len(), 1, "{body}");
    assert_eq!(tables[0]["name"], "default");
    assert!(
        tables[0]["schema"]
            .as_array()
            .is_some_and(|columns| columns.contains(&json!({"name": "body", "data_type": "string"}))),
        "{body}"
    );
    let (status, body) = setup.get("/catalog?db=other", true).await?;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tables"][0]["name"], "t");
    let (status, body) = setup.get("/catalog?db=nowhere", true).await?;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["code"], "NotFound");
    Ok(())
}

#[tokio::test]
async fn datasources_page_through_every_database_the_caller_may_read() -> TestResult {
    let setup = setup().await?;
    let (status, all) = setup.get("/v1/datasources", true).await?;
    assert_eq!(status, 200, "{all}");
    assert_eq!(
        items(&all),
        [("default".into(), "default".into(), 3), ("other".into(), "t".into(), 2)]
    );
    assert_eq!((&all["next"], &all["prev"]), (&Json::Null, &Json::Null));

    // A page at a time, forward and back.
    let (status, first) = setup.get("/v1/datasources?limit=1", true).await?;
    assert_eq!(status, 200, "{first}");
    assert_eq!(items(&first), [("default".into(), "default".into(), 3)]);
    let next = first["next"].as_str().ok_or("a next cursor")?;
    let (status, second) = setup.get(&format!("/v1/datasources?limit=1&after={next}"), true).await?;
    assert_eq!(status, 200, "{second}");
    assert_eq!(items(&second), [("other".into(), "t".into(), 2)]);
    assert_eq!(second["next"], Json::Null);
    let prev = second["prev"].as_str().ok_or("a prev cursor")?;
    let (status, back) = setup.get(&format!("/v1/datasources?limit=1&before={prev}"), true).await?;
    assert_eq!(status, 200, "{back}");
    assert_eq!(items(&back), items(&first));

    // One database only.
    let (status, other) = setup.get("/v1/datasources?db=other", true).await?;
    assert_eq!(status, 200, "{other}");
    assert_eq!(items(&other), [("other".into(), "t".into(), 2)]);
    let (status, body) = setup.get("/v1/datasources?after=zz", true).await?;
    assert_eq!(status, 400, "{body}");
    Ok(())
}
