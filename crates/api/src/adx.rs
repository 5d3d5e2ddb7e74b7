//! The Azure Data Explorer REST faces on port 9510, so ADX clients (`azure-kusto-data`,
//! Grafana's ADX data source, Kusto.Explorer) work unchanged: `POST /v1/rest/query`,
//! `POST /v1/rest/mgmt` (the `.show` commands clients send) and `POST /v2/rest/query`
//! (the v2 frame array). Shapes, key order and cell formats follow what ADX sends and what
//! `azure-kusto-data` 6.x requires; `docs/api.md` lists them.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value as Json, json};
use trawl_common::adx::{self, AdxBody};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_engine::{
    QueryEvent, QueryOutput, QueryRequest, QueryWarning, RunOptions, Visualization, resolve_window_now,
};

use crate::state::QueryState;

#[path = "adx_progressive.rs"]
mod progressive;
use progressive::progressive_response;

/// The database a request names, or the service's default.
fn database(state: &QueryState, body: &AdxBody) -> String {
    body.database(&state.database)
}

/// The correlation id to echo: `x-ext-client-request-id`, else `x-ms-client-request-id`.
fn client_request_id(headers: &HeaderMap) -> String {
    ["x-ext-client-request-id", "x-ms-client-request-id"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .unwrap_or_default()
        .to_string()
}

/// Who asks and under which request id, for the query journal (`.show queries`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Caller {
    pub principal: String,
    pub client_request_id: String,
}

impl Caller {
    fn new(identity: Option<&axum::Extension<trawl_auth::token::Identity>>, headers: &HeaderMap) -> Caller {
        Caller {
            principal: identity.map(|i| i.username.clone()).unwrap_or_default(),
            client_request_id: client_request_id(headers),
        }
    }
}

async fn run(state: &QueryState, body: &AdxBody, caller: Caller) -> Result<QueryOutput, TrawlError> {
    let properties = body.properties()?;
    let options = RunOptions {
        timeout: server_timeout(&properties)?,
        face: "adx",
        fanout_nodes_percent: fanout_nodes_percent(&properties)?,
        principal: caller.principal,
        client_request_id: caller.client_request_id,
        ..RunOptions::default()
    };
    state.engine.execute_with(&request(state, body)?, options).await
}

/// `Options.query_fanout_nodes_percent`: the share of the query nodes a query may spread
/// over, 1 to 100 (a number or its text).
fn fanout_nodes_percent(properties: &Json) -> Result<Option<u8>, TrawlError> {
    let Some(value) = properties.pointer("/Options/query_fanout_nodes_percent") else {
        return Ok(None);
    };
    let number = match value {
        Json::Null => return Ok(None),
        Json::Number(n) => n.as_u64(),
        Json::String(text) => text.trim().parse::<u64>().ok(),
        _ => None,
    };
    match number {
        Some(percent @ 1..=100) => Ok(u8::try_from(percent).ok()),
        _ => Err(TrawlError::bad_request(format!(
            "'query_fanout_nodes_percent' must be a whole number from 1 to 100, found {value}"
        ))),
    }
}

/// The time limit a request asks for: `Options.servertimeout` as a .NET timespan
/// (`00:04:00`, what ADX clients send) or a duration such as `30s`;
/// `Options.norequesttimeout: true` asks for the longest the service allows. None: the
/// service's default.
fn server_timeout(properties: &Json) -> Result<Option<std::time::Duration>, TrawlError> {
    if adx::no_request_timeout(properties) {
        return Ok(Some(std::time::Duration::MAX));
    }
    let Some(value) = adx::server_timeout(properties) else {
        return Ok(None);
    };
    match value.as_str().and_then(trawl_kql::parse_time_limit) {
        Some(limit) => Ok(Some(limit)),
        None => Err(TrawlError::bad_request(format!(
            "'servertimeout' must be a timespan such as \"00:04:00\" or \"30s\", found {value}"
        ))),
    }
}

/// The query of a request: its text, database, and time window from the request options
/// `query_datetimescope_from` / `query_datetimescope_to` (ISO 8601 or relative such as
/// `1h`, as `since`/`until` of `POST /query`) and Trawl's `query_timezone` for naive ones.
fn request(state: &QueryState, body: &AdxBody) -> Result<QueryRequest, TrawlError> {
    let properties = body.properties()?;
    let window = resolve_window_now(
        adx::option(&properties, "query_datetimescope_from"),
        adx::option(&properties, "query_datetimescope_to"),
        adx::option(&properties, "query_timezone"),
    )?;
    Ok(QueryRequest {
        text: body.csl.clone(),
        database: database(state, body),
        window,
        parameters: parameters(&properties)?,
    })
}

