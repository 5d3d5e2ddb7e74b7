//! The management commands ADX clients send to `POST /v1/rest/mgmt`, answered with the
//! columns ADX shows: `.show databases`, `.show tables`, `.show table T schema as json`,
//! `.show table T cslschema`, `.show database schema as json`, `.show schema as json` (every
//! database), `.show version`, `.show functions` (stored functions: there are none to
//! show), `.show queries` (this node's running and recent queries: the caller's own, or
//! everyone's for the roles `admin` and `maintainer`), `.show operations` (the janitor's
//! work of the last week, newest first); and, for the
//! roles `admin` and `maintainer`, `.drop table T [ifexists]` (a tombstone the janitor purges
//! after the restore window) and `.undo drop table T` (within it).

use serde_json::{Value as Json, json};
use trawl_catalog::{Change, ObjectKind, Objects, TableInfo};
use trawl_common::role::Role;
use trawl_common::{ErrorCode, KqlType, TrawlError};

use crate::adx::{dotnet_type, v1_table};
use crate::state::QueryState;

const SUPPORTED: &str = ".show databases, .show tables, .show table T schema as json, .show table T cslschema, \
                         .show database schema as json, .show schema as json, .show version, .show functions, \
                         .show queries, .show operations, \
                         .drop table T [ifexists], .undo drop table T";

/// Runs `command` against `database` for a caller of `role` (as the gateway signed it); the
/// answer is one v1 table.
pub async fn command(
    state: &QueryState,
    database: &str,
    command: &str,
    role: Option<&str>,
    user: Option<&str>,
) -> Result<Json, TrawlError> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let lower: Vec<&str> = lower.iter().map(String::as_str).collect();
    match lower.as_slice() {
        [".show", "databases"] | [".show", "cluster", "databases"] => databases(state, database).await,
        [".show", "tables"] => tables(state, database).await,
        [".show", "table", _, "schema", "as", "json"] => table_schema(state, database, words[2], false).await,
        [".show", "table", _, "cslschema"] => table_schema(state, database, words[2], true).await,
        [".show", "database", "schema", "as", "json"] | [".show", "database", _, "schema", "as", "json"] => {
            let name = if lower.len() == 6 { words[2] } else { database };
            database_schema(state, name).await
        }
        [".show", "schema", "as", "json"] => schema(state).await,
        [".show", "functions"] => Ok(v1_table(
            "Table_0",
            &[
                ("Name", KqlType::String),
                ("Parameters", KqlType::String),
                ("Body", KqlType::String),
                ("Folder", KqlType::String),
                ("DocString", KqlType::String),
            ],
            Vec::new(),
        )),
        [".show", "queries"] => Ok(queries(state, role, user)),
        [".show", "operations"] => operations(state).await,
        [".drop", "table", _] | [".drop", "table", _, "ifexists"] => {
            let if_exists = lower.len() == 4;
            drop_table(state, database, words[2], if_exists, role).await
        }
        [".undo", "drop", "table", _] => undo_drop_table(state, database, words[3], role).await,
        [".show", "version"] => Ok(v1_table(
            "Table_0",
            &[
                ("BuildVersion", KqlType::String),
                ("BuildTime", KqlType::DateTime),
                ("ServiceType", KqlType::String),
                ("ProductVersion", KqlType::String),
            ],
            vec![json!([
                env!("CARGO_PKG_VERSION"),
                trawl_common::time::format_datetime(0),
                "Trawl",
                format!("Trawl {}", env!("CARGO_PKG_VERSION"))
            ])],
        )),
        _ => Err(TrawlError::bad_request(format!(
            "the command '{}' is not supported; supported: {SUPPORTED}",
            command.trim()
        ))),
    }
}

/// The catalog's objects, for a caller allowed to change them.
fn changer<'a>(state: &'a QueryState, role: Option<&str>, what: &str) -> Result<&'a dyn Objects, TrawlError> {
    if !matches!(role.and_then(Role::parse), Some(Role::Admin | Role::Maintainer)) {
        return Err(TrawlError::new(
            ErrorCode::PermissionDenied,
            format!("{what} needs the role admin or maintainer"),
        ));
    }
    state
        .objects
        .as_deref()
        .ok_or_else(|| TrawlError::new(ErrorCode::Unavailable, format!("{what} is not available here")))
}

/// A table name as commands write it: bare, or in brackets and quotes (`['my table']`).
fn table_name(word: &str) -> &str {
    let inner = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')).unwrap_or(word);
    inner
        .strip_prefix('\'')
        .and_then(|w| w.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|w| w.strip_suffix('"')))
        .unwrap_or(inner)
}

