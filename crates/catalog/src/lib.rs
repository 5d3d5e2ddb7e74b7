//! The catalog: which segments make up which table, and what columns a table has.
//!
//! [`Catalog`] is the trait every backend implements; [`SqlCatalog`] implements it in SQLite
//! (the embedded default: one file under the data directory) and in PostgreSQL (shared by a
//! cluster's processes). Segment registration is transactional: a
//! flush registers its new segment, a merge registers the merged segment and tombstones its
//! inputs, each in one transaction, so a crash never shows a row twice or loses one that
//! was acknowledged.
//!
//! This crate knows nothing of Arrow data: it stores column names and KQL types only.

pub mod directory;
mod faulty;
pub mod library;
mod model;
pub mod objects;
mod remembered;
mod sql;
mod sql_directory;
mod sql_objects;

pub use directory::{
    AccessTokenRecord, Directory, GatewayKeyRecord, IngestTokenRecord, Principal, PrincipalKind, SSO_IMPORTED_KEY,
    SSO_SETTINGS_KEY, SignalTables, SsoSettings,
};
pub use faulty::FaultyCatalog;
pub use library::{Library, SavedQuery};
pub use model::{ColumnInfo, OperationRecord, SegmentMeta, SegmentState, TableInfo, TimeRange};
pub use objects::{Change, ObjectKind, ObjectRecord, Objects};
pub use sql::{Dialect, SqlCatalog, is_postgres_url};

use async_trait::async_trait;

/// Errors of catalog backends.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("catalog holds invalid data: {0}")]
    Corrupt(String),
    #[error("the catalog is unavailable: {0}")]
    Unavailable(String),
}

impl From<CatalogError> for trawl_common::TrawlError {
    fn from(error: CatalogError) -> Self {
        trawl_common::TrawlError::unavailable(error.to_string())
    }
}

pub type Result<T> = std::result::Result<T, CatalogError>;

/// A catalog backend.
#[async_trait]
pub trait Catalog: Send + Sync + std::fmt::Debug {
    /// Atomically registers `added` segments (creating their tables and widening their
    /// column sets) and tombstones `tombstoned` segment ids.
    async fn commit_segments(&self, added: &[SegmentMeta], tombstoned: &[String]) -> Result<()>;

    /// Registers a segment written by ingest together with the keys of the requests it holds
    /// (32 hex digits each), in one transaction. Idempotent: when the segment is registered
    /// already (a retried commit whose first attempt went through), nothing changes.
    async fn commit_ingest(&self, segment: &SegmentMeta, requests: &[String]) -> Result<()>;

    /// Whether a request key is registered.
    async fn request_committed(&self, key: &str) -> Result<bool>;

    /// Request keys registered at or after `since_nanos`, with the time of their commit.
    async fn requests_since(&self, since_nanos: i64) -> Result<Vec<(String, i64)>>;

    /// Forgets request keys registered before `before_nanos`; returns how many.
    async fn forget_requests_before(&self, before_nanos: i64) -> Result<u64>;

    /// Live segments of a table whose time range overlaps `range` (all when `None`).
    async fn live_segments(&self, database: &str, table: &str, range: Option<TimeRange>) -> Result<Vec<SegmentMeta>>;

    /// Creates `database.table` with `columns` if it does not exist yet (an existing table
    /// gains the columns it lacks).
    async fn ensure_table(&self, database: &str, table: &str, columns: &[ColumnInfo]) -> Result<()>;

    /// Names of the live databases: those created and not deleted, and those holding a
    /// live table.
    async fn databases(&self) -> Result<Vec<String>>;

    /// Live tables of a database with their column sets (none when the database is deleted).
    async fn tables(&self, database: &str) -> Result<Vec<TableInfo>>;

    /// Live views of a database: their names and member tables.
    async fn views(&self, database: &str) -> Result<Vec<(String, Vec<String>)>>;

    /// One table with its column set, if it exists.
    async fn table(&self, database: &str, table: &str) -> Result<Option<TableInfo>>;

    /// Segments tombstoned before `before_nanos`, whose objects may now be deleted.
    async fn tombstoned_before(&self, before_nanos: i64) -> Result<Vec<SegmentMeta>>;

    /// Forgets segments whose objects have been deleted.
    async fn forget_segments(&self, ids: &[String]) -> Result<()>;

    /// The object paths of every segment the catalog knows (live or tombstoned): objects
    /// outside them were written but never registered (orphans).
    async fn segment_paths(&self) -> Result<Vec<String>>;

    /// Takes or renews the lease `name` for `holder` until `now + ttl_nanos`: granted when no
    /// one holds it, when `holder` holds it, or when the holder's lease ran out. At most one
    /// holder has a lease at a time, across every process sharing the catalog.
    async fn take_lease(&self, name: &str, holder: &str, now: i64, ttl_nanos: i64) -> Result<bool>;

    /// Gives up the lease `name` if `holder` holds it (another holder may take it at once).
    async fn release_lease(&self, name: &str, holder: &str) -> Result<()>;

    /// Records a piece of background work; records older than a week are dropped.
    async fn record_operation(&self, operation: &OperationRecord) -> Result<()>;

    /// The operations finished at or after `since`, newest first, at most `limit`.
    async fn operations(&self, since: i64, limit: usize) -> Result<Vec<OperationRecord>>;
}