/// `properties.Parameters`: the values of the query's declared parameters, by name. Values
/// are text (a number or bool is taken as its JSON text).
fn parameters(properties: &Json) -> Result<std::collections::HashMap<String, String>, TrawlError> {
    let Some(given) = properties.get("Parameters").filter(|p| !p.is_null()) else {
        return Ok(Default::default());
    };
    let Some(given) = given.as_object() else {
        return Err(TrawlError::bad_request(
            "properties.Parameters must be an object of names and values",
        ));
    };
    given
        .iter()
        .map(|(name, value)| {
            let text = match value {
                Json::String(text) => text.clone(),
                Json::Number(_) | Json::Bool(_) => value.to_string(),
                _ => {
                    return Err(TrawlError::bad_request(format!(
                        "properties.Parameters.{name} must be text, a number or a bool"
                    )));
                }
            };
            Ok((name.clone(), text))
        })
        .collect()
}

/// `POST /v1/rest/query`: result tables, `@ExtendedProperties` when the query renders, a
/// `QueryStatus` table, and the table of contents last.
pub async fn v1_query(
    State(state): State<QueryState>,
    identity: Option<axum::Extension<trawl_auth::token::Identity>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    let result = async {
        let body = AdxBody::parse(&body)?;
        let output = run(&state, &body, Caller::new(identity.as_ref(), &headers)).await?;
        Ok::<_, TrawlError>(v1_tables(&output, &client_request_id(&headers), started.elapsed()))
    }
    .await;
    match result {
        Ok(tables) => json_response(StatusCode::OK, &tables),
        Err(error) => AdxError(error).into_response(),
    }
}

/// `POST /v1/rest/mgmt`: the `.show` commands ADX clients send.
pub async fn v1_mgmt(
    State(state): State<QueryState>,
    identity: Option<axum::Extension<trawl_auth::token::Identity>>,
    body: Bytes,
) -> Response {
    let result = async {
        let body = AdxBody::parse(&body)?;
        let role = identity.as_ref().map(|identity| identity.role.as_str());
        let user = identity.as_ref().map(|identity| identity.username.as_str());
        let table = crate::adx_mgmt::command(&state, &database(&state, &body), &body.csl, role, user).await?;
        Ok::<_, TrawlError>(json!({ "Tables": [table] }))
    }
    .await;
    match result {
        Ok(tables) => json_response(StatusCode::OK, &tables),
        Err(error) => AdxError(error).into_response(),
    }
}

/// `POST /v2/rest/query`: the v2 frame array (DataSetHeader, QueryProperties, the result
/// tables, QueryCompletionInformation, DataSetCompletion).
///
/// With the request option `trawl_keep_run: true` the result is kept for export
/// (`runs.rs`): the response names the run in `x-trawl-run-id`.
pub async fn v2_query(
    State(state): State<QueryState>,
    identity: Option<axum::Extension<trawl_auth::token::Identity>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    let result = async {
        let body = AdxBody::parse(&body)?;
        let properties = body.properties()?;
        let progressive = properties
            .pointer("/Options/results_progressive_enabled")
            .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"));
        let request_id = client_request_id(&headers);
        let keeper = state
            .runs
            .clone()
            .filter(|_| crate::runs::keep_requested(&properties))
            .map(|store| RunKeeper {
                store,
                run: crate::runs::Run {
                    id: crate::runs::new_id(),
                    owner: identity.as_ref().map(|i| i.username.clone()).unwrap_or_default(),
                    database: database(&state, &body),
                    query: body.csl.clone(),
                    created_at: String::new(),
                    tables: Vec::new(),
                },
            });
        let caller = Caller::new(identity.as_ref(), &headers);
        if progressive {
            return progressive_response(&state, &body, request_id, started, keeper, caller).await;
        }
        let mut output = run(&state, &body, caller).await?;
        let run_id = match keeper {
            Some(mut keeper) => {
                for table in &output.tables {
                    let rows = table.json_rows().into_iter().map(Json::Array).collect();
                    keeper.add(&table.name, &table.columns, rows);
                }
                let id = keeper.run.id.clone();
                if let Some(warning) = keeper.keep().await {
                    output.warnings.push(warning);
                }
                Some(id)
            }
            None => None,
        };
        let mut response = json_response(StatusCode::OK, &v2_frames(&output, &request_id, started.elapsed()));
        if let Some(id) = run_id {
            let (name, value) = crate::runs::id_header(&id);
            response.headers_mut().insert(name, value);
        }
        Ok::<_, TrawlError>(response)
    }
    .await;
    result.unwrap_or_else(|error| AdxError(error).into_response())
}

