//! What scans decide while a query is planned, counted for its progress reports.
//!
//! A query's [`ScanCounters`] is shared by every [`crate::TrawlTable`] it reads. Scans add
//! the segments they list and how their chunks (Parquet row groups) fared against the
//! query's filters; the engine adds what the running scan reports (rows, bytes, chunks
//! pruned by statistics and bloom filters in the reader).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// Segments planned for reading, by path.
    planned: Mutex<HashMap<String, PlannedSegment>>,
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

    pub(crate) fn planned(&self, segment: &SegmentMeta, chunks: u64) {
        if let Ok(mut planned) = self.planned.lock() {
            let entry = planned.entry(segment.path.clone()).or_insert(PlannedSegment {
                chunks: 0,
                min_time: segment.min_time,
                max_time: segment.max_time,
            });
            entry.chunks += chunks;
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
