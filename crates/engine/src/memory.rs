//! Memory limits of queries (decision 012).
//!
//! Every query has an account (`trawl_common::memory::QueryMemory`) of
//! `query_memory_limit_bytes`, inside the server's (`memory_limit_bytes`): what its threads
//! allocate while they work for it is charged there, whatever builds it. The operators that
//! can spill (sorts, grouping, some joins) reserve from DataFusion's pools too, which are
//! three quarters of those limits ([`spill_limit`]): they spill, or fail with the pool's
//! error, before the account's limit stops the query, and the rest of the limit is left for
//! what no pool sees (batches in flight, function results, expansions).
//!
//! All queries share one pool, spilling when it is full. Inside it, each query runs in a task
//! context whose pool is a [`LimitedPool`] over the shared one: its reservations count
//! against the query's share too, so one query that multiplies rows (a join, `mv-expand` into
//! a sort, `make_list` of everything) fails alone with a clear error, or spills, instead of
//! taking the memory every other query and ingest need. The `summarize` budget (`budget.rs`)
//! is another [`LimitedPool`], one level further in.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::common::runtime::JoinSetTracer;
use futures::future::BoxFuture;
use std::any::Any;
use trawl_common::memory::{self, Bytes, LimitKind, MemoryExceeded, QueryMemory, ServerMemory};
use trawl_common::{ErrorCode, TrawlError};

/// What a [`LimitedPool`] limits; it decides the pool's name and the error past the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// One query's operators.
    Query,
    /// One grouping aggregation (see `budget.rs`).
    Summarize,
}

/// Part of the error a query over its own memory limit fails with.
pub(crate) const QUERY_LIMIT_EXCEEDED: &str = trawl_common::memory::MemoryExceeded::QUERY_LIMIT;

/// The share of a memory limit DataFusion's pools may reserve: spilling operators spill (or
/// fail with the pool's error) before the query's account, which counts every allocation,
/// reaches its limit.
pub(crate) fn spill_limit(limit: usize) -> usize {
    limit / 4 * 3
}

/// Bytes reserved in a [`LimitedPool`] now, and the most ever reserved at once. One query's
/// plans share one (the engine reports it in `Progress`); the query's reservations are told
/// to its account, by consumer.
#[derive(Debug, Default)]
pub(crate) struct MemoryUse {
    used: AtomicUsize,
    peak: AtomicUsize,
    account: Option<Arc<QueryMemory>>,
    /// Bytes reserved now by consumer name (`HashJoinInput[0]`, `ExternalSorter[1]`, ...).
    consumers: Mutex<HashMap<String, usize>>,
}

impl MemoryUse {
    /// The reservations of a query whose account is `account`.
    pub(crate) fn for_account(account: Arc<QueryMemory>) -> MemoryUse {
        MemoryUse {
            account: Some(account),
            ..MemoryUse::default()
        }
    }

    /// What the query holds now: its account's count when it has one, else its reservations.
    pub(crate) fn held(&self) -> u64 {
        match &self.account {
            Some(account) => account.held(),
            None => self.reserved() as u64,
        }
    }

    /// The most the query held at once so far (see [`MemoryUse::held`]).
    pub(crate) fn held_peak(&self) -> u64 {
        match &self.account {
            Some(account) => account.peak(),
            None => self.peak() as u64,
        }
    }

    /// The consumer holding the most now, and its bytes.
    pub(crate) fn largest_consumer(&self) -> Option<(String, usize)> {
        let consumers = self.consumers.lock().ok()?;
        consumers
            .iter()
            .filter(|(_, bytes)| **bytes > 0)
            .max_by_key(|(_, bytes)| **bytes)
            .map(|(name, bytes)| (name.clone(), *bytes))
    }

    /// Names what holds the query's memory for its account's messages: the largest
    /// consumer of the pool, as the KQL operator it belongs to.
    pub(crate) fn namer(self: &Arc<Self>) -> trawl_common::memory::Namer {
        let used = Arc::downgrade(self);
        Box::new(move || {
            let (consumer, bytes) = used.upgrade()?.largest_consumer()?;
            Some(format!(
                "{} ({consumer} reserved {})",
                operator_of(&consumer),
                trawl_common::memory::Bytes(bytes as u64)
            ))
        })
    }

    fn note(&self, consumer: &str, delta: isize) {
        if let Some(account) = &self.account {
            account.note_reserved(delta as i64);
        }
        if let Ok(mut consumers) = self.consumers.lock() {
            let entry = consumers.entry(consumer.to_string()).or_default();
            *entry = entry.saturating_add_signed(delta);
            if *entry == 0 {
                consumers.remove(consumer);
            }
        }
    }

    /// Bytes reserved now.
    pub(crate) fn reserved(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The most bytes reserved at once so far.
    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    fn grow(&self, consumer: &str, additional: usize) {
        let now = self
            .used
            .fetch_add(additional, Ordering::AcqRel)
            .saturating_add(additional);
        self.peak.fetch_max(now, Ordering::AcqRel);
        self.note(consumer, additional.min(isize::MAX as usize) as isize);
    }

    fn shrink(&self, consumer: &str, by: usize) {
        let mut shrunk = 0;
        let _ = self.used.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
            shrunk = used.min(by);
            Some(used - shrunk)
        });
        self.note(consumer, -(shrunk.min(isize::MAX as usize) as isize));
    }
}

