//! The query service's HTTP routes on port 9510: `POST /query`, `POST /plan`,
//! `GET /v1/databases` (and the router of every route of the port; `GET /catalog` and
//! `GET /v1/datasources` are in `datasources.rs`).
//!
//! `POST /query` takes `{query, since, until, timezone}` (`from`/`to` are aliases of
//! `since`/`until`) and answers `{Tables: [...]}`: `PrimaryResult` (then `ExtraTable_N` for
//! further statements) and `@Warnings` (columns `kind`, `message`, `location`). Errors are
//! RFC 7807 problem details.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value as Json_, json};
use trawl_common::TrawlError;
use trawl_engine::{QueryOutput, QueryRequest, resolve_window_now};

use crate::problem::Problem;
use crate::state::QueryState;

/// Body of `POST /query`.
#[derive(Debug, Deserialize)]
pub struct QueryBody {
    pub query: String,
    #[serde(alias = "from")]
    pub since: Option<String>,
    #[serde(alias = "to")]
    pub until: Option<String>,
    pub timezone: Option<String>,
    /// The query's time limit (`30s`, `00:00:30`); the engine's default when absent.
    pub timeout: Option<String>,
}

impl QueryBody {
    /// The time limit the body asks for.
    pub fn timeout(&self) -> Result<Option<std::time::Duration>, TrawlError> {
        let Some(text) = self.timeout.as_deref() else {
            return Ok(None);
        };
        trawl_kql::parse_time_limit(text).map(Some).ok_or_else(|| {
            TrawlError::bad_request(format!(
                "'timeout' must be a timespan such as \"30s\" or \"00:00:30\", found {text:?}"
            ))
        })
    }
}

/// The query port's routes: HTTP, ADX REST and the gRPC `QueryService`, behind the gateway
/// signature check when `state.signatures` is set.
pub fn router(state: QueryState) -> Router {
    let probes = crate::probes::routes(state.readiness.clone(), state.info.clone());
    let signatures = state.signatures.clone();
    let grpc = crate::query_grpc::routes(state.clone());
    let router = Router::new()
        .route("/query", post(query))
        .route("/plan", post(plan))
        .route("/catalog", get(crate::datasources::catalog))
        .route("/v1/databases", get(databases))
        .route("/v1/datasources", get(crate::datasources::datasources))
        .route("/timeline-query", post(crate::timeline::timeline))
        .route("/v1/rest/query", post(crate::adx::v1_query))
        .route("/v1/rest/mgmt", post(crate::adx::v1_mgmt))
        .route("/v2/rest/query", post(crate::adx::v2_query))
        .route("/api/runs/{id}", get(crate::runs::export))
        .with_state(state)
        .merge(grpc)
        .merge(probes)
        .layer(axum::middleware::from_fn(crate::panics::catch_panics));
    match signatures {
        Some(check) => router.layer(axum::middleware::from_fn_with_state(
            check,
            crate::signed::require_signature,
        )),
        None => router,
    }
}

/// Parses a JSON request body, or explains what is wrong with it.
pub fn parse_body<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, TrawlError> {
    serde_json::from_slice(body).map_err(|e| TrawlError::bad_request(format!("the request body is not valid: {e}")))
}

async fn query(State(state): State<QueryState>, body: Bytes) -> Response {
    match run_query(&state, &body).await {
        Ok(output) => Json(tables_json(&output)).into_response(),
        Err(error) => Problem(error).into_response(),
    }
}

async fn run_query(state: &QueryState, body: &[u8]) -> Result<QueryOutput, TrawlError> {
    let body: QueryBody = parse_body(body)?;
    let timeout = body.timeout()?;
    let window = resolve_window_now(body.since.as_deref(), body.until.as_deref(), body.timezone.as_deref())?;
    let request = QueryRequest {
        text: body.query,
        database: state.database.clone(),
        window,
        parameters: Default::default(),
    };
    state.engine.execute_within(&request, timeout, "http").await
}

