//! Kept results ("runs"), for export: a query sent with the request option
//! `trawl_keep_run: true` (the web UI sends it) gets an id in the `x-trawl-run-id` response
//! header, and its result tables are kept in object storage, beside the segments, for
//! [`KEEP_FOR`]. `GET /api/runs/{id}?format=csv|json&table=N` gives them back to the user who
//! ran the query, and to no one else (another user's run is "not found", as a missing one).
//!
//! The store is the cluster's object store, so any query node answers for a run any other
//! node kept. A run's object is zstd-compressed JSON under [`PREFIX`]; runs older than
//! [`KEEP_FOR`] are deleted by the node that keeps a run, at most once an hour.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use trawl_auth::token::Identity;
use trawl_common::{ErrorCode, KqlType, TrawlError};

use crate::problem::Problem;
use crate::state::QueryState;

/// Where runs live in the object store.
pub const PREFIX: &str = "_trawl/runs";
/// How long a run is kept.
pub const KEEP_FOR: Duration = Duration::from_secs(7 * 24 * 3600);
/// The response header that names a kept run.
pub const RUN_ID_HEADER: &str = "x-trawl-run-id";
/// The request option (`properties.Options`) that asks for the result to be kept.
pub const KEEP_OPTION: &str = "trawl_keep_run";
/// Largest run kept, as JSON before compression; a larger result is not kept (the query
/// still answers, with a warning).
pub const MAX_RUN_BYTES: usize = 256 << 20;
/// How often a node deletes expired runs.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// One result table of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunTable {
    pub name: String,
    pub columns: Vec<RunColumn>,
    /// Rows of cells as the v2 REST face writes them.
    pub rows: Vec<Json>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub kql_type: String,
}

impl RunTable {
    pub fn new(name: &str, columns: &[(String, KqlType)], rows: Vec<Json>) -> RunTable {
        RunTable {
            name: name.to_string(),
            columns: columns
                .iter()
                .map(|(name, kql_type)| RunColumn {
                    name: name.clone(),
                    kql_type: kql_type.as_str().to_string(),
                })
                .collect(),
            rows,
        }
    }
}

/// A kept run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub id: String,
    /// The user who ran it (the gateway-signed name).
    pub owner: String,
    pub database: String,
    pub query: String,
    /// When it finished (ISO 8601).
    pub created_at: String,
    pub tables: Vec<RunTable>,
}

/// A new run id: a UUIDv7 (time-ordered), 32 lowercase hex digits.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// Whether `id` is a well-formed run id (it becomes part of an object path).
fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn object_path(id: &str) -> ObjectPath {
    ObjectPath::from(format!("{PREFIX}/{id}.json.zst"))
}

/// Where runs are kept.
#[derive(Debug)]
pub struct RunStore {
    store: Arc<dyn ObjectStore>,
    last_sweep: std::sync::Mutex<Option<Instant>>,
}

impl RunStore {
    pub fn new(store: Arc<dyn ObjectStore>) -> RunStore {
        RunStore {
            store,
            last_sweep: std::sync::Mutex::new(None),
        }
    }

    /// Keeps `run`; refuses one larger than [`MAX_RUN_BYTES`].
    pub async fn keep(&self, run: &Run) -> Result<(), TrawlError> {
        if !valid_id(&run.id) {
            return Err(TrawlError::internal(format!("'{}' is not a run id", run.id)));
        }
        let json = serde_json::to_vec(run).map_err(|e| TrawlError::internal(format!("cannot encode a run: {e}")))?;
        if json.len() > MAX_RUN_BYTES {
            return Err(TrawlError::new(
                ErrorCode::PayloadTooLarge,
                format!(
                    "the result ({} MiB) is larger than the {} MiB a run keeps for export",
                    json.len() >> 20,
                    MAX_RUN_BYTES >> 20
                ),
            ));
        }
        let compressed = tokio::task::spawn_blocking(move || zstd::encode_all(json.as_slice(), 3))
            .await
            .map_err(|e| TrawlError::internal(format!("cannot compress a run: {e}")))?
            .map_err(|e| TrawlError::internal(format!("cannot compress a run: {e}")))?;
        self.store
            .put(&object_path(&run.id), PutPayload::from(compressed))
            .await
            .map_err(|e| TrawlError::new(ErrorCode::Unavailable, format!("cannot keep the run: {e}")))?;
        self.sweep_now_and_then();
        Ok(())
    }

