use std::sync::Arc;

use serde_json::{Value as Json, json};
use trawl_catalog::{Catalog, SqlCatalog};
use trawl_common::{Row, TrawlError, Value};
use trawl_engine::{Engine, EngineConfig, QueryRequest, QueryWindow};
use trawl_storage::{SegmentStore, SegmentWriter};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

pub const T0: i64 = 1_700_000_000_000_000_000; // 2023-11-14T22:13:20Z
pub const MINUTE: i64 = 60_000_000_000;

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub catalog: Arc<dyn Catalog>,
    pub writer: SegmentWriter,
    pub engine: Engine,
}

impl Fixture {
    pub async fn new() -> Result<Fixture, Box<dyn std::error::Error>> {
        Self::with_config(EngineConfig::default()).await
    }

    pub async fn with_config(config: EngineConfig) -> Result<Fixture, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let catalog: Arc<dyn Catalog> = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
        let store = SegmentStore::local(&dir.path().join("segments"))?;
        let writer = SegmentWriter::new(store.clone());
        let engine = Engine::new(catalog.clone(), &store, config)?;
        Ok(Fixture {
            _dir: dir,
            catalog,
            writer,
            engine,
        })
    }

    /// Writes `rows` as one segment of table `default` and registers it.
    pub async fn segment(&self, rows: Vec<Row>) -> TestResult {
        let meta = self.writer.write_rows("default", "default", rows).await?;
        self.catalog.commit_segments(&[meta], &[]).await?;
        Ok(())
    }

    pub async fn run(&self, text: &str) -> Result<(Vec<(String, String)>, Vec<Vec<Json>>), TrawlError> {
        self.run_window(text, QueryWindow::default()).await
    }

    pub async fn run_window(
        &self,
        text: &str,
        window: QueryWindow,
    ) -> Result<(Vec<(String, String)>, Vec<Vec<Json>>), TrawlError> {
        let output = self.execute_window(text, window).await?;
        let table = &output.tables[0];
        let columns = table
            .columns
            .iter()
            .map(|(n, t)| (n.clone(), t.as_str().to_string()))
            .collect();
        Ok((columns, table.json_rows()))
    }

    /// The whole output of `text` (every table, the warnings) in database `default`.
    pub async fn execute(&self, text: &str) -> Result<trawl_engine::QueryOutput, TrawlError> {
        self.execute_window(text, QueryWindow::default()).await
    }

    pub async fn execute_window(
        &self,
        text: &str,
        window: QueryWindow,
    ) -> Result<trawl_engine::QueryOutput, TrawlError> {
        let request = QueryRequest {
            text: text.to_string(),
            database: "default".into(),
            window,
            parameters: Default::default(),
        };
        self.engine.execute(&request).await
    }

    pub async fn rows(&self, text: &str) -> Result<Vec<Vec<Json>>, TrawlError> {
        Ok(self.run(text).await?.1)
    }
}

/// A log row like the OTLP mapping makes.
pub fn log(minute: i64, severity: &str, body: &str, service: &str, route: Option<&str>) -> Row {
    let mut row = Row::default();
    row.push("timestamp", Value::DateTime(T0 + minute * MINUTE));
    row.push("ingest_time", Value::DateTime(T0));
    row.push("severity_text", Value::String(severity.into()));
    row.push("body", Value::Dynamic(json!(body)));
    row.push(
        "resource",
        Value::Dynamic(json!({"service.name": service, "host.name": "h1"})),
    );
    if let Some(route) = route {
        row.push(
            "attributes",
            Value::Dynamic(json!({"http.route": route, "http.status_code": 500})),
        );
    }
    row
}

/// A span row like the OTLP mapping makes.
pub fn span(minute: i64, name: &str, trace_id: &str, duration_ms: i64, service: &str) -> Row {
    let mut row = Row::default();
    row.push("timestamp", Value::DateTime(T0 + minute * MINUTE));
    row.push("span_name", Value::String(name.into()));
    row.push("trace_id", Value::String(trace_id.into()));
    row.push("duration", Value::Timespan(duration_ms * 1_000_000));
    row.push("resource", Value::Dynamic(json!({"service.name": service})));
    row
}
