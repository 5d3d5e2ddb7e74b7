//! A query run as a stream of events: admission under the concurrency limit, planning,
//! then each result table's schema and row batches, with progress reports at a steady pace
//! and a deadline. Dropping the [`QueryEvents`] stops the query (its scans are cancelled).
//!
//! Faces turn the events into their protocol: gRPC frames, v2 progressive frames, or one
//! collected [`QueryOutput`] ([`Engine::execute`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::execute_stream;
use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use trawl_common::memory::QueryMemory;
use trawl_common::metrics::{METRICS, label, labels, seconds_since};
use trawl_common::{ErrorCode, TrawlError};
use trawl_planner::QueryWarning;
use trawl_storage::ScanCounters;

use crate::events::{PartialFailure, QueryEvent, QueryEvents, RunOptions};
use crate::progress::{Progress, Tracker};
use crate::{Engine, Physical, QueryOutput, QueryRequest, ResultTable, execution_error};

mod sent;
use sent::{HELD_RESULT_BYTES, SentRows};

/// The concurrent-query limit: `slots` queries run, up to `max_waiting` more wait in line.
#[derive(Debug)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_waiting: usize,
}

impl Admission {
    pub(crate) fn new(slots: usize, max_waiting: usize) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            waiting: AtomicUsize::new(0),
            max_waiting,
        }
    }

    /// A slot now, or `None` when the query must wait.
    fn try_admit(&self) -> Option<OwnedSemaphorePermit> {
        self.slots.clone().try_acquire_owned().ok()
    }

    /// Waits in line for a slot.
    async fn admit(&self) -> Result<OwnedSemaphorePermit, TrawlError> {
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(TrawlError::unavailable(format!(
                "too many queries are running and {} are waiting; try again shortly",
                self.max_waiting
            )));
        }
        let permit = self.slots.clone().acquire_owned().await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        permit.map_err(|_| TrawlError::unavailable("the query service is shutting down"))
    }

    /// Queries waiting for a slot now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

/// Events a run could not deliver: the receiver is gone.
struct Gone;

/// Sends events of one run, with progress at the set pace.
struct Run {
    sender: mpsc::Sender<QueryEvent>,
    tracker: Tracker,
    ticker: Option<tokio::time::Interval>,
    snapshots: bool,
    /// See [`RunOptions::fanout_nodes_percent`].
    fanout: Option<u8>,
    /// The memory budgets the query's summarizes asked for (`hint.budget`).
    budgets: Vec<trawl_planner::SummarizeBudget>,
    /// Whether a plan of the query ran spread over the query nodes.
    distributed: bool,
    /// Who asks (`current_principal()`).
    principal: String,
    /// The query's memory account.
    memory: Arc<QueryMemory>,
}

impl Run {
    async fn send(&self, event: QueryEvent) -> Result<(), Gone> {
        self.sender.send(event).await.map_err(|_| Gone)
    }

    /// Sends rows of the table last started: the face encodes and frees them, so they leave
    /// the query's account.
    async fn send_rows(&self, batch: RecordBatch) -> Result<(), Gone> {
        self.memory.release(batch.get_array_memory_size() as u64);
        self.send(QueryEvent::Rows(batch)).await
    }

    /// Sends the segments left out since the last call, grouped by reason.
    async fn report_unreadable(&self) -> Result<(), Gone> {
        let unreadable = self.tracker.counters().take_unreadable();
        for failure in PartialFailure::grouped(unreadable) {
            self.send(QueryEvent::PartialFailure(failure)).await?;
        }
        Ok(())
    }

    async fn progress(&self, finished: bool) -> Result<(), Gone> {
        if self.ticker.is_some() {
            self.send(QueryEvent::Progress(Box::new(self.tracker.snapshot(finished))))
                .await?;
        }
        Ok(())
    }

