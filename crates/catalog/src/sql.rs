//! The catalog in SQL, one implementation for two databases through `sqlx`'s `Any` driver:
//!
//! - **SQLite**, the embedded default: one file under the data directory (WAL,
//!   `synchronous=FULL`, so a committed registration survives a crash).
//! - **PostgreSQL** (`--catalog postgres://…`), shared by the processes of a cluster. Commits
//!   that could race take locks: a table's column set is changed under a transaction-scoped
//!   advisory lock on the table, a merge tombstones only segments still live (a concurrent
//!   merge of the same segments waits on their rows, then finds them gone and rolls back),
//!   and schema creation at start-up is serialized across processes.
//!
//! Statements are written once, with `$N` parameters (which both take) and `ON CONFLICT`
//! clauses; the few differences (column migrations, locks, connection settings) follow
//! [`Dialect`].

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::any::AnyPoolOptions;
use sqlx::{Any, Executor as _, Pool, Row as _, Transaction};
use trawl_common::KqlType;

use crate::model::{ColumnInfo, SegmentMeta, SegmentState, TableInfo, TimeRange};
use crate::remembered::{Area, Remembered};
use crate::{Catalog, CatalogError, Result};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS tables (
        database TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (database, name))",
    "CREATE TABLE IF NOT EXISTS table_columns (
        database TEXT NOT NULL,
        table_name TEXT NOT NULL,
        ordinal BIGINT NOT NULL,
        name TEXT NOT NULL,
        kql_type TEXT NOT NULL,
        PRIMARY KEY (database, table_name, name))",
    "CREATE TABLE IF NOT EXISTS segments (
        id TEXT PRIMARY KEY,
        database TEXT NOT NULL,
        table_name TEXT NOT NULL,
        path TEXT NOT NULL,
        min_time BIGINT NOT NULL,
        max_time BIGINT NOT NULL,
        rows BIGINT NOT NULL,
        bytes BIGINT NOT NULL,
        columns TEXT NOT NULL,
        merge_level BIGINT NOT NULL,
        state TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        tombstoned_at BIGINT,
        signal TEXT)",
    "CREATE INDEX IF NOT EXISTS segments_by_table ON segments (database, table_name, state, min_time)",
    // Keys of the ingest requests each segment holds, kept for the deduplication window.
    "CREATE TABLE IF NOT EXISTS ingest_requests (
        key TEXT PRIMARY KEY,
        segment_id TEXT NOT NULL,
        committed_at BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ingest_requests_by_time ON ingest_requests (committed_at)",
    "CREATE INDEX IF NOT EXISTS ingest_requests_by_segment ON ingest_requests (segment_id)",
    // Leases: which process does the work only one may do at a time (the janitor's).
    "CREATE TABLE IF NOT EXISTS leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at BIGINT NOT NULL)",
    // The janitor's work, for `.show operations` (a week of it).
    "CREATE TABLE IF NOT EXISTS operations (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        node TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        finished_at BIGINT NOT NULL,
        state TEXT NOT NULL,
        status TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS operations_by_time ON operations (finished_at)",
];

/// How long operation records are kept.
const OPERATIONS_KEPT_NANOS: i64 = 7 * 86_400 * 1_000_000_000;

/// Columns added to tables of older catalogs: (table, column, statement adding it).
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[("segments", "signal", "ALTER TABLE segments ADD COLUMN signal TEXT")];

/// The database a catalog lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// The lock key that serializes schema creation across processes sharing a PostgreSQL catalog.
const MIGRATION_LOCK: i64 = 0x7472_6177_6c00_0001;

/// Whether a catalog URL names a PostgreSQL server (`postgres://…`, `postgresql://…`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The catalog in SQLite or PostgreSQL (see the module's documentation).
#[derive(Debug, Clone)]
pub struct SqlCatalog {
    pub(crate) pool: Pool<Any>,
    pub(crate) dialect: Dialect,
    /// Answers kept until this process writes (see `remembered.rs`).
    pub(crate) remembered: Arc<Remembered>,
}

impl SqlCatalog {
    /// Opens the catalog a URL names: `postgres://…` (or `postgresql://…`), or `sqlite://path`
    /// / a plain file path for SQLite.
    pub async fn connect(url: &str) -> Result<SqlCatalog> {
        if is_postgres_url(url) {
            SqlCatalog::connect_postgres(url).await
        } else {
            let path = url.strip_prefix("sqlite://").unwrap_or(url);
            SqlCatalog::open_sqlite(Path::new(path)).await
        }
    }