    /// The run `id` if `owner` ran it.
    pub async fn get(&self, id: &str, owner: &str) -> Result<Run, TrawlError> {
        let not_found = || {
            TrawlError::new(
                ErrorCode::NotFound,
                format!(
                    "there is no run '{id}' of yours (runs are kept for {} days)",
                    KEEP_FOR.as_secs() / 86_400
                ),
            )
        };
        if !valid_id(id) {
            return Err(not_found());
        }
        let bytes = match self.store.get(&object_path(id)).await {
            Ok(result) => result
                .bytes()
                .await
                .map_err(|e| TrawlError::new(ErrorCode::Unavailable, format!("cannot read the run: {e}")))?,
            Err(object_store::Error::NotFound { .. }) => return Err(not_found()),
            Err(e) => {
                return Err(TrawlError::new(
                    ErrorCode::Unavailable,
                    format!("cannot read the run: {e}"),
                ));
            }
        };
        let run: Run = tokio::task::spawn_blocking(move || {
            let mut decoder = zstd::Decoder::new(bytes.as_ref())?;
            // Bounded: a run never holds more than MAX_RUN_BYTES of JSON.
            let mut json = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut decoder, MAX_RUN_BYTES as u64 + 1),
                &mut json,
            )?;
            serde_json::from_slice(&json).map_err(std::io::Error::other)
        })
        .await
        .map_err(|e| TrawlError::internal(format!("cannot read the run: {e}")))?
        .map_err(|e| TrawlError::internal(format!("the run '{id}' cannot be read: {e}")))?;
        if run.owner != owner {
            return Err(not_found());
        }
        Ok(run)
    }

    /// Deletes expired runs in the background, at most once per [`SWEEP_EVERY`].
    fn sweep_now_and_then(&self) {
        {
            let Ok(mut last) = self.last_sweep.lock() else {
                return;
            };
            if last.is_some_and(|at| at.elapsed() < SWEEP_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let store = self.store.clone();
        tokio::spawn(async move {
            match sweep(store.as_ref(), KEEP_FOR).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "deleted expired runs"),
                Err(error) => tracing::warn!(%error, "cannot delete expired runs"),
            }
        });
    }
}

/// Deletes runs kept longer than `keep_for`; returns how many.
pub async fn sweep(store: &dyn ObjectStore, keep_for: Duration) -> Result<usize, object_store::Error> {
    let cutoff = chrono::Utc::now() - chrono::Duration::from_std(keep_for).unwrap_or(chrono::Duration::MAX);
    let prefix = ObjectPath::from(PREFIX);
    let expired: Vec<ObjectPath> = store
        .list(Some(&prefix))
        .try_filter(|object| std::future::ready(object.last_modified < cutoff))
        .map_ok(|object| object.location)
        .try_collect()
        .await?;
    for path in &expired {
        store.delete(path).await?;
    }
    Ok(expired.len())
}

/// Whether a request's properties ask for the result to be kept.
pub fn keep_requested(properties: &Json) -> bool {
    properties
        .pointer(&format!("/Options/{KEEP_OPTION}"))
        .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"))
}

/// The response header naming run `id`.
pub fn id_header(id: &str) -> (header::HeaderName, HeaderValue) {
    (
        header::HeaderName::from_static(RUN_ID_HEADER),
        HeaderValue::from_str(id).unwrap_or(HeaderValue::from_static("")),
    )
}

#[derive(Debug, Deserialize)]
pub struct ExportParams {
    /// `csv` or `json` (the default).
    pub format: Option<String>,
    /// Which result table, from 0 (the default).
    pub table: Option<usize>,
}

/// `GET /api/runs/{id}?format=csv|json&table=N`: a kept run's table as a download.
pub async fn export(
    State(state): State<QueryState>,
    identity: Option<axum::Extension<Identity>>,
    Path(id): Path<String>,
    Query(params): Query<ExportParams>,
) -> Response {
    let result = async {
        let runs = state
            .runs
            .as_ref()
            .ok_or_else(|| TrawlError::new(ErrorCode::NotFound, "this service keeps no runs"))?;
        let owner = identity.as_ref().map(|i| i.username.as_str()).unwrap_or_default();
        let mut run = runs.get(&id, owner).await?;
        let index = params.table.unwrap_or(0);
        if index >= run.tables.len() {
            return Err(TrawlError::bad_request(format!(
                "the run has {} result table(s); 'table' counts from 0",
                run.tables.len()
            )));
        }
        let table = run.tables.swap_remove(index);
        let suffix = if index == 0 { String::new() } else { format!("-{index}") };
        let (body, content_type, extension) = match params.format.as_deref().unwrap_or("json") {
            "csv" => (to_csv(&table)?, "text/csv; charset=utf-8", "csv"),
            "json" => (to_json(&table)?, "application/json; charset=utf-8", "json"),
            other => {
                return Err(TrawlError::bad_request(format!(
                    "'format' must be 'csv' or 'json', found '{other}'"
                )));
            }
        };
        let disposition = format!("attachment; filename=\"trawl-{id}{suffix}.{extension}\"");
        Ok::<_, TrawlError>(
            (
                [
                    (header::CONTENT_TYPE, content_type.to_string()),
                    (header::CONTENT_DISPOSITION, disposition),
                ],
                body,
            )
                .into_response(),
        )
    }
    .await;
    result.unwrap_or_else(|error| Problem(error).into_response())
}