    /// Awaits `work`, reporting progress meanwhile; stops when the query's memory account
    /// is exceeded (the work may be stuck in one long step: dropping it stops its tasks).
    async fn ticking<T>(&mut self, work: impl Future<Output = T>) -> Result<T, Stop> {
        let mut work = std::pin::pin!(work);
        let memory = Arc::clone(&self.memory);
        loop {
            let tick = async {
                match &mut self.ticker {
                    Some(ticker) => ticker.tick().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                exceeded = memory.wait_exceeded() => {
                    return Err(Stop::Failed(crate::memory::memory_error(&exceeded)));
                }
                // The tick first: a scan that always has rows ready must still report.
                _ = tick => self.progress(false).await?,
                output = &mut work => return Ok(output),
            }
        }
    }

    /// The error `error` stands for: the memory account's reason when it was exceeded (an
    /// operator's or function's refusal says less), else the execution error.
    fn failure(&self, error: datafusion::error::DataFusionError) -> TrawlError {
        match self.memory.exceeded() {
            Some(exceeded) => crate::memory::memory_error(exceeded),
            None => execution_error(error),
        }
    }
}

/// Why a run stopped early.
enum Stop {
    Gone,
    Failed(TrawlError),
}

impl From<Gone> for Stop {
    fn from(_: Gone) -> Self {
        Stop::Gone
    }
}

impl From<TrawlError> for Stop {
    fn from(error: TrawlError) -> Self {
        Stop::Failed(error)
    }
}

/// Ends a run's journal entry when dropped.
struct JournalGuard {
    journal: Arc<crate::journal::QueryJournal>,
    key: u64,
    state: crate::journal::RunState,
    failure: String,
}

impl Drop for JournalGuard {
    fn drop(&mut self) {
        self.journal.end(
            self.key,
            self.state,
            std::mem::take(&mut self.failure),
            trawl_common::time::now_nanos(),
        );
    }
}

impl Engine {
    /// Counts `physical` into the run's progress from now on; for a distributed plan (its
    /// scans count what they read under `query`) when someone watches the progress, asks the
    /// nodes what they read until the returned watch is dropped.
    fn start_tracking(
        &self,
        run: &mut Run,
        physical: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        query: Option<&str>,
    ) -> Option<crate::distributed::Watch> {
        let watch = match (&run.ticker, query, &self.distribution) {
            (Some(_), Some(query), Some(distribution)) => distribution.watch(query),
            _ => None,
        };
        run.tracker
            .running(Arc::clone(physical), watch.as_ref().map(|w| w.totals()));
        watch
    }

