//! `GET /v1/datasources?limit=&after=&before=`: the tables of the database with their
//! metadata, a page at a time.
//!
//! Page envelope: `{"items": [...], "next": cursor|null, "prev": cursor|null}`. Items are
//! ordered by name; `after=<next>` gives the following page, `before=<prev>` the preceding
//! one. Cursors are opaque. `limit` defaults to 100 (at most 1000). Each item:
//! `{name, kind: "table", database, columns: [{name, data_type}], rows, bytes, segments,
//! min_time, max_time}` (times null for a table without data).

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde_json::json;
use trawl_common::TrawlError;

use crate::problem::Problem;
use crate::state::QueryState;

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

#[derive(Debug, Deserialize)]
pub struct PageParams {
    pub limit: Option<usize>,
    pub after: Option<String>,
    pub before: Option<String>,
}

fn encode_cursor(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_cursor(cursor: &str) -> Result<String, TrawlError> {
    let invalid = || TrawlError::bad_request("the cursor is not one this service gave out");
    if !cursor.len().is_multiple_of(2) {
        return Err(invalid());
    }
    let bytes: Result<Vec<u8>, _> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&cursor[i..i + 2], 16))
        .collect();
    String::from_utf8(bytes.map_err(|_| invalid())?).map_err(|_| invalid())
}

/// The names on the requested page, and whether pages exist before and after it.
pub fn page(names: &[String], params: &PageParams) -> Result<(Vec<String>, bool, bool), TrawlError> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(TrawlError::bad_request(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    if params.after.is_some() && params.before.is_some() {
        return Err(TrawlError::bad_request("give either 'after' or 'before', not both"));
    }
    let mut sorted: Vec<String> = names.to_vec();
    sorted.sort();
    let (start, end) = match (&params.after, &params.before) {
        (Some(after), None) => {
            let after = decode_cursor(after)?;
            let start = sorted.partition_point(|n| *n <= after);
            (start, (start + limit).min(sorted.len()))
        }
        (None, Some(before)) => {
            let before = decode_cursor(before)?;
            let end = sorted.partition_point(|n| *n < before);
            (end.saturating_sub(limit), end)
        }
        _ => (0, limit.min(sorted.len())),
    };
    Ok((sorted[start..end].to_vec(), start > 0, end < sorted.len()))
}

pub async fn datasources(State(state): State<QueryState>, Query(params): Query<PageParams>) -> Response {
    match list(&state, &params).await {
        Ok(body) => Json(body).into_response(),
        Err(error) => Problem(error).into_response(),
    }
}

async fn list(state: &QueryState, params: &PageParams) -> Result<serde_json::Value, TrawlError> {
    let catalog = state.engine.catalog();
    let tables = catalog.tables(&state.database).await?;
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    let (page_names, has_prev, has_next) = page(&names, params)?;
    let mut items = Vec::with_capacity(page_names.len());
    for name in &page_names {
        let Some(table) = tables.iter().find(|t| &t.name == name) else {
            continue;
        };
        let segments = catalog.live_segments(&state.database, name, None).await?;
        let rows: u64 = segments.iter().map(|s| s.rows).sum();
        let bytes: u64 = segments.iter().map(|s| s.bytes).sum();
        let min_time = segments
            .iter()
            .map(|s| s.min_time)
            .min()
            .map(trawl_common::time::format_datetime);
        let max_time = segments
            .iter()
            .map(|s| s.max_time)
            .max()
            .map(trawl_common::time::format_datetime);
        items.push(json!({
            "name": name,
            "kind": "table",
            "database": state.database,
            "columns": table.visible_columns().map(|c| json!({"name": c.name, "data_type": c.kql_type.as_str()})).collect::<Vec<_>>(),
            "rows": rows,
            "bytes": bytes,
            "segments": segments.len(),
            "min_time": min_time,
            "max_time": max_time,
        }));
    }
    let next = has_next.then(|| page_names.last().map(|n| encode_cursor(n))).flatten();
    let prev = has_prev.then(|| page_names.first().map(|n| encode_cursor(n))).flatten();
    Ok(json!({ "items": items, "next": next, "prev": prev }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i:02}")).collect()
    }

    #[test]
    fn pages_forward_and_back() -> Result<(), TrawlError> {
        let all = names(5);
        let first = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: None,
                before: None,
            },
        )?;
        assert_eq!(first, (vec!["t00".into(), "t01".into()], false, true));
        let second = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: Some(encode_cursor("t01")),
                before: None,
            },
        )?;
        assert_eq!(second, (vec!["t02".into(), "t03".into()], true, true));
        let back = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: None,
                before: Some(encode_cursor("t02")),
            },
        )?;
        assert_eq!(back, (vec!["t00".into(), "t01".into()], false, true));
        let last = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: Some(encode_cursor("t03")),
                before: None,
            },
        )?;
        assert_eq!(last, (vec!["t04".into()], true, false));
        assert!(
            page(
                &all,
                &PageParams {
                    limit: Some(0),
                    after: None,
                    before: None
                }
            )
            .is_err()
        );
        assert!(
            page(
                &all,
                &PageParams {
                    limit: None,
                    after: Some("zz".into()),
                    before: None
                }
            )
            .is_err()
        );
        Ok(())
    }
}
