//! Distributed query: one query spread over every query node, on `datafusion-distributed`.
//!
//! Every query node is both a coordinator and a worker. The node that receives a query
//! plans it; when the query reads enough segments and other query nodes are live, it plans
//! again in a second session whose table scans are [`trawl_storage::SegmentScanExec`]
//! leaves (pruning decided where they run) and whose planner cuts the plan into stages at
//! DataFusion's repartitions. The scan-and-partial-aggregate stages go to the workers, each
//! reading its share of the segments (`routing.rs`: rendezvous hashing on segment ids); the
//! coordinator merges. A query that reads few segments stays on the node that received it,
//! as does one whose plan holds something the workers cannot rebuild (`codec.rs`): `/plan`
//! shows which and why ([`Placement`]).
//!
//! The worker side ([`Distribution::worker`]) is a gRPC service the query port serves
//! (behind the service token); its sessions have the same functions, object store and memory
//! limits as the node's own.

mod codec;
mod functions;
mod live;
mod routing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion_distributed::{
    ChannelResolver, DistributedExt, SessionStateBuilderExt, Worker, WorkerQueryContext, WorkerResolver,
    WorkerSessionBuilder,
};
use trawl_storage::{LazyScans, ReadHints, TrawlTable};
use url::Url;

pub(crate) use codec::NotTransportable;
pub use live::ScanProbe;
pub(crate) use live::Watch;

use crate::memory::{Limit, LimitedPool};

/// How a query node takes part in distributed queries.
#[derive(Clone)]
pub struct ClusterSettings {
    /// This node's query address as the other nodes reach it (`http://host:port`).
    pub self_url: String,
    /// How this node reaches the others' workers (connections that carry the service
    /// token); the same resolver serves the coordinator and this node's worker.
    pub channels: Arc<dyn ChannelResolver + Send + Sync>,
    /// A query is spread over the nodes when it reads at least this many bytes of segments…
    pub min_bytes: u64,
    /// …or at least this many segments.
    pub min_segments: usize,
    /// How this node asks the others what a running query's scans read there, for its
    /// progress reports (without one, only this node's part shows until the workers' tasks
    /// end).
    pub probe: Option<Arc<dyn ScanProbe>>,
}

/// The query nodes a query may use, kept current from meta's member list.
#[derive(Debug, Default)]
pub struct Workers {
    urls: RwLock<Vec<Url>>,
    /// Nodes a query could not reach, left out until the time given (meta drops a node that
    /// stopped heartbeating after its TTL; until then queries must not wait for it).
    unreachable: Mutex<HashMap<Url, Instant>>,
}

/// How long a node that could not be reached is left out of queries.
const UNREACHABLE_FOR: Duration = Duration::from_secs(15);
/// How long a probe of a node waits for its port.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

impl Workers {
    /// Replaces the list with `addresses` (`http://host:port`); unparsable ones are left out.
    pub fn set(&self, addresses: &[String]) {
        let mut urls: Vec<Url> = addresses.iter().filter_map(|a| Url::parse(a).ok()).collect();
        urls.sort();
        urls.dedup();
        if let Ok(mut current) = self.urls.write() {
            *current = urls;
        }
    }

    /// The live nodes, without those found unreachable lately.
    pub fn urls(&self) -> Vec<Url> {
        let urls = self.urls.read().map(|urls| urls.clone()).unwrap_or_default();
        let Ok(mut unreachable) = self.unreachable.lock() else {
            return urls;
        };
        let now = Instant::now();
        unreachable.retain(|_, until| *until > now);
        urls.into_iter().filter(|url| !unreachable.contains_key(url)).collect()
    }

