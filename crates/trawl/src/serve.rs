//! `trawl serve`: the embedded default — every service in one process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tokio::net::TcpListener;
use tokio::sync::watch;
use trawl_api::meta_grpc::MetaState;
use trawl_api::signed::SignatureCheck;
use trawl_api::state::Readiness;
use trawl_api::{IngestState, QueryState, ServiceInfo};
use trawl_auth::service::MasterKeys;
use trawl_catalog::{Catalog, Directory, Objects, SqlCatalog};
use trawl_engine::{Engine, EngineConfig};
use trawl_gateway::{Gateway, GatewayConfig};
use trawl_ingest::{ByteBudget, Door, IngestAuth, IngestConfig, Ingestor};
use trawl_storage::cache::SegmentCache;
use trawl_storage::{MergePolicy, Merger, S3Settings, SegmentWriter, StoreLocation};

/// What a `trawl serve` process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServiceRole {
    /// Every service in one process (the embedded default).
    All,
    /// The meta service alone (needs `BZRK_MASTER_KEY`).
    Meta,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The service(s) to run. The other cluster roles (gateway, query, ingest, janitor as
    /// separate processes) come with the shared catalog.
    #[arg(long, value_enum, env = "TRAWL_ROLE", default_value = "all")]
    pub role: ServiceRole,
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
    /// Largest ingest request body after decompression (bytes).
    #[arg(long, env = "INGEST_MAX_BODY_BYTES", default_value_t = 64 << 20)]
    pub max_body_bytes: usize,
    /// Bytes all ingest requests may hold at once (decoded bodies and their rows); beyond
    /// it requests get 503 with Retry-After. Default: a quarter of the memory available at
    /// start, between 64 MiB and 2 GiB.
    #[arg(long, env = "INGEST_INFLIGHT_BYTES")]
    pub ingest_inflight_bytes: Option<usize>,
    /// Memory the query engine may use before spilling (bytes).
    #[arg(long, env = "QUERY_MEMORY_LIMIT_BYTES", default_value_t = 2 << 30)]
    pub query_memory_limit_bytes: usize,
    /// Memory one query may use (bytes, within --query-memory-limit-bytes) before its
    /// operators spill or it fails alone with a clear error.
    #[arg(long, env = "QUERY_MEMORY_PER_QUERY_BYTES", default_value_t = 1 << 30)]
    pub query_memory_per_query_bytes: usize,
    /// Disk all queries' spill files may take (bytes); past it the spilling query fails.
    #[arg(long, env = "QUERY_SPILL_LIMIT_BYTES", default_value_t = 16 << 30)]
    pub query_spill_limit_bytes: u64,
    /// Memory one grouping summarize may hold (bytes); past it whole groups are dropped with a
    /// `SummarizeMemoryLimit` warning.
    #[arg(long, env = "QUERY_SUMMARIZE_MEMORY_LIMIT_BYTES", default_value_t = 512 << 20)]
    pub summarize_memory_limit_bytes: usize,
    /// Seconds between background merges of small segments (0 turns merging off).
    #[arg(long, env = "MERGE_INTERVAL_SECS", default_value_t = 30)]
    pub merge_interval_secs: u64,
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
    if args.role != ServiceRole::All && args.master_key.is_none() {
        anyhow::bail!(
            "--role {:?} needs the cluster's master key in BZRK_MASTER_KEY (at least 32 characters); \
             services authenticate each other with it and do not start without it",
            args.role
        );
    }
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("cannot create {}", args.data_dir.display()))?;
    let sql = Arc::new(match &args.catalog {
        Some(url) => SqlCatalog::connect(url)
            .await
            .with_context(|| format!("cannot open the catalog {}", redact_password(url)))?,
        None => SqlCatalog::open_sqlite(&args.data_dir.join("catalog.db"))
            .await
            .context("cannot open the catalog")?,
    });
    tracing::info!(dialect = ?sql.dialect(), "catalog");
    if args.role == ServiceRole::Meta {
        return run_meta(args, sql).await;
    }
    let faults = args.fault_injection.then(|| {
        tracing::warn!("fault injection is on: /debug/faults on the operator port makes storage fail on demand");
        Arc::new(trawl_common::faults::Faults::new())
    });
    let catalog: Arc<dyn Catalog> = match &faults {
        Some(faults) => Arc::new(trawl_catalog::FaultyCatalog::new(sql.clone(), faults.clone())),
        None => sql.clone(),
    };
    let directory: Arc<dyn Directory> = sql.clone();
    let objects: Arc<dyn Objects> = sql;
    let (bootstrap, created) = crate::bootstrap::ensure(&args.data_dir, directory.as_ref())
        .await
        .context("cannot prepare the bootstrap secrets")?;
    let bootstrap_path = crate::bootstrap::path(&args.data_dir);
    if created {
        tracing::info!(path = %bootstrap_path.display(), "created the admin token, the ingest token and the master key (mode 0600)");
    }
    let master = MasterKeys::new(
        args.master_key.as_deref().unwrap_or(&bootstrap.master_key),
        args.secondary_master_key.as_deref(),
    )
    .context("cannot use the master key (BZRK_MASTER_KEY)")?;
    let signatures = SignatureCheck::new(directory.clone());
    // The default table exists from the first start, so queries answer before data arrives.
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
    let location = args
        .object_store
        .clone()
        .unwrap_or_else(|| StoreLocation::Local(args.data_dir.join("segments")));
    let s3 = S3Settings {
        endpoint: args.s3_endpoint.clone(),
        region: args.s3_region.clone(),
        virtual_hosted_style: args.s3_virtual_hosted_style,
    };
    let mut store = location
        .open(&s3)
        .with_context(|| format!("cannot open the segment store {location}"))?;
    store
        .check_reachable()
        .await
        .with_context(|| format!("cannot reach the segment store {location}"))?;
    tracing::info!(store = %location, "segment store");
    let swept = store.sweep_partial().await.context("cannot sweep the segment store")?;
    if swept > 0 {
        tracing::info!(
            files = swept,
            "removed partial segment files left by an interrupted write"
        );
    }
    if let Some(faults) = &faults {
        store = store.with_faults(faults.clone());
    }
    if location.local_path().is_none() && args.segment_cache_bytes > 0 {
        let dir = args
            .segment_cache_dir
            .clone()
            .unwrap_or_else(|| args.data_dir.join("segment-cache"));
        let cache = SegmentCache::open(&dir, args.segment_cache_bytes)
            .with_context(|| format!("cannot open the segment cache in {}", dir.display()))?;
        tracing::info!(dir = %dir.display(), bytes = cache.bytes(), capacity = cache.capacity(), "segment cache");
        store = store.with_cache(Arc::new(cache));
    }
    let writer = SegmentWriter::new(store.clone());
    let ingestor = Ingestor::start(
        writer.clone(),
        catalog.clone(),
        IngestConfig {
            flush_interval: config.flush_interval,
            retry_for: Duration::from_secs(args.ingest_retry_secs),
            dedup_window: Duration::from_secs(args.ingest_dedup_window_secs),
            ..IngestConfig::default()
        },
    )
    .await;
    let engine = Engine::new(
        catalog.clone(),
        &store,
        EngineConfig {
            memory_limit_bytes: args.query_memory_limit_bytes,
            query_memory_limit_bytes: args.query_memory_per_query_bytes.min(args.query_memory_limit_bytes),
            spill_dir: Some(args.data_dir.join("spill")),
            spill_limit_bytes: args.query_spill_limit_bytes,
            max_concurrent_queries: args
                .max_concurrent_queries
                .unwrap_or_else(trawl_engine::default_concurrent_queries),
            max_queued_queries: args.max_queued_queries,
            summarize_memory_limit_bytes: args.summarize_memory_limit_bytes,
            default_timeout: Duration::from_secs(args.query_timeout_secs),
            max_timeout: Duration::from_secs(args.query_max_timeout_secs),
            ..EngineConfig::default()
        },
    )?;

    let readiness = Arc::new(Readiness::default());
    let info = ServiceInfo::new("all");
    let ingest_auth = if args.default_ingest_token_enabled && !args.require_auth {
        tracing::warn!("anonymous ingest is on: requests without a token go to the default table");
        IngestAuth::anonymous(
            directory.clone(),
            objects.clone(),
            trawl_common::DEFAULT_DATABASE,
            trawl_common::DEFAULT_TABLE,
        )
    } else {
        IngestAuth::required(directory.clone(), objects.clone())
    };
    let budget = match args.ingest_inflight_bytes {
        Some(bytes) => ByteBudget::new(bytes),
        None => ByteBudget::from_available_memory(),
    };
    let ingest_state = IngestState {
        door: Door::new(ingestor.clone(), ingest_auth, budget),
        max_body_bytes: args.max_body_bytes,
        readiness: readiness.clone(),
        info: info.clone(),
    };
    let query_state = QueryState {
        engine,
        database: trawl_common::DEFAULT_DATABASE.into(),
        readiness: readiness.clone(),
        info: info.clone(),
        signatures: Some(signatures.clone()),
    };
    let restore_window = Duration::from_secs(args.restore_window_secs);
    let meta_router = trawl_api::meta_grpc::router(MetaState {
        directory: directory.clone(),
        objects: objects.clone(),
        signatures,
        master,
        restore_window,
    })
    .context("cannot set up the meta service")?;
    let gateway_key = trawl_auth::token::GatewayKey::from_seed(
        trawl_auth::random_bytes().context("no randomness for the gateway key")?,
    );
    let gateway = Gateway::new(
        directory.clone(),
        gateway_key,
        GatewayConfig {
            upstream: format!("http://{}", loopback(args.query_bind)),
            meta_upstream: format!("http://{}", loopback(args.meta_bind)),
            max_body_bytes: args.max_body_bytes,
            version: info.version.clone(),
            commit: info.commit.clone(),
        },
    );
    gateway
        .register(trawl_common::time::now_nanos())
        .await
        .context("cannot register the gateway's signing key")?;

    let (stop_sender, stop) = watch::channel(false);
    let bind = |address: SocketAddr, what: &'static str| async move {
        TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen on {address} ({what})"))
    };
    let gateway_listener = bind(args.gateway_bind, "gateway").await?;
    let meta_listener = bind(args.meta_bind, "meta").await?;
    let query_listener = bind(args.query_bind, "query").await?;
    let operator_listener = bind(args.operator_bind, "operator").await?;
    let otlp_http_listener = bind(args.otlp_http_bind, "OTLP/HTTP").await?;
    let otlp_grpc_listener = bind(args.otlp_grpc_bind, "OTLP/gRPC").await?;
    let vendor_listener = match args.vendor_intake {
        true => Some(bind(args.vendor_bind, "vendor intake").await?),
        false => None,
    };

    let mut servers = tokio::task::JoinSet::new();
    servers.spawn(serve_http(
        query_listener,
        trawl_api::query_http::router(query_state),
        stop.clone(),
    ));
    servers.spawn(serve_http(gateway_listener, gateway.router(), stop.clone()));
    servers.spawn(serve_http(meta_listener, meta_router, stop.clone()));
    servers.spawn(serve_http(
        operator_listener,
        trawl_api::operator::router(Some(ingestor.clone()), readiness.clone(), info.clone(), faults),
        stop.clone(),
    ));
    servers.spawn(serve_http(
        otlp_http_listener,
        trawl_api::otlp_http::router(ingest_state.clone()),
        stop.clone(),
    ));
    if let Some(listener) = vendor_listener {
        servers.spawn(serve_http(
            listener,
            trawl_api::vendor::router(ingest_state.clone()),
            stop.clone(),
        ));
        tracing::info!(vendor_intake = %args.vendor_bind, "the vendor-compatible intake is on");
    }
    use trawl_api::otlp_grpc::{Logs, Metrics, OtlpGrpcServer, Traces};
    let (logs, traces, metrics) = (
        OtlpGrpcServer::<Logs>::new(ingest_state.clone()),
        OtlpGrpcServer::<Traces>::new(ingest_state.clone()),
        OtlpGrpcServer::<Metrics>::new(ingest_state),
    );
    let grpc_stop = wait_for(stop.clone());
    servers.spawn(async move {
        tonic::transport::Server::builder()
            .add_service(logs)
            .add_service(traces)
            .add_service(metrics)
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(otlp_grpc_listener),
                grpc_stop,
            )
            .await
            .context("OTLP/gRPC server failed")
    });
    let janitor = (args.merge_interval_secs > 0).then(|| {
        let merger = Merger::new(catalog.clone(), writer.clone(), MergePolicy::default());
        let interval = Duration::from_secs(args.merge_interval_secs);
        let orphan_age = (args.orphan_age_secs > 0).then(|| Duration::from_secs(args.orphan_age_secs));
        tokio::spawn(janitor_loop(
            merger,
            catalog.clone(),
            interval,
            orphan_age,
            stop.clone(),
        ))
    });

    let keeper = tokio::spawn(retention_loop(objects.clone(), restore_window, stop.clone()));

    readiness.set(gateway.is_ready());
    tracing::info!(
        data_dir = %args.data_dir.display(),
        gateway = %args.gateway_bind,
        meta = %args.meta_bind,
        bootstrap = %bootstrap_path.display(),
        query = %args.query_bind,
        otlp_grpc = %args.otlp_grpc_bind,
        otlp_http = %args.otlp_http_bind,
        operator = %args.operator_bind,
        "trawl is ready"
    );

    tokio::select! {
        _ = shutdown_signal() => tracing::info!("shutting down: finishing requests and flushing buffers"),
        Some(result) = servers.join_next() => {
            tracing::error!(?result, "a server stopped unexpectedly; shutting down");
        }
    }
    readiness.set(false);
    let _ = stop_sender.send(true);
    while let Some(result) = servers.join_next().await {
        if let Ok(Err(error)) = result {
            tracing::warn!(%error, "server ended with an error");
        }
    }
    ingestor.shutdown().await;
    if let Some(janitor) = janitor {
        let _ = janitor.await;
    }
    let _ = keeper.await;
    tracing::info!("stopped cleanly");
    Ok(ExitCode::SUCCESS)
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