fn change_error(change: Change, what: &str) -> Result<(), TrawlError> {
    match change {
        Change::Done => Ok(()),
        // As ADX answers a command on a missing entity: a bad request (400), not a missing route.
        Change::NotFound => Err(TrawlError::new(
            ErrorCode::UnknownTable,
            format!("{what} does not exist"),
        )),
        Change::Exists { deleted } => Err(TrawlError::bad_request(if deleted {
            format!("{what} was dropped and can still be restored")
        } else {
            format!("{what} exists already")
        })),
        Change::HasChildren(children) => Err(TrawlError::bad_request(format!(
            "{what} has live children ({})",
            children.join(", ")
        ))),
        Change::Refused(reason) => Err(TrawlError::bad_request(format!("{what}: {reason}"))),
    }
}

/// `.drop table T [ifexists]`: the table becomes a tombstone (queries stop seeing it at once;
/// `.undo drop table` restores it within the restore window, after which the janitor purges
/// its segments). Answers the remaining tables, as ADX does.
async fn drop_table(
    state: &QueryState,
    database: &str,
    word: &str,
    if_exists: bool,
    role: Option<&str>,
) -> Result<Json, TrawlError> {
    let objects = changer(state, role, "dropping a table")?;
    let name = table_name(word);
    let change = objects
        .delete_object(
            ObjectKind::Table,
            database,
            name,
            false,
            trawl_common::time::now_nanos(),
        )
        .await?;
    match change {
        Change::NotFound if if_exists => {}
        change => change_error(change, &format!("table '{name}'"))?,
    }
    tables(state, database).await
}

/// `.undo drop table T`: restores a table dropped within the restore window, with its data.
async fn undo_drop_table(
    state: &QueryState,
    database: &str,
    word: &str,
    role: Option<&str>,
) -> Result<Json, TrawlError> {
    let objects = changer(state, role, "restoring a table")?;
    let name = table_name(word);
    let window = i64::try_from(state.restore_window.as_nanos()).unwrap_or(i64::MAX);
    let not_before = trawl_common::time::now_nanos().saturating_sub(window);
    let change = objects
        .restore_object(ObjectKind::Table, database, name, not_before)
        .await?;
    change_error(change, &format!("dropped table '{name}'"))?;
    tables(state, database).await
}

/// The most operations `.show operations` lists.
const OPERATIONS_SHOWN: usize = 1000;

/// `.show operations`: what the janitor did (merges, retention, purges, deletions, orphan
/// sweeps), in the columns ADX shows for its own operations.
async fn operations(state: &QueryState) -> Result<Json, TrawlError> {
    let listed = state.engine.catalog().operations(0, OPERATIONS_SHOWN).await?;
    let rows = listed
        .iter()
        .map(|op| {
            json!([
                op.id,
                op.kind,
                op.node,
                trawl_common::time::format_datetime(op.started_at),
                trawl_common::time::format_datetime(op.finished_at),
                trawl_common::time::format_timespan(op.finished_at.saturating_sub(op.started_at)),
                op.state,
                op.status,
            ])
        })
        .collect();
    Ok(v1_table(
        "Table_0",
        &[
            ("OperationId", KqlType::String),
            ("Operation", KqlType::String),
            ("NodeId", KqlType::String),
            ("StartedOn", KqlType::DateTime),
            ("LastUpdatedOn", KqlType::DateTime),
            ("Duration", KqlType::Timespan),
            ("State", KqlType::String),
            ("Status", KqlType::String),
        ],
        rows,
    ))
}

async fn databases(state: &QueryState, current: &str) -> Result<Json, TrawlError> {
    let mut names = state.engine.catalog().databases().await?;
    if !names.iter().any(|n| n == &state.database) {
        names.push(state.database.clone());
    }
    names.sort();
    let rows = names
        .iter()
        .map(|name| {
            json!([
                name,
                "",
                "v1.0",
                name == current,
                "ReadWrite",
                name,
                stable_id(name),
                "",
                ""
            ])
        })
        .collect();
    Ok(v1_table(
        "Table_0",
        &[
            ("DatabaseName", KqlType::String),
            ("PersistentStorage", KqlType::String),
            ("Version", KqlType::String),
            ("IsCurrent", KqlType::Bool),
            ("DatabaseAccessMode", KqlType::String),
            ("PrettyName", KqlType::String),
            ("DatabaseId", KqlType::Guid),
            ("InTransitionTo", KqlType::String),
            ("SuspensionState", KqlType::String),
        ],
        rows,
    ))
}

async fn tables(state: &QueryState, database: &str) -> Result<Json, TrawlError> {
    let tables = state.engine.catalog().tables(database).await?;
    let rows = tables.iter().map(|t| json!([t.name, database, "", ""])).collect();
    Ok(v1_table(
        "Table_0",
        &[
            ("TableName", KqlType::String),
            ("DatabaseName", KqlType::String),
            ("Folder", KqlType::String),
            ("DocString", KqlType::String),
        ],
        rows,
    ))
}

