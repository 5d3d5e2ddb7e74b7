//! Memory limits inside the engine's shared pool.
//!
//! All queries share one pool (`memory_limit_bytes`, spilling when it is full). Inside it,
//! each query runs in a task context whose pool is a [`LimitedPool`] over the shared one:
//! its reservations count against `query_memory_limit_bytes` too, so one query that
//! multiplies rows (a join, `mv-expand` into a sort, `make_list` of everything) fails alone
//! with a clear error, or spills, instead of taking the memory every other query and ingest
//! need. The `summarize` budget (`budget.rs`) is another [`LimitedPool`], one level further in.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;

/// What a [`LimitedPool`] limits; it decides the pool's name and the error past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// One query's operators.
    Query,
    /// One grouping aggregation (see `budget.rs`).
    Summarize,
}

/// Part of the error a query over its own memory limit fails with.
pub(crate) const QUERY_LIMIT_EXCEEDED: &str = "the query needs more memory than its limit";

/// Bytes reserved in a [`LimitedPool`] now, and the most ever reserved at once. One query's
/// plans share one (the engine reports it in `Progress`).
#[derive(Debug, Default)]
pub(crate) struct MemoryUse {
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl MemoryUse {
    /// Bytes reserved now.
    pub(crate) fn reserved(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The most bytes reserved at once so far.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    fn grow(&self, additional: usize) {
        let now = self
            .used
            .fetch_add(additional, Ordering::AcqRel)
            .saturating_add(additional);
        self.peak.fetch_max(now, Ordering::AcqRel);
    }

    fn shrink(&self, by: usize) {
        let _ = self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            Some(used.saturating_sub(by))
        });
    }
}

/// A pool that counts reservations against a limit of its own, within an inner pool.
#[derive(Debug)]
pub(crate) struct LimitedPool {
    inner: Arc<dyn MemoryPool>,
    used: Arc<MemoryUse>,
    limit: usize,
    kind: Limit,
    /// Set when a reservation was refused (the budget's node reads it: `budget::tripped`).
    tripped: Option<Arc<AtomicBool>>,
}

impl LimitedPool {
    /// The same pool, recording in `flag` when it refuses a reservation.
    pub(crate) fn tripping(mut self, flag: Arc<AtomicBool>) -> LimitedPool {
        self.tripped = Some(flag);
        self
    }

    pub(crate) fn new(inner: Arc<dyn MemoryPool>, used: Arc<MemoryUse>, limit: usize, kind: Limit) -> LimitedPool {
        LimitedPool {
            inner,
            used,
            limit,
            kind,
            tripped: None,
        }
    }

    fn exceeded(&self, reservation: &MemoryReservation, additional: usize, used: usize) -> DataFusionError {
        let consumer = reservation.consumer().name();
        DataFusionError::ResourcesExhausted(match self.kind {
            Limit::Summarize => format!(
                "{}: {consumer} needs {additional} bytes more, {used} of {} in use",
                crate::budget::BUDGET_EXCEEDED,
                self.limit
            ),
            Limit::Query => format!(
                "{QUERY_LIMIT_EXCEEDED} ({} MiB): {consumer} needs {additional} bytes more with {used} in use; \
                 filter earlier, project fewer columns, or raise query_memory_limit",
                self.limit >> 20
            ),
        })
    }
}

impl fmt::Display for LimitedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} of {} bytes, within {}",
            self.name(),
            self.used.reserved(),
            self.limit,
            self.inner
        )
    }
}

impl MemoryPool for LimitedPool {
    fn name(&self) -> &str {
        match self.kind {
            Limit::Query => "query_limit",
            Limit::Summarize => "summarize_budget",
        }
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.used.grow(additional);
        self.inner.grow(reservation, additional)
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.used.shrink(shrink);
        self.inner.shrink(reservation, shrink)
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        let used = self.used.reserved();
        if used.saturating_add(additional) > self.limit {
            if let Some(flag) = &self.tripped {
                flag.store(true, Ordering::Release);
            }
            return Err(self.exceeded(reservation, additional, used));
        }
        self.inner.try_grow(reservation, additional)?;
        self.used.grow(additional);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.inner.reserved()
    }

    fn memory_limit(&self) -> MemoryLimit {
        match self.inner.memory_limit() {
            MemoryLimit::Finite(inner) => MemoryLimit::Finite(inner.min(self.limit)),
            MemoryLimit::Infinite | MemoryLimit::Unknown => MemoryLimit::Finite(self.limit),
        }
    }
}

/// `context` with its pool limited to `limit` bytes for one query (spilling as before),
/// counted in `used` (shared by the query's plans).
pub(crate) fn query_context(context: TaskContext, used: Arc<MemoryUse>, limit: usize) -> Result<Arc<TaskContext>> {
    let base = context.runtime_env();
    let pool: Arc<dyn MemoryPool> = Arc::new(LimitedPool::new(
        Arc::clone(&base.memory_pool),
        used,
        limit,
        Limit::Query,
    ));
    let runtime = RuntimeEnvBuilder::from_runtime_env(&base)
        .with_memory_pool(pool)
        .build_arc()?;
    Ok(Arc::new(context.with_runtime(runtime)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::memory_pool::GreedyMemoryPool;

    #[test]
    fn a_query_pool_refuses_past_its_limit_and_frees_what_it_shrinks() {
        let shared: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1000));
        let used = Arc::new(MemoryUse::default());
        let pool: Arc<dyn MemoryPool> = Arc::new(LimitedPool::new(
            Arc::clone(&shared),
            Arc::clone(&used),
            100,
            Limit::Query,
        ));
        let reservation = MemoryConsumer::new("join").register(&pool);
        assert!(reservation.try_grow(60).is_ok());
        let error = reservation
            .try_grow(60)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains(QUERY_LIMIT_EXCEEDED), "{error}");
        assert_eq!(shared.reserved(), 60);
        reservation.shrink(50);
        assert!(reservation.try_grow(60).is_ok());
        assert_eq!(shared.reserved(), 70);
        assert_eq!((used.reserved(), used.peak()), (70, 70));
        drop(reservation);
        assert_eq!(shared.reserved(), 0);
        assert_eq!((used.reserved(), used.peak()), (0, 70));
    }
}