/// `--role meta`: the meta service alone, on the catalog of the data directory.
async fn run_meta(args: &ServeArgs, catalog: Arc<SqlCatalog>) -> anyhow::Result<ExitCode> {
    let master_key = args.master_key.as_deref().unwrap_or_default();
    let master = MasterKeys::new(master_key, args.secondary_master_key.as_deref())
        .context("cannot use the master key (BZRK_MASTER_KEY)")?;
    let directory: Arc<dyn Directory> = catalog.clone();
    let objects: Arc<dyn Objects> = catalog;
    let restore_window = Duration::from_secs(args.restore_window_secs);
    let readiness = Arc::new(Readiness::default());
    let router = trawl_api::meta_grpc::router(MetaState {
        directory: directory.clone(),
        objects: objects.clone(),
        signatures: SignatureCheck::new(directory),
        master,
        restore_window,
    })
    .context("cannot set up the meta service")?
    .merge(trawl_api::probes::routes(readiness.clone(), ServiceInfo::new("meta")));
    let listener = TcpListener::bind(args.meta_bind)
        .await
        .with_context(|| format!("cannot listen on {} (meta)", args.meta_bind))?;
    let (stop_sender, stop) = watch::channel(false);
    let server = tokio::spawn(serve_http(listener, router, stop.clone()));
    let keeper = tokio::spawn(retention_loop(objects, restore_window, stop));
    readiness.set(true);
    tracing::info!(meta = %args.meta_bind, data_dir = %args.data_dir.display(), "trawl meta is ready");
    shutdown_signal().await;
    let _ = stop_sender.send(true);
    let _ = server.await;
    let _ = keeper.await;
    Ok(ExitCode::SUCCESS)
}

