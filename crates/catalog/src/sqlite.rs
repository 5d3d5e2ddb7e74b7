//! The embedded catalog in SQLite (WAL, `synchronous=FULL`, so a committed registration
//! survives a crash).

use std::path::Path;
use std::str::FromStr;

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row as _, Sqlite, Transaction};
use trawl_common::KqlType;

use crate::model::{ColumnInfo, SegmentMeta, SegmentState, TableInfo, TimeRange};
use crate::{Catalog, CatalogError, Result};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS tables (
        database TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (database, name))",
    "CREATE TABLE IF NOT EXISTS table_columns (
        database TEXT NOT NULL,
        table_name TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        name TEXT NOT NULL,
        kql_type TEXT NOT NULL,
        PRIMARY KEY (database, table_name, name))",
    "CREATE TABLE IF NOT EXISTS segments (
        id TEXT PRIMARY KEY,
        database TEXT NOT NULL,
        table_name TEXT NOT NULL,
        path TEXT NOT NULL,
        min_time INTEGER NOT NULL,
        max_time INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        columns TEXT NOT NULL,
        merge_level INTEGER NOT NULL,
        state TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        tombstoned_at INTEGER)",
    "CREATE INDEX IF NOT EXISTS segments_by_table ON segments (database, table_name, state, min_time)",
    // Keys of the ingest requests each segment holds, kept for the deduplication window.
    "CREATE TABLE IF NOT EXISTS ingest_requests (
        key TEXT PRIMARY KEY,
        segment_id TEXT NOT NULL,
        committed_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ingest_requests_by_time ON ingest_requests (committed_at)",
    "CREATE INDEX IF NOT EXISTS ingest_requests_by_segment ON ingest_requests (segment_id)",
];

/// Catalog stored in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteCatalog {
    pub(crate) pool: SqlitePool,
}

impl SqliteCatalog {
    /// Opens (creating if needed) the catalog file at `path`.
    pub async fn open(path: &Path) -> Result<SqliteCatalog> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        Self::migrate(&pool).await?;
        Ok(SqliteCatalog { pool })
    }

    /// An in-memory catalog, for tests.
    pub async fn in_memory() -> Result<SqliteCatalog> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?;
        // One connection: every connection to `:memory:` is its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await?;
        Self::migrate(&pool).await?;
        Ok(SqliteCatalog { pool })
    }

    async fn migrate(pool: &SqlitePool) -> Result<()> {
        let schema = SCHEMA
            .iter()
            .chain(crate::sqlite_directory::SCHEMA)
            .chain(crate::sqlite_objects::SCHEMA);
        for statement in schema {
            sqlx::query(*statement).execute(pool).await?;
        }
        // Columns newer than a catalog file: added in place.
        let added = crate::sqlite_objects::ADDED_COLUMNS
            .iter()
            .chain(crate::sqlite_directory::ADDED_COLUMNS);
        for (table, column, statement) in added {
            let existing: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
                .bind(*table)
                .fetch_all(pool)
                .await?;
            if !existing.iter().any(|c| c == column) {
                sqlx::query(*statement).execute(pool).await?;
            }
        }
        Ok(())
    }

    /// Registers `added` (their tables and columns too) inside `tx`.
    async fn insert_segments(tx: &mut Transaction<'_, Sqlite>, added: &[SegmentMeta], now: i64) -> Result<()> {
        for segment in added {
            sqlx::query("INSERT OR IGNORE INTO tables (database, name, created_at) VALUES (?, ?, ?)")
                .bind(&segment.database)
                .bind(&segment.table)
                .bind(now)
                .execute(&mut **tx)
                .await?;
            Self::register_columns(tx, &segment.database, &segment.table, &segment.columns).await?;
            let columns = serde_json::to_string(&segment.columns).map_err(|e| CatalogError::Corrupt(e.to_string()))?;
            sqlx::query(
                "INSERT INTO segments (id, database, table_name, path, min_time, max_time, rows, bytes, columns, merge_level, state, created_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'live', ?)",
            )
            .bind(&segment.id)
            .bind(&segment.database)
            .bind(&segment.table)
            .bind(&segment.path)
            .bind(segment.min_time)
            .bind(segment.max_time)
            .bind(segment.rows as i64)
            .bind(segment.bytes as i64)
            .bind(columns)
            .bind(segment.merge_level as i64)
            .bind(segment.created_at)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    async fn register_columns(
        tx: &mut Transaction<'_, Sqlite>,
        database: &str,
        table: &str,
        columns: &[ColumnInfo],
    ) -> Result<()> {
        let existing =
            sqlx::query("SELECT name, kql_type, ordinal FROM table_columns WHERE database = ? AND table_name = ?")
                .bind(database)
                .bind(table)
                .fetch_all(&mut **tx)
                .await?;
        let mut known: Vec<(String, KqlType)> = Vec::with_capacity(existing.len());
        let mut next_ordinal: i64 = 0;
        for row in &existing {
            let name: String = row.try_get("name")?;
            let kql_type: String = row.try_get("kql_type")?;
            let ordinal: i64 = row.try_get("ordinal")?;
            next_ordinal = next_ordinal.max(ordinal + 1);
            known.push((name, parse_type(&kql_type)?));
        }
        for column in columns {
            match known.iter().find(|(name, _)| *name == column.name) {
                Some((_, current)) => {
                    let widened = current.widen(column.kql_type);
                    if widened != *current {
                        sqlx::query(
                            "UPDATE table_columns SET kql_type = ? WHERE database = ? AND table_name = ? AND name = ?",
                        )
                        .bind(widened.as_str())
                        .bind(database)
                        .bind(table)
                        .bind(&column.name)
                        .execute(&mut **tx)
                        .await?;
                    }
                }
                None => {
                    sqlx::query(
                        "INSERT INTO table_columns (database, table_name, ordinal, name, kql_type) VALUES (?, ?, ?, ?, ?)",
                    )
                    .bind(database)
                    .bind(table)
                    .bind(next_ordinal)
                    .bind(&column.name)
                    .bind(column.kql_type.as_str())
                    .execute(&mut **tx)
                    .await?;
                    next_ordinal += 1;
                    known.push((column.name.clone(), column.kql_type));
                }
            }
        }
        Ok(())
    }

    async fn columns_of(&self, database: &str, table: &str) -> Result<Vec<ColumnInfo>> {
        let rows = sqlx::query(
            "SELECT name, kql_type FROM table_columns WHERE database = ? AND table_name = ? ORDER BY ordinal",
        )
        .bind(database)
        .bind(table)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let kql_type: String = row.try_get("kql_type")?;
                Ok(ColumnInfo {
                    name: row.try_get("name")?,
                    kql_type: parse_type(&kql_type)?,
                })
            })
            .collect()
    }
}

