//! `trawl serve`: the embedded default (every service in one process), or the roles of one
//! member of a cluster (`--role`, see `roles.rs` and docs/cluster.md).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::watch;
mod background;
#[cfg(target_os = "linux")]
mod code_pages;
mod ingest;
mod janitor;
pub(crate) mod memory;
mod roles;
mod setup;

pub use roles::ServiceRole;

use ingest::serve_ingest;
use janitor::{JanitorSettings, janitor_loop};
use roles::{Roles, Settings};
use setup::{advertised_host, deletion_grace, engine_config, master_keys, open_store, redact_password};
use trawl_api::member_agent::{Credential, MemberAgent, View};
use trawl_api::membership::Registry;
use trawl_api::meta_grpc::MetaState;
use trawl_api::signed::SignatureCheck;
use trawl_api::state::Readiness;
use trawl_api::{QueryState, ServiceInfo};
use trawl_catalog::{Catalog, Directory, Objects, SqlCatalog};
use trawl_engine::Engine;
use trawl_gateway::{Gateway, GatewayConfig, Upstreams};
use trawl_ingest::{IngestConfig, Ingestor};
use trawl_storage::{MergePolicy, Merger, SegmentCodec, SegmentWriter, StoreLocation};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The services this process runs, comma-separated: gateway, query, ingest, meta, janitor,
    /// or all (the embedded default). Any list but `all` makes the process one member of a
    /// cluster (see docs/cluster.md): it needs --catalog postgres://…, --object-store s3://…,
    /// the master key (except ingest alone) and --meta (except meta itself).
    #[arg(long, value_enum, env = "TRAWL_ROLE", value_delimiter = ',', num_args = 1.., default_value = "all")]
    pub role: Vec<ServiceRole>,
    /// The meta service of the cluster, `http://host:9560` (default: this process's own, when
    /// it runs meta).
    #[arg(long, env = "TRAWL_META_URL")]
    pub meta: Option<String>,
    /// The host other members reach this process at (default: the address it listens on, or
    /// the machine's host name when that is 0.0.0.0).
    #[arg(long, env = "TRAWL_ADVERTISE_HOST")]
    pub advertise_host: Option<String>,
    /// Tests only: the release this process claims to run, to test mixed versions.
    #[arg(long, env = "TRAWL_PRETEND_VERSION", hide = true)]
    pub pretend_version: Option<String>,
    /// Directory for segments, the catalog and spill files.
    #[arg(long, env = "TRAWL_DATA_DIR", default_value = "./trawl-data")]
    pub data_dir: PathBuf,
    /// Where segments live: `file:///absolute/path` or `s3://bucket/prefix` (any
    /// S3-compatible service; credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
    /// AWS_SESSION_TOKEN, see docs/configuration.md). Default: `segments` under --data-dir.
    #[arg(long, env = "TRAWL_OBJECT_STORE", value_parser = clap::value_parser!(StoreLocation))]
    pub object_store: Option<StoreLocation>,
    /// Endpoint of an S3-compatible service, `http(s)://host:port` (default: AWS, or
    /// AWS_ENDPOINT_URL). An `http://` endpoint allows plain HTTP.
    #[arg(long)]
    pub s3_endpoint: Option<String>,
    /// Region requests to S3 are signed for (default: AWS_REGION, else us-east-1).
    #[arg(long)]
    pub s3_region: Option<String>,
    /// Address the bucket as `bucket.host` (virtual-hosted style) instead of `host/bucket`.
    #[arg(long, default_value_t = false)]
    pub s3_virtual_hosted_style: bool,
    /// Where the catalog lives: `postgres://user@host:port/database` (PostgreSQL, shared by
    /// a cluster's processes) or a SQLite file path. Default: `catalog.db` under --data-dir.
    #[arg(long, env = "TRAWL_CATALOG", hide_env_values = true)]
    pub catalog: Option<String>,
    /// Disk the local cache of segment bytes read from object storage may take (bytes; 0
    /// turns it off). Only a store on object storage is cached.
    #[arg(long, env = "SEGMENT_CACHE_BYTES", default_value_t = 4 << 30)]
    pub segment_cache_bytes: u64,
    /// Directory of the segment cache (default: `segment-cache` under --data-dir). It
    /// survives restarts.
    #[arg(long, env = "SEGMENT_CACHE_DIR")]
    pub segment_cache_dir: Option<PathBuf>,
    /// Gateway address: the door for queries (bearer tokens).
    #[arg(long, env = "GATEWAY_BIND", default_value = "127.0.0.1:9500")]
    pub gateway_bind: SocketAddr,
    /// Query service address (HTTP and gRPC); answers only requests the gateway signed.
    #[arg(long, env = "QUERY_BIND", default_value = "127.0.0.1:9510")]
    pub query_bind: SocketAddr,
    /// Meta service address (gRPC): tokens, accounts, roles, members.
    #[arg(long, env = "META_BIND", default_value = "127.0.0.1:9560")]
    pub meta_bind: SocketAddr,
    /// The master key services authenticate each other with (default: the one in the
    /// bootstrap file). At least 32 characters.
    #[arg(long, env = "BZRK_MASTER_KEY", hide_env_values = true)]
    pub master_key: Option<String>,
    /// Seconds a deleted database, table or view can be restored; then the janitor purges it.
    #[arg(long, env = "RESTORE_WINDOW_SECS", default_value_t = 7 * 86_400)]
    pub restore_window_secs: u64,
    /// Longest time a query node spends at start-up reading the footers and token indexes of
    /// the newest segments into their caches before it takes queries (0: no warm-up, and no
    /// read-ahead of the executable's code either).
    #[arg(long, env = "WARM_UP_SECS", default_value_t = 10)]
    pub warm_up_secs: u64,
    /// SSO: the OpenID Connect provider's issuer URL. The `--oidc-*` settings are imported
    /// into the catalog at the first start only; later they are changed on the admin page.
    #[arg(long, env = "OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,
    /// SSO: the client id registered with the provider.
    #[arg(long, env = "OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,
    /// SSO: the client secret.
    #[arg(long, env = "OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<String>,
    /// SSO: where the provider sends the browser back (default: the gateway's
    /// `/api/ui/sso/callback` on the host the browser used).
    #[arg(long, env = "OIDC_REDIRECT_URL")]
    pub oidc_redirect_url: Option<String>,
    /// SSO: the role of an account made at its first SSO sign-in (default: none is made).
    #[arg(long, env = "OIDC_NEW_USER_ROLE")]
    pub oidc_new_user_role: Option<String>,
    /// The previous master key, accepted during a rotation.
    #[arg(long, env = "SECONDARY_MASTER_KEY", hide_env_values = true)]
    pub secondary_master_key: Option<String>,
    /// Operator port (metrics, health).
    #[arg(long, env = "OPERATOR_BIND", default_value = "127.0.0.1:9511")]
    pub operator_bind: SocketAddr,
    /// OTLP/gRPC address.
    #[arg(long, env = "OTLP_GRPC_BIND", default_value = "127.0.0.1:4317")]
    pub otlp_grpc_bind: SocketAddr,
    /// OTLP/HTTP address.
    #[arg(long, env = "OTLP_HTTP_BIND", default_value = "127.0.0.1:4318")]
    pub otlp_http_bind: SocketAddr,
    /// Serve the vendor-compatible intake (the Datadog Agent's routes) on --vendor-bind.
    #[arg(long, env = "INGEST_VENDOR_INTAKE", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub vendor_intake: bool,
    /// Vendor-compatible intake address.
    #[arg(long, env = "VENDOR_INTAKE_BIND", default_value = "127.0.0.1:9552")]
    pub vendor_bind: SocketAddr,
    /// Longest time ingested rows wait before their segment is written (milliseconds, ≤ 2000).
    #[arg(long, env = "INGEST_FLUSH_INTERVAL_MS", default_value_t = 1000)]
    pub flush_interval_ms: u64,
    /// How the segments ingest writes are compressed until a merge rewrites them with zstd:
    /// `zstd`, `lz4` or `none`. `none` takes the least CPU to encode but writes about 4x the
    /// bytes, which fill the page cache and the disk until the merge (see
    /// docs/configuration.md). Give every member of a cluster the same setting.
    #[arg(long, env = "INGEST_FLUSH_COMPRESSION", default_value_t = SegmentCodec::Zstd)]
    pub flush_compression: SegmentCodec,
    /// Largest ingest request body after decompression (bytes).
    #[arg(long, env = "INGEST_MAX_BODY_BYTES", default_value_t = 64 << 20)]
    pub max_body_bytes: usize,
    /// Bytes all ingest requests may hold at once (decoded bodies and their rows); beyond
    /// it requests get 503 with Retry-After. Default: a quarter of the memory available at
    /// start (within the process's control-group limit), between 64 MiB and 2 GiB.
    #[arg(long, env = "INGEST_INFLIGHT_BYTES")]
    pub ingest_inflight_bytes: Option<usize>,
    /// Memory all running queries may hold at once (bytes); past it the query holding the
    /// most is stopped (503). Operators that can spill start spilling at three quarters of
    /// it. Default: three eighths of the memory the process may use, at most 2 GiB.
    #[arg(long, env = "QUERY_MEMORY_LIMIT_BYTES")]
    pub query_memory_limit_bytes: Option<usize>,
    /// Memory one query may hold (bytes, within --query-memory-limit-bytes): everything it
    /// builds counts; past it the query alone fails with a clear error (400). Its operators
    /// that can spill start spilling at three quarters of it. Default: half of
    /// --query-memory-limit-bytes, at most 1 GiB.
    #[arg(long, env = "QUERY_MEMORY_PER_QUERY_BYTES")]
    pub query_memory_per_query_bytes: Option<usize>,
    /// Live heap of the whole process (bytes) past which the queries holding the most are
    /// stopped: the last guard for memory no query's account saw (0: off). Default: three
    /// quarters of the memory the process may use.
    #[arg(long, env = "MEMORY_HEAP_LIMIT_BYTES")]
    pub memory_heap_limit_bytes: Option<u64>,
    /// Disk all queries' spill files may take (bytes); past it the spilling query fails.
    #[arg(long, env = "QUERY_SPILL_LIMIT_BYTES", default_value_t = 16 << 30)]
    pub query_spill_limit_bytes: u64,
    /// Memory one grouping summarize may hold (bytes); past it whole groups are dropped with a
    /// `SummarizeMemoryLimit` warning. Default: half of one query's spilling share, at most
    /// 512 MiB.
    #[arg(long, env = "QUERY_SUMMARIZE_MEMORY_LIMIT_BYTES")]
    pub summarize_memory_limit_bytes: Option<usize>,
    /// Rows a result table returns before it is cut, with a `ResultTruncated` warning (the
    /// implicit limit of interactive queries; `take` or `summarize` ask for less).
    #[arg(long, env = "QUERY_MAX_RESULT_ROWS", default_value_t = 500_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_result_rows: u64,
    /// Bytes of cell data a result table returns before it is cut, with a `ResultTruncated`
    /// warning (ADX's `truncationmaxsize`).
    #[arg(long, env = "QUERY_MAX_RESULT_BYTES", default_value_t = 64 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_result_bytes: u64,
    /// A query that reads at least this many bytes of a table with no bound on `timestamp`
    /// gets a `MissingTimeFilter` warning (0: never).
    #[arg(long, env = "QUERY_TIME_FILTER_ADVICE_BYTES", default_value_t = 1 << 30)]
    pub time_filter_advice_bytes: u64,
    /// Refuse (400) the queries that would get a `MissingTimeFilter` warning.
    #[arg(long, env = "QUERY_REQUIRE_TIME_FILTER", default_value_t = false)]
    pub require_time_filter: bool,
    /// In a cluster, a query spreads over the query nodes when it reads at least this many
    /// bytes of segments (or `--distribute-min-segments` segments); smaller ones run on the
    /// node that received them.
    #[arg(long, env = "TRAWL_DISTRIBUTE_MIN_BYTES", default_value_t = 32 << 20)]
    pub distribute_min_bytes: u64,
    /// In a cluster, a query spreads over the query nodes when it reads at least this many
    /// segments (or `--distribute-min-bytes` bytes).
    #[arg(long, env = "TRAWL_DISTRIBUTE_MIN_SEGMENTS", default_value_t = 16)]
    pub distribute_min_segments: usize,
    /// Seconds between background merges of small segments (0 turns merging off).
    #[arg(long, env = "MERGE_INTERVAL_SECS", default_value_t = 10)]
    pub merge_interval_secs: u64,
    /// Seconds without a new small segment after which a table's small segments are merged
    /// whatever their sizes (a table that stopped receiving data is left well merged).
    #[arg(long, env = "MERGE_IDLE_AFTER_SECS", default_value_t = MergePolicy::default().idle_after.as_secs())]
    pub merge_idle_after_secs: u64,
    /// Age after which a segment object no segment of the catalog names (written, never
    /// registered) is deleted by the janitor (seconds; 0 turns the sweep off).
    #[arg(long, env = "ORPHAN_AGE_SECS", default_value_t = 3600)]
    pub orphan_age_secs: u64,
    /// Queries that run at once; more wait in line (default: two per core, at least four).
    #[arg(long, env = "QUERY_MAX_CONCURRENT")]
    pub max_concurrent_queries: Option<usize>,
    /// How long a query may run when its client sets no limit (seconds; every face: gRPC,
    /// HTTP, the ADX REST routes).
    #[arg(long, env = "QUERY_TIMEOUT_SECS", default_value_t = 60)]
    pub query_timeout_secs: u64,
    /// The longest limit a client may ask for (`grpc-timeout`, ADX `servertimeout`), seconds.
    #[arg(long, env = "QUERY_MAX_TIMEOUT_SECS", default_value_t = 3600)]
    pub query_max_timeout_secs: u64,
    /// Queries that may wait for a slot; more are refused (HTTP 503, gRPC error frame Unavailable).
    #[arg(long, env = "QUERY_MAX_QUEUED", default_value_t = 1000)]
    pub max_queued_queries: usize,
    /// Ingest requires a token (`false` allows anonymous ingest, together with
    /// `--default-ingest-token-enabled`).
    #[arg(long, env = "REQUIRE_AUTH", default_value_t = true, action = clap::ArgAction::Set)]
    pub require_auth: bool,
    /// Requests without a token may ingest into the default table (together with
    /// `--require-auth false`).
    #[arg(long, env = "META_DEFAULT_INGEST_TOKEN_ENABLED", default_value_t = false, action = clap::ArgAction::Set)]
    pub default_ingest_token_enabled: bool,
    /// How long an ingest request is held while a failed segment put or catalog commit is
    /// retried, before it is answered 503 (seconds).
    #[arg(long, env = "INGEST_RETRY_SECS", default_value_t = 25)]
    pub ingest_retry_secs: u64,
    /// How long a stored ingest request is remembered, so the same request sent again is
    /// acknowledged without being stored twice (seconds; 0 turns this off).
    #[arg(long, env = "INGEST_DEDUP_WINDOW_SECS", default_value_t = 600)]
    pub ingest_dedup_window_secs: u64,
    /// Tests only: serve `/debug/faults` on the operator port, which makes the segment store
    /// and the catalog fail on demand. Never turn this on in production.
    #[arg(long, env = "TRAWL_FAULT_INJECTION", default_value_t = false, hide = true)]
    pub fault_injection: bool,
}

