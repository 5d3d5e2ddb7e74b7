//! Writing segments: rows → sorted batch → Parquet bytes → durable object → catalog row.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Datelike, Utc};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;
use trawl_catalog::{ColumnInfo, SegmentMeta, SegmentState};
use trawl_common::Row;

use crate::batch::rows_to_batch;
use crate::store::SegmentStore;
use crate::{Result, StorageError};

/// Rows per Parquet row group (a "chunk").
pub const CHUNK_ROWS: usize = 32 * 1024;

/// Columns that get a Parquet bloom filter (exact-match lookups by id).
const BLOOM_COLUMNS: &[&str] = &["trace_id", "span_id"];

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
        let row_count = rows.len() as u64;
        let (bytes, columns, min_time, max_time) = tokio::task::spawn_blocking(move || {
            let built = rows_to_batch(rows)?;
            let bytes = encode_parquet(&[built.batch])?;
            Ok::<_, StorageError>((bytes, built.columns, built.min_time, built.max_time))
        })
        .await
        .map_err(|e| StorageError::Invalid(format!("encode task failed: {e}")))??;
        self.put_segment(database, table, bytes, columns, min_time, max_time, row_count, 0)
            .await
    }

    /// Writes already-built, time-sorted batches as one durable segment.
    #[allow(clippy::too_many_arguments)]
    pub async fn write_batches(
        &self,
        database: &str,
        table: &str,
        batches: Vec<RecordBatch>,
        columns: Vec<ColumnInfo>,
        min_time: i64,
        max_time: i64,
        merge_level: u32,
    ) -> Result<SegmentMeta> {
        let row_count = batches.iter().map(|b| b.num_rows() as u64).sum();
        let bytes = tokio::task::spawn_blocking(move || encode_parquet(&batches))
            .await
            .map_err(|e| StorageError::Invalid(format!("encode task failed: {e}")))??;
        self.put_segment(
            database,
            table,
            bytes,
            columns,
            min_time,
            max_time,
            row_count,
            merge_level,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn put_segment(
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
        let id = uuid::Uuid::now_v7().simple().to_string();
        let path = segment_path(database, table, min_time, &id);
        let size = bytes.len() as u64;
        self.store.put_durable(&path, bytes).await?;
        Ok(SegmentMeta {
            id,
            database: database.to_string(),
            table: table.to_string(),
            path,
            min_time,
            max_time,
            rows,
            bytes: size,
            columns,
            merge_level,
            state: SegmentState::Live,
            created_at: trawl_common::time::now_nanos(),
            tombstoned_at: None,
        })
    }
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

/// Encodes batches (one schema) as a Parquet file.
pub fn encode_parquet(batches: &[RecordBatch]) -> Result<Bytes> {
    let Some(first) = batches.first() else {
        return Err(StorageError::Invalid("no batches to write".into()));
    };
    let schema = first.schema();
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_max_row_group_row_count(Some(CHUNK_ROWS))
        .set_statistics_enabled(EnabledStatistics::Page);
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    for column in BLOOM_COLUMNS {
        if schema.column_with_name(column).is_some() {
            let path = ColumnPath::from(*column);
            properties = properties
                .set_column_bloom_filter_enabled(path.clone(), true)
                .set_column_bloom_filter_fpp(path.clone(), 0.01)
                .set_column_bloom_filter_max_ndv(path, rows.clamp(1, CHUNK_ROWS) as u64);
        }
    }
    let mut buffer = Vec::with_capacity(rows * 64);
    let mut writer = ArrowWriter::try_new(&mut buffer, Arc::clone(&schema), Some(properties.build()))?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.close()?;
    Ok(Bytes::from(buffer))
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
