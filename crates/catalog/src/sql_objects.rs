//! [`Objects`] in the SQLite catalog file.

use async_trait::async_trait;
use sqlx::Row as _;
use sqlx::any::AnyRow;

use crate::objects::{Change, ObjectKind, ObjectRecord, Objects};
use crate::{CatalogError, Result, SqlCatalog};

pub(crate) const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS databases (
        name TEXT PRIMARY KEY,
        created_at BIGINT NOT NULL,
        deleted_at BIGINT)",
    "CREATE TABLE IF NOT EXISTS views (
        database TEXT NOT NULL,
        name TEXT NOT NULL,
        members TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        deleted_at BIGINT,
        PRIMARY KEY (database, name))",
];

/// Columns added to tables of older catalog files: (table, column, statement adding it).
pub(crate) const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    (
        "tables",
        "retention_nanos",
        "ALTER TABLE tables ADD COLUMN retention_nanos BIGINT",
    ),
    (
        "tables",
        "deleted_at",
        "ALTER TABLE tables ADD COLUMN deleted_at BIGINT",
    ),
];

fn members_of(row: &AnyRow) -> Result<Vec<String>> {
    let text: String = row.try_get("members")?;
    serde_json::from_str(&text).map_err(|e| CatalogError::Corrupt(format!("view members: {e}")))
}

impl SqlCatalog {
    /// `(deleted_at)` of a database's row: `None` none, `Some(None)` live, `Some(Some(t))`
    /// deleted at `t`. A database without a row is live when it holds live tables.
    async fn database_state(&self, name: &str) -> Result<Option<Option<i64>>> {
        let row: Option<Option<i64>> = sqlx::query_scalar("SELECT deleted_at FROM databases WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        if row.is_some() {
            return Ok(row);
        }
        let tables: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tables WHERE database = $1 AND deleted_at IS NULL")
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        Ok((tables > 0).then_some(None))
    }

    /// The refusal of a change inside `database` when it is deleted.
    async fn refused_in_deleted(&self, database: &str) -> Result<Option<Change>> {
        Ok(match self.database_state(database).await? {
            Some(Some(_)) => Some(Change::Refused(format!(
                "database '{database}' is deleted; restore it first"
            ))),
            _ => None,
        })
    }