/// Validated settings.
struct ServeConfig {
    args: ServeArgs,
    flush_interval: Duration,
}

impl ServeConfig {
    fn validate(args: ServeArgs) -> anyhow::Result<ServeConfig> {
        if args.flush_interval_ms == 0 || args.flush_interval_ms > 2000 {
            anyhow::bail!(
                "--flush-interval-ms must be between 1 and 2000, found {}",
                args.flush_interval_ms
            );
        }
        if args.max_concurrent_queries == Some(0) {
            anyhow::bail!("--max-concurrent-queries must be at least 1");
        }
        if args.query_timeout_secs == 0 || args.query_max_timeout_secs < args.query_timeout_secs {
            anyhow::bail!(
                "--query-timeout-secs must be at least 1 and at most --query-max-timeout-secs ({})",
                args.query_max_timeout_secs
            );
        }
        if args.max_body_bytes < 1024 {
            anyhow::bail!("--max-body-bytes must be at least 1024");
        }
        let flush_interval = Duration::from_millis(args.flush_interval_ms);
        Ok(ServeConfig { args, flush_interval })
    }
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx::postgres::notice=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = ServeConfig::validate(args)?;
    let args = &config.args;
    let roles = Roles::new(&args.role);
    #[cfg(target_os = "linux")]
    if args.warm_up_secs > 0 {
        code_pages::read_ahead();
    }
    roles
        .check(Settings {
            master_key: args.master_key.is_some(),
            postgres_catalog: args.catalog.as_deref().is_some_and(trawl_catalog::is_postgres_url),
            object_storage: args.object_store.as_ref().is_some_and(|at| at.local_path().is_none()),
            meta_address: args.meta.is_some(),
        })
        .map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    let sql = Arc::new(match &args.catalog {
        Some(url) => SqlCatalog::connect(url)
            .await
            .with_context(|| format!("cannot open the catalog {}", redact_password(url)))?,
        None => SqlCatalog::open_sqlite(&args.data_dir.join("catalog.db"))
            .await
            .context("cannot open the catalog")?,
    });
    tracing::info!(dialect = ?sql.dialect(), roles = %roles.label(), "catalog");
    let faults = args.fault_injection.then(|| {
        tracing::warn!("fault injection is on: /debug/faults on the operator port makes storage fail on demand");
        Arc::new(trawl_common::faults::Faults::new())
    });
    let catalog: Arc<dyn Catalog> = match &faults {
        Some(faults) => Arc::new(trawl_catalog::FaultyCatalog::new(sql.clone(), faults.clone())),
        None => sql.clone(),
    };
    let directory: Arc<dyn Directory> = sql.clone();
    let library: Arc<dyn trawl_catalog::Library> = sql.clone();
    let objects: Arc<dyn Objects> = sql;
    // The default table exists from the first start, so queries answer before data arrives
    // (idempotent: every member of a cluster may make sure of it).
    let time_columns =
        [trawl_common::TIME_COLUMN, trawl_common::INGEST_TIME_COLUMN].map(|name| trawl_catalog::ColumnInfo {
            name: name.into(),
            kql_type: trawl_common::KqlType::DateTime,
        });
    catalog
        .ensure_table(
            trawl_common::DEFAULT_DATABASE,
            trawl_common::DEFAULT_TABLE,
            &time_columns,
        )
        .await
        .context("cannot create the default table")?;
    let bootstrap = match roles.has(ServiceRole::Meta) {
        true => {
            let (bootstrap, created) =
                crate::bootstrap::ensure(&args.data_dir, directory.as_ref(), args.master_key.is_some())
                    .await
                    .context("cannot prepare the bootstrap secrets")?;
            let path = crate::bootstrap::path(&args.data_dir);
            if created {
                tracing::info!(path = %path.display(), "created the admin token and the ingest token (mode 0600)");
            }
            Some(bootstrap)
        }
        false => None,
    };
    if roles.has(ServiceRole::Meta) {
        let flags = oidc_flags(args)?;
        if trawl_auth::sso::import_once(directory.as_ref(), flags)
            .await
            .context("cannot import the --oidc-* settings")?
        {
            tracing::info!("imported the SSO settings from the --oidc-* flags");
        }
    }
    let master = master_keys(args, &roles, bootstrap.as_ref())?;
    let version = args
        .pretend_version
        .clone()
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string());
    let info = ServiceInfo::new(&roles.label()).with_version(&version);
    let store = match roles.uses_segments() {
        true => Some(open_store(args, faults.clone(), roles.has(ServiceRole::Query)).await?),
        false => None,
    };
    let writer = match &store {
        Some(store) => Some(SegmentWriter::new(setup::ingest_store(args, faults.clone(), store)?)),
        None => None,
    };

    let readiness = Arc::new(Readiness::default());
    let (stop_sender, stop) = watch::channel(false);
    let mut servers = tokio::task::JoinSet::new();
    let advertise = |address: SocketAddr| format!("http://{}:{}", advertised_host(args, address), address.port());
    let meta_url = args
        .meta
        .clone()
        .unwrap_or_else(|| format!("http://{}", loopback(args.meta_bind)));
    let mut listening = Vec::new();
    // The live query nodes as meta lists them: the workers of this node's distributed queries.
    let query_nodes = Arc::new(trawl_engine::Workers::default());

    if roles.has(ServiceRole::Meta) {
        let master = master.clone().context("meta needs the master key")?;
        let router = trawl_api::meta_grpc::router(MetaState {
            directory: directory.clone(),
            objects: objects.clone(),
            library,
            signatures: SignatureCheck::new(directory.clone()),
            master,
            restore_window: Duration::from_secs(args.restore_window_secs),
            registry: Arc::new(Registry::new(&version)),
        })
        .context("cannot set up the meta service")?
        .merge(trawl_api::probes::routes(readiness.clone(), info.clone()));
        servers.spawn(serve_http(bind(args.meta_bind, "meta").await?, router, stop.clone()));
        listening.push(format!("meta {}", args.meta_bind));
    }
    // Queries run on threads of their own, a few steps nicer than this runtime's, which
    // acknowledges ingest and answers probes (`background.rs`); kept until the server ends.
    let mut _query_threads = None;
    if roles.has(ServiceRole::Query)
        && let Some(store) = &store
    {
        let mut engine = Engine::new(catalog.clone(), store, engine_config(args, &memory::process_memory()))?;
        let workers = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        match background::Background::for_queries(workers, crate::RUNTIME_THREAD_STACK) {
            Ok(threads) => {
                if let Some(handle) = threads.handle() {
                    engine = engine.with_query_threads(handle);
                }
                _query_threads = Some(threads);
            }
            Err(error) => tracing::warn!(%error, "cannot start the query threads; queries share the ingest threads"),
        }
        // A query node of a cluster takes part in distributed queries: as their coordinator
        // and as a worker of the others' (the worker service needs the service token).
        let mut worker_routes = None;
        if !roles.single()
            && let Some(master) = &master
        {
            let channels = std::sync::Arc::new(trawl_api::worker_channels::TokenChannels::new(&[(
                trawl_auth::service::SERVICE_TOKEN_HEADER.to_string(),
                master.token(),
            )])?);
            let settings = trawl_engine::ClusterSettings {
                self_url: advertise(args.query_bind),
                channels: channels.clone(),
                min_bytes: args.distribute_min_bytes,
                min_segments: args.distribute_min_segments,
                probe: Some(channels),
            };
            engine = engine.with_cluster(settings, query_nodes.clone())?;
            worker_routes = engine
                .worker()
                .map(|worker| trawl_api::worker::routes(worker, master.clone()));
        }
        if args.warm_up_secs > 0 {
            let limit = Duration::from_secs(args.warm_up_secs);
            let began = tokio::time::Instant::now();
            match tokio::time::timeout(limit, engine.warm_footers()).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%error, "cannot warm the footer cache; queries read footers as they go")
                }
                Err(_) => tracing::info!(
                    seconds = args.warm_up_secs,
                    "footer cache warm-up stopped at its time limit"
                ),
            }
            // Then the query path itself, in what is left of the time.
            let left = limit.saturating_sub(began.elapsed());
            match tokio::time::timeout(left, engine.warm_queries()).await {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => tracing::warn!(%error, "cannot warm the query path"),
                Err(_) => tracing::info!(seconds = args.warm_up_secs, "query warm-up stopped at its time limit"),
            }
        }
        let query_state = QueryState {
            engine,
            database: trawl_common::DEFAULT_DATABASE.into(),
            readiness: readiness.clone(),
            info: info.clone(),
            signatures: Some(SignatureCheck::new(directory.clone())),
            objects: Some(objects.clone()),
            restore_window: Duration::from_secs(args.restore_window_secs),
            runs: Some(std::sync::Arc::new(trawl_api::runs::RunStore::new(
                store.object_store(),
            ))),
        };
        let mut router = trawl_api::query_http::router(query_state);
        if let Some(worker) = worker_routes {
            router = router.merge(worker);
        }
        servers.spawn(serve_http(bind(args.query_bind, "query").await?, router, stop.clone()));
        listening.push(format!("query {}", args.query_bind));
    }
    let ingestor = match (roles.has(ServiceRole::Ingest), &writer) {
        (true, Some(writer)) => {
            let ingestor = Ingestor::start(
                writer.clone(),
                catalog.clone(),
                IngestConfig {
                    flush_interval: config.flush_interval,
                    retry_for: Duration::from_secs(args.ingest_retry_secs),
                    dedup_window: Duration::from_secs(args.ingest_dedup_window_secs),
                    shared_catalog: !roles.single(),
                    flush_codec: args.flush_compression,
                    ..IngestConfig::default()
                },
            )
            .await;
            serve_ingest(
                args,
                &ingestor,
                &directory,
                &objects,
                &readiness,
                &info,
                &mut servers,
                &stop,
            )
            .await?;
            listening.push(format!(
                "otlp-http {} otlp-grpc {}",
                args.otlp_http_bind, args.otlp_grpc_bind
            ));
            Some(ingestor)
        }
        _ => None,
    };
    let gateway = match roles.has(ServiceRole::Gateway) {
        true => {
            let gateway = Gateway::new(
                directory.clone(),
                trawl_auth::token::GatewayKey::from_seed(
                    trawl_auth::random_bytes().context("no randomness for the gateway key")?,
                ),
                GatewayConfig {
                    upstream: Upstreams::default(),
                    meta_upstream: meta_url.clone(),
                    max_body_bytes: args.max_body_bytes,
                    version: info.version.clone(),
                    commit: info.commit.clone(),
                    session_secret: master
                        .as_ref()
                        .map(|keys| keys.secret_for(trawl_gateway::session::SESSION_KEY_PURPOSE)),
                },
            );
            servers.spawn(serve_http(
                bind(args.gateway_bind, "gateway").await?,
                gateway.router(),
                stop.clone(),
            ));
            listening.push(format!("gateway {}", args.gateway_bind));
            Some(gateway)
        }
        false => None,
    };
    servers.spawn(serve_http(
        bind(args.operator_bind, "operator").await?,
        trawl_api::operator::router(ingestor.clone(), readiness.clone(), info.clone(), faults.clone()),
        stop.clone(),
    ));
    listening.push(format!("operator {}", args.operator_bind));
    let janitor = match (roles.has(ServiceRole::Janitor), &writer) {
        (true, Some(_)) => {
            let policy = MergePolicy {
                grace: deletion_grace(args),
                idle_after: Duration::from_secs(args.merge_idle_after_secs),
                rewrite_lone_fresh: args.flush_compression != SegmentCodec::Zstd,
                ..MergePolicy::default()
            };
            let settings = JanitorSettings {
                merge_every: (args.merge_interval_secs > 0).then(|| Duration::from_secs(args.merge_interval_secs)),
                orphan_age: (args.orphan_age_secs > 0).then(|| Duration::from_secs(args.orphan_age_secs)),
                restore_window: Duration::from_secs(args.restore_window_secs),
            };
            let merger = setup::janitor_store(args, faults.clone())
                .and_then(|store| Ok(Merger::new(catalog.clone(), SegmentWriter::new(store), policy)?));
            Some(tokio::spawn(janitor_loop(
                merger,
                catalog.clone(),
                objects.clone(),
                settings,
                stop.clone(),
            )))
        }
        _ => None,
    };

    // Membership: every process registers with meta and heartbeats; a gateway follows the
    // live query nodes and is ready once meta lists its key and a query node.
    let primary = [
        (ServiceRole::Query, args.query_bind),
        (ServiceRole::Gateway, args.gateway_bind),
        (ServiceRole::Ingest, args.otlp_http_bind),
        (ServiceRole::Meta, args.meta_bind),
    ]
    .into_iter()
    .find(|(role, _)| roles.has(*role))
    .map_or(args.operator_bind, |(_, address)| address);
    let (gateway_key_id, gateway_public_key) = gateway.as_ref().map(Gateway::signing_key).unwrap_or_default();
    let member = trawl_proto::meta::Member {
        id: uuid::Uuid::new_v4().simple().to_string(),
        role: roles.member_roles(),
        address: advertise(primary),
        version: version.clone(),
        key: String::new(),
        gateway_key_id,
        gateway_public_key,
    };
    let credential = match &master {
        Some(master) => Credential::ServiceToken(master.token()),
        None => Credential::SelfKey(trawl_auth::service::make_self_key().context("no randomness for the member key")?),
    };
    tracing::info!(id = %member.id, meta = %meta_url, "registering with meta");
    let agent = MemberAgent::new(&meta_url, member, credential);
    let watched = gateway.clone();
    let agent_readiness = readiness.clone();
    let agent_stop = stop.clone();
    let watched_nodes = query_nodes.clone();
    let mut agent = tokio::spawn(agent.run(
        move |view: &View| {
            if view.listed {
                watched_nodes.set(&view.addresses("query"));
            }
            if let Some(gateway) = &watched
                && !*agent_stop.borrow()
            {
                // Ready once meta lists the gateway's key and there is a query node to send
                // requests to.
                let mut nodes = view.addresses("query");
                if nodes.is_empty() {
                    // A meta that just restarted lists the members that heartbeated since; until
                    // the query nodes have, the last known ones are still the best guess (a dead
                    // one is passed over at once).
                    nodes = gateway.upstreams().list();
                }
                let ready = view.listed && !nodes.is_empty();
                gateway.upstreams().set(nodes);
                gateway.set_ready(ready);
                agent_readiness.set(ready);
            }
        },
        stop.clone(),
    ));
    if gateway.is_none() {
        readiness.set(true);
    }
    tracing::info!(
        roles = %roles.label(),
        data_dir = %args.data_dir.display(),
        listening = %listening.join(", "),
        "trawl is up{}",
        if gateway.is_some() { "; the gateway is ready once meta lists its key and a query node" } else { "" }
    );
    if let Some(path) = bootstrap.as_ref().map(|_| crate::bootstrap::path(&args.data_dir)) {
        tracing::info!(bootstrap = %path.display(), "the admin and ingest tokens are in the bootstrap file");
    }

    let mut failure = None;
    tokio::select! {
        _ = shutdown_signal() => tracing::info!("shutting down: finishing requests and flushing buffers"),
        Some(result) = servers.join_next() => {
            tracing::error!(?result, "a server stopped unexpectedly; shutting down");
        }
        result = &mut agent => match result {
            Ok(Err(error)) => {
                tracing::error!(%error, "stopping: meta does not accept this process");
                failure = Some(error.to_string());
            }
            other => tracing::error!(?other, "the membership agent stopped; shutting down"),
        },
    }
    readiness.set(false);
    if let Some(gateway) = &gateway {
        gateway.set_ready(false);
    }
    let _ = stop_sender.send(true);
    while let Some(result) = servers.join_next().await {
        if let Ok(Err(error)) = result {
            tracing::warn!(%error, "server ended with an error");
        }
    }
    if let Some(ingestor) = ingestor {
        ingestor.shutdown().await;
    }
    if let Some(janitor) = janitor {
        let _ = janitor.await;
    }
    if !agent.is_finished() {
        let _ = agent.await;
    }
    if let Some(failure) = failure {
        anyhow::bail!(failure);
    }
    tracing::info!("stopped cleanly");
    Ok(ExitCode::SUCCESS)
}

