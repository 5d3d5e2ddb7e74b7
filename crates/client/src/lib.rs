//! A small Rust client for Trawl's query API through the gateway, used by the `trawl`
//! command line.
//!
//! [`QueryClient::query`] posts KQL to the gateway's `POST /v2/rest/query` with a bearer
//! token and returns the result tables; `since`/`until` travel as the request options
//! `query_datetimescope_from`/`_to`. A management command (text starting with `.`, such as
//! `.show tables`) goes to `POST /v1/rest/mgmt` instead. Errors come back as
//! [`ClientError::Problem`] with the server's code and message.

use serde::Deserialize;

/// One column of a result table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Column {
    pub column_name: String,
    pub column_type: String,
}

/// One result table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<serde_json::Value>>,
}

impl Table {
    /// A table as both REST faces write one: `TableName`, `Columns` (`ColumnName`,
    /// `ColumnType`), `Rows`.
    fn of(table: &serde_json::Value) -> Table {
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let columns = table["Columns"].as_array().map(|columns| {
            columns
                .iter()
                .map(|c| Column {
                    column_name: text(&c["ColumnName"]),
                    column_type: text(&c["ColumnType"]),
                })
                .collect()
        });
        let rows = table["Rows"]
            .as_array()
            .map(|rows| rows.iter().filter_map(|r| r.as_array().cloned()).collect());
        Table {
            name: text(&table["TableName"]),
            columns: columns.unwrap_or_default(),
            rows: rows.unwrap_or_default(),
        }
    }
}

/// The result tables of a query: `PrimaryResult` (then `ExtraTable_N`), and `@Warnings`
/// (one column `message`) when there are warnings.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct QueryResponse {
    #[serde(rename = "Tables")]
    pub tables: Vec<Table>,
}

impl QueryResponse {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The tables of a v1 answer (`{"Tables": [{"TableName", "Columns", "Rows"}]}`), as the
    /// management endpoint gives them.
    pub fn from_v1_tables(answer: &serde_json::Value) -> QueryResponse {
        let tables = answer["Tables"]
            .as_array()
            .map(|tables| tables.iter().map(Table::of).collect());
        QueryResponse {
            tables: tables.unwrap_or_default(),
        }
    }

    /// The tables of a v2 frame array.
    pub fn from_v2_frames(frames: &[serde_json::Value]) -> QueryResponse {
        let mut tables = Vec::new();
        let mut warnings = Vec::new();
        for frame in frames.iter().filter(|f| f["FrameType"] == "DataTable") {
            match frame["TableKind"].as_str() {
                Some("PrimaryResult") => tables.push(Table::of(frame)),
                Some("QueryCompletionInformation") => {
                    for row in frame["Rows"].as_array().into_iter().flatten() {
                        // Columns: ..., LevelName (6), ..., Payload (11).
                        if row[6] == "Warning" {
                            let payload: serde_json::Value =
                                serde_json::from_str(row[11].as_str().unwrap_or("{}")).unwrap_or_default();
                            warnings.push(vec![payload["Text"].clone()]);
                        }
                    }
                }
                _ => {}
            }
        }
        if !warnings.is_empty() {
            tables.push(Table {
                name: "@Warnings".into(),
                columns: vec![Column {
                    column_name: "message".into(),
                    column_type: "string".into(),
                }],
                rows: warnings,
            });
        }
        QueryResponse { tables }
    }
}

/// Client errors.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach {url}: {source}")]
    Connect { url: String, source: reqwest::Error },
    #[error("{code}: {message}")]
    Problem {
        status: u16,
        code: String,
        message: String,
        location: Option<serde_json::Value>,
    },
    #[error("unexpected answer from the server (HTTP {status}): {body}")]
    Unexpected { status: u16, body: String },
}

/// Talks to a Trawl gateway.
#[derive(Debug, Clone)]
pub struct QueryClient {
    base_url: String,
    http: reqwest::Client,
    token: Option<String>,
}

impl QueryClient {
    pub fn new(base_url: &str) -> QueryClient {
        QueryClient {
            base_url: base_url.trim_end_matches('/').to_string(),
            http: reqwest::Client::new(),
            token: None,
        }
    }

    pub fn with_token(mut self, token: Option<String>) -> QueryClient {
        self.token = token;
        self
    }

