//! The settings and parts `trawl serve` builds its roles from: the master keys, the segment
//! store (with its cache), the engine's limits, the grace before segment objects are deleted,
//! the address other members reach this process at.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use trawl_auth::service::MasterKeys;
use trawl_engine::EngineConfig;
use trawl_storage::cache::SegmentCache;
use trawl_storage::{MergePolicy, S3Settings, StoreLocation};

use super::ServeArgs;
use super::loopback;
use super::roles::Roles;

/// The master keys: `BZRK_MASTER_KEY` (and the secondary during a rotation); the embedded
/// default falls back to the bootstrap file's; ingest alone has none.
pub(super) fn master_keys(
    args: &ServeArgs,
    roles: &Roles,
    bootstrap: Option<&crate::bootstrap::Bootstrap>,
) -> anyhow::Result<Option<MasterKeys>> {
    let primary = match (&args.master_key, bootstrap) {
        (Some(key), _) => key.clone(),
        (None, Some(bootstrap)) if roles.single() && !bootstrap.master_key.is_empty() => bootstrap.master_key.clone(),
        (None, _) if roles.single() => anyhow::bail!(
            "the bootstrap file holds no master key (it was written by a cluster's meta): set BZRK_MASTER_KEY"
        ),
        (None, _) => return Ok(None),
    };
    MasterKeys::new(&primary, args.secondary_master_key.as_deref())
        .map(Some)
        .context("cannot use the master key (BZRK_MASTER_KEY)")
}

/// Where segments live, and a client of the store there.
fn open_location(args: &ServeArgs) -> anyhow::Result<(StoreLocation, trawl_storage::SegmentStore)> {
    let location = args
        .object_store
        .clone()
        .unwrap_or_else(|| StoreLocation::Local(args.data_dir.join("segments")));
    let s3 = S3Settings {
        endpoint: args.s3_endpoint.clone(),
        region: args.s3_region.clone(),
        virtual_hosted_style: args.s3_virtual_hosted_style,
    };
    let store = location
        .open(&s3)
        .with_context(|| format!("cannot open the segment store {location}"))?;
    Ok((location, store))
}

/// A client of the segment store for the janitor alone: merges make their requests from a
/// runtime of lower priority, and pooled connections they open must not serve ingest and
/// queries (whose requests would then wait on that runtime).
pub(super) fn janitor_store(
    args: &ServeArgs,
    faults: Option<Arc<trawl_common::faults::Faults>>,
) -> anyhow::Result<trawl_storage::SegmentStore> {
    let (_, store) = open_location(args)?;
    Ok(match faults {
        Some(faults) => store.with_faults(faults),
        None => store,
    })
}

/// A client of the segment store for ingest's writes, beside `shared` (the queries'): on
/// object storage a client of its own, writing through the same cache. Queries run on threads
/// of their own (`background.rs`), and a pooled connection belongs to the runtime that opened
/// it: an acknowledgement must not wait on a connection a busy query thread would serve.
pub(super) fn ingest_store(
    args: &ServeArgs,
    faults: Option<Arc<trawl_common::faults::Faults>>,
    shared: &trawl_storage::SegmentStore,
) -> anyhow::Result<trawl_storage::SegmentStore> {
    let (location, store) = open_location(args)?;
    if location.local_path().is_some() {
        return Ok(shared.clone());
    }
    let store = match faults {
        Some(faults) => store.with_faults(faults),
        None => store,
    };
    Ok(match shared.cache() {
        Some(cache) => store.with_cache(cache),
        None => store,
    })
}

/// The segment store, swept of partial writes, behind the local cache when `cached` and on
/// object storage.
pub(super) async fn open_store(
    args: &ServeArgs,
    faults: Option<Arc<trawl_common::faults::Faults>>,
    cached: bool,
) -> anyhow::Result<trawl_storage::SegmentStore> {
    let (location, mut store) = open_location(args)?;
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
    if let Some(faults) = faults {
        store = store.with_faults(faults);
    }
    if cached && location.local_path().is_none() && args.segment_cache_bytes > 0 {
        let dir = args
            .segment_cache_dir
            .clone()
            .unwrap_or_else(|| args.data_dir.join("segment-cache"));
        let cache = SegmentCache::open(&dir, args.segment_cache_bytes)
            .with_context(|| format!("cannot open the segment cache in {}", dir.display()))?;
        tracing::info!(dir = %dir.display(), bytes = cache.bytes(), capacity = cache.capacity(), "segment cache");
        store = store.with_cache(Arc::new(cache));
    }
    Ok(store)
}

pub(super) fn engine_config(args: &ServeArgs, process: &super::memory::ProcessMemory) -> EngineConfig {
    let defaults = super::memory::defaults(process.bytes);
    let queries = args.query_memory_limit_bytes.unwrap_or(defaults.queries);
    let per_query = args
        .query_memory_per_query_bytes
        .unwrap_or(defaults.per_query.min(queries))
        .min(queries);
    let summarize = args
        .summarize_memory_limit_bytes
        .unwrap_or_else(|| super::memory::summarize_default(per_query));
    let heap = match args.memory_heap_limit_bytes {
        Some(0) => None,
        Some(bytes) => Some(bytes),
        None => Some(defaults.heap),
    };
    tracing::info!(
        process_bytes = process.bytes,
        source = %process.source,
        queries,
        per_query,
        summarize,
        heap = heap.unwrap_or(0),
        "memory limits"
    );
    EngineConfig {
        memory_limit_bytes: queries,
        query_memory_limit_bytes: per_query,
        heap_limit_bytes: heap,
        max_result_bytes: usize::try_from(args.max_result_bytes).unwrap_or(usize::MAX),
        spill_dir: Some(args.data_dir.join("spill")),
        spill_limit_bytes: args.query_spill_limit_bytes,
        max_concurrent_queries: args
            .max_concurrent_queries
            .unwrap_or_else(trawl_engine::default_concurrent_queries),
        max_queued_queries: args.max_queued_queries,
        summarize_memory_limit_bytes: summarize,
        max_result_rows: usize::try_from(args.max_result_rows).unwrap_or(usize::MAX),
        time_filter_advice_bytes: (args.time_filter_advice_bytes > 0).then_some(args.time_filter_advice_bytes),
        require_time_filter: args.require_time_filter,
        default_timeout: Duration::from_secs(args.query_timeout_secs),
        max_timeout: Duration::from_secs(args.query_max_timeout_secs),
        ..EngineConfig::default()
    }
}

/// How long the objects of tombstoned segments stay: longer than any query may run
/// (`--query-max-timeout-secs`, plus a minute), at least five minutes. A query that planned
/// with a segment can read it to its end.
pub(super) fn deletion_grace(args: &ServeArgs) -> Duration {
    Duration::from_secs(args.query_max_timeout_secs.saturating_add(60)).max(MergePolicy::default().grace)
}

/// The host others reach a listener at: `--advertise-host`, else the bound IP, else (bound to
/// every interface) the machine's host name.
pub(super) fn advertised_host(args: &ServeArgs, address: SocketAddr) -> String {
    if let Some(host) = &args.advertise_host {
        return host.clone();
    }
    if !address.ip().is_unspecified() {
        return match address.ip() {
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| loopback(address).ip().to_string())
}

/// A catalog URL fit for messages: its password replaced.
pub(super) fn redact_password(url: &str) -> String {
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