/// The KQL operator a DataFusion memory consumer works for, for messages.
pub(crate) fn operator_of(consumer: &str) -> &'static str {
    const OPERATORS: &[(&str, &str)] = &[
        ("HashJoin", "join"),
        ("NestedLoopJoin", "join"),
        ("CrossJoin", "join"),
        ("SortMergeJoin", "join"),
        ("SymmetricHashJoin", "join"),
        ("ExternalSorter", "sort"),
        ("TopK", "top"),
        ("GroupedHashAggregate", "summarize"),
        ("PartialHashAggregate", "summarize"),
        ("HashAggregate", "summarize"),
        ("AggregateStream", "summarize"),
        ("GroupedTopK", "summarize"),
        ("RepartitionExec", "the hand-over of rows between threads"),
        ("WindowAgg", "serialize (window functions)"),
        ("BoundedWindowAgg", "serialize (window functions)"),
        ("SortPreservingMerge", "sort"),
        ("Unnest", "mv-expand"),
        ("RecursiveQuery", "a recursive query"),
    ];
    OPERATORS
        .iter()
        .find(|(prefix, _)| consumer.starts_with(prefix))
        .map_or("an operator", |(_, operator)| operator)
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
                "{QUERY_LIMIT_EXCEEDED} ({} of it for operators that reserve memory): {} \
                 ({consumer}) needs {} more with {} in use; filter earlier, project fewer or \
                 shorter columns, or raise the per-query limit (--query-memory-per-query-bytes)",
                Bytes(self.limit as u64),
                operator_of(consumer),
                Bytes(additional as u64),
                Bytes(used as u64),
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
        self.used.grow(reservation.consumer().name(), additional);
        self.inner.grow(reservation, additional)
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.used.shrink(reservation.consumer().name(), shrink);
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
        self.used.grow(reservation.consumer().name(), additional);
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

/// The error a query stopped for memory fails with: over its own limit, a request it cannot
/// run as it is (400); stopped because all queries together hold too much, one to retry (503).
pub(crate) fn memory_error(exceeded: &MemoryExceeded) -> TrawlError {
    match exceeded.kind {
        LimitKind::Query | LimitKind::Unscoped => TrawlError::new(ErrorCode::BadRequest, exceeded.to_string()),
        LimitKind::Server => TrawlError::unavailable(exceeded.to_string()),
        // The run already ended (its caller has the timeout or went away).
        LimitKind::GivenUp => TrawlError::new(ErrorCode::Timeout, exceeded.to_string()),
    }
}

/// Makes the tasks DataFusion spawns for a query (a repartition's inputs, a merge's
/// producers, blocking work) work for the account of the query that spawned them: its
/// allocations there count too. Set once per process.
pub(crate) fn trace_spawned_tasks() {
    struct QueryTasks;
    impl JoinSetTracer for QueryTasks {
        fn trace_future(
            &self,
            future: BoxFuture<'static, Box<dyn Any + Send>>,
        ) -> BoxFuture<'static, Box<dyn Any + Send>> {
            match memory::current() {
                Some(account) => Box::pin(memory::Scoped::new(account, future)),
                None => future,
            }
        }

        fn trace_block(
            &self,
            work: Box<dyn FnOnce() -> Box<dyn Any + Send> + Send>,
        ) -> Box<dyn FnOnce() -> Box<dyn Any + Send> + Send> {
            match memory::current() {
                Some(account) => Box::new(move || memory::within(Some(&account), work)),
                None => work,
            }
        }
    }
    static TRACER: QueryTasks = QueryTasks;
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        if datafusion::common::runtime::set_join_set_tracer(&TRACER).is_err() {
            tracing::warn!("DataFusion's task tracer was set elsewhere: tasks queries spawn are not metered");
        }
    });
}

/// How often the heap watch reads the process's live heap.
const HEAP_WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Watches the process's live heap on a thread of its own while `server` lives: past `cap`
/// bytes, the queries holding the most are stopped until what they hold covers the excess.
/// The accounts see what queries allocate; this is the guard for what they miss (memory a
/// query's work allocates where no account is entered), and it never touches ingest.
pub(crate) fn watch_heap(server: &Arc<ServerMemory>, cap: u64) {
    if memory::heap_bytes().is_none() {
        tracing::info!("the allocator reports no heap size: the heap watch is off");
        return;
    }
    let server = Arc::downgrade(server);
    let spawned = std::thread::Builder::new()
        .name("trawl-heap-watch".to_string())
        .spawn(move || {
            while let Some(server) = server.upgrade() {
                if let Some(heap) = memory::heap_bytes()
                    && heap > cap
                {
                    for stopped in server.relieve(LimitKind::Server, cap, heap - cap) {
                        tracing::warn!(
                            heap,
                            cap,
                            held = stopped.held(),
                            "the process's heap passed its cap: the query holding the most was stopped"
                        );
                    }
                }
                drop(server);
                std::thread::sleep(HEAP_WATCH_EVERY);
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the heap watch");
    }
}

/// `context` with its pool limited to `limit` bytes for one query (spilling as before; the
/// caller passes the pool's share, [`spill_limit`]), counted in `used` (shared by the
/// query's plans).
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