    /// Runs `query` with optional `since`/`until` (ISO 8601 or relative such as `1h`).
    pub async fn query(
        &self,
        query: &str,
        since: Option<&str>,
        until: Option<&str>,
        timezone: Option<&str>,
    ) -> Result<QueryResponse, ClientError> {
        let command = query.trim_start().starts_with('.');
        let url = match command {
            true => format!("{}/v1/rest/mgmt", self.base_url),
            false => format!("{}/v2/rest/query", self.base_url),
        };
        let body = serde_json::json!({
            "db": "default",
            "csl": query,
            "properties": {"Options": {
                "query_datetimescope_from": since,
                "query_datetimescope_to": until,
                "query_timezone": timezone,
            }},
        });
        let mut request = self.http.post(&url).json(&body).header("x-ms-app", "trawl-cli");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|source| ClientError::Connect {
            url: url.clone(),
            source,
        })?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|source| ClientError::Connect { url, source })?;
        if status == 200 && command {
            return match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(answer) if answer["Tables"].is_array() => Ok(QueryResponse::from_v1_tables(&answer)),
                _ => Err(ClientError::Unexpected { status, body: text }),
            };
        }
        if status == 200 {
            return match serde_json::from_str::<Vec<serde_json::Value>>(&text) {
                Ok(frames) => Ok(QueryResponse::from_v2_frames(&frames)),
                Err(_) => Err(ClientError::Unexpected { status, body: text }),
            };
        }
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(answer) if answer["error"].is_object() => {
                let error = &answer["error"];
                let code = error["@context"]["code"].as_str().or(error["code"].as_str());
                Err(ClientError::Problem {
                    status,
                    code: code.unwrap_or_default().to_string(),
                    message: error["message"].as_str().unwrap_or_default().to_string(),
                    location: error["@context"].get("location").cloned().filter(|l| !l.is_null()),
                })
            }
            _ => Err(ClientError::Unexpected { status, body: text }),
        }
    }
}

/// Text of a cell for display: strings bare, other values as JSON.
pub fn cell_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Renders a table with aligned columns.
pub fn render_aligned(table: &Table) -> String {
    let headers: Vec<&str> = table.columns.iter().map(|c| c.column_name.as_str()).collect();
    let cells: Vec<Vec<String>> = table.rows.iter().map(|r| r.iter().map(cell_text).collect()).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (i, cell) in row.iter().enumerate() {
            if let Some(width) = widths.get_mut(i) {
                *width = (*width).max(cell.chars().count());
            }
        }
    }
    let line = |values: Vec<&str>| -> String {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{v:<width$}", width = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = String::new();
    out.push_str(&line(headers.clone()));
    out.push('\n');
    out.push_str(&line(
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .iter()
            .map(|s| s.as_str())
            .collect(),
    ));
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row.iter().map(|s| s.as_str()).collect()));
        out.push('\n');
    }
    out
}

/// Renders a table as CSV (RFC 4180 quoting).
pub fn render_csv(table: &Table) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = table
        .columns
        .iter()
        .map(|c| quote(&c.column_name))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in &table.rows {
        out.push_str(&row.iter().map(|v| quote(&cell_text(v))).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            name: "PrimaryResult".into(),
            columns: vec![
                Column {
                    column_name: "name".into(),
                    column_type: "string".into(),
                },
                Column {
                    column_name: "n".into(),
                    column_type: "long".into(),
                },
            ],
            rows: vec![vec!["a,b".into(), 1.into()], vec!["long name".into(), 22.into()]],
        }
    }

    #[test]
    fn aligned_and_csv() {
        assert_eq!(
            render_aligned(&table()),
            "name       n\n---------  --\na,b        1\nlong name  22\n"
        );
        assert_eq!(render_csv(&table()), "name,n\n\"a,b\",1\nlong name,22\n");
    }

    #[test]
    fn v2_frames_become_tables_and_warnings() {
        let frames: Vec<serde_json::Value> = serde_json::from_str(
            r#"[
            {"FrameType": "DataSetHeader", "IsProgressive": false, "Version": "v2.0"},
            {"FrameType": "DataTable", "TableId": 0, "TableKind": "QueryProperties", "TableName": "@ExtendedProperties", "Columns": [], "Rows": []},
            {"FrameType": "DataTable", "TableId": 1, "TableKind": "PrimaryResult", "TableName": "PrimaryResult",
             "Columns": [{"ColumnName": "n", "ColumnType": "long"}], "Rows": [[1], [2]]},
            {"FrameType": "DataTable", "TableId": 2, "TableKind": "QueryCompletionInformation", "TableName": "QueryCompletionInformation",
             "Columns": [], "Rows": [["t", "", "", "", "", 3, "Warning", 0, "S_OK (0)", 4, "QueryInfo", "{\"Text\": \"ResultTruncated: cut\"}"]]},
            {"FrameType": "DataSetCompletion", "HasErrors": false, "Cancelled": false}
        ]"#,
        )
        .unwrap_or_default();
        let response = QueryResponse::from_v2_frames(&frames);
        let primary = response.table("PrimaryResult").cloned().unwrap_or_else(table);
        assert_eq!(primary.columns[0].column_name, "n");
        assert_eq!(
            primary.rows,
            vec![vec![serde_json::json!(1)], vec![serde_json::json!(2)]]
        );
        let warnings = response.table("@Warnings").map(|t| t.rows.clone());
        assert_eq!(warnings, Some(vec![vec![serde_json::json!("ResultTruncated: cut")]]));
    }
}
