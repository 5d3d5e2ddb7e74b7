//! The query library: saved queries everyone signed in can see and run (the web UI's
//! library). Each has a name, a folder (a `/`-separated path, empty at the top), the query,
//! an optional database and default time range, and a description; its owner, or an admin or
//! maintainer, may change or delete it.

use async_trait::async_trait;
use sqlx::Row as _;
use sqlx::any::AnyRow;

use crate::{Result, SqlCatalog};

/// A saved query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SavedQuery {
    /// 32 hex characters.
    pub id: String,
    pub name: String,
    /// `/`-separated folder path; empty: the top.
    pub folder: String,
    pub query: String,
    /// The database it runs in; empty: the one the user has open.
    pub database: String,
    /// Its default time range (`1h`, `7d`, …); empty: the one the user has chosen.
    pub time_range: String,
    pub description: String,
    /// The name of the user who saved it first.
    pub owner: String,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Storage of saved queries.
#[async_trait]
pub trait Library: Send + Sync + std::fmt::Debug {
    /// Every saved query, by folder then name.
    async fn saved_queries(&self) -> Result<Vec<SavedQuery>>;
    async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>>;
    /// Adds the query, or replaces the one with its id (its owner and creation time stay).
    async fn save_query(&self, query: &SavedQuery) -> Result<()>;
    /// Deletes a saved query; false when there was none with that id.
    async fn delete_saved_query(&self, id: &str) -> Result<bool>;
}

pub(crate) const SCHEMA: &[&str] = &["CREATE TABLE IF NOT EXISTS saved_queries (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        folder TEXT NOT NULL,
        query TEXT NOT NULL,
        database TEXT NOT NULL,
        time_range TEXT NOT NULL,
        description TEXT NOT NULL,
        owner TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)"];

/// The columns statements name, so they stay literal SQL.
macro_rules! columns {
    () => {
        "id, name, folder, query, database, time_range, description, owner, created_at, updated_at"
    };
}

fn saved_query(row: &AnyRow) -> Result<SavedQuery> {
    Ok(SavedQuery {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        folder: row.try_get("folder")?,
        query: row.try_get("query")?,
        database: row.try_get("database")?,
        time_range: row.try_get("time_range")?,
        description: row.try_get("description")?,
        owner: row.try_get("owner")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

#[async_trait]
impl Library for SqlCatalog {
    async fn saved_queries(&self) -> Result<Vec<SavedQuery>> {
        sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM saved_queries ORDER BY folder, name, id"
        ))
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(saved_query)
        .collect()
    }

    async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>> {
        sqlx::query(concat!("SELECT ", columns!(), " FROM saved_queries WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(saved_query)
            .transpose()
    }

    async fn save_query(&self, q: &SavedQuery) -> Result<()> {
        sqlx::query(concat!(
            "INSERT INTO saved_queries (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (id) DO UPDATE SET name = excluded.name, folder = excluded.folder,
                 query = excluded.query, database = excluded.database,
                 time_range = excluded.time_range, description = excluded.description,
                 updated_at = excluded.updated_at"
        ))
        .bind(&q.id)
        .bind(&q.name)
        .bind(&q.folder)
        .bind(&q.query)
        .bind(&q.database)
        .bind(&q.time_range)
        .bind(&q.description)
        .bind(&q.owner)
        .bind(q.created_at)
        .bind(q.updated_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn delete_saved_query(&self, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM saved_queries WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn saved_queries_are_added_replaced_listed_and_deleted() -> Result<()> {
        let catalog = SqlCatalog::in_memory().await?;
        let mut query = SavedQuery {
            id: "a".repeat(32),
            name: "errors".into(),
            folder: "team/web".into(),
            query: "logs | where severity_text == 'ERROR'".into(),
            owner: "ana".into(),
            created_at: 1,
            updated_at: 1,
            ..SavedQuery::default()
        };
        catalog.save_query(&query).await?;
        query.name = "all errors".into();
        query.owner = "bob".into();
        query.created_at = 2;
        query.updated_at = 2;
        catalog.save_query(&query).await?;
        let listed = catalog.saved_queries().await?;
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "all errors");
        assert_eq!(
            (listed[0].owner.as_str(), listed[0].created_at, listed[0].updated_at),
            ("ana", 1, 2)
        );
        assert!(catalog.delete_saved_query(&query.id).await?);
        assert!(!catalog.delete_saved_query(&query.id).await?);
        assert!(catalog.saved_query(&query.id).await?.is_none());
        Ok(())
    }
}