    /// Leaves out, for a while, the nodes whose address (`host:port`) `failure` names: a call
    /// to them was refused or cut. Returns how many were left out.
    pub(crate) fn leave_out_named(&self, failure: &str, keep: &Url) -> usize {
        let named: Vec<Url> = self
            .urls()
            .into_iter()
            .filter(|url| url != keep)
            .filter(|url| {
                let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
                    return false;
                };
                let address = format!("{host}:{port}");
                // The whole port: `:6038` is not in `:60387`.
                failure
                    .match_indices(&address)
                    .any(|(at, _)| !failure[at + address.len()..].starts_with(|c: char| c.is_ascii_digit()))
            })
            .collect();
        if let Ok(mut unreachable) = self.unreachable.lock() {
            for url in &named {
                tracing::warn!(node = %url, "a call to a query node failed: queries leave it out for a while");
                unreachable.insert(url.clone(), Instant::now() + UNREACHABLE_FOR);
            }
        }
        named.len()
    }

    /// Probes every node's port; those that do not answer are left out for a while. Returns
    /// how many were left out.
    pub(crate) async fn leave_out_unreachable(&self, keep: &Url) -> usize {
        let probes = self.urls().into_iter().filter(|url| url != keep).map(|url| async move {
            let address = url.socket_addrs(|| None).ok().and_then(|a| a.into_iter().next());
            let answered = match address {
                Some(address) => tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(address))
                    .await
                    .is_ok_and(|connected| connected.is_ok()),
                None => false,
            };
            (url, answered)
        });
        let silent: Vec<Url> = futures::future::join_all(probes)
            .await
            .into_iter()
            .filter_map(|(url, answered)| (!answered).then_some(url))
            .collect();
        if let Ok(mut unreachable) = self.unreachable.lock() {
            for url in &silent {
                tracing::warn!(node = %url, "a query node does not answer: queries leave it out for a while");
                unreachable.insert(url.clone(), Instant::now() + UNREACHABLE_FOR);
            }
        }
        silent.len()
    }
}

/// The planner's view of [`Workers`].
struct WorkerList(Arc<Workers>);

impl WorkerResolver for WorkerList {
    fn get_urls(&self) -> Result<Vec<Url>> {
        Ok(self.0.urls())
    }
}

/// Where a query's plan runs, and why (`/plan` shows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// On the node that planned it.
    Local { reason: String },
    /// Spread over `workers` query nodes.
    Distributed {
        workers: usize,
        segments: usize,
        bytes: u64,
    },
}

impl Placement {
    pub fn local(reason: impl Into<String>) -> Placement {
        Placement::Local { reason: reason.into() }
    }

    pub fn is_distributed(&self) -> bool {
        matches!(self, Placement::Distributed { .. })
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Local { reason } => write!(f, "local: {reason}"),
            Placement::Distributed {
                workers,
                segments,
                bytes,
            } => write!(
                f,
                "distributed over {workers} query nodes: {segments} segments, {bytes} bytes"
            ),
        }
    }
}

/// A node's part in distributed queries: the coordinator's session and the worker service.
pub(crate) struct Distribution {
    state: SessionState,
    workers: Arc<Workers>,
    settings: ClusterSettings,
    worker: Worker,
}

impl std::fmt::Debug for Distribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Distribution")
            .field("settings", &self.settings.self_url)
            .finish()
    }
}

impl Distribution {
    /// Sets up both sides over `local` (the node's own session: its rules, runtime and
    /// object store), with each worker task's memory limited to `query_limit` bytes.
    pub(crate) fn new(
        local: &SessionState,
        settings: ClusterSettings,
        workers: Arc<Workers>,
        query_limit: usize,
    ) -> Result<Distribution> {
        let self_url = Url::parse(&settings.self_url)
            .map_err(|e| DataFusionError::Configuration(format!("query node address '{}': {e}", settings.self_url)))?;
        let channels = Arc::clone(&settings.channels);
        let runtime = Arc::clone(local.runtime_env());
        let worker = Worker::from_session_builder(WorkerSessions {
            channels: Arc::clone(&channels),
            runtime: Arc::clone(&runtime),
            query_limit,
            hints: local.config().get_extension::<ReadHints>(),
        })
        .with_runtime_env(Arc::clone(&runtime))
        .with_version(env!("CARGO_PKG_VERSION"));
        let config = local.config().clone().with_extension(Arc::new(LazyScans::default()));
        let state = SessionStateBuilder::new_from_existing(local.clone())
            .with_config(config)
            .with_query_planner(Arc::new(TravelCheck))
            .with_distributed_planner()
            .with_distributed_worker_resolver(WorkerList(Arc::clone(&workers)))
            .with_distributed_channel_resolver(SharedChannels(channels))
            .with_distributed_user_codec(codec::TrawlCodec)
            .with_distributed_desired_task_count_handler(routing::desired_task_count)
            .with_distributed_scale_up_leaf_node_handler(routing::scale_up)
            .with_distributed_route_tasks_handler(routing::route_tasks)
            .with_distributed_local_worker_context(worker.to_local_worker_context(self_url))
            .with_distributed_broadcast_joins(false)?
            .build();
        Ok(Distribution {
            state,
            workers,
            settings,
            worker,
        })
    }

