//! The query engine: one DataFusion session with a bounded, spilling memory pool, the
//! catalog-backed table lookup, execution of planned KQL, result truncation, and the
//! encoding of Arrow cells as KQL prints them.
//!
//! Main types: [`Engine`] (runs a query), [`QueryOutput`] / [`ResultTable`] (what faces
//! encode), [`cells`] (cell encoding); request `since`/`until` windows are `trawl_common::window`.
//!
//! Must not know HTTP or gRPC.

mod abandon;
mod budget;
pub mod cells;
mod coop;
mod deadlines;
mod distributed;
mod events;
mod execution_error;
mod explain;
pub mod journal;
mod memory;
mod prepared;
pub mod progress;
mod run;
mod slices;
mod time_filter;
mod warm;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use prepared::Prepared;
use trawl_catalog::Catalog;
use trawl_common::{ErrorCode, KqlType, TrawlError};
pub use trawl_planner::Visualization;
use trawl_planner::{PlanOptions, TableLookup};
use trawl_storage::schema::table_schema;
use trawl_storage::{ScanCounters, SegmentStore, TrawlTable};

pub use datafusion_distributed::ChannelResolver;
pub use distributed::{ClusterSettings, Placement, ScanProbe, Workers, scanned_here};
pub use events::{PartialFailure, QueryEvent, QueryEvents, RunOptions};
pub(crate) use execution_error::execution_error;
pub use progress::{BinProgress, OperatorDiagnostics, PlanningProgress, Progress};
pub use trawl_common::window::{QueryWindow, resolve_window, resolve_window_now};
pub use trawl_planner::QueryWarning;
pub use trawl_storage::ScanTotals;

/// DataFusion optimizer rules the engine leaves out (see `Engine::new`).
const DISABLED_OPTIMIZER_RULES: &[&str] = &["extract_leaf_expressions", "push_down_leaf_projections"];

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Memory all running queries may hold at once; past it the query that holds the most is
    /// stopped. Operators that can spill start spilling at three quarters of it.
    pub memory_limit_bytes: usize,
    /// Memory one query may hold (within `memory_limit_bytes`): every allocation it drives
    /// counts; past it the query fails alone. Its operators that can spill start spilling at
    /// three quarters of it (see `memory.rs`).
    pub query_memory_limit_bytes: usize,
    /// Live heap bytes of the whole process past which the query holding the most is stopped
    /// (none: not watched). A last guard for memory no account saw.
    pub heap_limit_bytes: Option<u64>,
    /// Where spilled data goes.
    pub spill_dir: Option<PathBuf>,
    /// Bytes all queries' spill files may take on disk; past it the spilling query fails.
    pub spill_limit_bytes: u64,
    /// Rows returned per result table before the result is truncated with a warning.
    pub max_result_rows: usize,
    /// Bytes of cell data returned per result table before it is truncated with a warning.
    pub max_result_bytes: usize,
    /// Scan and execution parallelism.
    pub target_partitions: usize,
    /// Queries that run at once; more wait in line.
    pub max_concurrent_queries: usize,
    /// Queries that may wait for a slot; more are refused as unavailable.
    pub max_queued_queries: usize,
    /// Memory one grouping `summarize` of a query may hold; past it whole groups are dropped
    /// with a `SummarizeMemoryLimit` warning (see `budget.rs`).
    pub summarize_memory_limit_bytes: usize,
    /// How long a query may run when its client asks for no limit of its own.
    pub default_timeout: std::time::Duration,
    /// The longest limit a client may ask for; longer requests are cut to it.
    pub max_timeout: std::time::Duration,
    /// A query that reads at least this many bytes of a table with no bound on `timestamp`
    /// gets a `MissingTimeFilter` warning (none: never); see `time_filter.rs`.
    pub time_filter_advice_bytes: Option<u64>,
    /// Refuse the queries that would get a `MissingTimeFilter` warning.
    pub require_time_filter: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            memory_limit_bytes: 2 << 30,
            query_memory_limit_bytes: 1 << 30,
            spill_dir: None,
            spill_limit_bytes: 16 << 30,
            max_result_rows: 500_000,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            heap_limit_bytes: None,
            target_partitions: std::thread::available_parallelism().map_or(2, |n| n.get()),
            max_concurrent_queries: default_concurrent_queries(),
            max_queued_queries: 1_000,
            summarize_memory_limit_bytes: 512 << 20,
            default_timeout: DEFAULT_QUERY_TIMEOUT,
            max_timeout: MAX_QUERY_TIMEOUT,
            time_filter_advice_bytes: Some(1 << 30),
            require_time_filter: false,
        }
    }
}