/// A listener on `address`; `what` names it in the error.
async fn bind(address: SocketAddr, what: &'static str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address} ({what})"))
}

async fn serve_http(listener: TcpListener, router: axum::Router, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    // Handlers may read the peer's address (the gateway limits failed token checks by it).
    axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(wait_for(stop))
        .await
        .context("HTTP server failed")
}

/// `address` with an unspecified IP (`0.0.0.0`, `::`) replaced by loopback, to connect to.
fn loopback(address: SocketAddr) -> SocketAddr {
    match address.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], address.port())),
        ip if ip.is_unspecified() => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, address.port())),
        _ => address,
    }
}

async fn wait_for(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// The SSO settings the `--oidc-*` flags give, if any (on when issuer and client id are set).
fn oidc_flags(args: &ServeArgs) -> anyhow::Result<Option<trawl_catalog::SsoSettings>> {
    let given = [
        &args.oidc_issuer,
        &args.oidc_client_id,
        &args.oidc_client_secret,
        &args.oidc_redirect_url,
        &args.oidc_new_user_role,
    ];
    if given.iter().all(|flag| flag.is_none()) {
        return Ok(None);
    }
    let text = |flag: &Option<String>| flag.as_deref().unwrap_or_default().trim().to_string();
    let mut settings = trawl_catalog::SsoSettings {
        issuer: text(&args.oidc_issuer).trim_end_matches('/').to_string(),
        client_id: text(&args.oidc_client_id),
        client_secret: text(&args.oidc_client_secret),
        redirect_url: text(&args.oidc_redirect_url),
        new_user_role: text(&args.oidc_new_user_role),
        ..trawl_catalog::SsoSettings::default()
    };
    settings.enabled = !settings.issuer.is_empty() && !settings.client_id.is_empty();
    trawl_auth::sso::check_settings(&settings).map_err(|e| anyhow::anyhow!("--oidc-*: {e}"))?;
    Ok(Some(settings))
}
