//! Memory a query holds, counted where it is allocated (decision 012).
//!
//! A [`QueryMemory`] is one query's account. While a thread works for a query (the engine
//! polls the query's plans, a task the plans spawned runs, a function evaluates a batch), the
//! account is *entered* on that thread ([`enter`], [`Scoped`]); the bytes the allocator hands
//! the thread meanwhile, less the bytes the thread frees, are charged to it when the thread
//! leaves. The allocator's per-thread counters ([`install_thread_counters`], jemalloc's
//! `thread.allocatedp` and `thread.deallocatedp` in the binary) make that two memory reads per
//! entry and exit. So every allocation a query drives counts, whatever builds it: operators
//! that reserve memory from DataFusion's pool and the arrays, strings and rows that functions
//! and expansions build, which no pool sees.
//!
//! Past its limit an account is *exceeded*: it records why ([`MemoryExceeded`]), wakes
//! whoever waits on it ([`QueryMemory::poll_exceeded`]; the engine fails the query), and
//! [`admit`] refuses every further request of the query. Code that is about to build
//! something large asks first ([`admit`], [`OutputMeter`]), so one call cannot allocate far
//! past the limit before the next check.
//!
//! All accounts of a server also count against a [`ServerMemory`]: past its limit (or when
//! the process's heap passes its cap, [`ServerMemory::relieve`]) the query that holds the most
//! is exceeded, so the others and ingest go on.
//!
//! What the counts miss, and why that is safe: memory a query's thread frees that another
//! thread allocated (buffers read from object storage) lowers the account, which never goes
//! below zero; memory allocated for the query and freed elsewhere (result batches a face
//! encodes) is handed back explicitly ([`QueryMemory::release`]).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll, Waker};

/// Bytes the allocator handed this thread so far and bytes it freed so far, both counted
/// from the thread's start (wrapping).
pub type ThreadCounters = fn() -> Option<(u64, u64)>;

static THREAD_COUNTERS: OnceLock<ThreadCounters> = OnceLock::new();

/// Installs the allocator's per-thread counters (once per process; later calls are ignored).
/// Without them only what code asks for explicitly ([`admit`]) and what the engine reserves
/// is counted.
pub fn install_thread_counters(counters: ThreadCounters) {
    let _ = THREAD_COUNTERS.set(counters);
}

static HEAP_BYTES: OnceLock<fn() -> Option<u64>> = OnceLock::new();

/// Installs the reader of the process's live heap bytes (once per process), which the
/// engine's heap watch reads.
pub fn install_heap_reader(reader: fn() -> Option<u64>) {
    let _ = HEAP_BYTES.set(reader);
}

/// The process's live heap bytes now, when a reader is installed.
pub fn heap_bytes() -> Option<u64> {
    HEAP_BYTES.get().and_then(|read| read())
}

/// Whether allocations are metered in this process.
pub fn metered() -> bool {
    THREAD_COUNTERS.get().is_some()
}

fn counters_now() -> (u64, u64) {
    THREAD_COUNTERS.get().and_then(|read| read()).unwrap_or((0, 0))
}

/// Net bytes a thread allocated between two readings of its counters.
fn net(from: (u64, u64), to: (u64, u64)) -> i64 {
    let allocated = to.0.wrapping_sub(from.0) as i64;
    let freed = to.1.wrapping_sub(from.1) as i64;
    allocated.wrapping_sub(freed)
}

/// The most a call outside any query may ask for at once (planning folds constants, tests).
pub const UNSCOPED_LIMIT: u64 = 256 << 20;

/// Which limit an account went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// The query's own limit.
    Query,
    /// The memory all queries of the server may hold; this query held the most.
    Server,
    /// A call made outside any query ([`UNSCOPED_LIMIT`]).
    Unscoped,
    /// Not a limit of memory: the query was given up (its time limit passed, its caller went
    /// away, or it ended) while work for it still ran ([`QueryMemory::give_up`]). Nobody reads
    /// the error; it only stops the work at its next check.
    GivenUp,
}

