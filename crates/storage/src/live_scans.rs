//! What the segment scans of each running distributed query read so far on this node.
//!
//! A distributed query's scans run on other nodes, whose plan metrics reach the node that
//! coordinates it only when their tasks end. For its progress reports in the meantime, a
//! [`crate::SegmentScanExec`] tagged with the query's id adds what it reads here as it reads,
//! and the coordinator asks each node for its [`ScanTotals`] of the query (`live(query)`).
//!
//! Entries are kept for [`KEEP_FOR`] after their last change, so a coordinator asking late
//! still sees what a finished scan read; at most [`MAX_QUERIES`] are kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// How long the totals of a query are kept after its scans last read something.
pub const KEEP_FOR: Duration = Duration::from_secs(600);
/// Most queries whose totals are kept (the oldest go first).
pub const MAX_QUERIES: usize = 4096;

/// What scans read: rows and compressed bytes of segments, chunks read and skipped, and what
/// progress reports count of their work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanTotals {
    pub rows: u64,
    pub bytes: u64,
    pub chunks_read: u64,
    pub skipped_range: u64,
    /// Chunks the token index ruled out.
    pub skipped_bloom: u64,
    pub skipped_required_fields: u64,
    pub skipped_bytes: u64,
    /// Uncompressed bytes of the chunks read and of those skipped.
    pub raw_bytes: u64,
    pub skipped_raw_bytes: u64,
    /// Bytes of bloom filters evaluated: the token index's and Parquet's.
    pub bloom_bytes: u64,
    /// Rows the scans' filters were evaluated on.
    pub predicate_checks: u64,
    /// Time the Parquet readers spent reading and decoding, summed over threads.
    pub scan_nanos: u64,
}

impl ScanTotals {
    /// Field by field, the larger of the two.
    pub fn max(self, other: ScanTotals) -> ScanTotals {
        ScanTotals {
            rows: self.rows.max(other.rows),
            bytes: self.bytes.max(other.bytes),
            chunks_read: self.chunks_read.max(other.chunks_read),
            skipped_range: self.skipped_range.max(other.skipped_range),
            skipped_bloom: self.skipped_bloom.max(other.skipped_bloom),
            skipped_required_fields: self.skipped_required_fields.max(other.skipped_required_fields),
            skipped_bytes: self.skipped_bytes.max(other.skipped_bytes),
            raw_bytes: self.raw_bytes.max(other.raw_bytes),
            skipped_raw_bytes: self.skipped_raw_bytes.max(other.skipped_raw_bytes),
            bloom_bytes: self.bloom_bytes.max(other.bloom_bytes),
            predicate_checks: self.predicate_checks.max(other.predicate_checks),
            scan_nanos: self.scan_nanos.max(other.scan_nanos),
        }
    }

    /// Field by field, the difference (never below zero).
    pub fn minus(self, other: ScanTotals) -> ScanTotals {
        ScanTotals {
            rows: self.rows.saturating_sub(other.rows),
            bytes: self.bytes.saturating_sub(other.bytes),
            chunks_read: self.chunks_read.saturating_sub(other.chunks_read),
            skipped_range: self.skipped_range.saturating_sub(other.skipped_range),
            skipped_bloom: self.skipped_bloom.saturating_sub(other.skipped_bloom),
            skipped_required_fields: self
                .skipped_required_fields
                .saturating_sub(other.skipped_required_fields),
            skipped_bytes: self.skipped_bytes.saturating_sub(other.skipped_bytes),
            raw_bytes: self.raw_bytes.saturating_sub(other.raw_bytes),
            skipped_raw_bytes: self.skipped_raw_bytes.saturating_sub(other.skipped_raw_bytes),
            bloom_bytes: self.bloom_bytes.saturating_sub(other.bloom_bytes),
            predicate_checks: self.predicate_checks.saturating_sub(other.predicate_checks),
            scan_nanos: self.scan_nanos.saturating_sub(other.scan_nanos),
        }
    }
}

impl std::ops::Add for ScanTotals {
    type Output = ScanTotals;

    fn add(self, other: ScanTotals) -> ScanTotals {
        ScanTotals {
            rows: self.rows.saturating_add(other.rows),
            bytes: self.bytes.saturating_add(other.bytes),
            chunks_read: self.chunks_read.saturating_add(other.chunks_read),
            skipped_range: self.skipped_range.saturating_add(other.skipped_range),
            skipped_bloom: self.skipped_bloom.saturating_add(other.skipped_bloom),
            skipped_required_fields: self
                .skipped_required_fields
                .saturating_add(other.skipped_required_fields),
            skipped_bytes: self.skipped_bytes.saturating_add(other.skipped_bytes),
            raw_bytes: self.raw_bytes.saturating_add(other.raw_bytes),
            skipped_raw_bytes: self.skipped_raw_bytes.saturating_add(other.skipped_raw_bytes),
            bloom_bytes: self.bloom_bytes.saturating_add(other.bloom_bytes),
            predicate_checks: self.predicate_checks.saturating_add(other.predicate_checks),
            scan_nanos: self.scan_nanos.saturating_add(other.scan_nanos),
        }
    }
}

