//! What scans decide while a query is planned, counted for its progress reports.
//!
//! A query's [`ScanCounters`] is shared by every [`crate::TrawlTable`] it reads. Scans add
//! the segments they list and how their chunks (Parquet row groups) fared against the
//! query's filters; the engine adds what the running scan reports (rows, bytes, chunks
//! pruned by statistics and bloom filters in the reader).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::datasource::physical_plan::parquet::metadata::CachedParquetMetaData;
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::parquet::file::metadata::ParquetMetaData;
use datafusion::parquet::file::statistics::Statistics;
use trawl_catalog::SegmentMeta;

use crate::probe::UnreadableSegment;
use crate::segment::CHUNK_ROWS;

/// Counters of the scans of one query. All only grow.
#[derive(Debug, Default)]
pub struct ScanCounters {
    /// Segments listed for the query's time window.
    pub segments_total: AtomicU64,
    /// Listed segments whose chunks are classified.
    pub segments_done: AtomicU64,
    /// Chunks of the listed segments.
    pub chunks_total: AtomicU64,
    /// Chunks whose statistics rule out every row.
    pub chunks_skipped_range: AtomicU64,
    /// Chunks the token index ruled out (`crate::tokens`).
    pub chunks_skipped_bloom: AtomicU64,
    /// Chunks of segments lacking a column the filters need to pass.
    pub chunks_skipped_required_fields: AtomicU64,
    /// Compressed bytes of skipped chunks.
    pub skipped_compressed_bytes: AtomicU64,
    /// Uncompressed bytes of skipped chunks (their row groups' `total_byte_size`).
    pub skipped_raw_bytes: AtomicU64,
    /// Bytes of token-index filters evaluated to rule chunks and blocks out.
    pub index_bytes: AtomicU64,
    /// Segments planned for reading, by path.
    planned: Mutex<HashMap<String, PlannedSegment>>,
    /// The chunks planned of the segments of which only some are read, by path.
    planned_chunks: Mutex<HashMap<String, Vec<usize>>>,
    /// The footer cache planning read from, where progress reports find chunk statistics.
    footers: OnceLock<Arc<FileMetadataCache>>,
    /// Per segment, the value ranges of its planned chunks in the column progress is binned by
    /// ([`ScanCounters::chunk_ranges`]), once known.
    ranges: Mutex<HashMap<String, Arc<Vec<ChunkRange>>>>,
    /// Segments left out because they cannot be read, not yet taken by the engine.
    unreadable: Mutex<Vec<UnreadableSegment>>,
}

/// A segment some of whose chunks are read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlannedSegment {
    pub chunks: u64,
    /// Time range of its rows, nanoseconds since the Unix epoch.
    pub min_time: i64,
    pub max_time: i64,
    /// Its size in bytes (as the catalog has it).
    pub bytes: u64,
}

/// The values one planned chunk holds in a column, by its statistics, as whole numbers
/// (real numbers rounded down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkRange {
    /// Every value is in `min..=max`.
    Within(i64, i64),
    /// The statistics do not tell: any value.
    Unknown,
}

/// Chunks of a segment of `rows` rows (every segment writer cuts chunks of [`CHUNK_ROWS`]).
pub fn chunks_of(rows: u64) -> u64 {
    rows.div_ceil(CHUNK_ROWS as u64)
}

impl ScanCounters {
    pub(crate) fn listed(&self, segments: u64, chunks: u64) {
        self.segments_total.fetch_add(segments, Ordering::Relaxed);
        self.chunks_total.fetch_add(chunks, Ordering::Relaxed);
    }

