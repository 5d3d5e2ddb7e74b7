//! The management commands ADX clients send to `POST /v1/rest/mgmt`, answered with the
//! columns ADX shows: `.show databases`, `.show tables`, `.show table T schema as json`,
//! `.show table T cslschema`, `.show database schema as json`, `.show version`.

use serde_json::{Value as Json, json};
use trawl_catalog::TableInfo;
use trawl_common::{KqlType, TrawlError};

use crate::adx::{dotnet_type, v1_table};
use crate::state::QueryState;

const SUPPORTED: &str = ".show databases, .show tables, .show table T schema as json, .show table T cslschema, \
                         .show database schema as json, .show version";

/// Runs `command` against `database`; the answer is one v1 table.
pub async fn command(state: &QueryState, database: &str, command: &str) -> Result<Json, TrawlError> {
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

async fn database_schema(state: &QueryState, database: &str) -> Result<Json, TrawlError> {
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
    let schema = json!({
        "Databases": {
            database: {
                "Name": database,
                "Tables": by_name,
                "ExternalTables": {},
                "MaterializedViews": {},
                "Functions": {},
                "MajorVersion": 1,
                "MinorVersion": 0,
            }
        }
    });
    Ok(v1_table(
        "Table_0",
        &[("DatabaseSchema", KqlType::String)],
        vec![json!([schema.to_string()])],
    ))
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
