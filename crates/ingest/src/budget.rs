//! The in-flight byte budget of the ingest faces: requests hold the bytes of their decoded
//! body (twice: the body, and the rows made from it) from decoding until the rows are
//! durable. When the budget is spent, new requests are turned away at once with 503 and
//! `Retry-After` (UNAVAILABLE over gRPC) instead of piling up in memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use trawl_common::TrawlError;

/// Bytes a request holds per decoded body byte (the body, and the rows made from it).
const HOLD_FACTOR: usize = 2;

/// The budget; cheap to clone.
#[derive(Debug, Clone)]
pub struct ByteBudget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    capacity: usize,
    used: AtomicUsize,
}

/// Bytes held until dropped.
#[derive(Debug)]
pub struct Reservation {
    inner: Arc<Inner>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.inner.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl ByteBudget {
    pub fn new(capacity: usize) -> ByteBudget {
        ByteBudget {
            inner: Arc::new(Inner {
                capacity,
                used: AtomicUsize::new(0),
            }),
        }
    }

    /// A quarter of the memory available now (`MemAvailable`), between 64 MiB and 2 GiB;
    /// 512 MiB when that cannot be read.
    pub fn from_available_memory() -> ByteBudget {
        let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("MemAvailable:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<usize>().ok())
                .map(|kib| kib.saturating_mul(1024))
        });
        let capacity = available.map_or(512 << 20, |bytes| (bytes / 4).clamp(64 << 20, 2 << 30));
        ByteBudget::new(capacity)
    }

    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Holds what a request of `body_bytes` decoded bytes needs, or refuses it. A request
    /// larger than the whole budget is let through alone (when nothing else is held), so a
    /// body under the size limit is never refused forever.
    pub fn reserve(&self, body_bytes: usize) -> Result<Reservation, TrawlError> {
        let bytes = body_bytes.saturating_mul(HOLD_FACTOR);
        let inner = &self.inner;
        let mut used = inner.used.load(Ordering::Acquire);
        loop {
            let fits = used.saturating_add(bytes) <= inner.capacity || used == 0;
            if !fits {
                return Err(TrawlError::unavailable(
                    "the ingest service is at its in-flight limit; retry shortly",
                ));
            }
            match inner
                .used
                .compare_exchange_weak(used, used + bytes, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Ok(Reservation {
                        inner: inner.clone(),
                        bytes,
                    });
                }
                Err(now) => used = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_hold_until_dropped() -> Result<(), TrawlError> {
        let budget = ByteBudget::new(100);
        let first = budget.reserve(30)?;
        assert!(budget.reserve(30).is_err(), "60 + 60 > 100");
        drop(first);
        let _second = budget.reserve(30)?;
        // Alone, a request over the whole budget passes.
        drop(_second);
        let _big = budget.reserve(1_000)?;
        assert!(budget.reserve(1).is_err());
        Ok(())
    }

    #[test]
    fn sized_from_memory_within_bounds() {
        let capacity = ByteBudget::from_available_memory().capacity();
        assert!((64 << 20..=2 << 30).contains(&capacity));
    }
}
