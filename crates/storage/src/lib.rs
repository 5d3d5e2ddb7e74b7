//! Segments on object storage: how rows become immutable, time-sorted Parquet files, how
//! they are put durably, how queries read them, and how small ones are merged.
//!
//! Main types:
//! - [`SegmentStore`]: the object store holding segments, with a durable put (fsync on a
//!   local disk).
//! - [`SegmentWriter`]: rows → sorted Arrow batch → Parquet → durable object → [`SegmentMeta`]
//!   ready to register in the catalog.
//! - [`TrawlTable`]: a DataFusion `TableProvider` over a table's live segments, which picks
//!   segments by time range from the catalog and pushes predicates into the Parquet scan.
//! - [`Merger`]: rewrites small adjacent segments into larger ones and deletes tombstoned
//!   objects after a grace period.
//!
//! This crate knows nothing of KQL or the network.

mod batch;
pub mod cache;
mod checked;
mod chunks;
mod combine;
pub mod count_by;
pub mod live_scans;
mod local_reads;
mod location;
mod merge;
pub mod observed;
mod probe;
pub mod progress;
mod read_ahead;
mod read_hint;
pub mod read_metrics;
pub mod row_filter;
pub mod schema;
mod segment;
pub mod segment_scan;
pub mod short_eq;
pub mod shred;
mod store;
mod table;
pub mod thrift_check;
mod time_bounds;
pub mod tokens;

pub use batch::{RowsBatch, columns_to_batch, rows_to_batch};
pub use checked::SegmentDamage;
pub use combine::{Combined, combine_by_time};
pub use live_scans::ScanTotals;
pub use location::{S3Settings, StoreLocation};
pub use merge::{MergePolicy, Merger};
pub use probe::{UnreadableSegment, Warmed, find_cause, warm_footers};
pub use progress::ScanCounters;
pub use read_hint::{ReadHint, ReadHints};
pub use segment::{Encoded, SegmentCodec, SegmentEncoder, SegmentWriter, encode_parts, encode_rows};
pub use segment_scan::{LazyScans, ScanSpec, SegmentScanExec};
pub use store::SegmentStore;
pub use table::TrawlTable;
pub use time_bounds::time_bounds_of_filters;

/// Errors of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    #[error("local file system: {0}")]
    Io(#[from] std::io::Error),
    #[error("arrow: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    #[error("query engine: {0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("catalog: {0}")]
    Catalog(#[from] trawl_catalog::CatalogError),
    #[error("{0}")]
    Invalid(String),
}

impl From<StorageError> for trawl_common::TrawlError {
    fn from(error: StorageError) -> Self {
        trawl_common::TrawlError::unavailable(error.to_string())
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;