    /// After a distributed plan failed: whether a node it used could not be reached (then
    /// those that do not answer are left out, and the query can run again without them).
    pub(crate) async fn lost_a_node(&self, error: &DataFusionError) -> bool {
        // A failed call between nodes arrives as an external error (the transport's); the
        // probe then tells whether a node is gone.
        let external = matches!(error.find_root(), DataFusionError::External(_));
        let unreachable = unreachable_node(error);
        // Another node's failed call to a third arrives as that node's text.
        let elsewhere = lost_connection_elsewhere(error);
        if !external && unreachable.is_none() && !elsewhere {
            return false;
        }
        let own = Url::parse(&self.settings.self_url).ok();
        let failure = match &unreachable {
            Some(failure) => failure.clone(),
            None => error.to_string(),
        };
        let left_out = match own {
            // The node the refused or cut call went to (named in the transport's error, or in
            // the text another node sent) is left out even when its port still answers a
            // probe (a process going down may accept connections a moment longer).
            Some(own) if (unreachable.is_some() || elsewhere) && self.workers.leave_out_named(&failure, &own) > 0 => {
                true
            }
            Some(own) => self.workers.leave_out_unreachable(&own).await > 0,
            None => false,
        };
        let unreachable = unreachable.is_some();
        // A node that was just restarted is listed before it listens: another node's call to
        // it is refused, yet it answers the probe a moment later; and a pooled connection to
        // the process it replaced is reset on first use. Running again reaches it (at most
        // `MAX_LOST_NODE_RETRIES` times: the query only reads).
        left_out || unreachable || elsewhere
    }

    /// The worker service to serve on the query port.
    pub(crate) fn worker(&self) -> &Worker {
        &self.worker
    }

    /// Watches what the scans of `query` (a [`Spread::query`]) read on every live node.
    pub(crate) fn watch(&self, query: &str) -> Option<Watch> {
        let own = Url::parse(&self.settings.self_url).ok()?;
        Some(Watch::start(
            query.to_string(),
            own,
            self.workers.urls(),
            self.settings.probe.clone(),
        ))
    }

    /// The session to plan `plan` in for spreading it over the query nodes, or why it stays
    /// here. `fanout_percent` limits the share of the query nodes it may use.
    pub(crate) async fn choose(
        &self,
        plan: &LogicalPlan,
        fanout_percent: Option<u8>,
    ) -> Result<std::result::Result<Spread, Placement>> {
        let live = self.workers.urls().len();
        let usable = match fanout_percent {
            Some(percent) => (live * usize::from(percent.min(100))).div_ceil(100).max(1),
            None => live,
        };
        if usable < 2 {
            let reason = if live < 2 {
                "no other query node is live".to_string()
            } else {
                format!("the query may use {usable} of {live} query nodes")
            };
            return Ok(Err(Placement::local(reason)));
        }
        let (segments, bytes) = listed(plan).await?;
        if bytes < self.settings.min_bytes && segments < self.settings.min_segments {
            return Ok(Err(Placement::local(format!(
                "it reads {segments} segments, {bytes} bytes (fewer than {} segments and {} bytes)",
                self.settings.min_segments, self.settings.min_bytes
            ))));
        }
        let mut state = self.state.clone();
        if usable < live {
            state.config_mut().set_distributed_max_tasks_per_stage(usable)?;
        }
        let query = uuid::Uuid::now_v7().to_string();
        state.config_mut().set_extension(Arc::new(LazyScans {
            query: Some(query.clone()),
        }));
        let placement = Placement::Distributed {
            workers: usable,
            segments,
            bytes,
        };
        Ok(Ok(Spread {
            state,
            placement,
            query,
        }))
    }
}

/// What the scans of the distributed query `query` read on this node so far (see
/// [`Watch`]): what other nodes' [`ScanProbe`]s ask for.
pub fn scanned_here(query: &str) -> trawl_storage::ScanTotals {
    trawl_storage::live_scans::live(query)
}