/// Pause between passes of [`retention_loop`].
const RETENTION_PASS: Duration = Duration::from_secs(30);

/// Drops rows past their table's retention, and purges deleted objects whose restore window
/// has passed (their segments become tombstones, deleted by the merge janitor later).
async fn retention_loop(objects: Arc<dyn Objects>, window: Duration, stop: watch::Receiver<bool>) {
    let window = i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
    loop {
        let now = trawl_common::time::now_nanos();
        match objects.apply_retention(now).await {
            Ok(0) => {}
            Ok(dropped) => tracing::info!(segments = dropped, "dropped segments past their table's retention"),
            Err(error) => tracing::warn!(%error, "applying retention failed; will retry"),
        }
        match objects.purge_deleted(now.saturating_sub(window), now).await {
            Ok(purged) if purged.is_empty() => {}
            Ok(purged) => tracing::info!(?purged, "purged deleted objects past their restore window"),
            Err(error) => tracing::warn!(%error, "purging deleted objects failed; will retry"),
        }
        tokio::select! {
            _ = wait_for(stop.clone()) => return,
            _ = tokio::time::sleep(RETENTION_PASS) => {}
        }
    }
}

/// The catalog lease the janitor's work is done under.
const JANITOR_LEASE: &str = "janitor";
/// How often the janitor lists the store for orphaned objects.
const ORPHAN_SWEEP_EVERY: Duration = Duration::from_secs(600);