/// Cell data a result table returns by default before it is cut (ADX's `truncationmaxsize`).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 << 20;

/// How long a query runs when neither the server's settings nor the client say otherwise
/// (the gRPC default of the SPEC, used by every face).
pub const DEFAULT_QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// The longest query limit a client may ask for by default (ADX's own ceiling).
pub const MAX_QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Queries run at once by default: two per core, at least four.
pub fn default_concurrent_queries() -> usize {
    std::thread::available_parallelism().map_or(4, |n| (2 * n.get()).max(4))
}

/// One query to run.
#[derive(Debug, Clone)]
pub struct QueryRequest {
    pub text: String,
    pub database: String,
    pub window: QueryWindow,
    /// Values of the query's declared parameters (`declare query_parameters`), by name, as
    /// the request gives them (text).
    pub parameters: HashMap<String, String>,
}

/// One result table.
#[derive(Debug, Clone)]
pub struct ResultTable {
    pub name: String,
    pub columns: Vec<(String, KqlType)>,
    pub batches: Vec<RecordBatch>,
}

impl ResultTable {
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// Rows as JSON arrays of cells, in column order.
    pub fn json_rows(&self) -> Vec<Vec<serde_json::Value>> {
        let mut rows = Vec::with_capacity(self.row_count());
        for batch in &self.batches {
            for row in 0..batch.num_rows() {
                rows.push(
                    self.columns
                        .iter()
                        .enumerate()
                        .map(|(i, (_, kql_type))| cells::cell(batch.column(i), row, *kql_type))
                        .collect(),
                );
            }
        }
        rows
    }
}

/// The outcome of a query: result tables (`PrimaryResult`, then `ExtraTable_N`) and warnings.
#[derive(Debug, Clone)]
pub struct QueryOutput {
    pub tables: Vec<ResultTable>,
    pub warnings: Vec<QueryWarning>,
    /// Set when the query uses `render`.
    pub visualization: Option<trawl_planner::Visualization>,
}

/// Runs KQL against the catalog's tables.
#[derive(Clone)]
pub struct Engine {
    context: SessionContext,
    catalog: Arc<dyn Catalog>,
    config: EngineConfig,
    admission: Arc<run::Admission>,
    /// This node's queries, running and recently finished (`.show queries`).
    journal: Arc<journal::QueryJournal>,
    /// Set on a query node of a cluster: queries may spread over the query nodes.
    distribution: Option<Arc<distributed::Distribution>>,
    /// The memory all queries hold; each query's account counts against it.
    server_memory: Arc<trawl_common::memory::ServerMemory>,
    /// Where queries run (none: on the caller's runtime); see [`Engine::with_query_threads`].
    query_threads: Option<tokio::runtime::Handle>,
}

/// A physical plan ready to run.
pub(crate) struct Physical {
    pub(crate) plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    pub(crate) task: Arc<datafusion::execution::TaskContext>,
    pub(crate) placement: Placement,
    /// The id a distributed plan's scans count what they read under.
    pub(crate) query: Option<String>,
    /// Large tables the plan reads with no time bound (see `time_filter.rs`).
    pub(crate) unbounded: Vec<time_filter::Unbounded>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

struct CatalogTables {
    tables: HashMap<String, Arc<dyn TableProvider>>,
    views: HashMap<String, Vec<String>>,
}

impl TableLookup for CatalogTables {
    fn table(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        self.tables.get(name).cloned()
    }

    fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tables.keys().cloned().collect();
        names.sort();
        names
    }

    fn view(&self, name: &str) -> Option<Vec<String>> {
        self.views.get(name).cloned()
    }
}

