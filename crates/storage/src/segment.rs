//! Writing segments: rows → sorted batch → Parquet bytes → durable object → catalog row.

mod encoder;

use bytes::Bytes;
use chrono::{DateTime, Datelike, Utc};
use trawl_catalog::{ColumnInfo, SegmentMeta, SegmentState};
use trawl_common::Row;

pub(crate) use self::encoder::BLOOM_COLUMNS;
pub use self::encoder::{SegmentCodec, SegmentEncoder, encode_parquet};
use crate::batch::{RowsBatch, rows_to_batch};
use crate::combine::{Combined, combine_by_time};
use crate::store::SegmentStore;
use crate::{Result, StorageError};

/// Rows per Parquet row group (a "chunk").
pub const CHUNK_ROWS: usize = 32 * 1024;

/// Writes segments of rows to a [`SegmentStore`].
#[derive(Debug, Clone)]
pub struct SegmentWriter {
    store: SegmentStore,
}

impl SegmentWriter {
    pub fn new(store: SegmentStore) -> SegmentWriter {
        SegmentWriter { store }
    }

    pub fn store(&self) -> &SegmentStore {
        &self.store
    }

    /// Writes `rows` as one durable segment of `database.table` and returns its catalog row
    /// (not yet registered).
    pub async fn write_rows(&self, database: &str, table: &str, rows: Vec<Row>) -> Result<SegmentMeta> {
        let encoded = encode_rows(rows).await?;
        let meta = self.prepare(database, table, &encoded, 0);
        self.store.put_durable(&meta.path, encoded.bytes).await?;
        Ok(meta)
    }

    /// The catalog row a segment of `encoded` will have: a new id and path (not yet put).
    pub fn prepare(&self, database: &str, table: &str, encoded: &Encoded, merge_level: u32) -> SegmentMeta {
        let id = uuid::Uuid::now_v7().simple().to_string();
        SegmentMeta {
            path: segment_path(database, table, encoded.min_time, &id),
            id,
            database: database.to_string(),
            table: table.to_string(),
            min_time: encoded.min_time,
            max_time: encoded.max_time,
            rows: encoded.rows,
            bytes: encoded.bytes.len() as u64,
            columns: encoded.columns.clone(),
            merge_level,
            state: SegmentState::Live,
            created_at: trawl_common::time::now_nanos(),
            tombstoned_at: None,
            signal: None,
        }
    }

    /// Writes encoded Parquet `bytes` of `rows` time-sorted rows as one durable segment and
    /// returns its catalog row (not yet registered).
    #[allow(clippy::too_many_arguments)]
    pub async fn write_encoded(
        &self,
        database: &str,
        table: &str,
        bytes: Bytes,
        columns: Vec<ColumnInfo>,
        min_time: i64,
        max_time: i64,
        rows: u64,
        merge_level: u32,
    ) -> Result<SegmentMeta> {
        let encoded = Encoded {
            bytes,
            columns,
            min_time,
            max_time,
            rows,
        };
        let meta = self.prepare(database, table, &encoded, merge_level);
        self.store.put_durable(&meta.path, encoded.bytes).await?;
        Ok(meta)
    }
}

/// A segment's Parquet bytes and what its catalog row says of them.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub bytes: Bytes,
    pub columns: Vec<ColumnInfo>,
    pub min_time: i64,
    pub max_time: i64,
    pub rows: u64,
}

/// Sorts and encodes `rows` as one segment's Parquet bytes (on a blocking thread).
pub async fn encode_rows(rows: Vec<Row>) -> Result<Encoded> {
    encode_with(move || rows_to_batch(rows).map(Combined::from), SegmentCodec::Zstd).await
}

/// Combines the batches of one buffer ([`combine_by_time`]) and encodes them as one segment's
/// Parquet bytes (on a blocking thread), its compressed columns under `codec`.
pub async fn encode_parts(parts: Vec<RowsBatch>, codec: SegmentCodec) -> Result<Encoded> {
    encode_with(move || combine_by_time(parts), codec).await
}

async fn encode_with(
    build: impl FnOnce() -> Result<Combined> + Send + 'static,
    codec: SegmentCodec,
) -> Result<Encoded> {
    tokio::task::spawn_blocking(move || {
        let built = build()?;
        let rows = built.rows() as u64;
        let bytes = encode_parquet(&built.batches, codec)?;
        Ok::<_, StorageError>(Encoded {
            bytes,
            columns: built.columns,
            min_time: built.min_time,
            max_time: built.max_time,
            rows,
        })
    })
    .await
    .map_err(|e| StorageError::Invalid(format!("encode task failed: {e}")))?
}

/// `<database>/<table>/<yyyy>/<mm>/<dd>/<segment-id>.parquet`, dated by the first row.
pub fn segment_path(database: &str, table: &str, min_time: i64, id: &str) -> String {
    let date = DateTime::<Utc>::from_timestamp_nanos(min_time.max(0));
    format!(
        "{}/{}/{:04}/{:02}/{:02}/{id}.parquet",
        path_part(database),
        path_part(table),
        date.year(),
        date.month(),
        date.day()
    )
}

/// Keeps object paths safe whatever a table is called.
fn path_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn paths_are_dated_and_safe() {
        let path = segment_path("default", "my table", 1_700_000_000_000_000_000, "abc");
        assert_eq!(path, "default/my_table/2023/11/14/abc.parquet");
    }
}