impl std::ops::AddAssign for ScanTotals {
    fn add_assign(&mut self, other: ScanTotals) {
        *self = *self + other;
    }
}

/// The running totals of one query on this node.
#[derive(Debug, Default)]
pub struct LiveTotals {
    rows: AtomicU64,
    bytes: AtomicU64,
    chunks_read: AtomicU64,
    skipped_range: AtomicU64,
    skipped_bloom: AtomicU64,
    skipped_required_fields: AtomicU64,
    skipped_bytes: AtomicU64,
    raw_bytes: AtomicU64,
    skipped_raw_bytes: AtomicU64,
    bloom_bytes: AtomicU64,
    predicate_checks: AtomicU64,
    scan_nanos: AtomicU64,
}

impl LiveTotals {
    pub fn add(&self, more: ScanTotals) {
        let add = |counter: &AtomicU64, value: u64| {
            if value > 0 {
                counter.fetch_add(value, Ordering::Relaxed);
            }
        };
        add(&self.rows, more.rows);
        add(&self.bytes, more.bytes);
        add(&self.chunks_read, more.chunks_read);
        add(&self.skipped_range, more.skipped_range);
        add(&self.skipped_bloom, more.skipped_bloom);
        add(&self.skipped_required_fields, more.skipped_required_fields);
        add(&self.skipped_bytes, more.skipped_bytes);
        add(&self.raw_bytes, more.raw_bytes);
        add(&self.skipped_raw_bytes, more.skipped_raw_bytes);
        add(&self.bloom_bytes, more.bloom_bytes);
        add(&self.predicate_checks, more.predicate_checks);
        add(&self.scan_nanos, more.scan_nanos);
    }

    pub fn read(&self) -> ScanTotals {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ScanTotals {
            rows: load(&self.rows),
            bytes: load(&self.bytes),
            chunks_read: load(&self.chunks_read),
            skipped_range: load(&self.skipped_range),
            skipped_bloom: load(&self.skipped_bloom),
            skipped_required_fields: load(&self.skipped_required_fields),
            skipped_bytes: load(&self.skipped_bytes),
            raw_bytes: load(&self.raw_bytes),
            skipped_raw_bytes: load(&self.skipped_raw_bytes),
            bloom_bytes: load(&self.bloom_bytes),
            predicate_checks: load(&self.predicate_checks),
            scan_nanos: load(&self.scan_nanos),
        }
    }
}

/// Totals by query id, with when each was last handed out.
#[derive(Default)]
struct Registry {
    queries: HashMap<String, (Arc<LiveTotals>, Instant)>,
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(Mutex::default);

/// The totals of `query` on this node, to add to (created when new).
pub fn totals_of(query: &str) -> Arc<LiveTotals> {
    let Ok(mut registry) = REGISTRY.lock() else {
        // A poisoned registry only costs progress reports.
        return Arc::new(LiveTotals::default());
    };
    let now = Instant::now();
    if let Some((totals, touched)) = registry.queries.get_mut(query) {
        *touched = now;
        return Arc::clone(totals);
    }
    registry
        .queries
        .retain(|_, (_, touched)| now.duration_since(*touched) < KEEP_FOR);
    if registry.queries.len() >= MAX_QUERIES
        && let Some(oldest) = registry
            .queries
            .iter()
            .min_by_key(|(_, (_, touched))| *touched)
            .map(|(id, _)| id.clone())
    {
        registry.queries.remove(&oldest);
    }
    let totals = Arc::new(LiveTotals::default());
    registry.queries.insert(query.to_string(), (Arc::clone(&totals), now));
    totals
}

/// What the scans of `query` read so far on this node (zero when none ran here).
pub fn live(query: &str) -> ScanTotals {
    REGISTRY
        .lock()
        .ok()
        .and_then(|registry| registry.queries.get(query).map(|(totals, _)| totals.read()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_add_up_per_query() {
        let a = totals_of("live-scans-test-a");
        a.add(ScanTotals {
            rows: 10,
            bytes: 100,
            ..ScanTotals::default()
        });
        totals_of("live-scans-test-a").add(ScanTotals {
            rows: 5,
            chunks_read: 1,
            ..ScanTotals::default()
        });
        let read = live("live-scans-test-a");
        assert_eq!((read.rows, read.bytes, read.chunks_read), (15, 100, 1));
        assert_eq!(live("live-scans-test-unknown"), ScanTotals::default());
    }

    #[test]
    fn max_and_minus_are_field_by_field() {
        let a = ScanTotals {
            rows: 3,
            bytes: 10,
            ..ScanTotals::default()
        };
        let b = ScanTotals {
            rows: 5,
            bytes: 2,
            ..ScanTotals::default()
        };
        assert_eq!(
            a.max(b),
            ScanTotals {
                rows: 5,
                bytes: 10,
                ..ScanTotals::default()
            }
        );
        assert_eq!(
            a.minus(b),
            ScanTotals {
                rows: 0,
                bytes: 8,
                ..ScanTotals::default()
            }
        );
        assert_eq!((a + b).rows, 8);
    }
}