impl Engine {
    pub fn new(catalog: Arc<dyn Catalog>, store: &SegmentStore, config: EngineConfig) -> Result<Engine, TrawlError> {
        memory::trace_spawned_tasks();
        let mut runtime = RuntimeEnvBuilder::new().with_memory_pool(Arc::new(FairSpillPool::new(
            memory::spill_limit(config.memory_limit_bytes),
        )));
        if let Some(dir) = &config.spill_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| TrawlError::internal(format!("cannot create spill directory: {e}")))?;
            runtime = runtime.with_temp_file_path(dir);
        }
        let runtime = runtime.with_max_temp_directory_size(config.spill_limit_bytes);
        let runtime = runtime.build_arc().map_err(|e| TrawlError::internal(e.to_string()))?;
        let mut session = SessionConfig::new()
            .with_target_partitions(config.target_partitions.max(1))
            .with_information_schema(false);
        if let Some(hints) = store.read_hints() {
            session = session.with_extension(Arc::new(hints));
        }
        let state = SessionStateBuilder::new()
            .with_config(session)
            .with_runtime_env(runtime)
            .with_default_features()
            .build();
        // The leaf-expression passes move `json_*` calls below projections and then trip
        // over the same-name aliases KQL's `extend` makes ("duplicate unqualified field").
        let rules: Vec<_> = state
            .optimizers()
            .iter()
            .filter(|rule| !DISABLED_OPTIMIZER_RULES.contains(&rule.name()))
            .cloned()
            .collect();
        let state = SessionStateBuilder::new_from_existing(state)
            .with_optimizer_rules(abandon::interleave(rules))
            .with_physical_optimizer_rule(Arc::new(trawl_storage::count_by::CountByDictionary))
            .with_physical_optimizer_rule(Arc::new(trawl_storage::short_eq::ShortStringEquality))
            .with_physical_optimizer_rule(Arc::new(trawl_storage::row_filter::JoinRowFilters))
            .with_physical_optimizer_rule(Arc::new(budget::BudgetAggregates {
                limit_bytes: config.summarize_memory_limit_bytes,
            }))
            .with_physical_optimizer_rule(Arc::new(coop::CooperativeMultipliers))
            .build();
        let context = SessionContext::new_with_state(state);
        store
            .register_with(context.runtime_env().as_ref())
            .map_err(TrawlError::from)?;
        let admission = Arc::new(run::Admission::new(
            config.max_concurrent_queries,
            config.max_queued_queries,
        ));
        let server_memory = trawl_common::memory::ServerMemory::new(config.memory_limit_bytes as u64);
        if let Some(cap) = config.heap_limit_bytes {
            memory::watch_heap(&server_memory, cap);
        }
        Ok(Engine {
            context,
            catalog,
            config,
            admission,
            journal: Arc::new(journal::QueryJournal::default()),
            distribution: None,
            server_memory,
            query_threads: None,
        })
    }

    /// Runs every query (its planning's async parts, its execution and the tasks its plan
    /// spawns) on `threads`, a runtime of its own at a lower priority than the one that
    /// acknowledges ingest: a query that keeps every core busy cannot hold up the tasks that
    /// write and acknowledge (DataFusion's advice: CPU-bound plans on a runtime of their own).
    pub fn with_query_threads(mut self, threads: tokio::runtime::Handle) -> Engine {
        self.query_threads = Some(threads);
        self
    }

    /// This engine as a query node of a cluster: queries that read enough segments spread
    /// over the query nodes `workers` lists, and [`Engine::worker`] serves other nodes' parts.
    pub fn with_cluster(mut self, settings: ClusterSettings, workers: Arc<Workers>) -> Result<Engine, TrawlError> {
        let distribution = distributed::Distribution::new(
            &self.context.state(),
            settings,
            workers,
            memory::spill_limit(self.config.query_memory_limit_bytes),
        )
        .map_err(|e| TrawlError::internal(format!("cannot set up distributed queries: {e}")))?;
        self.distribution = Some(Arc::new(distribution));
        Ok(self)
    }

    /// The worker service other query nodes send their queries' stages to (a cluster's query
    /// node only).
    pub fn worker(&self) -> Option<datafusion_distributed::Worker> {
        self.distribution.as_ref().map(|d| d.worker().clone())
    }

    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }

    /// This node's queries, running and recently finished.
    pub fn journal(&self) -> &journal::QueryJournal {
        &self.journal
    }

    async fn tables(&self, database: &str, counters: &Arc<ScanCounters>) -> Result<CatalogTables, TrawlError> {
        let (infos, views) = tokio::try_join!(self.catalog.tables(database), self.catalog.views(database))?;
        let mut tables: HashMap<String, Arc<dyn TableProvider>> = HashMap::with_capacity(infos.len());
        for info in infos {
            let schema = table_schema(&info.columns);
            let provider =
                TrawlTable::new(database, &info.name, schema, self.catalog.clone()).with_counters(counters.clone());
            tables.insert(info.name, Arc::new(provider));
        }
        let views = views.into_iter().collect();
        Ok(CatalogTables { tables, views })
    }

    /// The bound plan of each result table after DataFusion's optimizer, as an s-expression
    /// (see `explain.rs`), wrapped in `(query (result "name" plan)…)`.
    pub async fn optimized_plan_sexp(&self, request: &QueryRequest) -> Result<String, TrawlError> {
        let prepared = self.prepare(request).await?;
        let planned = self
            .plan(request, "", &prepared, &Arc::new(ScanCounters::default()))
            .await?;
        let state = self.context.state();
        let names: Vec<String> = planned
            .results
            .iter()
            .enumerate()
            .map(|(index, result)| match (&result.name, index) {
                (Some(name), _) => name.clone(),
                (None, 0) => "PrimaryResult".to_string(),
                (None, _) => format!("ExtraTable_{}", index - 1),
            })
            .collect();
        let plans: Vec<_> = planned.results.into_iter().map(|r| r.plan).collect();
        let optimized = off_runtime(move || {
            plans
                .iter()
                .map(|plan| {
                    state
                        .optimize(plan)
                        .map(|optimized| optimized.display_indent().to_string())
                        .map_err(execution_error)
                })
                .collect::<Result<Vec<String>, TrawlError>>()
        })
        .await?;
        let mut sexp = String::from("(query");
        for (name, plan) in names.iter().zip(optimized) {
            let body = explain::indented_to_sexp(&plan).replace('\n', "\n    ");
            sexp.push_str(&format!("\n  (result \"{name}\"\n    {body})"));
        }
        sexp.push(')');
        Ok(sexp)
    }

    /// The physical plans `request` would run, one per result table (as `EXPLAIN` shows
    /// them), with where each would run.
    pub async fn physical_plans(&self, request: &QueryRequest) -> Result<Vec<(String, Placement)>, TrawlError> {
        let prepared = self.prepare(request).await?;
        let planned = self
            .plan(request, "", &prepared, &Arc::new(ScanCounters::default()))
            .await?;
        let mut plans = Vec::with_capacity(planned.results.len());
        for result in planned.results {
            let physical = self
                .physical_plan(result.plan, None, planned.summarize_budgets.clone(), Arc::default())
                .await?;
            let text = match physical.placement.is_distributed() {
                true => datafusion_distributed::display_plan_ascii(physical.plan.as_ref(), false),
                false => DisplayableExecutionPlan::new(physical.plan.as_ref())
                    .indent(true)
                    .to_string(),
            };
            plans.push((text, physical.placement));
        }
        Ok(plans)
    }

    /// The optimized physical plan of `plan`, the task context to run it in (its memory
    /// counted in `memory`), and where it runs: spread over the cluster's query nodes when it
    /// reads enough segments and may use more than one (`fanout_percent` of them), else here.
    async fn physical_plan(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        fanout_percent: Option<u8>,
        budgets: Vec<trawl_planner::SummarizeBudget>,
        memory: Arc<crate::memory::MemoryUse>,
    ) -> Result<Physical, TrawlError> {
        // Optimizing a large plan is CPU work: it runs beside the runtime's workers, so a heavy
        // plan never holds up ingest or other queries' I/O.
        let state = self.context.state();
        let distribution = self.distribution.clone();
        let runtime = tokio::runtime::Handle::current();
        let query_limit = memory::spill_limit(self.config.query_memory_limit_bytes);
        let advice_bytes = self.config.time_filter_advice_bytes;
        off_runtime(move || {
            runtime.block_on(async move {
                let optimized = state.optimize(&plan).map_err(execution_error)?;
                let unbounded = time_filter::unbounded_scans(&optimized, advice_bytes)
                    .await
                    .map_err(execution_error)?;
                let placement = match &distribution {
                    None => Placement::local("this node is not part of a cluster"),
                    Some(distribution) => match distribution
                        .choose(&optimized, fanout_percent)
                        .await
                        .map_err(execution_error)?
                    {
                        Err(placement) => placement,
                        Ok(distributed::Spread {
                            state: spread,
                            placement,
                            query,
                        }) => match spread.query_planner().create_physical_plan(&optimized, &spread).await {
                            Ok(physical) => {
                                let physical = budget::with_hints(physical, &budgets).map_err(execution_error)?;
                                let task = crate::memory::query_context(
                                    datafusion::execution::TaskContext::from(&spread),
                                    memory,
                                    query_limit,
                                )
                                .map_err(execution_error)?;
                                return Ok(Physical {
                                    plan: physical,
                                    task,
                                    placement,
                                    query: Some(query),
                                    unbounded,
                                });
                            }
                            Err(error) => match distributed::stays_local(&error) {
                                Some(reason) => {
                                    tracing::debug!(%reason, "a query runs on the node that planned it");
                                    Placement::local(reason)
                                }
                                None => return Err(execution_error(error)),
                            },
                        },
                    },
                };
                let physical = state
                    .query_planner()
                    .create_physical_plan(&optimized, &state)
                    .await
                    .map_err(execution_error)?;
                let physical = budget::with_hints(physical, &budgets).map_err(execution_error)?;
                let task =
                    crate::memory::query_context(datafusion::execution::TaskContext::from(&state), memory, query_limit)
                        .map_err(execution_error)?;
                Ok(Physical {
                    plan: physical,
                    task,
                    placement,
                    query: None,
                    unbounded,
                })
            })
        })
        .await
    }

    /// Parses `request`'s text, once (see `prepared.rs`).
    async fn prepare(&self, request: &QueryRequest) -> Result<Arc<Prepared>, TrawlError> {
        let text = request.text.clone();
        off_runtime(move || Prepared::parse(&text).map(Arc::new)).await
    }

    /// Plans a parsed query, running the discoveries planning needs (each round binds the
    /// same syntax tree with more discovered columns).
    async fn plan(
        &self,
        request: &QueryRequest,
        principal: &str,
        prepared: &Arc<Prepared>,
        counters: &Arc<ScanCounters>,
    ) -> Result<trawl_planner::PlannedQuery, TrawlError> {
        let mut tables = self.tables(&request.database, counters).await?;
        let now = trawl_common::time::now_nanos();
        let mut discovered: HashMap<String, Vec<(String, KqlType)>> = HashMap::new();
        let mut materialized: HashMap<String, Arc<trawl_planner::MaterializedTable>> = HashMap::new();
        let mut materialized_bytes = 0usize;
        let mut rounds = 0;
        let planned = loop {
            let options = PlanOptions {
                since: request.window.since,
                until: request.window.until,
                now,
                database: request.database.clone(),
                principal: principal.to_string(),
                parameters: Arc::new(request.parameters.clone()),
                discovered: Arc::new(discovered.clone()),
                materialized: Arc::new(materialized.clone()),
            };
            let prepared = Arc::clone(prepared);
            let (planned, returned) = off_runtime(move || {
                let planned = prepared
                    .query()
                    .and_then(|query| trawl_planner::plan_query(query, prepared.text(), &tables, options));
                Ok((planned, tables))
            })
            .await?;
            tables = returned;
            let planned = planned?;
            if planned.discoveries.is_empty() && planned.materializations.is_empty() {
                break planned;
            }
            rounds += 1;
            if rounds > MAX_DISCOVERY_ROUNDS {
                return Err(TrawlError::new(
                    ErrorCode::BadRequest,
                    "the query nests bag_unpack, legacy partition or materialize too deeply",
                ));
            }
            // Discoveries first: a materialized value is run once its plan is final.
            if !planned.discoveries.is_empty() {
                for discovery in planned.discoveries {
                    let keys = self.discover_keys(discovery.plan).await?;
                    discovered.insert(discovery.key, keys);
                }
                continue;
            }
            for materialization in planned.materializations {
                let table = self.materialize(materialization.plan, &mut materialized_bytes).await?;
                materialized.insert(materialization.key, Arc::new(table));
            }
        };
        Ok(planned)
    }
}