/// `{"Name": T, "OrderedColumns": [{Name, Type, CslType}]}` of one table.
fn ordered_columns(table: &TableInfo) -> Json {
    json!({
        "Name": table.name,
        "OrderedColumns": table.visible_columns().map(|c| json!({
            "Name": c.name,
            "Type": format!("System.{}", dotnet_type(c.kql_type)),
            "CslType": c.kql_type.as_str(),
        })).collect::<Vec<_>>(),
    })
}

async fn find_table(state: &QueryState, database: &str, name: &str) -> Result<TableInfo, TrawlError> {
    let name = name.trim_start_matches("['").trim_end_matches("']");
    state
        .engine
        .catalog()
        .tables(database)
        .await?
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| TrawlError::new(trawl_common::ErrorCode::UnknownTable, format!("unknown table '{name}'")))
}

async fn table_schema(state: &QueryState, database: &str, name: &str, csl: bool) -> Result<Json, TrawlError> {
    let table = find_table(state, database, name).await?;
    let schema = if csl {
        table
            .visible_columns()
            .map(|c| format!("{}:{}", c.name, c.kql_type.as_str()))
            .collect::<Vec<_>>()
            .join(",")
    } else {
        ordered_columns(&table).to_string()
    };
    Ok(v1_table(
        "Table_0",
        &[
            ("TableName", KqlType::String),
            ("Schema", KqlType::String),
            ("DatabaseName", KqlType::String),
            ("Folder", KqlType::String),
            ("DocString", KqlType::String),
        ],
        vec![json!([table.name, schema, database, "", ""])],
    ))
}

/// `.show schema as json`: every database's schema in one document.
async fn schema(state: &QueryState) -> Result<Json, TrawlError> {
    let mut names = state.engine.catalog().databases().await?;
    if !names.iter().any(|n| n == &state.database) {
        names.push(state.database.clone());
    }
    names.sort();
    let mut databases = serde_json::Map::new();
    for name in names {
        databases.insert(name.clone(), database_document(state, &name).await?);
    }
    Ok(v1_table(
        "Table_0",
        &[("DatabaseSchema", KqlType::String)],
        vec![json!([json!({ "Databases": databases }).to_string()])],
    ))
}

/// `.show queries`: this node's running queries, then its recently finished ones.
fn queries(state: &QueryState, role: Option<&str>, user: Option<&str>) -> Json {
    let everyone = matches!(role.and_then(Role::parse), Some(Role::Admin | Role::Maintainer));
    let now = trawl_common::time::now_nanos();
    let entries = state
        .engine
        .journal()
        .entries((!everyone).then_some(user.unwrap_or("")), now);
    let rows = entries
        .into_iter()
        .map(|entry| {
            let duration = entry.last_updated.saturating_sub(entry.started);
            json!([
                entry.client_request_id,
                entry.text,
                entry.database,
                trawl_common::time::format_datetime(entry.started),
                trawl_common::time::format_datetime(entry.last_updated),
                trawl_common::time::format_timespan(duration),
                entry.state.as_str(),
                entry.id,
                entry.principal,
                entry.failure,
                entry.face,
                entry.principal,
            ])
        })
        .collect();
    v1_table(
        "Table_0",
        &[
            ("ClientActivityId", KqlType::String),
            ("Text", KqlType::String),
            ("Database", KqlType::String),
            ("StartedOn", KqlType::DateTime),
            ("LastUpdatedOn", KqlType::DateTime),
            ("Duration", KqlType::Timespan),
            ("State", KqlType::String),
            ("RootActivityId", KqlType::Guid),
            ("User", KqlType::String),
            ("FailureReason", KqlType::String),
            ("Application", KqlType::String),
            ("Principal", KqlType::String),
        ],
        rows,
    )
}

async fn database_schema(state: &QueryState, database: &str) -> Result<Json, TrawlError> {
    let document = database_document(state, database).await?;
    let schema = json!({ "Databases": { database: document } });
    Ok(v1_table(
        "Table_0",
        &[("DatabaseSchema", KqlType::String)],
        vec![json!([schema.to_string()])],
    ))
}

/// One database's part of a schema document.
async fn database_document(state: &QueryState, database: &str) -> Result<Json, TrawlError> {
    let tables = state.engine.catalog().tables(database).await?;
    let mut by_name = serde_json::Map::new();
    for table in &tables {
        let mut schema = ordered_columns(table);
        if let Some(object) = schema.as_object_mut() {
            object.insert("Folder".into(), Json::String(String::new()));
            object.insert("DocString".into(), Json::String(String::new()));
        }
        by_name.insert(table.name.clone(), schema);
    }
    Ok(json!({
        "Name": database,
        "Tables": by_name,
        "ExternalTables": {},
        "MaterializedViews": {},
        "Functions": {},
        "MajorVersion": 1,
        "MinorVersion": 0,
    }))
}

/// A GUID that stays the same for a name (FNV-1a over its bytes).
fn stable_id(name: &str) -> String {
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for byte in name.bytes() {
        hash ^= u128::from(byte);
        hash = hash.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    uuid::Uuid::from_u128(hash).to_string()
}