/// A query to spread over the query nodes.
pub(crate) struct Spread {
    /// The session to plan it in.
    pub(crate) state: SessionState,
    pub(crate) placement: Placement,
    /// The id its scans count what they read under ([`Watch`]).
    pub(crate) query: String,
}

/// Segments and bytes the table scans of `plan` list (an optimized plan: its scans carry
/// their filters, so the time range narrows the listing).
async fn listed(plan: &LogicalPlan) -> Result<(usize, u64)> {
    let mut scans = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            scans.push((Arc::clone(&scan.source), scan.filters.clone()));
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    let (mut segments, mut bytes) = (0, 0);
    for (source, filters) in scans {
        let provider = source_as_provider(&source)?;
        if let Some(table) = provider.downcast_ref::<TrawlTable>() {
            let (count, size) = table.listed_size(&filters).await?;
            segments += count;
            bytes += size;
        }
    }
    Ok((segments, bytes))
}

/// Plans as DataFusion does, then checks that the plan can travel to workers: a plan that
/// cannot fails with [`NotTransportable`], and the engine runs it where it was planned.
#[derive(Debug)]
struct TravelCheck;

#[async_trait]
impl QueryPlanner for TravelCheck {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session_state: &dyn datafusion::catalog::Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = DefaultPhysicalPlanner::default()
            .create_physical_plan(logical_plan, session_state)
            .await?;
        match codec::cannot_travel(&plan) {
            None => Ok(plan),
            Some(reason) => Err(DataFusionError::External(Box::new(NotTransportable {
                kind: "plan",
                name: reason,
            }))),
        }
    }
}

/// The node's channel resolver, shared by the coordinator and every worker session.
#[derive(Clone)]
struct SharedChannels(Arc<dyn ChannelResolver + Send + Sync>);

#[async_trait]
impl datafusion_distributed::ChannelResolver for SharedChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn datafusion_distributed::WorkerChannel>> {
        self.0.get_worker_client_for_url(url).await
    }
}

/// Builds the session of each task a worker runs.
struct WorkerSessions {
    channels: Arc<dyn ChannelResolver + Send + Sync>,
    runtime: Arc<RuntimeEnv>,
    query_limit: usize,
    /// The segment store's read hints, for the scans a task plans here.
    hints: Option<Arc<ReadHints>>,
}

#[async_trait]
impl WorkerSessionBuilder for WorkerSessions {
    async fn build_session_state(&self, context: WorkerQueryContext) -> Result<SessionState> {
        // A task's memory counts against the node's pool and a limit of its own, as a query
        // planned here does.
        let pool: Arc<dyn MemoryPool> = Arc::new(LimitedPool::new(
            Arc::clone(&self.runtime.memory_pool),
            Arc::new(crate::memory::MemoryUse::default()),
            self.query_limit,
            Limit::Query,
        ));
        let runtime = RuntimeEnvBuilder::from_runtime_env(&self.runtime)
            .with_memory_pool(pool)
            .build_arc()?;
        let mut builder = functions::SHELF
            .register(context.builder)
            .with_runtime_env(runtime)
            .with_distributed_user_codec(codec::TrawlCodec)
            .with_distributed_channel_resolver(SharedChannels(Arc::clone(&self.channels)));
        if let Some(hints) = &self.hints {
            builder
                .config()
                .get_or_insert_with(datafusion::prelude::SessionConfig::default)
                .set_extension(Arc::clone(hints));
        }
        Ok(builder.build())
    }
}

/// Why another query node could not be reached, when `error` says so: the connection to it
/// was refused, reset, broken or timed out (an I/O error of that kind among the causes).
pub(crate) fn unreachable_node(error: &DataFusionError) -> Option<String> {
    use std::io::ErrorKind;
    let lost = |e: &std::io::Error| {
        matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe
                | ErrorKind::NotConnected
                | ErrorKind::TimedOut
                | ErrorKind::UnexpectedEof
        )
    };
    for cause in error.iter() {
        let mut source: Option<&(dyn std::error::Error + 'static)> = match cause {
            DataFusionError::External(e) => Some(e.as_ref()),
            DataFusionError::Shared(e) => Some(e.as_ref()),
            _ => None,
        };
        let mut chain = Vec::new();
        while let Some(e) = source {
            chain.push(e.to_string());
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && lost(io)
            {
                chain.dedup();
                return Some(chain.join(": "));
            }
            source = e.source();
        }
    }
    None
}