    pub(crate) fn classified(&self) {
        self.segments_done.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn skipped(&self, chunks: u64, bytes: u64, required_fields: bool) {
        let counter = if required_fields {
            &self.chunks_skipped_required_fields
        } else {
            &self.chunks_skipped_range
        };
        counter.fetch_add(chunks, Ordering::Relaxed);
        self.skipped_compressed_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn skipped_by_index(&self, chunks: u64, bytes: u64) {
        self.chunks_skipped_bloom.fetch_add(chunks, Ordering::Relaxed);
        self.skipped_compressed_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Uncompressed bytes of chunks skipped (for any reason).
    pub(crate) fn skipped_raw(&self, bytes: u64) {
        self.skipped_raw_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes of token-index filters evaluated.
    pub(crate) fn evaluated_index(&self, bytes: u64) {
        self.index_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Where the footers of the planned segments are cached.
    pub(crate) fn footers_in(&self, cache: &Arc<FileMetadataCache>) {
        let _ = self.footers.set(Arc::clone(cache));
    }

    /// Every chunk of `segment` is planned for reading.
    pub(crate) fn planned(&self, segment: &SegmentMeta, chunks: u64) {
        if let Ok(mut planned) = self.planned.lock() {
            let entry = planned.entry(segment.path.clone()).or_insert(PlannedSegment {
                chunks: 0,
                min_time: segment.min_time,
                max_time: segment.max_time,
                bytes: segment.bytes,
            });
            entry.chunks += chunks;
        }
    }

    /// The chunks `read` (by index) of `segment` are planned for reading.
    pub(crate) fn planned_some(&self, segment: &SegmentMeta, read: &[usize]) {
        self.planned(segment, read.len() as u64);
        if let Ok(mut planned) = self.planned_chunks.lock() {
            let chunks = planned.entry(segment.path.clone()).or_default();
            chunks.extend_from_slice(read);
            chunks.sort_unstable();
            chunks.dedup();
        }
    }

    pub(crate) fn unreadable(&self, segments: Vec<UnreadableSegment>) {
        if let Ok(mut unreadable) = self.unreadable.lock() {
            unreadable.extend(segments);
        }
    }

    /// The segments left out since the last call, because they cannot be read.
    pub fn take_unreadable(&self) -> Vec<UnreadableSegment> {
        self.unreadable
            .lock()
            .map(|mut unreadable| std::mem::take(&mut *unreadable))
            .unwrap_or_default()
    }

    /// Chunks planned for reading in the segment at `path` (0 when none).
    pub fn planned_chunks(&self, path: &str) -> u64 {
        self.planned
            .lock()
            .ok()
            .and_then(|planned| planned.get(path).map(|p| p.chunks))
            .unwrap_or(0)
    }

    /// Chunks planned for reading in all segments.
    pub fn planned_total(&self) -> u64 {
        self.planned
            .lock()
            .map(|planned| planned.values().map(|p| p.chunks).sum())
            .unwrap_or(0)
    }

    /// The segments planned for reading, by path.
    pub fn planned_segments(&self) -> Vec<(String, PlannedSegment)> {
        self.planned
            .lock()
            .map(|planned| planned.iter().map(|(path, p)| (path.clone(), *p)).collect())
            .unwrap_or_default()
    }

    /// The values of `column` in each planned chunk of the segment at `path`, by the chunks'
    /// statistics in its footer; `None` when the footer is not at hand (not cached, or the
    /// segment was planned on another node). A chunk without a value of the column (or a
    /// segment without the column) has no entry; values it cannot tell are
    /// [`ChunkRange::Unknown`]. Worked out once per segment (the column is the query's).
    pub fn chunk_ranges(&self, path: &str, column: &str) -> Option<Arc<Vec<ChunkRange>>> {
        if let Some(known) = self.ranges.lock().ok().and_then(|ranges| ranges.get(path).cloned()) {
            return Some(known);
        }
        let segment = self.planned.lock().ok()?.get(path).copied()?;
        let cache = self.footers.get()?;
        let entry = cache.get(&object_store::path::Path::from(path))?;
        if entry.meta.size != segment.bytes {
            return None;
        }
        let footer = entry.file_metadata.as_any().downcast_ref::<CachedParquetMetaData>()?;
        let footer = footer.parquet_metadata();
        let only: Option<Vec<usize>> = self
            .planned_chunks
            .lock()
            .ok()
            .and_then(|chunks| chunks.get(path).cloned());
        let ranges = Arc::new(chunk_ranges_of(footer, column, only.as_deref()));
        if let Ok(mut known) = self.ranges.lock() {
            known.insert(path.to_string(), Arc::clone(&ranges));
        }
        Some(ranges)
    }
}

/// The values of the top-level `column` in the chunks of `footer` (those `only` lists, all
/// when `None`); see [`ScanCounters::chunk_ranges`].
pub fn chunk_ranges_of(footer: &ParquetMetaData, column: &str, only: Option<&[usize]>) -> Vec<ChunkRange> {
    let descriptor = footer.file_metadata().schema_descr();
    let Some(leaf) = descriptor
        .columns()
        .iter()
        .position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == column)
    else {
        return Vec::new();
    };
    let mut ranges = Vec::new();
    for (index, group) in footer.row_groups().iter().enumerate() {
        if only.is_some_and(|only| only.binary_search(&index).is_err()) {
            continue;
        }
        let Some(chunk) = group.columns().get(leaf) else {
            continue;
        };
        let rows = u64::try_from(group.num_rows()).unwrap_or(0);
        let range = match chunk.statistics() {
            Some(statistics) if statistics.null_count_opt() == Some(rows) => continue,
            Some(Statistics::Int32(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(&min), Some(&max)) => ChunkRange::Within(i64::from(min), i64::from(max)),
                _ => ChunkRange::Unknown,
            },
            Some(Statistics::Int64(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(&min), Some(&max)) => ChunkRange::Within(min, max),
                _ => ChunkRange::Unknown,
            },
            Some(Statistics::Double(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(&min), Some(&max)) if !min.is_nan() && !max.is_nan() => {
                    ChunkRange::Within(min.floor() as i64, max.floor() as i64)
                }
                _ => ChunkRange::Unknown,
            },
            Some(Statistics::Float(s)) => match (s.min_opt(), s.max_opt()) {
                (Some(&min), Some(&max)) if !min.is_nan() && !max.is_nan() => {
                    ChunkRange::Within(min.floor() as i64, max.floor() as i64)
                }
                _ => ChunkRange::Unknown,
            },
            _ => ChunkRange::Unknown,
        };
        ranges.push(range);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_the_writer() {
        assert_eq!(chunks_of(0), 0);
        assert_eq!(chunks_of(1), 1);
        assert_eq!(chunks_of(CHUNK_ROWS as u64), 1);
        assert_eq!(chunks_of(CHUNK_ROWS as u64 + 1), 2);
    }

    #[test]
    fn planned_chunks_add_up_per_path() {
        let segment = |path: &str| SegmentMeta {
            id: path.to_string(),
            database: "d".into(),
            table: "t".into(),
            path: path.to_string(),
            min_time: 0,
            max_time: 0,
            rows: 1,
            bytes: 1,
            columns: Vec::new(),
            merge_level: 0,
            state: trawl_catalog::SegmentState::Live,
            created_at: 0,
            tombstoned_at: None,
            signal: None,
        };
        let counters = ScanCounters::default();
        counters.planned(&segment("a"), 2);
        counters.planned(&segment("a"), 3);
        counters.planned(&segment("b"), 1);
        assert_eq!(counters.planned_chunks("a"), 5);
        assert_eq!(counters.planned_chunks("c"), 0);
        assert_eq!(counters.planned_total(), 6);
    }
}