/// The janitor's work (merges, deleting tombstoned segments, sweeping orphaned objects), done
/// by one process at a time: the one holding the `janitor` lease in the catalog. The lease is
/// renewed every pass for three passes (at least 30 s), so when its holder dies another
/// process takes over within that time; a clean stop releases it at once.
async fn janitor_loop(
    merger: anyhow::Result<Merger, trawl_storage::StorageError>,
    catalog: Arc<dyn Catalog>,
    interval: Duration,
    orphan_age: Option<Duration>,
    stop: watch::Receiver<bool>,
) {
    let merger = match merger {
        Ok(merger) => merger,
        Err(error) => {
            tracing::error!(%error, "background merge is off: cannot start it");
            return;
        }
    };
    let holder = uuid::Uuid::new_v4().simple().to_string();
    let ttl = i64::try_from((interval * 3).max(Duration::from_secs(30)).as_nanos()).unwrap_or(i64::MAX);
    let mut held = false;
    let mut last_sweep: Option<std::time::Instant> = None;
    loop {
        tokio::select! {
            _ = wait_for(stop.clone()) => break,
            _ = tokio::time::sleep(interval) => {}
        }
        let now = trawl_common::time::now_nanos();
        let holds = match catalog.take_lease(JANITOR_LEASE, &holder, now, ttl).await {
            Ok(holds) => holds,
            Err(error) => {
                tracing::warn!(%error, "cannot take the janitor's lease; will retry");
                false
            }
        };
        if holds != held {
            tracing::info!(holder = %holder, holds, "janitor lease");
            held = holds;
        }
        trawl_common::metrics::METRICS.janitor_lease_held.set(i64::from(held));
        if !held {
            continue;
        }
        match merger.merge_once().await {
            Ok(report) if report.merges > 0 => tracing::info!(?report, "merge pass"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "merge pass failed; will retry"),
        }
        if let Err(error) = merger.purge_once().await {
            tracing::warn!(%error, "deleting tombstoned segments failed; will retry");
        }
        if let Some(age) = orphan_age
            && last_sweep.is_none_or(|at| at.elapsed() >= ORPHAN_SWEEP_EVERY)
        {
            last_sweep = Some(std::time::Instant::now());
            match merger.sweep_orphans(age).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "deleted orphaned objects"),
                Err(error) => tracing::warn!(%error, "sweeping orphaned objects failed; will retry"),
            }
        }
    }
    if held && let Err(error) = catalog.release_lease(JANITOR_LEASE, &holder).await {
        tracing::warn!(%error, "cannot release the janitor's lease; it runs out on its own");
    }
    trawl_common::metrics::METRICS.janitor_lease_held.set(0);
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

/// A catalog URL fit for messages: its password replaced.
fn redact_password(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod redaction_tests {
    #[test]
    fn catalog_passwords_stay_out_of_messages() {
        assert_eq!(
            super::redact_password("postgres://trawl:secret@db:5432/trawl"),
            "postgres://trawl:***@db:5432/trawl"
        );
        assert_eq!(
            super::redact_password("postgres://trawl@db/trawl"),
            "postgres://trawl@db/trawl"
        );
        assert_eq!(
            super::redact_password("/var/lib/trawl/catalog.db"),
            "/var/lib/trawl/catalog.db"
        );
    }
}