    async fn table_state(&self, database: &str, name: &str) -> Result<Option<Option<i64>>> {
        Ok(
            sqlx::query_scalar("SELECT deleted_at FROM tables WHERE database = $1 AND name = $2")
                .bind(database)
                .bind(name)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn view_state(&self, database: &str, name: &str) -> Result<Option<Option<i64>>> {
        Ok(
            sqlx::query_scalar("SELECT deleted_at FROM views WHERE database = $1 AND name = $2")
                .bind(database)
                .bind(name)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Live views of `database`, with their members.
    pub(crate) async fn live_views(&self, database: &str) -> Result<Vec<(String, Vec<String>)>> {
        // A deleted database has no live views, whatever its views' rows say.
        let rows = sqlx::query(
            "SELECT name, members FROM views WHERE database = $1 AND deleted_at IS NULL
               AND $2 NOT IN (SELECT name FROM databases WHERE deleted_at IS NOT NULL)
             ORDER BY name",
        )
        .bind(database)
        .bind(database)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("name")?, members_of(row)?)))
            .collect()
    }

    async fn live_table_names(&self, database: &str) -> Result<Vec<String>> {
        Ok(
            sqlx::query_scalar("SELECT name FROM tables WHERE database = $1 AND deleted_at IS NULL ORDER BY name")
                .bind(database)
                .fetch_all(&self.pool)
                .await?,
        )
    }
}

#[async_trait]
impl Objects for SqlCatalog {
    async fn create_database(&self, name: &str, now: i64) -> Result<Change> {
        let _writing = self.remembered.renaming();
        match self.database_state(name).await? {
            Some(deleted) => {
                // An implicit database (tables, no row) gets its row now.
                sqlx::query("INSERT INTO databases (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                    .bind(name)
                    .bind(now)
                    .execute(&self.pool)
                    .await?;
                Ok(Change::Exists {
                    deleted: deleted.is_some(),
                })
            }
            None => {
                sqlx::query("INSERT INTO databases (name, created_at) VALUES ($1, $2)")
                    .bind(name)
                    .bind(now)
                    .execute(&self.pool)
                    .await?;
                Ok(Change::Done)
            }
        }
    }

    async fn create_table(&self, database: &str, name: &str, retention_nanos: Option<i64>, now: i64) -> Result<Change> {
        let _writing = self.remembered.renaming();
        if let Some(refused) = self.refused_in_deleted(database).await? {
            return Ok(refused);
        }
        if let Some(deleted) = self.table_state(database, name).await? {
            return Ok(Change::Exists {
                deleted: deleted.is_some(),
            });
        }
        if self.view_state(database, name).await?.is_some() {
            return Ok(Change::Refused(format!("'{name}' is a view of '{database}'")));
        }
        let mut tx = self.begin_write().await?;
        sqlx::query("INSERT INTO databases (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
            .bind(database)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO tables (database, name, created_at, retention_nanos) VALUES ($1, $2, $3, $4)")
            .bind(database)
            .bind(name)
            .bind(now)
            .bind(retention_nanos)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Change::Done)
    }

    async fn create_view(&self, database: &str, name: &str, members: &[String], now: i64) -> Result<Change> {
        let _writing = self.remembered.renaming();
        if let Some(refused) = self.refused_in_deleted(database).await? {
            return Ok(refused);
        }
        if members.is_empty() {
            return Ok(Change::Refused("a view unites at least one table".into()));
        }
        let live = self.live_table_names(database).await?;
        if let Some(missing) = members.iter().find(|m| !live.contains(m)) {
            return Ok(Change::Refused(format!(
                "'{missing}' is not a live table of '{database}'"
            )));
        }
        if let Some(deleted) = self.view_state(database, name).await? {
            return Ok(Change::Exists {
                deleted: deleted.is_some(),
            });
        }
        if self.table_state(database, name).await?.is_some() {
            return Ok(Change::Refused(format!("'{name}' is a table of '{database}'")));
        }
        let members = serde_json::to_string(members).map_err(|e| CatalogError::Corrupt(e.to_string()))?;
        sqlx::query("INSERT INTO views (database, name, members, created_at) VALUES ($1, $2, $3, $4)")
            .bind(database)
            .bind(name)
            .bind(members)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(Change::Done)
    }

    async fn set_retention(&self, database: &str, table: &str, retention_nanos: Option<i64>) -> Result<Change> {
        let _writing = self.remembered.writing(crate::remembered::Area::Objects);
        let done = sqlx::query(
            "UPDATE tables SET retention_nanos = $1 WHERE database = $2 AND name = $3 AND deleted_at IS NULL",
        )
        .bind(retention_nanos)
        .bind(database)
        .bind(table)
        .execute(&self.pool)
        .await?;
        Ok(if done.rows_affected() == 1 {
            Change::Done
        } else {
            Change::NotFound
        })
    }

    async fn objects(&self, kind: ObjectKind, database: &str) -> Result<Vec<ObjectRecord>> {
        let record = |database: String, name: String, created_at, deleted_at| ObjectRecord {
            database,
            name,
            kind,
            retention_nanos: None,
            members: Vec::new(),
            created_at,
            deleted_at,
        };
        match kind {
            ObjectKind::Database => {
                let rows = sqlx::query(
                    "SELECT name, created_at, deleted_at FROM databases
                     UNION SELECT DISTINCT database, MIN(created_at), NULL FROM tables
                       WHERE database NOT IN (SELECT name FROM databases) GROUP BY database
                     ORDER BY name",
                )
                .fetch_all(&self.pool)
                .await?;
                rows.iter()
                    .map(|row| {
                        Ok(record(
                            String::new(),
                            row.try_get("name")?,
                            row.try_get("created_at")?,
                            row.try_get("deleted_at")?,
                        ))
                    })
                    .collect()
            }
            ObjectKind::Table => {
                let rows = sqlx::query(
                    "SELECT name, created_at, deleted_at, retention_nanos FROM tables WHERE database = $1 ORDER BY name",
                )
                .bind(database)
                .fetch_all(&self.pool)
                .await?;
                rows.iter()
                    .map(|row| {
                        let mut table = record(
                            database.to_string(),
                            row.try_get("name")?,
                            row.try_get("created_at")?,
                            row.try_get("deleted_at")?,
                        );
                        table.retention_nanos = row.try_get("retention_nanos")?;
                        Ok(table)
                    })
                    .collect()
            }
            ObjectKind::View => {
                let rows = sqlx::query("SELECT * FROM views WHERE database = $1 ORDER BY name")
                    .bind(database)
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter()
                    .map(|row| {
                        let mut view = record(
                            database.to_string(),
                            row.try_get("name")?,
                            row.try_get("created_at")?,
                            row.try_get("deleted_at")?,
                        );
                        view.members = members_of(row)?;
                        Ok(view)
                    })
                    .collect()
            }
        }
    }

    async fn delete_object(
        &self,
        kind: ObjectKind,
        database: &str,
        name: &str,
        cascade: bool,
        now: i64,
    ) -> Result<Change> {
        let _writing = self.remembered.renaming();
        match kind {
            ObjectKind::Database => {
                let target = if name.is_empty() { database } else { name };
                if self.database_state(target).await? != Some(None) {
                    return Ok(Change::NotFound);
                }
                let tables = self.live_table_names(target).await?;
                let views: Vec<String> = self.live_views(target).await?.into_iter().map(|(n, _)| n).collect();
                let orphans = !tables.is_empty() || !views.is_empty();
                if orphans && !cascade {
                    let children = tables.into_iter().chain(views).collect();
                    return Ok(Change::HasChildren(children));
                }
                let mut tx = self.begin_write().await?;
                sqlx::query("INSERT INTO databases (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                    .bind(target)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                for statement in [
                    "UPDATE databases SET deleted_at = $1 WHERE name = $2",
                    "UPDATE tables SET deleted_at = $1 WHERE database = $2 AND deleted_at IS NULL",
                    "UPDATE views SET deleted_at = $1 WHERE database = $2 AND deleted_at IS NULL",
                ] {
                    sqlx::query(statement).bind(now).bind(target).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(Change::Done)
            }
            ObjectKind::Table => {
                if self.table_state(database, name).await? != Some(None) {
                    return Ok(Change::NotFound);
                }
                let views: Vec<String> = self
                    .live_views(database)
                    .await?
                    .into_iter()
                    .filter(|(_, members)| members.iter().any(|m| m == name))
                    .map(|(view, _)| view)
                    .collect();
                if !cascade && !views.is_empty() {
                    return Ok(Change::HasChildren(views));
                }
                let mut tx = self.begin_write().await?;
                sqlx::query("UPDATE tables SET deleted_at = $1 WHERE database = $2 AND name = $3")
                    .bind(now)
                    .bind(database)
                    .bind(name)
                    .execute(&mut *tx)
                    .await?;
                for view in &views {
                    sqlx::query("UPDATE views SET deleted_at = $1 WHERE database = $2 AND name = $3")
                        .bind(now)
                        .bind(database)
                        .bind(view)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(Change::Done)
            }
            ObjectKind::View => {
                let done = sqlx::query(
                    "UPDATE views SET deleted_at = $1 WHERE database = $2 AND name = $3 AND deleted_at IS NULL",
                )
                .bind(now)
                .bind(database)
                .bind(name)
                .execute(&self.pool)
                .await?;
                Ok(if done.rows_affected() == 1 {
                    Change::Done
                } else {
                    Change::NotFound
                })
            }
        }
    }

    async fn restore_object(&self, kind: ObjectKind, database: &str, name: &str, not_before: i64) -> Result<Change> {
        let _writing = self.remembered.renaming();
        let too_late = |at: i64| at < not_before;
        let late = || Change::Refused("it was deleted before the restore window began; it is gone".into());
        match kind {
            ObjectKind::Database => {
                let target = if name.is_empty() { database } else { name };
                let Some(Some(at)) = self.database_state(target).await? else {
                    return Ok(Change::NotFound);
                };
                if too_late(at) {
                    return Ok(late());
                }
                // Children deleted with it (at the same instant) come back with it.
                let mut tx = self.begin_write().await?;
                sqlx::query("UPDATE databases SET deleted_at = NULL WHERE name = $1")
                    .bind(target)
                    .execute(&mut *tx)
                    .await?;
                for statement in [
                    "UPDATE tables SET deleted_at = NULL WHERE database = $1 AND deleted_at = $2",
                    "UPDATE views SET deleted_at = NULL WHERE database = $1 AND deleted_at = $2",
                ] {
                    sqlx::query(statement).bind(target).bind(at).execute(&mut *tx).await?;
                }
                tx.commit().await?;
                Ok(Change::Done)
            }
            ObjectKind::Table | ObjectKind::View => {
                if let Some(refused) = self.refused_in_deleted(database).await? {
                    return Ok(refused);
                }
                let state = if kind == ObjectKind::Table {
                    self.table_state(database, name).await?
                } else {
                    self.view_state(database, name).await?
                };
                let Some(Some(at)) = state else {
                    return Ok(Change::NotFound);
                };
                if too_late(at) {
                    return Ok(late());
                }
                let mut tx = self.begin_write().await?;
                if kind == ObjectKind::Table {
                    sqlx::query("UPDATE tables SET deleted_at = NULL WHERE database = $1 AND name = $2")
                        .bind(database)
                        .bind(name)
                        .execute(&mut *tx)
                        .await?;
                    // Views deleted with it (at the same instant) come back with it.
                    sqlx::query("UPDATE views SET deleted_at = NULL WHERE database = $1 AND deleted_at = $2")
                        .bind(database)
                        .bind(at)
                        .execute(&mut *tx)
                        .await?;
                } else {
                    let row = sqlx::query("SELECT members FROM views WHERE database = $1 AND name = $2")
                        .bind(database)
                        .bind(name)
                        .fetch_one(&mut *tx)
                        .await?;
                    let live = self.live_table_names(database).await?;
                    if let Some(missing) = members_of(&row)?.into_iter().find(|m| !live.contains(m)) {
                        return Ok(Change::Refused(format!(
                            "its table '{missing}' is deleted; restore it first"
                        )));
                    }
                    sqlx::query("UPDATE views SET deleted_at = NULL WHERE database = $1 AND name = $2")
                        .bind(database)
                        .bind(name)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(Change::Done)
            }
        }
    }

    async fn writable(&self, database: &str, table: &str) -> Result<bool> {
        let ask = async {
            if let Some(Some(_)) = self.database_state(database).await? {
                return Ok(false);
            }
            Ok(!matches!(self.table_state(database, table).await?, Some(Some(_))))
        };
        self.remembered.writable_or(database, table, ask).await
    }

    async fn purge_deleted(&self, before: i64, now: i64) -> Result<Vec<String>> {
        let _writing = self.remembered.renaming();
        let mut tx = self.begin_write().await?;
        let tables = sqlx::query("SELECT database, name FROM tables WHERE deleted_at < $1")
            .bind(before)
            .fetch_all(&mut *tx)
            .await?;
        let mut purged = Vec::new();
        for row in &tables {
            let database: String = row.try_get("database")?;
            let name: String = row.try_get("name")?;
            sqlx::query(
                "UPDATE segments SET state = 'tombstoned', tombstoned_at = $1
                 WHERE database = $2 AND table_name = $3 AND state = 'live'",
            )
            .bind(now)
            .bind(&database)
            .bind(&name)
            .execute(&mut *tx)
            .await?;
            for statement in [
                "DELETE FROM table_columns WHERE database = $1 AND table_name = $2",
                "DELETE FROM tables WHERE database = $1 AND name = $2",
            ] {
                sqlx::query(statement)
                    .bind(&database)
                    .bind(&name)
                    .execute(&mut *tx)
                    .await?;
            }
            purged.push(format!("table {database}.{name}"));
        }
        let views = sqlx::query("SELECT database, name FROM views WHERE deleted_at < $1")
            .bind(before)
            .fetch_all(&mut *tx)
            .await?;
        for row in &views {
            let database: String = row.try_get("database")?;
            let name: String = row.try_get("name")?;
            purged.push(format!("view {database}.{name}"));
        }
        sqlx::query("DELETE FROM views WHERE deleted_at < $1")
            .bind(before)
            .execute(&mut *tx)
            .await?;
        let databases: Vec<String> = sqlx::query_scalar("SELECT name FROM databases WHERE deleted_at < $1")
            .bind(before)
            .fetch_all(&mut *tx)
            .await?;
        purged.extend(databases.iter().map(|d| format!("database {d}")));
        sqlx::query("DELETE FROM databases WHERE deleted_at < $1")
            .bind(before)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(purged)
    }

    async fn apply_retention(&self, now: i64) -> Result<u64> {
        let _writing = self.remembered.writing(crate::remembered::Area::Objects);
        let done = sqlx::query(
            "UPDATE segments SET state = 'tombstoned', tombstoned_at = $1
             WHERE state = 'live' AND EXISTS (
               SELECT 1 FROM tables t WHERE t.database = segments.database AND t.name = segments.table_name
                 AND t.deleted_at IS NULL AND t.retention_nanos IS NOT NULL
                 AND segments.max_time < $1 - t.retention_nanos)",
        )
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    //! The behaviour on every backend is in `tests/suite.rs`; here, what only SQLite has.
    use super::*;
    use crate::Catalog;

    fn names(tables: Vec<crate::TableInfo>) -> Vec<String> {
        tables.into_iter().map(|t| t.name).collect()
    }

    #[tokio::test]
    async fn older_catalog_files_gain_the_new_columns() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| CatalogError::Corrupt(e.to_string()))?;
        let path = dir.path().join("old.db");
        {
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true);
            let pool = sqlx::sqlite::SqlitePoolOptions::new().connect_with(options).await?;
            sqlx::query("CREATE TABLE tables (database TEXT NOT NULL, name TEXT NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (database, name))")
                .execute(&pool)
                .await?;
            sqlx::query("INSERT INTO tables VALUES ('default', 'default', 1)")
                .execute(&pool)
                .await?;
            pool.close().await;
        }
        let catalog = SqlCatalog::open_sqlite(&path).await?;
        assert_eq!(names(catalog.tables("default").await?), vec!["default"]);
        assert_eq!(
            catalog.set_retention("default", "default", Some(5)).await?,
            Change::Done
        );
        Ok(())
    }
}