/// Stack of one query's planning and optimizing.
const PLANNING_STACK: usize = 256 << 20;
/// Most threads planning queries at once (more wait for one).
const PLANNING_THREADS: usize = 64;

/// The threads that plan queries, on stacks of [`PLANNING_STACK`] (a runtime of their own,
/// whose blocking threads stay a while between queries); `None` if it cannot be started.
fn planning_threads() -> Option<&'static tokio::runtime::Handle> {
    static THREADS: std::sync::OnceLock<Option<tokio::runtime::Runtime>> = std::sync::OnceLock::new();
    THREADS
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(PLANNING_THREADS)
                .thread_stack_size(PLANNING_STACK)
                .thread_name("trawl-planning")
                // Planning is the query's work: at the queries' priority.
                .on_thread_start(|| trawl_common::threads::run_at_step(trawl_common::threads::QUERY_STEP))
                .build()
                .map_err(|error| tracing::warn!(%error, "no planning threads; queries plan on stack segments"))
                .ok()
        })
        .as_ref()
        .map(tokio::runtime::Runtime::handle)
}

/// Runs CPU-bound planning work on the runtime's blocking threads; a panic in it fails the
/// query with an internal error and nothing else. When the returned future is dropped (the
/// query timed out or its client left), the optimizer stops at its next rule (`abandon.rs`).
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, TrawlError> + Send + 'static,
) -> Result<T, TrawlError> {
    let abandoned = abandon::Abandoned::default();
    let flag = abandoned.flag();
    // The query's memory account goes along: what planning builds (constants folded, plans)
    // is the query's.
    let account = trawl_common::memory::current();
    let work = move || trawl_common::memory::within(account.as_ref(), work);
    // On a large stack: DataFusion's optimizer rules recurse once per operator, and a plan
    // may be as deep as the planner's bound (`trawl_planner::limits`) allows. The stack is
    // reserved address space; only what the recursion touches is used. The planning threads
    // keep theirs from query to query (a stack mapped and unmapped per query cost ~4% of a
    // query answered from statistics); without them, the work gets a stack segment of its own.
    let outcome = match planning_threads() {
        Some(threads) => {
            threads
                .spawn_blocking(move || abandon::Abandoned::scope(flag, work))
                .await
        }
        None => {
            let work = move || abandon::Abandoned::scope(flag, || stacker::grow(PLANNING_STACK, work));
            tokio::task::spawn_blocking(work).await
        }
    };
    drop(abandoned);
    match outcome {
        Ok(result) => result,
        Err(error) => {
            tracing::error!(%error, "planning a query failed unexpectedly");
            Err(TrawlError::internal(
                "planning the query failed unexpectedly; the server log has details",
            ))
        }
    }
}

