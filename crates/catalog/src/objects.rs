//! Catalog objects users manage: databases, tables (with retention) and views (named unions
//! of tables). A delete is a tombstone (`deleted_at`): the object disappears from queries and
//! listings of live objects, and `restore` brings it back within the grace window; after
//! it, the janitor purges it. A delete that would leave live children behind (a database's
//! tables and views, a table's views) is refused unless cascaded.

use async_trait::async_trait;

use crate::Result;

/// A database, table or view as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRecord {
    pub database: String,
    /// Empty for a database.
    pub name: String,
    pub kind: ObjectKind,
    /// Tables: rows older than this are dropped by the janitor (nanoseconds; `None` keeps
    /// everything).
    pub retention_nanos: Option<i64>,
    /// Views: the tables they unite, in order.
    pub members: Vec<String>,
    pub created_at: i64,
    pub deleted_at: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Database,
    Table,
    View,
}

impl ObjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Database => "database",
            ObjectKind::Table => "table",
            ObjectKind::View => "view",
        }
    }
}

/// What a change did, or why it did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Done,
    /// No such live (or, for restore, deleted) object.
    NotFound,
    /// An object of that name exists (`deleted`: as a tombstone, to restore or wait out).
    Exists {
        deleted: bool,
    },
    /// Live children would be orphaned; they are named.
    HasChildren(Vec<String>),
    /// A restore after the grace window, or into a deleted parent.
    Refused(String),
}

/// Management of databases, tables and views.
#[async_trait]
pub trait Objects: Send + Sync + std::fmt::Debug {
    async fn create_database(&self, name: &str, now: i64) -> Result<Change>;
    async fn create_table(&self, database: &str, name: &str, retention_nanos: Option<i64>, now: i64) -> Result<Change>;
    /// Members must be live tables of the database.
    async fn create_view(&self, database: &str, name: &str, members: &[String], now: i64) -> Result<Change>;
    async fn set_retention(&self, database: &str, table: &str, retention_nanos: Option<i64>) -> Result<Change>;

    /// Objects of a kind (`database` ignored for databases), deleted ones too.
    async fn objects(&self, kind: ObjectKind, database: &str) -> Result<Vec<ObjectRecord>>;

    async fn delete_object(
        &self,
        kind: ObjectKind,
        database: &str,
        name: &str,
        cascade: bool,
        now: i64,
    ) -> Result<Change>;
    /// Restores an object deleted at or after `not_before` (the grace window).
    async fn restore_object(&self, kind: ObjectKind, database: &str, name: &str, not_before: i64) -> Result<Change>;

    /// Whether ingest may write to `database.table`: not deleted, nor its database.
    async fn writable(&self, database: &str, table: &str) -> Result<bool>;

    /// Forgets objects deleted before `before`; their tables' segments become tombstones
    /// (deleted later with other tombstones). Returns the objects purged.
    async fn purge_deleted(&self, before: i64, now: i64) -> Result<Vec<String>>;
    /// Tombstones segments of tables with a retention whose rows are all older than it.
    /// Returns the number of segments dropped.
    async fn apply_retention(&self, now: i64) -> Result<u64>;
}
