//! What a caller may read of the catalog: `GET /catalog` and
//! `GET /v1/datasources?db=&limit=&after=&before=`, reached through the gateway by signed-in
//! callers (SPEC "Endpoints").
//!
//! Who reads what ([`may_read_databases`]): roles are cluster-wide and reading needs none
//! (SPEC "Authentication" 6), so a caller the gateway signed with a role this service knows
//! reads every database; an identity with a role it does not know reads none. A query port
//! that checks no signatures (not behind a gateway) has no identity and lists everything.
//!
//! `/catalog?db=`: `{"tables": [{name, schema: [{name, data_type}]}]}`, the tables of `db`
//! (default: the service's database); a database the caller cannot see is 404.
//!
//! `/v1/datasources`: the tables of every database the caller may read (only `db`'s, when
//! given), ordered by database then name, a page at a time. Page envelope:
//! `{"items": [...], "next": cursor|null, "prev": cursor|null}`; `after=<next>` gives the
//! following page, `before=<prev>` the preceding one. Cursors are opaque. `limit` defaults
//! to 100 (at most 1000). Each item: `{name, kind: "table", database, columns: [{name,
//! data_type}], rows, bytes, segments, min_time, max_time}` (times null for a table without
//! data).

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde_json::json;
use trawl_auth::token::Identity;
use trawl_common::{ErrorCode, TrawlError};

use crate::problem::Problem;
use crate::state::QueryState;

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

/// Whether `identity` may read the databases (every one, or none: see the module notes).
pub fn may_read_databases(identity: Option<&Identity>) -> bool {
    identity.is_none_or(|identity| trawl_common::role::Role::parse(&identity.role).is_some())
}

#[derive(Debug, Deserialize)]
pub struct PageParams {
    pub limit: Option<usize>,
    pub after: Option<String>,
    pub before: Option<String>,
    /// Only this database's tables.
    pub db: Option<String>,
}

/// `?db=` of `/catalog`.
#[derive(Debug, Deserialize)]
pub struct CatalogParams {
    pub db: Option<String>,
}

fn encode_cursor(key: &str) -> String {
    key.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_cursor(cursor: &str) -> Result<String, TrawlError> {
    let invalid = || TrawlError::bad_request("the cursor is not one this service gave out");
    if !cursor.len().is_multiple_of(2) || !cursor.is_ascii() {
        return Err(invalid());
    }
    let bytes: Result<Vec<u8>, _> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&cursor[i..i + 2], 16))
        .collect();
    String::from_utf8(bytes.map_err(|_| invalid())?).map_err(|_| invalid())
}

/// The sort key of a table in the listing: database, then name (`\0` sorts before any
/// character of a name).
fn key(database: &str, table: &str) -> String {
    format!("{database}\0{table}")
}