    /// Opens (creating if needed) the SQLite catalog file at `path`.
    pub async fn open_sqlite(path: &Path) -> Result<SqlCatalog> {
        sqlx::any::install_default_drivers();
        let path = path
            .to_str()
            .ok_or_else(|| CatalogError::Unavailable(format!("the catalog path {} is not UTF-8", path.display())))?;
        let url = format!("sqlite://{path}?mode=rwc");
        let pool = AnyPoolOptions::new()
            .max_connections(4)
            // A connection to a local file does not go stale the way one over a network does:
            // no ping before each use (a round trip to the connection's thread, several per
            // query). The pool still checks a connection when it is given back.
            .test_before_acquire(false)
            .after_connect(|connection, _| {
                Box::pin(async move {
                    connection
                        .execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON")
                        .await?;
                    Ok(())
                })
            })
            .connect(&url)
            .await?;
        SqlCatalog::ready(pool, Dialect::Sqlite, Remembered::for_file(path)).await
    }

    /// An in-memory SQLite catalog, for tests.
    pub async fn in_memory() -> Result<SqlCatalog> {
        sqlx::any::install_default_drivers();
        // One connection: every connection to `:memory:` is its own database.
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .after_connect(|connection, _| {
                Box::pin(async move {
                    connection.execute("PRAGMA foreign_keys = ON").await?;
                    Ok(())
                })
            })
            .connect("sqlite::memory:")
            .await?;
        SqlCatalog::ready(pool, Dialect::Sqlite, Remembered::private()).await
    }