/// A run being kept for export: its tables as they finish, stored when the query ends.
struct RunKeeper {
    store: std::sync::Arc<crate::runs::RunStore>,
    run: crate::runs::Run,
}

impl RunKeeper {
    fn add(&mut self, name: &str, columns: &[(String, KqlType)], rows: Vec<Json>) {
        self.run.tables.push(crate::runs::RunTable::new(name, columns, rows));
    }

    /// Stores the run; a failure becomes a warning (the query itself succeeded).
    async fn keep(mut self) -> Option<QueryWarning> {
        self.run.created_at = trawl_common::time::format_datetime(trawl_common::time::now_nanos());
        match self.store.keep(&self.run).await {
            Ok(()) => None,
            Err(error) => {
                tracing::warn!(%error, run = %self.run.id, "cannot keep a run for export");
                Some(QueryWarning {
                    kind: "RunNotKept".into(),
                    message: format!("the result cannot be exported: {}", error.message),
                    location: None,
                })
            }
        }
    }
}

fn json_response(status: StatusCode, body: &Json) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

/// The .NET type name ADX shows as `DataType` in v1 tables.
pub fn dotnet_type(kql_type: KqlType) -> &'static str {
    match kql_type {
        KqlType::Bool => "Boolean",
        KqlType::Int => "Int32",
        KqlType::Long => "Int64",
        KqlType::Real => "Double",
        KqlType::Decimal => "Decimal",
        KqlType::String => "String",
        KqlType::DateTime => "DateTime",
        KqlType::Timespan => "TimeSpan",
        KqlType::Guid => "Guid",
        KqlType::Dynamic => "Object",
    }
}

/// A v1 table: `{TableName, Columns: [{ColumnName, DataType, ColumnType}], Rows}`.
pub fn v1_table(name: &str, columns: &[(&str, KqlType)], rows: Vec<Json>) -> Json {
    json!({
        "TableName": name,
        "Columns": columns.iter().map(|(n, t)| json!({
            "ColumnName": n,
            "DataType": dotnet_type(*t),
            "ColumnType": t.as_str(),
        })).collect::<Vec<_>>(),
        "Rows": rows,
    })
}

fn v1_tables(output: &QueryOutput, request_id: &str, elapsed: std::time::Duration) -> Json {
    let mut tables = Vec::new();
    let mut contents = Vec::new();
    for table in &output.tables {
        let columns: Vec<(&str, KqlType)> = table.columns.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        // v1 prints dynamic values as their JSON text.
        let rows = table
            .json_rows()
            .into_iter()
            .map(|row| {
                Json::Array(
                    row.into_iter()
                        .zip(&table.columns)
                        .map(|(cell, (_, kql_type))| match (kql_type, cell) {
                            (KqlType::Dynamic, Json::Null) => Json::Null,
                            (KqlType::Dynamic, Json::String(text)) => Json::String(text),
                            (KqlType::Dynamic, other) => Json::String(other.to_string()),
                            (_, cell) => cell,
                        })
                        .collect(),
                )
            })
            .collect();
        contents.push(("QueryResult", table.name.clone()));
        tables.push(v1_table(&format!("Table_{}", tables.len()), &columns, rows));
    }
    if let Some(visualization) = &output.visualization {
        let value = crate::query_http::extended_properties(visualization).to_string();
        contents.push(("QueryProperties", "@ExtendedProperties".into()));
        tables.push(v1_table(
            &format!("Table_{}", tables.len()),
            &[("Value", KqlType::String)],
            vec![json!([value])],
        ));
    }
    let now = trawl_common::time::format_datetime(trawl_common::time::now_nanos());
    let activity = uuid::Uuid::new_v4().to_string();
    let mut status_rows = vec![json!([
        now,
        4,
        "Info",
        0,
        format!("Query completed successfully in {} ms", elapsed.as_millis()),
        1,
        uuid::Uuid::new_v4().to_string(),
        activity,
        activity,
        request_id,
    ])];
    for warning in &output.warnings {
        status_rows.push(json!([
            now,
            3,
            "Warning",
            0,
            format!("{}: {}", warning.kind, warning.message),
            1,
            uuid::Uuid::new_v4().to_string(),
            activity,
            activity,
            request_id,
        ]));
    }
    contents.push(("QueryStatus", "QueryStatus".into()));
    tables.push(v1_table(
        &format!("Table_{}", tables.len()),
        &[
            ("Timestamp", KqlType::DateTime),
            ("Severity", KqlType::Int),
            ("SeverityName", KqlType::String),
            ("StatusCode", KqlType::Int),
            ("StatusDescription", KqlType::String),
            ("Count", KqlType::Int),
            ("RequestId", KqlType::Guid),
            ("ActivityId", KqlType::Guid),
            ("SubActivityId", KqlType::Guid),
            ("ClientActivityId", KqlType::String),
        ],
        status_rows,
    ));
    let toc_rows = contents
        .iter()
        .enumerate()
        .map(|(ordinal, (kind, name))| json!([ordinal, kind, name, uuid::Uuid::new_v4().to_string(), ""]))
        .collect();
    tables.push(v1_table(
        &format!("Table_{}", tables.len()),
        &[
            ("Ordinal", KqlType::Long),
            ("Kind", KqlType::String),
            ("Name", KqlType::String),
            ("Id", KqlType::String),
            ("PrettyName", KqlType::String),
        ],
        toc_rows,
    ));
    json!({ "Tables": tables })
}

