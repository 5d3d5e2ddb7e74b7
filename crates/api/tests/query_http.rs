//! The query port's own HTTP routes, driven as the gateway forwards them: `/query` (with a
//! client time limit), `/plan`, `/catalog`, `/v1/databases`, `/v1/datasources`, `/timeline-query`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value as Json, json};
use tower::ServiceExt;
use trawl_api::QueryState;
use trawl_api::state::Readiness;
use trawl_catalog::{Catalog, SqlCatalog};
use trawl_common::{Row, Value};
use trawl_engine::{Engine, EngineConfig};
use trawl_storage::{SegmentStore, SegmentWriter};

use crate::TestResult;

const T0: i64 = 1_700_000_000_000_000_000;

pub(crate) struct Port {
    _dir: tempfile::TempDir,
    router: axum::Router,
}

/// A query port over 120 log rows a second apart in table `default`, plus an empty table `spans`.
pub(crate) async fn port() -> Result<Port, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let catalog: Arc<dyn Catalog> = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    let rows: Vec<Row> = (0..120_i64)
        .map(|i| {
            let mut row = Row::default();
            row.push("timestamp", Value::DateTime(T0 + i * 1_000_000_000));
            row.push(
                "severity_text",
                Value::String(if i % 3 == 0 { "ERROR" } else { "INFO" }.into()),
            );
            row.push("body", Value::Dynamic(json!(format!("line {i}"))));
            row
        })
        .collect();
    let meta = SegmentWriter::new(store.clone())
        .write_rows("default", "default", rows)
        .await?;
    catalog.commit_segments(&[meta], &[]).await?;
    catalog.ensure_table("default", "spans", &[]).await?;
    let state = QueryState {
        engine: Engine::new(catalog, &store, EngineConfig::default())?,
        database: "default".into(),
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
        signatures: None,
        objects: None,
        restore_window: std::time::Duration::from_secs(3600),
        runs: None,
    };
    Ok(Port {
        _dir: dir,
        router: trawl_api::query_http::router(state),
    })
}

impl Port {
    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Json>,
    ) -> Result<(StatusCode, Json), Box<dyn std::error::Error>> {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))?;
        let response = self.router.clone().oneshot(request).await?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20).await?;
        Ok((status, serde_json::from_slice(&bytes)?))
    }
}

#[tokio::test]
async fn query_answers_tables_and_honours_a_client_time_limit() -> TestResult {
    let port = port().await?;
    let (status, body) = port
        .call(
            "POST",
            "/query",
            Some(json!({"query": "default | where severity_text == 'ERROR' | count"})),
        )
        .await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["Tables"][0]["rows"], json!([[40]]));
    assert_eq!(body["Tables"][1]["name"], "@Warnings");
    // A limit of zero stops the query: 504 with the Timeout code.
    let (status, body) = port
        .call(
            "POST",
            "/query",
            Some(json!({"query": "default | count", "timeout": "0s"})),
        )
        .await?;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert_eq!(body["code"], "Timeout");
    let (status, body) = port
        .call(
            "POST",
            "/query",
            Some(json!({"query": "default | count", "timeout": "soon"})),
        )
        .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"].as_str().unwrap_or_default().contains("timeout"),
        "{body}"
    );
    Ok(())
}

#[tokio::test]
async fn plan_catalog_and_databases_describe_what_is_stored() -> TestResult {
    let port = port().await?;
    let (status, body) = port
        .call(
            "POST",
            "/plan",
            Some(json!({"query": "default | where severity_text == 'ERROR' | project body | take 5"})),
        )
        .await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The bound, optimized plan: the table resolved, the filter and projection pushed down.
    let plan = body["plan_sexp"].as_str().unwrap_or_default();
    assert!(plan.starts_with("(query\n  (result \"PrimaryResult\""), "{plan}");
    assert!(plan.contains("(limit \"skip=0, fetch=5\""), "{plan}");
    assert!(plan.contains("(table_scan \"default"), "{plan}");
    assert!(plan.contains("ERROR"), "{plan}");
    // The parsed query and what would run, beside it.
    assert!(
        body["syntax_sexp"].as_str().unwrap_or_default().contains("(take"),
        "{body}"
    );
    assert!(
        body["physical_plan"][0].as_str().unwrap_or_default().contains("Exec"),
        "{body}"
    );
    let (status, body) = port
        .call("POST", "/plan", Some(json!({"query": "default | where"})))
        .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let (status, body) = port.call("GET", "/catalog", None).await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    let tables = body["tables"].as_array().ok_or("tables")?;
    let default = tables
        .iter()
        .find(|t| t["name"] == "default")
        .ok_or("the default table")?;
    let columns: Vec<&str> = default["schema"]
        .as_array()
        .ok_or("schema")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        columns.contains(&"severity_text") && columns.contains(&"body"),
        "{columns:?}"
    );

    let (status, body) = port.call("GET", "/v1/databases", None).await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"databases": [{"name": "default", "tables": ["default", "spans"], "views": []}]})
    );
    Ok(())
}

#[tokio::test]
async fn datasources_page_through_tables_with_their_sizes() -> TestResult {
    let port = port().await?;
    let (status, first) = port.call("GET", "/v1/datasources?limit=1", None).await?;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["items"][0]["name"], "default");
    assert_eq!(first["items"][0]["rows"], 120);
    assert_eq!(first["items"][0]["segments"], 1);
    assert_eq!(first["items"][0]["min_time"], "2023-11-14T22:13:20.0000000Z");
    let next = first["next"].as_str().ok_or("a next cursor")?;
    let (status, second) = port
        .call("GET", &format!("/v1/datasources?limit=1&after={next}"), None)
        .await?;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(second["items"][0]["name"], "spans");
    assert_eq!(second["items"][0]["rows"], 0);
    assert_eq!(second["next"], Json::Null);
    let (status, _) = port.call("GET", "/v1/datasources?limit=0", None).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    Ok(())
}

#[tokio::test]
async fn timeline_counts_rows_by_severity_over_time() -> TestResult {
    let port = port().await?;
    let (status, body) = port
        .call("POST", "/timeline-query", Some(json!({"query": "default"})))
        .await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Two minutes of data: 1 s bins would be 120 (< 200), so the bin is 1 s.
    assert_eq!(body["bin"], "00:00:01");
    let rows = body["Tables"][0]["rows"].as_array().ok_or("rows")?;
    let total: i64 = rows.iter().filter_map(|r| r[2].as_i64()).sum();
    assert_eq!(total, 120);
    let errors: i64 = rows
        .iter()
        .filter(|r| r[1] == "ERROR")
        .filter_map(|r| r[2].as_i64())
        .sum();
    assert_eq!(errors, 40);
    let (status, _) = port
        .call("POST", "/timeline-query", Some(json!({"query": "nosuchtable"})))
        .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    Ok(())
}