/// Why a query was stopped for memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryExceeded {
    pub kind: LimitKind,
    /// The limit, in bytes.
    pub limit: u64,
    /// What the query held (or asked to hold) when it was stopped.
    pub held: u64,
    /// Whether `held` counts what was asked for before it was built (the builder was refused
    /// and never built it), not only what was held.
    pub asked: bool,
    /// What was building when it was stopped: a KQL operator (`mv-expand`, `join`, ...) or
    /// function (`strrep()`), or a description of the rows held.
    pub what: String,
}

impl MemoryExceeded {
    /// Part of every message of a query over its own limit.
    pub const QUERY_LIMIT: &'static str = "the query needs more memory than its limit";
    /// Part of every message of a query stopped because the server's query memory is spent.
    pub const SERVER_LIMIT: &'static str = "the server's memory for queries is spent";
}

impl fmt::Display for MemoryExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (limit, held) = (Bytes(self.limit), Bytes(self.held));
        let what = &self.what;
        match self.kind {
            LimitKind::Query => write!(
                f,
                "{} of {limit}: {what} {} {held}; filter earlier, project fewer or shorter \
                 columns, or raise the per-query limit (--query-memory-per-query-bytes)",
                Self::QUERY_LIMIT,
                if self.asked { "would have taken it to" } else { "took it to" },
            ),
            LimitKind::Server => write!(
                f,
                "{} ({limit} for all queries at once) and this query held the most ({held}, in \
                 {what}); retry when fewer queries run, or narrow the query",
                Self::SERVER_LIMIT
            ),
            LimitKind::Unscoped => write!(
                f,
                "{what} would build {held}, more than the {limit} one call may build outside a query"
            ),
            LimitKind::GivenUp => write!(f, "the query was given up while {what} still ran"),
        }
    }
}

impl std::error::Error for MemoryExceeded {}

/// A byte count as people read it (`1.5 GiB`, `300 MiB`, `12 KiB`, `17 bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        match self.0 {
            n if n >= 1 << 30 => write!(f, "{:.1} GiB", b / (1u64 << 30) as f64),
            n if n >= 1 << 20 => write!(f, "{:.0} MiB", b / (1u64 << 20) as f64),
            n if n >= 1 << 10 => write!(f, "{:.0} KiB", b / (1u64 << 10) as f64),
            n => write!(f, "{n} bytes"),
        }
    }
}

/// Names what holds a query's memory when the account is exceeded with no function at work
/// (the engine names the largest consumer of its pool).
pub type Namer = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// One query's memory account.
pub struct QueryMemory {
    limit: u64,
    /// Net bytes allocated while the query's threads worked for it, never below zero.
    held: AtomicI64,
    /// Bytes the query's operators reserved from the engine's pool (they were allocated
    /// too, so they are in `held` as well; the larger of the two counts).
    reserved: AtomicI64,
    peak: AtomicU64,
    exceeded: OnceLock<MemoryExceeded>,
    wakers: Mutex<Vec<Waker>>,
    server: Option<Arc<ServerMemory>>,
    namer: OnceLock<Namer>,
}

impl fmt::Debug for QueryMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueryMemory")
            .field("limit", &self.limit)
            .field("held", &self.held())
            .field("peak", &self.peak())
            .field("exceeded", &self.exceeded.get())
            .finish()
    }
}

impl QueryMemory {
    /// An account of `limit` bytes that no server limit covers (tests, tools).
    pub fn standalone(limit: u64) -> Arc<QueryMemory> {
        Arc::new(QueryMemory::new(limit, None))
    }