/// A v2 `DataTable` frame, keys in the order streaming clients need (`FrameType` first,
/// `Rows` last).
fn data_table(id: usize, kind: &str, name: &str, columns: &[(&str, KqlType)], rows: Vec<Json>) -> Json {
    json!({
        "FrameType": "DataTable",
        "TableId": id,
        "TableKind": kind,
        "TableName": name,
        "Columns": v2_columns(columns),
        "Rows": rows,
    })
}

fn v2_columns(columns: &[(&str, KqlType)]) -> Vec<Json> {
    columns
        .iter()
        .map(|(n, t)| json!({"ColumnName": n, "ColumnType": t.as_str()}))
        .collect()
}

/// The `QueryProperties` table: `@ExtendedProperties` with the visualization, if any.
fn query_properties(visualization: Option<&Visualization>) -> Json {
    let properties_rows = match visualization {
        Some(visualization) => vec![json!([
            1,
            "Visualization",
            crate::query_http::extended_properties(visualization).to_string()
        ])],
        None => Vec::new(),
    };
    data_table(
        0,
        "QueryProperties",
        "@ExtendedProperties",
        &[
            ("TableId", KqlType::Int),
            ("Key", KqlType::String),
            ("Value", KqlType::Dynamic),
        ],
        properties_rows,
    )
}

/// The non-progressive frame array.
fn v2_frames(output: &QueryOutput, request_id: &str, elapsed: std::time::Duration) -> Json {
    let mut frames = vec![
        json!({"FrameType": "DataSetHeader", "IsProgressive": false, "Version": "v2.0"}),
        query_properties(output.visualization.as_ref()),
    ];
    let mut next_id = 1;
    for table in &output.tables {
        let columns: Vec<(&str, KqlType)> = table.columns.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let rows: Vec<Json> = table.json_rows().into_iter().map(Json::Array).collect();
        frames.push(data_table(next_id, "PrimaryResult", &table.name, &columns, rows));
        next_id += 1;
    }
    let row_counts: Vec<usize> = output.tables.iter().map(|t| t.row_count()).collect();
    frames.push(completion_information(
        next_id,
        &output.warnings,
        &row_counts,
        request_id,
        elapsed,
        None,
        None,
    ));
    frames.push(json!({"FrameType": "DataSetCompletion", "HasErrors": false, "Cancelled": false}));
    Json::Array(frames)
}

/// The status of `QueryCompletionInformation` rows: `S_OK`, and `E_FAIL` on the `Error` row
/// of a failed query.
const OK_STATUS: (i32, &str) = (0, "S_OK (0)");
const FAILED_STATUS: (i32, &str) = (-2147467259, "E_FAIL (0x80004005)");