/// The keys on the requested page, and whether pages exist before and after it.
pub fn page(keys: &[String], params: &PageParams) -> Result<(Vec<String>, bool, bool), TrawlError> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(TrawlError::bad_request(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    if params.after.is_some() && params.before.is_some() {
        return Err(TrawlError::bad_request("give either 'after' or 'before', not both"));
    }
    let mut sorted: Vec<String> = keys.to_vec();
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

/// `GET /catalog?db=`: the tables of one database with their columns.
pub async fn catalog(
    State(state): State<QueryState>,
    identity: Option<axum::Extension<Identity>>,
    Query(params): Query<CatalogParams>,
) -> Response {
    match catalog_tables(&state, identity.as_deref(), params.db.as_deref()).await {
        Ok(body) => Json(body).into_response(),
        Err(error) => Problem(error).into_response(),
    }
}

async fn catalog_tables(
    state: &QueryState,
    identity: Option<&Identity>,
    database: Option<&str>,
) -> Result<serde_json::Value, TrawlError> {
    let catalog = state.engine.catalog();
    let database = database.unwrap_or(&state.database);
    let visible = may_read_databases(identity)
        && (database == state.database || catalog.databases().await?.iter().any(|d| d == database));
    if !visible {
        return Err(TrawlError::new(
            ErrorCode::NotFound,
            format!("no database '{database}'"),
        ));
    }
    let tables: Vec<serde_json::Value> = catalog
        .tables(database)
        .await?
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "schema": t.visible_columns().map(|c| json!({"name": c.name, "data_type": c.kql_type.as_str()})).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({ "tables": tables }))
}

/// `GET /v1/datasources`: see the module notes.
pub async fn datasources(
    State(state): State<QueryState>,
    identity: Option<axum::Extension<Identity>>,
    Query(params): Query<PageParams>,
) -> Response {
    match list(&state, identity.as_deref(), &params).await {
        Ok(body) => Json(body).into_response(),
        Err(error) => Problem(error).into_response(),
    }
}

async fn list(state: &QueryState, identity: Option<&Identity>, params: &PageParams) -> Result<serde_json::Value, TrawlError> {
    let catalog = state.engine.catalog();
    let databases: Vec<String> = match may_read_databases(identity) {
        false => Vec::new(),
        true => catalog
            .databases()
            .await?
            .into_iter()
            .filter(|database| params.db.as_ref().is_none_or(|only| only == database))
            .collect(),
    };
    let mut tables = Vec::new();
    for database in &databases {
        for table in catalog.tables(database).await? {
            tables.push((key(database, &table.name), database.as_str(), table));
        }
    }
    let keys: Vec<String> = tables.iter().map(|(key, ..)| key.clone()).collect();
    let (page_keys, has_prev, has_next) = page(&keys, params)?;
    let mut items = Vec::with_capacity(page_keys.len());
    for page_key in &page_keys {
        let Some((_, database, table)) = tables.iter().find(|(key, ..)| key == page_key) else {
            continue;
        };
        let name = &table.name;
        let segments = catalog.live_segments(database, name, None).await?;
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
            "database": database,
            "columns": table.visible_columns().map(|c| json!({"name": c.name, "data_type": c.kql_type.as_str()})).collect::<Vec<_>>(),
            "rows": rows,
            "bytes": bytes,
            "segments": segments.len(),
            "min_time": min_time,
            "max_time": max_time,
        }));
    }
    let next = has_next.then(|| page_keys.last().map(|k| encode_cursor(k))).flatten();
    let prev = has_prev.then(|| page_keys.first().map(|k| encode_cursor(k))).flatten();
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
                db: None,
            },
        )?;
        assert_eq!(first, (vec!["t00".into(), "t01".into()], false, true));
        let second = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: Some(encode_cursor("t01")),
                before: None,
                db: None,
            },
        )?;
        assert_eq!(second, (vec!["t02".into(), "t03".into()], true, true));
        let back = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: None,
                before: Some(encode_cursor("t02")),
                db: None,
            },
        )?;
        assert_eq!(back, (vec!["t00".into(), "t01".into()], false, true));
        let last = page(
            &all,
            &PageParams {
                limit: Some(2),
                after: Some(encode_cursor("t03")),
                before: None,
                db: None,
            },
        )?;
        assert_eq!(last, (vec!["t04".into()], true, false));
        assert!(
            page(
                &all,
                &PageParams {
                    limit: Some(0),
                    after: None,
                    before: None,
                    db: None,
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
                    before: None,
                    db: None,
                }
            )
            .is_err()
        );
        Ok(())
    }

    #[test]
    fn tables_sort_by_database_then_name() {
        let mut keys = vec![key("ab", "a"), key("a", "z"), key("a", "b")];
        keys.sort();
        assert_eq!(keys, [key("a", "b"), key("a", "z"), key("ab", "a")]);
        assert!(decode_cursor("aé0").is_err(), "not hex, and no panic at a character boundary");
    }

    #[test]
    fn signed_callers_with_a_known_role_read_the_databases() {
        let identity = |role: &str| Identity {
            username: "someone".into(),
            client: "test".into(),
            role: role.into(),
        };
        for role in ["admin", "maintainer", "observer"] {
            assert!(may_read_databases(Some(&identity(role))), "{role}");
        }
        assert!(!may_read_databases(Some(&identity("superuser"))));
        assert!(may_read_databases(None), "no signatures checked: no identity");
    }
}