fn parse_type(text: &str) -> Result<KqlType> {
    text.parse().map_err(CatalogError::Corrupt)
}

fn segment_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<SegmentMeta> {
    let columns: String = row.try_get("columns")?;
    let columns: Vec<ColumnInfo> =
        serde_json::from_str(&columns).map_err(|e| CatalogError::Corrupt(format!("segment columns: {e}")))?;
    let state: String = row.try_get("state")?;
    let state = match state.as_str() {
        "live" => SegmentState::Live,
        "tombstoned" => SegmentState::Tombstoned,
        other => return Err(CatalogError::Corrupt(format!("segment state '{other}'"))),
    };
    let rows: i64 = row.try_get("rows")?;
    let bytes: i64 = row.try_get("bytes")?;
    let merge_level: i64 = row.try_get("merge_level")?;
    Ok(SegmentMeta {
        id: row.try_get("id")?,
        database: row.try_get("database")?,
        table: row.try_get("table_name")?,
        path: row.try_get("path")?,
        min_time: row.try_get("min_time")?,
        max_time: row.try_get("max_time")?,
        rows: rows as u64,
        bytes: bytes as u64,
        columns,
        merge_level: merge_level as u32,
        state,
        created_at: row.try_get("created_at")?,
        tombstoned_at: row.try_get("tombstoned_at")?,
    })
}