    /// Connects to the PostgreSQL database at `url` and creates the catalog's tables there if
    /// they are missing.
    pub async fn connect_postgres(url: &str) -> Result<SqlCatalog> {
        sqlx::any::install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect(url)
            .await?;
        // Other processes of the cluster write it: nothing is remembered.
        SqlCatalog::ready(pool, Dialect::Postgres, Remembered::nothing()).await
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// A transaction that writes. On SQLite it takes the write lock at once (`BEGIN
    /// IMMEDIATE`), so concurrent writers wait for each other (up to the busy timeout)
    /// instead of failing when one's read turns into a write.
    pub(crate) async fn begin_write(&self) -> Result<Transaction<'static, Any>> {
        Ok(match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Dialect::Postgres => self.pool.begin().await?,
        })
    }

    async fn ready(pool: Pool<Any>, dialect: Dialect, remembered: Remembered) -> Result<SqlCatalog> {
        let catalog = SqlCatalog {
            pool,
            dialect,
            remembered: Arc::new(remembered),
        };
        catalog.migrate().await?;
        Ok(catalog)
    }

    async fn migrate(&self) -> Result<()> {
        let mut tx = self.begin_write().await?;
        if self.dialect == Dialect::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(MIGRATION_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        let schema = SCHEMA
            .iter()
            .chain(crate::sql_directory::SCHEMA)
            .chain(crate::sql_objects::SCHEMA)
            .chain(crate::library::SCHEMA);
        for statement in schema {
            sqlx::query(*statement).execute(&mut *tx).await?;
        }
        // Columns newer than a catalog: added in place.
        let added = crate::sql_objects::ADDED_COLUMNS
            .iter()
            .chain(crate::sql_directory::ADDED_COLUMNS)
            .chain(ADDED_COLUMNS);
        for (table, column, statement) in added {
            let existing: Vec<String> = match self.dialect {
                Dialect::Sqlite => sqlx::query_scalar("SELECT name FROM pragma_table_info($1)"),
                Dialect::Postgres => sqlx::query_scalar(
                    "SELECT column_name::text FROM information_schema.columns
                     WHERE table_schema = current_schema() AND table_name = $1",
                ),
            }
            .bind(*table)
            .fetch_all(&mut *tx)
            .await?;
            if !existing.iter().any(|c| c == column) {
                sqlx::query(*statement).execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Live tables of a database with their column sets, from the database.
    async fn query_tables(&self, database: &str) -> Result<Vec<TableInfo>> {
        // One query for the tables and their columns: every query asks for them.
        let rows = sqlx::query(
            "SELECT t.name AS table_name, c.name AS column_name, c.kql_type AS kql_type
               FROM tables t LEFT JOIN table_columns c ON c.database = t.database AND c.table_name = t.name
              WHERE t.database = $1 AND t.deleted_at IS NULL
                AND $2 NOT IN (SELECT name FROM databases WHERE deleted_at IS NOT NULL)
              ORDER BY t.name, c.ordinal",
        )
        .bind(database)
        .bind(database)
        .fetch_all(&self.pool)
        .await?;
        let mut tables: Vec<TableInfo> = Vec::new();
        for row in &rows {
            let name: String = row.try_get("table_name")?;
            if tables.last().is_none_or(|last| last.name != name) {
                tables.push(TableInfo {
                    database: database.to_string(),
                    name,
                    columns: Vec::new(),
                });
            }
            let column: Option<String> = row.try_get("column_name")?;
            let kql_type: Option<String> = row.try_get("kql_type")?;
            if let (Some(column), Some(kql_type), Some(table)) = (column, kql_type, tables.last_mut()) {
                table.columns.push(ColumnInfo {
                    name: column,
                    kql_type: parse_type(&kql_type)?,
                });
            }
        }
        Ok(tables)
    }

    /// The live segments of a table overlapping `min..=max`, by start time.
    async fn query_live_segments(&self, database: &str, table: &str, min: i64, max: i64) -> Result<Vec<SegmentMeta>> {
        let rows = sqlx::query(
            "SELECT * FROM segments WHERE database = $1 AND table_name = $2 AND state = 'live'
             AND max_time >= $3 AND min_time <= $4 ORDER BY min_time, id",
        )
        .bind(database)
        .bind(table)
        .bind(min)
        .bind(max)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(segment_from_row).collect()
    }

    /// Registers `added` (their tables and columns too) inside `tx`.
    async fn insert_segments(&self, tx: &mut Transaction<'_, Any>, added: &[SegmentMeta], now: i64) -> Result<()> {
        for segment in added {
            sqlx::query("INSERT INTO tables (database, name, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(&segment.database)
                .bind(&segment.table)
                .bind(now)
                .execute(&mut **tx)
                .await?;
            self.register_columns(tx, &segment.database, &segment.table, &segment.columns)
                .await?;
            let columns = serde_json::to_string(&segment.columns).map_err(|e| CatalogError::Corrupt(e.to_string()))?;
            sqlx::query(
                "INSERT INTO segments (id, database, table_name, path, min_time, max_time, rows, bytes, columns, merge_level, state, created_at, signal)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'live', $11, $12)",
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
            .bind(segment.signal.map(|s| s.name()))
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// Adds the columns `database.table` lacks and widens the ones that changed type, inside
    /// `tx`. On PostgreSQL the table's column set is locked for the transaction first, so two
    /// processes adding columns at once do not give two columns the same position.
    async fn register_columns(
        &self,
        tx: &mut Transaction<'_, Any>,
        database: &str,
        table: &str,
        columns: &[ColumnInfo],
    ) -> Result<()> {
        if self.dialect == Dialect::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(format!("{database}\u{1f}{table}"))
                .execute(&mut **tx)
                .await?;
        }
        let existing =
            sqlx::query("SELECT name, kql_type, ordinal FROM table_columns WHERE database = $1 AND table_name = $2")
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
                            "UPDATE table_columns SET kql_type = $1 WHERE database = $2 AND table_name = $3 AND name = $4",
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
                        "INSERT INTO table_columns (database, table_name, ordinal, name, kql_type) VALUES ($1, $2, $3, $4, $5)",
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
            "SELECT name, kql_type FROM table_columns WHERE database = $1 AND table_name = $2 ORDER BY ordinal",
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

fn segment_from_row(row: &sqlx::any::AnyRow) -> Result<SegmentMeta> {
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
    let signal: Option<String> = row.try_get("signal")?;
    let signal = match signal {
        Some(name) => Some(
            trawl_common::Signal::from_name(&name)
                .ok_or_else(|| CatalogError::Corrupt(format!("segment signal '{name}'")))?,
        ),
        None => None,
    };
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
        signal,
    })
}

#[async_trait]
impl Catalog for SqlCatalog {
    async fn commit_segments(&self, added: &[SegmentMeta], tombstoned: &[String]) -> Result<()> {
        let _writing = self.remembered.writing(Area::Objects);
        let mut tx = self.begin_write().await?;
        let now = trawl_common::time::now_nanos();
        self.insert_segments(&mut tx, added, now).await?;
        for id in tombstoned {
            let result = sqlx::query(
                "UPDATE segments SET state = 'tombstoned', tombstoned_at = $1 WHERE id = $2 AND state = 'live'",
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
        let _writing = self.remembered.writing(Area::Objects);
        let mut tx = self.begin_write().await?;
        // A retried commit whose first attempt went through finds its segment, or (once a
        // merge replaced and forgot it) its requests.
        let done: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM segments WHERE id = $1 UNION ALL SELECT 1 FROM ingest_requests WHERE segment_id = $1 LIMIT 1",
        )
        .bind(&segment.id)
        .fetch_optional(&mut *tx)
        .await?;
        if done.is_some() {
            return Ok(());
        }
        let now = trawl_common::time::now_nanos();
        self.insert_segments(&mut tx, std::slice::from_ref(segment), now)
            .await?;
        for key in requests {
            sqlx::query("INSERT INTO ingest_requests (key, segment_id, committed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
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
        let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM ingest_requests WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some())
    }

    async fn requests_since(&self, since_nanos: i64) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT key, committed_at FROM ingest_requests WHERE committed_at >= $1")
            .bind(since_nanos)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("key")?, row.try_get("committed_at")?)))
            .collect()
    }

    async fn forget_requests_before(&self, before_nanos: i64) -> Result<u64> {
        let result = sqlx::query("DELETE FROM ingest_requests WHERE committed_at < $1")
            .bind(before_nanos)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected())
    }

    async fn live_segments(&self, database: &str, table: &str, range: Option<TimeRange>) -> Result<Vec<SegmentMeta>> {
        let Some(generation) = self.remembered.generation(Area::Objects) else {
            // A shared catalog: the database picks the segments of the range.
            let (min, max) = range.map_or((i64::MIN, i64::MAX), |r| (r.min, r.max));
            return self.query_live_segments(database, table, min, max).await;
        };
        // All of the table's live segments are remembered; a range picks from them.
        let all = match self.remembered.segments(database, table) {
            Some(all) => all,
            None => {
                let all = Arc::new(self.query_live_segments(database, table, i64::MIN, i64::MAX).await?);
                self.remembered
                    .keep_segments(database, table, all.clone(), Some(generation));
                all
            }
        };
        Ok(all
            .iter()
            .filter(|s| range.is_none_or(|r| s.max_time >= r.min && s.min_time <= r.max))
            .cloned()
            .collect())
    }

    async fn ensure_table(&self, database: &str, table: &str, columns: &[ColumnInfo]) -> Result<()> {
        let _writing = self.remembered.writing(Area::Objects);
        let mut tx = self.begin_write().await?;
        sqlx::query("INSERT INTO tables (database, name, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            .bind(database)
            .bind(table)
            .bind(trawl_common::time::now_nanos())
            .execute(&mut *tx)
            .await?;
        self.register_columns(&mut tx, database, table, columns).await?;
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
        self.remembered.tables_or(database, self.query_tables(database)).await
    }

    async fn table(&self, database: &str, table: &str) -> Result<Option<TableInfo>> {
        let exists: Option<String> = sqlx::query_scalar(
            "SELECT name FROM tables WHERE database = $1 AND name = $2 AND deleted_at IS NULL
               AND $3 NOT IN (SELECT name FROM databases WHERE deleted_at IS NOT NULL)",
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
        self.remembered.views_or(database, self.live_views(database)).await
    }

    async fn tombstoned_before(&self, before_nanos: i64) -> Result<Vec<SegmentMeta>> {
        let rows = sqlx::query("SELECT * FROM segments WHERE state = 'tombstoned' AND tombstoned_at < $1 ORDER BY id")
            .bind(before_nanos)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(segment_from_row).collect()
    }

    async fn forget_segments(&self, ids: &[String]) -> Result<()> {
        let _writing = self.remembered.writing(Area::Objects);
        let mut tx = self.begin_write().await?;
        for id in ids {
            sqlx::query("DELETE FROM segments WHERE id = $1 AND state = 'tombstoned'")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn segment_paths(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT path FROM segments")
            .fetch_all(&self.pool)
            .await?)
    }

    async fn take_lease(&self, name: &str, holder: &str, now: i64, ttl_nanos: i64) -> Result<bool> {
        // One statement: the row is inserted, or updated only when the holder renews or the
        // lease ran out; otherwise nothing changes and the lease is refused.
        let result = sqlx::query(
            "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
             WHERE leases.holder = excluded.holder OR leases.expires_at <= $4",
        )
        .bind(name)
        .bind(holder)
        .bind(now.saturating_add(ttl_nanos))
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() == 1)
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2")
            .bind(name)
            .bind(holder)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn record_operation(&self, operation: &crate::OperationRecord) -> Result<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM operations WHERE finished_at < $1")
            .bind(operation.finished_at.saturating_sub(OPERATIONS_KEPT_NANOS))
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO operations (id, kind, node, started_at, finished_at, state, status)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&operation.id)
        .bind(&operation.kind)
        .bind(&operation.node)
        .bind(operation.started_at)
        .bind(operation.finished_at)
        .bind(&operation.state)
        .bind(&operation.status)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn operations(&self, since: i64, limit: usize) -> Result<Vec<crate::OperationRecord>> {
        let rows: Vec<(String, String, String, i64, i64, String, String)> = sqlx::query_as(
            "SELECT id, kind, node, started_at, finished_at, state, status FROM operations
             WHERE finished_at >= $1 ORDER BY finished_at DESC, id LIMIT $2",
        )
        .bind(since)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(id, kind, node, started_at, finished_at, state, status)| crate::OperationRecord {
                    id,
                    kind,
                    node,
                    started_at,
                    finished_at,
                    state,
                    status,
                },
            )
            .collect())
    }
}