    /// Starts `request`; its events arrive on the returned stream.
    pub fn run(&self, request: QueryRequest, options: RunOptions) -> QueryEvents {
        let (sender, receiver) = mpsc::channel(4);
        let engine = self.clone();
        let limit = options
            .timeout
            .unwrap_or(self.config.default_timeout)
            .min(self.config.max_timeout);
        let journal_key = self.journal.start(crate::journal::JournalEntry {
            id: uuid::Uuid::new_v4().to_string(),
            client_request_id: options.client_request_id.clone(),
            text: request.text.clone(),
            database: request.database.clone(),
            principal: options.principal.clone(),
            face: if options.face.is_empty() { "http" } else { options.face },
            started: trawl_common::time::now_nanos(),
            last_updated: trawl_common::time::now_nanos(),
            state: crate::journal::RunState::InProgress,
            failure: String::new(),
        });
        // Ends the journal's entry however the run ends (a dropped task counts as cancelled).
        let ended = JournalGuard {
            journal: Arc::clone(&self.journal),
            key: journal_key,
            state: crate::journal::RunState::Cancelled,
            failure: String::new(),
        };
        let account = self
            .server_memory
            .account(self.config.query_memory_limit_bytes as u64);
        let work = async move {
            // However the run ends, work still running for it stops at its next check.
            let _give_up = GiveUp(Arc::clone(&account));
            let mut ended = ended;
            let arrived = Instant::now();
            let deadline = tokio::time::sleep(limit);
            // Work that holds a thread past the deadline stops at its next check.
            let _watched = crate::deadlines::give_up_at(arrived + limit, &account);
            let memory_use = Arc::new(crate::memory::MemoryUse::for_account(Arc::clone(&account)));
            account.set_namer(memory_use.namer());
            let mut run = Run {
                sender: sender.clone(),
                tracker: Tracker::with_memory(Arc::new(ScanCounters::default()), arrived, memory_use),
                ticker: options.progress_every.map(|every| {
                    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    ticker
                }),
                snapshots: options.snapshots,
                fanout: options.fanout_nodes_percent,
                budgets: Vec::new(),
                distributed: false,
                principal: options.principal.clone(),
                memory: Arc::clone(&account),
            };
            // Everything the run does works for the query's account (tasks its plans spawn
            // too: `memory::trace_spawned_tasks`).
            let running = trawl_common::memory::Scoped::new(Arc::clone(&account), engine.run_events(&request, &mut run));
            let outcome = tokio::select! {
                biased;
                _ = sender.closed() => return,
                // A limit of zero stops the query before it starts (the timer would only fire
                // at its next tick).
                _ = std::future::ready(()), if limit.is_zero() => Err(Stop::Failed(timeout(limit))),
                _ = deadline => Err(Stop::Failed(timeout(limit))),
                // Given up by the deadline thread while a function held the thread: the
                // function's error is the timeout.
                outcome = running => match outcome {
                    Err(Stop::Failed(_))
                        if account
                            .exceeded()
                            .is_some_and(|e| e.kind == trawl_common::memory::LimitKind::GivenUp) =>
                    {
                        Err(Stop::Failed(timeout(limit)))
                    }
                    other => other,
                },
            };
            record_metrics(&options, &outcome, &run.tracker.snapshot(true), arrived);
            (ended.state, ended.failure) = match &outcome {
                Ok(()) => (crate::journal::RunState::Completed, String::new()),
                Err(Stop::Failed(error)) => (crate::journal::RunState::Failed, error.message.clone()),
                Err(Stop::Gone) => (crate::journal::RunState::Cancelled, String::new()),
            };
            let last = match outcome {
                Ok(()) => QueryEvent::Finished,
                Err(Stop::Failed(error)) => QueryEvent::Failed(error),
                Err(Stop::Gone) => return,
            };
            let _ = sender.send(last).await;
        };
        match &self.query_threads {
            Some(threads) => drop(threads.spawn(work)),
            None => drop(tokio::spawn(work)),
        }
        QueryEvents::new(receiver)
    }