#[async_trait]
impl Catalog for SqliteCatalog {
    async fn commit_segments(&self, added: &[SegmentMeta], tombstoned: &[String]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let now = trawl_common::time::now_nanos();
        Self::insert_segments(&mut tx, added, now).await?;
        for id in tombstoned {
            let result = sqlx::query(
                "UPDATE segments SET state = 'tombstoned', tombstoned_at = ? WHERE id = ? AND state = 'live'",
            )
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if result.rows_affected() != 1 {
                // Someone else already replaced it: abort, so no row is counted twice.
                return Err(CatalogError::Corrupt(format!("segment {id} is not live")));
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn commit_ingest(&self, segment: &SegmentMeta, requests: &[String]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        // A retried commit whose first attempt went through finds its segment, or (once a
        // merge replaced and forgot it) its requests.
        let done: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM segments WHERE id = ?1 UNION ALL SELECT 1 FROM ingest_requests WHERE segment_id = ?1 LIMIT 1",
        )
        .bind(&segment.id)
        .fetch_optional(&mut *tx)
        .await?;
        if done.is_some() {
            return Ok(());
        }
        let now = trawl_common::time::now_nanos();
        Self::insert_segments(&mut tx, std::slice::from_ref(segment), now).await?;
        for key in requests {
            sqlx::query("INSERT OR IGNORE INTO ingest_requests (key, segment_id, committed_at) VALUES (?, ?, ?)")
                .bind(key)
                .bind(&segment.id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn request_committed(&self, key: &str) -> Result<bool> {
        let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM ingest_requests WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some())
    }

    async fn requests_since(&self, since_nanos: i64) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT key, committed_at FROM ingest_requests WHERE committed_at >= ?")
            .bind(since_nanos)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("key")?, row.try_get("committed_at")?)))
            .collect()
    }