    fn new(limit: u64, server: Option<Arc<ServerMemory>>) -> QueryMemory {
        QueryMemory {
            limit,
            held: AtomicI64::new(0),
            reserved: AtomicI64::new(0),
            peak: AtomicU64::new(0),
            exceeded: OnceLock::new(),
            wakers: Mutex::new(Vec::new()),
            server,
            namer: OnceLock::new(),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// What the query holds now: the larger of what was metered and what its operators
    /// reserved.
    pub fn held(&self) -> u64 {
        let held = self.held.load(Ordering::Acquire).max(0);
        let reserved = self.reserved.load(Ordering::Acquire).max(0);
        held.max(reserved) as u64
    }

    /// The most the query held at once so far.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire).max(self.held())
    }

    /// Sets what names the holder of the query's memory when nothing more precise is known
    /// (once; later calls are ignored).
    pub fn set_namer(&self, namer: Namer) {
        let _ = self.namer.set(namer);
    }

    /// Why the query was stopped, once it was.
    pub fn exceeded(&self) -> Option<&MemoryExceeded> {
        self.exceeded.get()
    }

    /// Ready with the reason once the account is exceeded.
    pub fn poll_exceeded(&self, cx: &mut Context<'_>) -> Poll<MemoryExceeded> {
        if let Some(exceeded) = self.exceeded.get() {
            return Poll::Ready(exceeded.clone());
        }
        if let Ok(mut wakers) = self.wakers.lock() {
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        // Exceeded between the first look and the registration.
        match self.exceeded.get() {
            Some(exceeded) => Poll::Ready(exceeded.clone()),
            None => Poll::Pending,
        }
    }

    /// Waits until the account is exceeded.
    pub fn wait_exceeded(&self) -> impl Future<Output = MemoryExceeded> + '_ {
        std::future::poll_fn(move |cx| self.poll_exceeded(cx))
    }

    /// Gives the query up: work still running for it (a function's loop, an expansion) stops
    /// at its next check ([`admit`], [`OutputMeter::add`]) instead of running to its end after
    /// the query's answer was already given. A query already stopped keeps its reason.
    pub fn give_up(&self) {
        self.exceed(LimitKind::GivenUp, self.limit, self.held(), false, Some("its work"));
    }

    /// Records the operators' pool reservations growing (or shrinking, negative) by `delta`.
    pub fn note_reserved(&self, delta: i64) {
        let now = self.reserved.fetch_add(delta, Ordering::AcqRel).saturating_add(delta);
        if delta > 0 {
            self.peak.fetch_max(now.max(0) as u64, Ordering::AcqRel);
        }
    }

    /// Hands back `bytes` the query allocated and gave away (result rows a face encodes and
    /// frees): they no longer count.
    pub fn release(&self, bytes: u64) {
        self.charge(-(bytes.min(i64::MAX as u64) as i64), None);
    }

    /// Adds `delta` net bytes (never below zero in all), then checks the limits.
    fn charge(&self, delta: i64, what: Option<&str>) {
        if delta == 0 {
            return;
        }
        let mut applied = 0;
        let _ = self.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            let next = held.saturating_add(delta).max(0);
            applied = next - held;
            Some(next)
        });
        if let Some(server) = &self.server {
            server.total.fetch_add(applied, Ordering::AcqRel);
        }
        if delta < 0 {
            return;
        }
        let held = self.held();
        self.peak.fetch_max(held, Ordering::AcqRel);
        if held > self.limit {
            self.exceed(LimitKind::Query, self.limit, held, false, what);
        } else if let Some(server) = &self.server {
            server.relieve_if_over();
        }
    }

    /// Marks the account exceeded (the first reason stays) and wakes its waiters.
    fn exceed(&self, kind: LimitKind, limit: u64, held: u64, asked: bool, what: Option<&str>) {
        if self.exceeded.get().is_some() {
            return;
        }
        let what = match what.filter(|w| !w.is_empty()) {
            Some(what) => what.to_string(),
            None => self
                .namer
                .get()
                .and_then(|namer| namer())
                .unwrap_or_else(|| "the rows its operators hold".to_string()),
        };
        let _ = self.exceeded.set(MemoryExceeded {
            kind,
            limit,
            held,
            asked,
            what,
        });
        if let Ok(mut wakers) = self.wakers.lock() {
            for waker in wakers.drain(..) {
                waker.wake();
            }
        }
    }
}

impl Drop for QueryMemory {
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server
                .total
                .fetch_sub(self.held.load(Ordering::Acquire).max(0), Ordering::AcqRel);
        }
    }
}

/// The memory all queries of a server may hold at once.
pub struct ServerMemory {
    limit: u64,
    /// Sum of the live accounts' metered bytes.
    total: AtomicI64,
    accounts: Mutex<Vec<Weak<QueryMemory>>>,
}

impl fmt::Debug for ServerMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerMemory")
            .field("limit", &self.limit)
            .field("total", &self.total.load(Ordering::Relaxed))
            .finish()
    }
}