    async fn run_events(&self, request: &QueryRequest, run: &mut Run) -> Result<(), Stop> {
        let _permit = match self.admission.try_admit() {
            Some(permit) => permit,
            None => {
                run.tracker.queued();
                let _queued = GaugeHeld::new(&METRICS.query_queued);
                run.progress(false).await?;
                let permit = run.ticking(self.admission.admit()).await??;
                run.tracker.admitted();
                permit
            }
        };
        let _running = GaugeHeld::new(&METRICS.query_running);
        let counters = run.tracker.counters();
        run.progress(false).await?;
        let prepared = run.ticking(self.prepare(request)).await??;
        let planned = run
            .ticking(self.plan(request, &run.principal.clone(), &prepared, &counters))
            .await??;
        run.tracker.time_bin = planned.time_bin;
        run.budgets = planned.summarize_budgets.clone();
        // Warnings aggregates raise while running; whatever is left when the run ends (an
        // error, a cancel) is dropped with the guard.
        let runtime_warnings = RuntimeWarnings(planned.runtime_warning_key);
        run.send(QueryEvent::Planned {
            warnings: planned.warnings,
            visualization: planned.visualization,
        })
        .await?;
        if let [only] = planned.results.as_slice()
            && only.name.is_none()
            && let Some(sliced) = &prepared.sliced
            // Time bins gain nothing from slices unless someone watches the snapshots.
            && (run.snapshots || matches!(sliced.mode, crate::slices::SliceMode::Newest { .. }))
            && let Some((lo, hi)) = self.time_extent(request, &sliced.table).await?
        {
            self.run_sliced(run, only, sliced, (lo, hi)).await?;
            for warning in runtime_warnings.take() {
                run.send(QueryEvent::Warning(warning)).await?;
            }
            run.progress(true).await?;
            return Ok(());
        }
        for (index, result) in planned.results.into_iter().enumerate() {
            let name = match (&result.name, index) {
                (Some(name), _) => name.clone(),
                (None, 0) => "PrimaryResult".to_string(),
                (None, _) => format!("ExtraTable_{}", index - 1),
            };
            run.send(QueryEvent::TableStarted {
                name: name.clone(),
                columns: result.columns,
            })
            .await?;
            let mut plan = result.plan.clone();
            let mut advised = false;
            let mut bits = 0u32;
            let mut budget_hit = None;
            let mut lost_nodes = 0;
            let rows = loop {
                run.tracker.planning = true;
                let Physical {
                    plan: physical,
                    task,
                    placement,
                    query,
                    unbounded,
                } = run
                    .ticking(self.physical_plan(plan.clone(), run.fanout, run.budgets.clone(), run.tracker.memory()))
                    .await??;
                if !advised {
                    advised = true;
                    for table in &unbounded {
                        if self.config.require_time_filter {
                            return Err(Stop::Failed(crate::time_filter::refusal(table)));
                        }
                        run.send(QueryEvent::Warning(crate::time_filter::warning(table)))
                            .await?;
                    }
                }
                run.distributed |= placement.is_distributed();
                run.tracker.planning = false;
                run.report_unreadable().await?;
                let _watch = self.start_tracking(run, &physical, query.as_deref());
                let mut stream = execute_stream(physical.clone(), task).map_err(|e| run.failure(e))?;
                let held = if placement.is_distributed() {
                    HELD_RESULT_BYTES
                } else {
                    0
                };
                let mut sent =
                    SentRows::new(&name, self.config.max_result_rows, self.config.max_result_bytes).holding(held);
                let mut failed = None;
                let mut exhausted = true;
                while let Some(batch) = run.ticking(stream.next()).await? {
                    match batch {
                        Ok(batch) => {
                            if !sent.send(run, batch).await? {
                                exhausted = false;
                                break;
                            }
                        }
                        Err(error) => {
                            failed = Some(error);
                            break;
                        }
                    }
                }
                drop(stream);
                if placement.is_distributed() && failed.is_none() && exhausted {
                    // The workers' metrics (rows and bytes read) arrive when their tasks end;
                    // tasks stopped early (a full result) send none, and the live totals
                    // (`LiveScans`) stand for them.
                    run.tracker
                        .replace_last(crate::distributed::with_worker_metrics(&physical).await);
                }
                tracing::debug!(
                    target: "trawl_engine::plan",
                    result = %name,
                    plan = %DisplayableExecutionPlan::with_metrics(physical.as_ref()).indent(true),
                    "executed plan with metrics"
                );
                let Some(error) = failed else {
                    sent.release(run).await?;
                    break sent.rows;
                };
                // A node the plan was spread over is gone: before any row went out, the query
                // runs again without it (nodes that do not answer are left out for a while).
                if placement.is_distributed()
                    && !sent.delivered
                    && lost_nodes < MAX_LOST_NODE_RETRIES
                    && let Some(distribution) = &self.distribution
                    && distribution.lost_a_node(&error).await
                {
                    lost_nodes += 1;
                    tracing::warn!(attempt = lost_nodes, %error, "a distributed query lost a query node before any row went out: it runs again");
                    // A node being restarted is given a moment to listen again.
                    run.ticking(tokio::time::sleep(LOST_NODE_PAUSE * lost_nodes)).await?;
                    continue;
                }
                // A summarize over its memory budget (its budgeted aggregate says so), before
                // any row went out: the same plan again keeping half as many groups (budget.rs).
                let tripped_at = crate::budget::tripped(&physical).or_else(|| {
                    (placement.is_distributed() && crate::budget::tripped_on_worker(&error)).then(|| {
                        run.budgets
                            .iter()
                            .map(|hint| hint.bytes)
                            .fold(self.config.summarize_memory_limit_bytes, usize::min)
                    })
                });
                let tripped = tripped_at.is_some();
                budget_hit = budget_hit.or(tripped_at);
                let thinner = if !sent.delivered && bits < crate::budget::MAX_FRACTION_BITS && tripped {
                    trawl_planner::budget::keep_groups(&result.plan, bits + 1).map_err(execution_error)?
                } else {
                    None
                };
                match thinner {
                    Some(thinner) => {
                        bits += 1;
                        plan = thinner;
                    }
                    None if tripped => {
                        return Err(Stop::Failed(crate::budget::too_large(&error)));
                    }
                    None if placement.is_distributed() => {
                        tracing::warn!(rows_went_out = sent.delivered, runs = lost_nodes + 1, %error, "a distributed query failed");
                        return Err(Stop::Failed(crate::distributed::distributed_error(error)));
                    }
                    None => return Err(Stop::Failed(run.failure(error))),
                }
            };
            if bits > 0 {
                run.send(QueryEvent::Warning(crate::budget::warning(
                    bits,
                    budget_hit.unwrap_or(self.config.summarize_memory_limit_bytes),
                )))
                .await?;
            }
            run.send(QueryEvent::TableFinished { rows }).await?;
            for warning in runtime_warnings.take() {
                run.send(QueryEvent::Warning(warning)).await?;
            }
        }
        run.progress(true).await?;
        Ok(())
    }