    async fn forget_requests_before(&self, before_nanos: i64) -> Result<u64> {
        let result = sqlx::query("DELETE FROM ingest_requests WHERE committed_at < ?")
            .bind(before_nanos)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected())
    }

    async fn live_segments(&self, database: &str, table: &str, range: Option<TimeRange>) -> Result<Vec<SegmentMeta>> {
        let (min, max) = range.map_or((i64::MIN, i64::MAX), |r| (r.min, r.max));
        let rows = sqlx::query(
            "SELECT * FROM segments WHERE database = ? AND table_name = ? AND state = 'live'
             AND max_time >= ? AND min_time <= ? ORDER BY min_time, id",
        )
        .bind(database)
        .bind(table)
        .bind(min)
        .bind(max)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(segment_from_row).collect()
    }

    async fn ensure_table(&self, database: &str, table: &str, columns: &[ColumnInfo]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT OR IGNORE INTO tables (database, name, created_at) VALUES (?, ?, ?)")
            .bind(database)
            .bind(table)
            .bind(trawl_common::time::now_nanos())
            .execute(&mut *tx)
            .await?;
        Self::register_columns(&mut tx, database, table, columns).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn databases(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT name FROM databases WHERE deleted_at IS NULL
             UNION SELECT DISTINCT database FROM tables WHERE deleted_at IS NULL
               AND database NOT IN (SELECT name FROM databases WHERE deleted_at IS NOT NULL)
             ORDER BY 1",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    async fn tables(&self, database: &str) -> Result<Vec<TableInfo>> {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM tables WHERE database = ? AND deleted_at IS NULL
               AND ? NOT IN (SELECT name FROM databases WHERE deleted_at IS NOT NULL)
             ORDER BY name",
        )
        .bind(database)
        .bind(database)
        .fetch_all(&self.pool)
        .await?;
        let mut tables = Vec::with_capacity(names.len());
        for name in names {
            let columns = self.columns_of(database, &name).await?;
            tables.push(TableInfo {
                database: database.to_string(),
                name,
                columns,
            });
        }
        Ok(tables)
    }

    async fn table(&self, database: &str, table: &str) -> Result<Option<TableInfo>> {
        let exists: Option<String> = sqlx::query_scalar(
            "SELECT name FROM tables WHERE database = ? AND name = ? AND deleted_at IS NULL
               AND ? NOT IN (SELECT name FROM databases WHERE deleted_at IS NOT NULL)",
        )
        .bind(database)
        .bind(table)
        .bind(database)
        .fetch_optional(&self.pool)
        .await?;
        let Some(name) = exists else { return Ok(None) };
        let columns = self.columns_of(database, &name).await?;
        Ok(Some(TableInfo {
            database: database.to_string(),
            name,
            columns,
        }))
    }

    async fn views(&self, database: &str) -> Result<Vec<(String, Vec<String>)>> {
        if let Some(Some(_)) = sqlx::query_scalar::<_, Option<i64>>("SELECT deleted_at FROM databases WHERE name = ?")
            .bind(database)
            .fetch_optional(&self.pool)
            .await?
        {
            return Ok(Vec::new());
        }
        self.live_views(database).await
    }

    async fn tombstoned_before(&self, before_nanos: i64) -> Result<Vec<SegmentMeta>> {
        let rows = sqlx::query("SELECT * FROM segments WHERE state = 'tombstoned' AND tombstoned_at < ? ORDER BY id")
            .bind(before_nanos)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(segment_from_row).collect()
    }

    async fn forget_segments(&self, ids: &[String]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        for id in ids {
            sqlx::query("DELETE FROM segments WHERE id = ? AND state = 'tombstoned'")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(id: &str, min: i64, max: i64, columns: &[(&str, KqlType)]) -> SegmentMeta {
        SegmentMeta {
            id: id.to_string(),
            database: "default".into(),
            table: "default".into(),
            path: format!("default/default/{id}.parquet"),
            min_time: min,
            max_time: max,
            rows: 10,
            bytes: 100,
            columns: columns
                .iter()
                .map(|(name, kql_type)| ColumnInfo {
                    name: name.to_string(),
                    kql_type: *kql_type,
                })
                .collect(),
            merge_level: 0,
            state: SegmentState::Live,
            created_at: 1,
            tombstoned_at: None,
        }
    }

    #[tokio::test]
    async fn registers_segments_and_widens_columns() -> Result<()> {
        let catalog = SqliteCatalog::in_memory().await?;
        catalog
            .commit_segments(
                &[segment(
                    "a",
                    0,
                    10,
                    &[("timestamp", KqlType::DateTime), ("value", KqlType::Long)],
                )],
                &[],
            )
            .await?;
        catalog
            .commit_segments(
                &[segment(
                    "b",
                    20,
                    30,
                    &[("value", KqlType::Real), ("body", KqlType::Dynamic)],
                )],
                &[],
            )
            .await?;
        let table = catalog
            .table("default", "default")
            .await?
            .ok_or(CatalogError::Corrupt("missing".into()))?;
        let names: Vec<(&str, KqlType)> = table.columns.iter().map(|c| (c.name.as_str(), c.kql_type)).collect();
        assert_eq!(
            names,
            vec![
                ("timestamp", KqlType::DateTime),
                ("value", KqlType::Real),
                ("body", KqlType::Dynamic)
            ]
        );
        let overlapping = catalog
            .live_segments("default", "default", Some(TimeRange { min: 5, max: 15 }))
            .await?;
        assert_eq!(overlapping.len(), 1);
        assert_eq!(overlapping[0].id, "a");
        Ok(())
    }

    #[tokio::test]
    async fn merge_commit_is_atomic() -> Result<()> {
        let catalog = SqliteCatalog::in_memory().await?;
        let cols = [("timestamp", KqlType::DateTime)];
        catalog
            .commit_segments(&[segment("a", 0, 10, &cols), segment("b", 11, 20, &cols)], &[])
            .await?;
        catalog
            .commit_segments(&[segment("m", 0, 20, &cols)], &["a".into(), "b".into()])
            .await?;
        let live: Vec<String> = catalog
            .live_segments("default", "default", None)
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(live, vec!["m".to_string()]);
        // A second merge of an already tombstoned input fails and changes nothing.
        let failed = catalog
            .commit_segments(&[segment("m2", 0, 20, &cols)], &["a".into()])
            .await;
        assert!(failed.is_err());
        let live: Vec<String> = catalog
            .live_segments("default", "default", None)
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(live, vec!["m".to_string()]);
        let dead = catalog.tombstoned_before(i64::MAX).await?;
        // ensure_table keeps what exists and adds what is missing.
        catalog
            .ensure_table(
                "default",
                "default",
                &[ColumnInfo {
                    name: "extra".into(),
                    kql_type: KqlType::Bool,
                }],
            )
            .await?;
        let table = catalog
            .table("default", "default")
            .await?
            .ok_or(CatalogError::Corrupt("missing".into()))?;
        assert_eq!(table.columns.last().map(|c| c.name.as_str()), Some("extra"));
        assert_eq!(table.columns[0].name, "timestamp");
        assert_eq!(dead.len(), 2);
        catalog.forget_segments(&["a".into(), "b".into()]).await?;
        assert!(catalog.tombstoned_before(i64::MAX).await?.is_empty());
        Ok(())
    }
}