/// The `QueryCompletionInformation` table: a `QueryInfo` row (an `Error` row, Level 2, when
/// the query failed after its answer began: `failure`), one `Warning` row per warning, and
/// the `QueryResourceConsumption` statistics.
fn completion_information(
    id: usize,
    warnings: &[QueryWarning],
    row_counts: &[usize],
    request_id: &str,
    elapsed: std::time::Duration,
    scanned: Option<&trawl_engine::Progress>,
    failure: Option<&TrawlError>,
) -> Json {
    let now = trawl_common::time::format_datetime(trawl_common::time::now_nanos());
    let activity = uuid::Uuid::new_v4().to_string();
    let row = |(level, level_name): (i32, &str), (status, status_name): (i32, &str), event: i32, event_name: &str, payload: Json| {
        json!([
            now,
            request_id,
            activity,
            activity,
            activity,
            level,
            level_name,
            status,
            status_name,
            event,
            event_name,
            payload.to_string()
        ])
    };
    let mut rows = vec![match failure {
        None => row(
            (4, "Info"),
            OK_STATUS,
            4,
            "QueryInfo",
            json!({"Count": 1, "Text": "Query completed successfully"}),
        ),
        Some(error) => row(
            (2, "Error"),
            FAILED_STATUS,
            4,
            "QueryInfo",
            json!({"Count": 1, "Text": format!("Query failed: {}: {}", error.code.as_str(), error.message)}),
        ),
    }];
    for warning in warnings {
        rows.push(row(
            (3, "Warning"),
            OK_STATUS,
            4,
            "QueryInfo",
            json!({"Count": 1, "Text": format!("{}: {}", warning.kind, warning.message)}),
        ));
    }
    let result_rows: usize = row_counts.iter().sum();
    let mut consumption = json!({
        "ExecutionTime": elapsed.as_secs_f64(),
        "ClientRequestId": request_id,
        "dataset_statistics": row_counts.iter().map(|count| json!({
            "table_row_count": count,
            "table_size": 0,
        })).collect::<Vec<_>>(),
        "result_rows": result_rows,
    });
    if let Some(progress) = scanned {
        // What the scans read, when the query was watched (progressive mode): rows as ADX
        // names them, bytes and chunks (Parquet row groups) as Trawl's own keys.
        let skipped =
            progress.chunks_skipped_range + progress.chunks_skipped_bloom + progress.chunks_skipped_required_fields;
        consumption["input_dataset_statistics"] = json!({
            "rows": {"scanned": progress.rows_processed},
            "bytes": {
                "scanned": progress.chunk_scanned_compressed_size,
                "skipped": progress.chunk_skipped_compressed_size,
            },
            "chunks": {"total": progress.chunks_total, "scanned": progress.chunks_scanned, "skipped": skipped},
        });
        consumption["resource_usage"] = json!({"memory": {"peak_per_node": progress.memory_peak_bytes}});
    }
    rows.push(row((6, "Stats"), OK_STATUS, 0, "QueryResourceConsumption", consumption));
    data_table(
        id,
        "QueryCompletionInformation",
        "QueryCompletionInformation",
        &[
            ("Timestamp", KqlType::DateTime),
            ("ClientRequestId", KqlType::String),
            ("ActivityId", KqlType::Guid),
            ("SubActivityId", KqlType::Guid),
            ("ParentActivityId", KqlType::Guid),
            ("Level", KqlType::Int),
            ("LevelName", KqlType::String),
            ("StatusCode", KqlType::Int),
            ("StatusCodeName", KqlType::String),
            ("EventType", KqlType::Int),
            ("EventTypeName", KqlType::String),
            ("Payload", KqlType::String),
        ],
        rows,
    )
}

/// An error as ADX answers it: a 4xx/5xx with `{error: {code, message, @type, @message,
/// @context, @permanent}}`, never wrapped in frames.
pub struct AdxError(pub TrawlError);

impl AdxError {
    fn body(&self) -> Json {
        let error = &self.0;
        let semantic = matches!(
            error.code,
            ErrorCode::UnknownTable | ErrorCode::UnknownColumn | ErrorCode::UnknownFunction | ErrorCode::TypeMismatch
        );
        let (code, exception) = error.code.adx_exception();
        let prefix = match error.code {
            ErrorCode::SyntaxError => "Syntax error: ",
            _ if semantic => "Semantic error: ",
            _ => "",
        };
        let mut context = serde_json::Map::new();
        context.insert("code".into(), Json::String(error.code.as_str().into()));
        if let Some(location) = &error.location {
            context.insert("location".into(), serde_json::to_value(location).unwrap_or_default());
        }
        if let Some(suggestion) = &error.suggestion {
            context.insert("suggestion".into(), Json::String(suggestion.clone()));
        }
        let permanent = error.code.permanent();
        json!({
            "error": {
                "code": code,
                "message": error.message,
                "@type": exception,
                "@message": format!("{prefix}{}", error.message),
                "@context": context,
                "@permanent": permanent,
            }
        })
    }
}

impl IntoResponse for AdxError {
    fn into_response(self) -> Response {
        let mut response = json_response(crate::errors::http_status(self.0.code), &self.body());
        crate::errors::add_retry_after(self.0.code, response.headers_mut());
        response
    }
}