/// Whether `error` reports, as text from another node (a remote error carries no causes),
/// that a connection to a node was refused or reset.
fn lost_connection_elsewhere(error: &DataFusionError) -> bool {
    let text = error.to_string();
    [
        "tcp connect error",
        "Connection refused",
        "connection reset",
        "Connection reset",
    ]
    .iter()
    .any(|sign| text.contains(sign))
}

/// Whether `error` says the plan cannot travel (the query then runs where it was planned),
/// and why.
pub(crate) fn stays_local(error: &DataFusionError) -> Option<String> {
    trawl_storage::find_cause::<NotTransportable>(error).map(|reason| match reason.kind {
        "plan" => reason.name.clone(),
        _ => reason.to_string(),
    })
}

/// The error of a distributed plan: as a local plan's, except that a failure of the calls
/// between nodes (another node's error arrives as text, a broken connection as the transport's
/// error) is `Unavailable`, with its cause, rather than an internal error.
pub(crate) fn distributed_error(error: DataFusionError) -> trawl_common::TrawlError {
    let external = matches!(error.find_root(), DataFusionError::External(_));
    let text = error.to_string();
    let classified = crate::execution_error(error);
    if external && classified.code == trawl_common::ErrorCode::Internal {
        return trawl_common::TrawlError::unavailable(format!(
            "the query's work on another query node failed ({text}); retry the query"
        ));
    }
    classified
}

/// Longest wait for the workers' metrics of a finished distributed plan.
const WORKER_METRICS_WAIT: Duration = Duration::from_secs(2);

/// `plan` (a finished distributed plan) with the metrics its workers sent back, or as it is
/// when they do not arrive in time.
pub(crate) async fn with_worker_metrics(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    let rewritten = datafusion_distributed::rewrite_distributed_plan_with_metrics(
        Arc::clone(plan),
        datafusion_distributed::DistributedMetricsFormat::Aggregated,
    );
    match tokio::time::timeout(WORKER_METRICS_WAIT, rewritten).await {
        Ok(Ok(with_metrics)) => with_metrics,
        Ok(Err(error)) => {
            tracing::debug!(%error, "the workers' metrics of a query are incomplete");
            Arc::clone(plan)
        }
        Err(_) => Arc::clone(plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_or_reset_connection_reported_by_another_node_is_recognized() {
        let remote = DataFusionError::External(
            "code: 'The service is currently unavailable', message: \"tcp connect error\", source: \
             ConnectError(\"tcp connect error\", 127.0.0.1:60387, Os { code: 111, kind: ConnectionRefused, \
             message: \"Connection refused\" })"
                .into(),
        );
        assert!(lost_connection_elsewhere(&remote));
        let reset = DataFusionError::External(
            "a query node this query was spread over cannot be reached (code: 'Unknown error', message: \
             \"transport error\", source: tonic::transport::Error(Transport, hyper::Error(Io, \
             Kind(ConnectionReset))): transport error: connection error: connection reset)"
                .into(),
        );
        assert!(lost_connection_elsewhere(&reset));
        let other = DataFusionError::External("division by zero".into());
        assert!(!lost_connection_elsewhere(&other));
    }

    #[test]
    fn the_node_a_failed_call_names_is_left_out() -> std::result::Result<(), url::ParseError> {
        let workers = Workers::default();
        workers.set(&[
            "http://127.0.0.1:60386".to_string(),
            "http://127.0.0.1:60387".into(),
            "http://127.0.0.1:60388".into(),
        ]);
        let own = Url::parse("http://127.0.0.1:60386")?;
        let failure = "tcp connect error: 127.0.0.1:60387: Connection refused (os error 111)";
        assert_eq!(workers.leave_out_named(failure, &own), 1);
        let left: Vec<String> = workers.urls().iter().map(|u| u.to_string()).collect();
        assert_eq!(left, ["http://127.0.0.1:60386/", "http://127.0.0.1:60388/"]);
        // Its own address is never left out; an address no node has changes nothing.
        assert_eq!(workers.leave_out_named("127.0.0.1:60386 refused", &own), 0);
        assert_eq!(workers.leave_out_named("10.0.0.9:1 refused", &own), 0);
        assert_eq!(workers.leave_out_named("127.0.0.1:603889 refused", &own), 0);
        Ok(())
    }
}