    /// Parses, plans and runs `request` within the engine's default time limit, and gathers
    /// its result tables.
    pub async fn execute(&self, request: &QueryRequest) -> Result<QueryOutput, TrawlError> {
        self.execute_within(request, None, "http").await
    }

    /// As [`Engine::execute`], within `timeout` when the client asked for one (cut to the
    /// engine's `max_timeout`).
    pub async fn execute_within(
        &self,
        request: &QueryRequest,
        timeout: Option<Duration>,
        face: &'static str,
    ) -> Result<QueryOutput, TrawlError> {
        let options = RunOptions {
            timeout,
            face,
            ..RunOptions::default()
        };
        self.execute_with(request, options).await
    }

    /// As [`Engine::execute`], run with `options` (their progress and snapshots are not
    /// gathered).
    pub async fn execute_with(&self, request: &QueryRequest, options: RunOptions) -> Result<QueryOutput, TrawlError> {
        let mut events = self.run(request.clone(), options);
        let mut output = QueryOutput {
            tables: Vec::new(),
            warnings: Vec::new(),
            visualization: None,
        };
        while let Some(event) = events.next_event().await {
            match event {
                QueryEvent::Planned {
                    warnings,
                    visualization,
                } => {
                    output.warnings = warnings;
                    output.visualization = visualization;
                }
                QueryEvent::TableStarted { name, columns } => output.tables.push(ResultTable {
                    name,
                    columns,
                    batches: Vec::new(),
                }),
                QueryEvent::Rows(batch) => {
                    if let Some(table) = output.tables.last_mut() {
                        table.batches.push(batch);
                    }
                }
                QueryEvent::Warning(warning) => output.warnings.push(warning),
                QueryEvent::PartialFailure(failure) => output.warnings.push(failure.warning()),
                QueryEvent::Failed(error) => return Err(error),
                QueryEvent::Progress(_)
                | QueryEvent::Snapshot(_)
                | QueryEvent::TableFinished { .. }
                | QueryEvent::Finished => {}
            }
        }
        Ok(output)
    }