/// The result-table shape of `POST /query`.
pub fn tables_json(output: &QueryOutput) -> Json_ {
    let mut tables: Vec<Json_> = output
        .tables
        .iter()
        .map(|table| {
            json!({
                "name": table.name,
                "columns": table.columns.iter().map(|(name, kql_type)| json!({
                    "column_name": name,
                    "column_type": kql_type.as_str(),
                })).collect::<Vec<_>>(),
                "rows": table.json_rows(),
            })
        })
        .collect();
    let warnings: Vec<Json_> = output
        .warnings
        .iter()
        .map(|w| {
            json!([
                w.kind,
                w.message,
                w.location.map(|l| serde_json::to_value(l).unwrap_or_default())
            ])
        })
        .collect();
    tables.push(json!({
        "name": "@Warnings",
        "columns": [
            {"column_name": "kind", "column_type": "string"},
            {"column_name": "message", "column_type": "string"},
            {"column_name": "location", "column_type": "dynamic"},
        ],
        "rows": warnings,
    }));
    if let Some(visualization) = &output.visualization {
        tables.push(json!({
            "name": "@ExtendedProperties",
            "columns": [{"column_name": "Value", "column_type": "string"}],
            "rows": [[extended_properties(visualization).to_string()]],
        }));
    }
    json!({ "Tables": tables })
}

/// The visualization of `render` as the `@ExtendedProperties` value: `Visualization` and
/// each property under its ADX name (`title` → `Title`, `xcolumn` → `XColumn`, …).
pub fn extended_properties(visualization: &trawl_engine::Visualization) -> Json_ {
    let mut value = serde_json::Map::new();
    value.insert(
        "Visualization".into(),
        Json_::String(visualization.visualization_type.clone()),
    );
    for (name, property) in &visualization.properties {
        let adx_name = match name.to_ascii_lowercase().as_str() {
            "title" => "Title".to_string(),
            "xcolumn" => "XColumn".to_string(),
            "ycolumns" => "YColumns".to_string(),
            "series" => "Series".to_string(),
            "kind" => "Kind".to_string(),
            "legend" => "Legend".to_string(),
            "ysplit" => "YSplit".to_string(),
            "accumulate" => "Accumulate".to_string(),
            "xaxis" => "XAxis".to_string(),
            "yaxis" => "YAxis".to_string(),
            "xtitle" => "XTitle".to_string(),
            "ytitle" => "YTitle".to_string(),
            "xmin" => "Xmin".to_string(),
            "xmax" => "Xmax".to_string(),
            "ymin" => "Ymin".to_string(),
            "ymax" => "Ymax".to_string(),
            _ => name.clone(),
        };
        value.insert(adx_name, property.clone());
    }
    Json_::Object(value)
}

/// `POST /plan`: `plan_sexp`, the bound plan after optimization (tables resolved, columns
/// typed, filters pushed into scans); `syntax_sexp`, the parsed query; `physical_plan`, what
/// would run, per result table; `placement`, where each would run (on this node and why, or
/// spread over how many query nodes).
async fn plan(State(state): State<QueryState>, body: Bytes) -> Response {
    let result = async {
        let body: QueryBody = parse_body(&body)?;
        let syntax = trawl_kql::sexp::to_sexp(&trawl_kql::parse(&body.query)?);
        let window = resolve_window_now(body.since.as_deref(), body.until.as_deref(), body.timezone.as_deref())?;
        let request = QueryRequest {
            text: body.query,
            database: state.database.clone(),
            window,
            parameters: Default::default(),
        };
        let plan = state.engine.optimized_plan_sexp(&request).await?;
        let physical = state.engine.physical_plans(&request).await?;
        let placement: Vec<String> = physical.iter().map(|(_, placement)| placement.to_string()).collect();
        let physical: Vec<String> = physical.into_iter().map(|(text, _)| text).collect();
        Ok::<_, TrawlError>(json!({
            "plan_sexp": plan,
            "syntax_sexp": syntax,
            "physical_plan": physical,
            "placement": placement,
        }))
    }
    .await;
    match result {
        Ok(answer) => Json(answer).into_response(),
        Err(error) => Problem(error).into_response(),
    }
}

/// `GET /v1/databases`: `{databases: [{name, tables, views}]}`, every live database with the
/// names of its tables and views, sorted by name.
async fn databases(State(state): State<QueryState>) -> Response {
    let catalog = state.engine.catalog();
    let listed = async {
        let mut databases = Vec::new();
        for name in catalog.databases().await? {
            let tables: Vec<String> = catalog.tables(&name).await?.into_iter().map(|t| t.name).collect();
            let views: Vec<String> = catalog.views(&name).await?.into_iter().map(|(view, _)| view).collect();
            databases.push(json!({ "name": name, "tables": tables, "views": views }));
        }
        Ok::<_, trawl_catalog::CatalogError>(databases)
    };
    match listed.await {
        Ok(databases) => Json(json!({ "databases": databases })).into_response(),
        Err(error) => Problem(error.into()).into_response(),
    }
}