/// Rounds of discovery before planning gives up (each `bag_unpack` over an earlier one needs
/// a round).
const MAX_DISCOVERY_ROUNDS: usize = 8;

impl Engine {
    /// Runs a `materialize()` plan and keeps its rows; all of a query's materialized values
    /// together hold at most the query's memory limit (`used` counts them).
    async fn materialize(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        used: &mut usize,
    ) -> Result<trawl_planner::MaterializedTable, TrawlError> {
        let frame = self.context.execute_logical_plan(plan).await.map_err(execution_error)?;
        let schema: datafusion::arrow::datatypes::SchemaRef = Arc::new(frame.schema().as_arrow().clone());
        let mut stream = frame.execute_stream().await.map_err(execution_error)?;
        let limit = self.config.query_memory_limit_bytes;
        let mut batches = Vec::new();
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(execution_error)?;
            *used += batch.get_array_memory_size();
            if *used > limit {
                return Err(TrawlError::new(
                    ErrorCode::BadRequest,
                    format!(
                        "materialize: the materialized values of this query hold more than the query's \
                         memory limit ({} MiB); filter or summarize before materializing",
                        limit >> 20
                    ),
                ));
            }
            batches.push(batch);
        }
        // The batches' own schema (nullability as executed) is the table's.
        let schema = batches.first().map_or(schema, |b| b.schema());
        Ok(trawl_planner::MaterializedTable { schema, batches })
    }

    /// Runs a discovery plan and returns the keys of its dynamic values with their types,
    /// sorted by key.
    async fn discover_keys(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
    ) -> Result<Vec<(String, KqlType)>, TrawlError> {
        let frame = self.context.execute_logical_plan(plan).await.map_err(execution_error)?;
        let mut stream = frame.execute_stream().await.map_err(execution_error)?;
        let mut keys: std::collections::BTreeMap<String, KqlType> = std::collections::BTreeMap::new();
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(execution_error)?;
            let Some(values) = batch.columns().first() else {
                continue;
            };
            for row in 0..batch.num_rows() {
                let serde_json::Value::Object(bag) = cells::cell(values, row, KqlType::Dynamic) else {
                    continue;
                };
                for (key, value) in bag {
                    let kql_type = match value {
                        serde_json::Value::Null => continue,
                        serde_json::Value::Bool(_) => KqlType::Bool,
                        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => KqlType::Long,
                        serde_json::Value::Number(_) => KqlType::Real,
                        serde_json::Value::String(_) => KqlType::String,
                        _ => KqlType::Dynamic,
                    };
                    keys.entry(key)
                        .and_modify(|t| *t = t.widen(kql_type))
                        .or_insert(kql_type);
                }
            }
        }
        Ok(keys.into_iter().collect())
    }
}