    /// Queries waiting for a slot under the concurrency limit.
    pub fn queries_waiting(&self) -> usize {
        self.admission.waiting()
    }
}

/// A gauge raised while this value lives.
struct GaugeHeld(&'static prometheus_client::metrics::gauge::Gauge);

impl GaugeHeld {
    fn new(gauge: &'static prometheus_client::metrics::gauge::Gauge) -> GaugeHeld {
        gauge.inc();
        GaugeHeld(gauge)
    }
}

impl Drop for GaugeHeld {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Adds a finished (or stopped) run to the process's query metrics.
fn record_metrics(options: &RunOptions, outcome: &Result<(), Stop>, progress: &Progress, arrived: Instant) {
    let face = if options.face.is_empty() { "http" } else { options.face };
    let outcome = match outcome {
        Ok(()) => "ok",
        Err(Stop::Gone) => "cancelled",
        Err(Stop::Failed(error)) => error.code.as_str(),
    };
    METRICS
        .query_seconds
        .get_or_create(&label("face", face))
        .observe(seconds_since(arrived));
    METRICS
        .queries
        .get_or_create(&labels(("face", face), ("outcome", outcome)))
        .inc();
    // Scans of distributed plans counted what they read where they ran.
    METRICS
        .query_scanned_rows
        .inc_by(progress.rows_processed.saturating_sub(progress.counted_rows));
    METRICS.query_scanned_bytes.inc_by(
        progress
            .chunk_scanned_compressed_size
            .saturating_sub(progress.counted_bytes),
    );
    for (reason, chunks) in [
        ("range", progress.chunks_skipped_range),
        ("bloom", progress.chunks_skipped_bloom),
        ("required_fields", progress.chunks_skipped_required_fields),
    ] {
        if chunks > 0 {
            METRICS
                .query_chunks_skipped
                .get_or_create(&label("reason", reason))
                .inc_by(chunks);
        }
    }
}

/// Gives the query's account up when its run ends ([`QueryMemory::give_up`]).
struct GiveUp(Arc<QueryMemory>);

impl Drop for GiveUp {
    fn drop(&mut self) {
        self.0.give_up();
    }
}

fn timeout(limit: Duration) -> TrawlError {
    TrawlError::new(
        ErrorCode::Timeout,
        format!("the query ran longer than its {:.1} s limit", limit.as_secs_f64()),
    )
}

/// The key of a query's runtime warnings (see `trawl_functions::otel::warn`); drops what is
/// left when the run ends.
struct RuntimeWarnings(Option<i64>);

impl RuntimeWarnings {
    fn take(&self) -> Vec<QueryWarning> {
        let Some(key) = self.0 else {
            return Vec::new();
        };
        trawl_functions::otel::take_warnings(key)
            .into_iter()
            .map(|(kind, message)| QueryWarning {
                kind,
                message,
                location: None,
            })
            .collect()
    }
}

impl Drop for RuntimeWarnings {
    fn drop(&mut self) {
        if let Some(key) = self.0 {
            trawl_functions::otel::take_warnings(key);
        }
    }
}

impl Engine {
    /// The time range `request` reads of `table`: its segments' times within the query window,
    /// as `[lo, hi)`; none when the table has no segments (or is not a table).
    async fn time_extent(&self, request: &QueryRequest, table: &str) -> Result<Option<(i64, i64)>, TrawlError> {
        let segments = self.catalog.live_segments(&request.database, table, None).await?;
        let lo = segments.iter().map(|s| s.min_time).min();
        let hi = segments.iter().map(|s| s.max_time).max();
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(None);
        };
        let lo = request.window.since.map_or(lo, |since| since.max(lo));
        let hi = request
            .window
            .until
            .map_or(hi.saturating_add(1), |until| until.min(hi.saturating_add(1)));
        Ok((lo < hi).then_some((lo, hi)))
    }

    /// Runs a time-sliced query (see `slices.rs`): slices newest first, each the one plan
    /// narrowed to its time, a snapshot after each one that is not the last, then the final
    /// rows.
    async fn run_sliced(
        &self,
        run: &mut Run,
        result: &trawl_planner::PlannedResult,
        sliced: &crate::slices::Sliced,
        (lo, hi): (i64, i64),
    ) -> Result<(), Stop> {
        let name = "PrimaryResult";
        run.send(QueryEvent::TableStarted {
            name: name.to_string(),
            columns: result.columns.clone(),
        })
        .await?;
        let newest = match sliced.mode {
            crate::slices::SliceMode::Newest { n } => Some(n),
            crate::slices::SliceMode::Bins { .. } => None,
        };
        let slices = crate::slices::slices(sliced.mode, lo, hi);
        let mut gathered: Vec<RecordBatch> = Vec::new();
        let mut rows = 0usize;
        let mut gathered_bytes = 0usize;
        for (index, (slice_lo, slice_hi)) in slices.iter().enumerate() {
            let plan =
                crate::slices::narrow(&result.plan, &sliced.table, *slice_lo, *slice_hi).map_err(execution_error)?;
            run.tracker.planning = true;
            // Slices are bounded in time: no table is read whole.
            let Physical {
                plan: physical,
                task,
                placement,
                query,
                unbounded: _,
            } = run
                .ticking(self.physical_plan(plan, run.fanout, run.budgets.clone(), run.tracker.memory()))
                .await??;
            run.distributed |= placement.is_distributed();
            run.tracker.planning = false;
            run.report_unreadable().await?;
            let _watch = self.start_tracking(run, &physical, query.as_deref());
            let mut stream = execute_stream(physical.clone(), task).map_err(|e| run.failure(e))?;
            let mut exhausted = true;
            while let Some(batch) = run.ticking(stream.next()).await? {
                let batch = batch.map_err(|e| run.failure(e))?;
                rows += batch.num_rows();
                gathered_bytes += sent::payload_bytes(&batch);
                if batch.num_rows() > 0 {
                    gathered.push(batch);
                }
                if newest.is_some_and(|n| rows >= n)
                    || rows > self.config.max_result_rows
                    || gathered_bytes > self.config.max_result_bytes
                {
                    exhausted = false;
                    break;
                }
            }
            drop(stream);
            // (Tasks stopped early send no metrics: see `run_events`.)
            if placement.is_distributed() && exhausted {
                run.tracker
                    .replace_last(crate::distributed::with_worker_metrics(&physical).await);
            }
            let complete = newest.is_some_and(|n| rows >= n)
                || rows > self.config.max_result_rows
                || gathered_bytes > self.config.max_result_bytes;
            if complete || index + 1 == slices.len() {
                break;
            }
            if run.snapshots && rows > 0 {
                run.send(QueryEvent::Snapshot(first_rows(&gathered, newest))).await?;
            }
        }
        let mut sent = SentRows::new(name, self.config.max_result_rows, self.config.max_result_bytes);
        for batch in first_rows(&gathered, newest) {
            if !sent.send(run, batch).await? {
                break;
            }
        }
        run.send(QueryEvent::TableFinished { rows: sent.rows }).await?;
        Ok(())
    }
}

/// Times a query runs again after a node it was spread over could not be reached.
const MAX_LOST_NODE_RETRIES: u32 = 3;
/// The pause before a query runs again after it lost a node, times the runs so far.
const LOST_NODE_PAUSE: Duration = Duration::from_millis(250);

/// The first `n` rows of `batches` (all without `n`).
fn first_rows(batches: &[RecordBatch], n: Option<usize>) -> Vec<RecordBatch> {
    let mut out = Vec::with_capacity(batches.len());
    let mut left = n.unwrap_or(usize::MAX);
    for batch in batches {
        if left == 0 {
            break;
        }
        let take = batch.num_rows().min(left);
        out.push(batch.slice(0, take));
        left -= take;
    }
    out
}