impl ServerMemory {
    pub fn new(limit: u64) -> Arc<ServerMemory> {
        Arc::new(ServerMemory {
            limit,
            total: AtomicI64::new(0),
            accounts: Mutex::new(Vec::new()),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// A new query's account of `limit` bytes, counted against this server's limit too.
    pub fn account(self: &Arc<Self>, limit: u64) -> Arc<QueryMemory> {
        let account = Arc::new(QueryMemory::new(limit, Some(Arc::clone(self))));
        if let Ok(mut accounts) = self.accounts.lock() {
            accounts.retain(|a| a.strong_count() > 0);
            accounts.push(Arc::downgrade(&account));
        }
        account
    }

    /// Bytes all running queries hold now (by their accounts).
    pub fn held(&self) -> u64 {
        self.running().iter().map(|a| a.held()).sum()
    }

    /// The accounts of the queries running now.
    pub fn running(&self) -> Vec<Arc<QueryMemory>> {
        match self.accounts.lock() {
            Ok(accounts) => accounts.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Stops the running queries that hold the most, largest first (each as past `kind`'s
    /// `limit`), until those stopped and not yet gone hold `over_by` bytes; returns the
    /// accounts it stopped. Queries stopped before and still winding down count first, so
    /// memory that is being freed does not stop more queries. Accounts holding less than
    /// [`ServerMemory::SMALLEST_RELIEF`] are left alone: stopping them would not help.
    pub fn relieve(&self, kind: LimitKind, limit: u64, over_by: u64) -> Vec<Arc<QueryMemory>> {
        let mut running = self.running();
        let mut relieving: u64 = running
            .iter()
            .filter(|a| a.exceeded().is_some())
            .map(|a| a.held())
            .sum();
        running.retain(|a| a.exceeded().is_none() && a.held() >= Self::SMALLEST_RELIEF);
        running.sort_by_key(|a| std::cmp::Reverse(a.held()));
        let mut stopped = Vec::new();
        for account in running {
            if relieving >= over_by {
                break;
            }
            let held = account.held();
            relieving = relieving.saturating_add(held);
            account.exceed(kind, limit, held, false, None);
            stopped.push(account);
        }
        stopped
    }

    /// See [`ServerMemory::relieve`].
    pub const SMALLEST_RELIEF: u64 = 4 << 20;

    /// Relieves the server when its accounts together hold more than its limit.
    fn relieve_if_over(&self) {
        let total = self.total.load(Ordering::Acquire).max(0) as u64;
        if total > self.limit {
            self.relieve(LimitKind::Server, self.limit, total - self.limit);
        }
    }
}

/// A thread's entered accounts, innermost last, each with the counters read when it was
/// entered (or when the account inside it was left).
struct Entered {
    account: Arc<QueryMemory>,
    mark: (u64, u64),
}

thread_local! {
    static ENTERED: RefCell<Vec<Entered>> = const { RefCell::new(Vec::new()) };
    /// What the thread builds for the query now (a function's name), for messages.
    static DOING: Cell<&'static str> = const { Cell::new("") };
    /// The builder whose meter checked last on this thread since an account was entered
    /// ([`OutputMeter`]): named when the allocations are charged at the entry's end and that
    /// takes the account past its limit.
    static RECENT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Notes `what` as the builder at work on this thread (no allocation once the name fits).
fn note_recent(what: &str) {
    let _ = RECENT.try_with(|recent| {
        let mut recent = recent.borrow_mut();
        if recent.as_str() != what {
            recent.clear();
            recent.push_str(what);
        }
    });
}

/// The account entered on this thread, if any.
pub fn current() -> Option<Arc<QueryMemory>> {
    ENTERED
        .try_with(|entered| entered.borrow().last().map(|e| Arc::clone(&e.account)))
        .ok()
        .flatten()
}

/// What the thread builds now, for messages (empty: nothing named).
fn doing_now() -> &'static str {
    DOING.try_with(Cell::get).unwrap_or("")
}

/// Changes this thread's stack of entered accounts with `change` (given the counters now),
/// then charges the deltas it returns: outside the borrow, since charging may wake tasks
/// and name holders.
fn with_entered(change: impl FnOnce(&mut Vec<Entered>, (u64, u64)) -> Vec<(Arc<QueryMemory>, i64)>) {
    let now = counters_now();
    let charges = ENTERED
        .try_with(|entered| change(&mut entered.borrow_mut(), now))
        .unwrap_or_default();
    if charges.is_empty() {
        return;
    }
    let doing = doing_now();
    let mut charges = Some(charges);
    if doing.is_empty() {
        // Named by the builder that checked last, borrowed (this runs at every poll's end).
        let _ = RECENT.try_with(|recent| {
            if let (Ok(recent), Some(charges)) = (recent.try_borrow(), charges.take()) {
                for (account, delta) in charges {
                    account.charge(delta, Some(recent.as_str()));
                }
            }
        });
    }
    for (account, delta) in charges.into_iter().flatten() {
        account.charge(delta, Some(doing));
    }
}

/// Works for `account` on this thread until the guard is dropped: what the thread allocates
/// meanwhile, less what it frees, is charged to it.
pub fn enter(account: &Arc<QueryMemory>) -> Entry {
    let account = Arc::clone(account);
    with_entered(move |entered, now| {
        let mut charges = Vec::new();
        if let Some(outer) = entered.last_mut() {
            charges.push((Arc::clone(&outer.account), net(outer.mark, now)));
            outer.mark = now;
        }
        entered.push(Entered { account, mark: now });
        charges
    });
    let _ = RECENT.try_with(|recent| recent.borrow_mut().clear());
    Entry {
        _thread_bound: std::marker::PhantomData,
    }
}

/// Leaves the innermost account (charging it) and resumes the one outside it, if any;
/// returns the account left.
fn leave(entered: &mut Vec<Entered>, now: (u64, u64), charges: &mut Vec<(Arc<QueryMemory>, i64)>) -> Option<Arc<QueryMemory>> {
    let left = entered.pop()?;
    charges.push((Arc::clone(&left.account), net(left.mark, now)));
    if let Some(outer) = entered.last_mut() {
        outer.mark = now;
    }
    Some(left.account)
}

/// Suspends the account entered on this thread until the guard is dropped: what the thread
/// allocates meanwhile (entries of caches shared by all queries) is charged to no query.
pub fn suspend() -> Suspension {
    let mut suspended = None;
    with_entered(|entered, now| {
        let mut charges = Vec::new();
        suspended = leave(entered, now, &mut charges);
        if let Some(outer) = entered.last_mut() {
            // The outer account resumes only when the suspension ends.
            outer.mark = now;
        }
        charges
    });
    Suspension {
        account: suspended,
        _thread_bound: std::marker::PhantomData,
    }
}

/// See [`enter`]. Not `Send`: it leaves the account on the thread that entered it.
#[must_use]
pub struct Entry {
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        with_entered(|entered, now| {
            let mut charges = Vec::new();
            leave(entered, now, &mut charges);
            charges
        });
    }
}

/// See [`suspend`].
#[must_use]
pub struct Suspension {
    account: Option<Arc<QueryMemory>>,
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl Drop for Suspension {
    fn drop(&mut self) {
        let Some(account) = self.account.take() else {
            return;
        };
        with_entered(move |entered, now| {
            let mut charges = Vec::new();
            if let Some(outer) = entered.last_mut() {
                charges.push((Arc::clone(&outer.account), net(outer.mark, now)));
            }
            entered.push(Entered { account, mark: now });
            charges
        });
    }
}

/// Runs `work` with `account` entered, if any.
pub fn within<R>(account: Option<&Arc<QueryMemory>>, work: impl FnOnce() -> R) -> R {
    let _entry = account.map(enter);
    work()
}

/// Charges what this thread allocated since the account was entered (or last charged), with
/// `what` named if that takes it past its limit; the account entered, if any.
fn flush(what: &str) -> Option<Arc<QueryMemory>> {
    let now = counters_now();
    let (account, delta) = ENTERED
        .try_with(|entered| {
            let mut entered = entered.borrow_mut();
            let top = entered.last_mut()?;
            let delta = net(top.mark, now);
            top.mark = now;
            Some((Arc::clone(&top.account), delta))
        })
        .ok()
        .flatten()?;
    account.charge(delta, Some(what));
    Some(account)
}

/// Asks whether the query working on this thread may build `bytes` more (`what` names the
/// builder in the error): refused once the query was stopped, or when it would go past its
/// limit (which stops it). Outside any query, one call may build [`UNSCOPED_LIMIT`].
pub fn admit(bytes: u64, what: &str) -> Result<(), MemoryExceeded> {
    let Some(account) = flush(what) else {
        if bytes > UNSCOPED_LIMIT {
            return Err(MemoryExceeded {
                kind: LimitKind::Unscoped,
                limit: UNSCOPED_LIMIT,
                held: bytes,
                asked: true,
                what: what.to_string(),
            });
        }
        return Ok(());
    };
    if let Some(exceeded) = account.exceeded() {
        return Err(exceeded.clone());
    }
    let wanted = account.held().saturating_add(bytes);
    if wanted > account.limit {
        // Refused before it was built: `wanted` was never held.
        let asked = bytes > 0;
        account.exceed(LimitKind::Query, account.limit, wanted, asked, Some(what));
        return Err(account.exceeded().cloned().unwrap_or(MemoryExceeded {
            kind: LimitKind::Query,
            limit: account.limit,
            held: wanted,
            asked,
            what: what.to_string(),
        }));
    }
    Ok(())
}

/// Whether the query working on this thread was stopped; its reason.
pub fn stopped() -> Option<MemoryExceeded> {
    current().and_then(|account| account.exceeded().cloned())
}

/// Runs `work` as `what` (a function's name): an account exceeded meanwhile names it.
pub fn doing<R>(what: &'static str, work: impl FnOnce() -> R) -> R {
    let before = DOING.try_with(|doing| doing.replace(what)).unwrap_or("");
    let result = work();
    flush(what);
    let _ = DOING.try_with(|doing| doing.set(before));
    result
}

/// Counts the bytes a loop builds and asks [`admit`] every [`OutputMeter::STEP`] bytes, so a
/// call that builds too much stops near the limit instead of far past it; and every
/// [`OutputMeter::CALLS`] calls, so a loop that builds little but long stops soon after its
/// query was given up.
#[derive(Debug)]
pub struct OutputMeter {
    what: String,
    built: u64,
    next_check: u64,
    calls: u32,
}

impl OutputMeter {
    /// Bytes built between two checks.
    pub const STEP: u64 = 4 << 20;
    /// Calls of [`OutputMeter::add`] between two checks.
    pub const CALLS: u32 = 1024;

    pub fn new(what: impl Into<String>) -> OutputMeter {
        OutputMeter {
            what: what.into(),
            built: 0,
            next_check: Self::STEP,
            calls: 0,
        }
    }

    /// Counts `bytes` more; an error once the query may not hold what was built, or was
    /// given up.
    pub fn add(&mut self, bytes: usize) -> Result<(), MemoryExceeded> {
        self.built = self.built.saturating_add(bytes as u64);
        self.calls = self.calls.wrapping_add(1);
        if self.built < self.next_check && self.calls % Self::CALLS != 0 {
            return Ok(());
        }
        if self.built >= self.next_check {
            self.next_check = self.built.saturating_add(Self::STEP);
        }
        note_recent(&self.what);
        admit(self.unmetered(0), &self.what)
    }

    /// Asks up front for `bytes` the call is about to build at once.
    pub fn reserve(&mut self, bytes: usize) -> Result<(), MemoryExceeded> {
        admit(self.unmetered(bytes as u64), &self.what)
    }

    /// What to ask for besides `more`: where allocations are metered, what was built is
    /// already charged to the account; elsewhere only this meter knows it.
    fn unmetered(&self, more: u64) -> u64 {
        if metered() { more } else { self.built.saturating_add(more) }
    }

    pub fn built(&self) -> u64 {
        self.built
    }
}

/// A future that works for a query's account whenever it is polled (see [`enter`]).
pub struct Scoped<'a, T> {
    account: Arc<QueryMemory>,
    inner: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
}

impl<'a, T> Scoped<'a, T> {
    pub fn new(account: Arc<QueryMemory>, inner: impl Future<Output = T> + Send + 'a) -> Scoped<'a, T> {
        Scoped {
            account,
            inner: Box::pin(inner),
        }
    }
}

impl<T> Future for Scoped<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = &mut *self;
        let _entry = enter(&this.account);
        this.inner.as_mut().poll(cx)
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