/// A cell as CSV text: empty for null, JSON text for dynamic values, else the value.
fn csv_cell(cell: &Json) -> String {
    match cell {
        Json::Null => String::new(),
        Json::String(text) => text.clone(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// The table as CSV (RFC 4180): a header of column names, then the rows.
fn to_csv(table: &RunTable) -> Result<Vec<u8>, TrawlError> {
    let failed = |e: csv::Error| TrawlError::internal(format!("cannot write CSV: {e}"));
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(table.columns.iter().map(|c| c.name.as_str()))
        .map_err(failed)?;
    for row in &table.rows {
        let cells = row.as_array().map(Vec::as_slice).unwrap_or_default();
        writer.write_record(cells.iter().map(csv_cell)).map_err(failed)?;
    }
    writer
        .into_inner()
        .map_err(|e| TrawlError::internal(format!("cannot write CSV: {e}")))
}

/// The table as a JSON array of objects keyed by column name.
fn to_json(table: &RunTable) -> Result<Vec<u8>, TrawlError> {
    let objects: Vec<serde_json::Map<String, Json>> = table
        .rows
        .iter()
        .map(|row| {
            let cells = row.as_array().map(Vec::as_slice).unwrap_or_default();
            table
                .columns
                .iter()
                .zip(cells)
                .map(|(column, cell)| (column.name.clone(), cell.clone()))
                .collect()
        })
        .collect();
    serde_json::to_vec(&objects).map_err(|e| TrawlError::internal(format!("cannot write JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use serde_json::json;

    fn run(owner: &str) -> Run {
        Run {
            id: new_id(),
            owner: owner.into(),
            database: "default".into(),
            query: "T".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            tables: vec![RunTable::new(
                "PrimaryResult",
                &[("a".into(), KqlType::String), ("d".into(), KqlType::Dynamic)],
                vec![json!(["x, \"y\"", {"k": [1, 2]}]), json!([null, null])],
            )],
        }
    }

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn code<T: std::fmt::Debug>(result: Result<T, TrawlError>) -> Option<ErrorCode> {
        result.err().map(|e| e.code)
    }

    #[tokio::test]
    async fn a_run_is_kept_for_its_owner_only() -> TestResult {
        let store = RunStore::new(Arc::new(InMemory::new()));
        let kept = run("ana");
        store.keep(&kept).await?;
        let read = store.get(&kept.id, "ana").await?;
        assert_eq!(read.tables[0].rows, kept.tables[0].rows);
        assert_eq!(code(store.get(&kept.id, "bob").await), Some(ErrorCode::NotFound));
        assert_eq!(code(store.get(&new_id(), "ana").await), Some(ErrorCode::NotFound));
        let traversal = store.get("../../db/t/segment", "ana").await;
        assert_eq!(code(traversal), Some(ErrorCode::NotFound));
        Ok(())
    }

    #[test]
    fn csv_quotes_and_writes_dynamic_values_as_json() -> TestResult {
        let text = String::from_utf8(to_csv(&run("ana").tables[0])?)?;
        assert_eq!(text, "a,d\n\"x, \"\"y\"\"\",\"{\"\"k\"\":[1,2]}\"\n,\n");
        let json: Json = serde_json::from_slice(&to_json(&run("ana").tables[0])?)?;
        assert_eq!(
            json,
            json!([{"a": "x, \"y\"", "d": {"k": [1, 2]}}, {"a": null, "d": null}])
        );
        Ok(())
    }

    #[tokio::test]
    async fn expired_runs_are_swept() -> TestResult {
        let backend = Arc::new(InMemory::new());
        let store = RunStore::new(backend.clone());
        store.keep(&run("ana")).await?;
        assert_eq!(sweep(backend.as_ref(), Duration::from_secs(3600)).await?, 0);
        assert_eq!(sweep(backend.as_ref(), Duration::ZERO).await?, 1);
        Ok(())
    }
}
