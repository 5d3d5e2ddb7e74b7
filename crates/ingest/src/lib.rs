//! Admission, batching and durable commit of ingested rows.
//!
//! [`Ingestor::submit`] adds a request's rows to the buffer of their table and waits. A
//! flusher task writes a buffer as one segment when it is `flush_interval` old (at most 2 s
//! by default 1 s), holds `worth_rows` (a batch worth a segment: busy senders are not kept
//! waiting for the timer), or holds at least `quiet_rows` and no request came for
//! `quiet_after` (its senders are all waiting for it: a few requests in flight are answered
//! after one write, not after the timer), puts it durably, registers it in the catalog,
//! and only then answers every waiting request. A failed put or commit is retried with
//! backoff until `retry_for` (25 s) after the buffer's first request arrived; then the
//! requests are answered `Unavailable` (503 / UNAVAILABLE) and their senders retry: nothing
//! acknowledged is ever lost. When more than `max_buffered_rows` rows or `max_buffered_bytes`
//! bytes wait, new requests are refused with `Unavailable` (backpressure) instead of growing
//! memory. A request sent again after it was stored is acknowledged without storing it twice
//! ([`dedup`]).
//!
//! This crate knows nothing of HTTP or gRPC.

pub mod budget;
pub mod dedup;
pub mod door;
mod flush;
mod write;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, Notify, Semaphore, oneshot};
use tokio::task::JoinHandle;
use trawl_catalog::Catalog;
use trawl_common::metrics::METRICS;
use trawl_common::{Row, Signal, TrawlError};
use trawl_storage::{RowsBatch, SegmentCodec, SegmentWriter, rows_to_batch};

pub use budget::{ByteBudget, Reservation};
pub use dedup::RequestKey;
use dedup::{Admission, Dedup};
pub use door::{Ack, Admitted, Credentials, Door, IngestAuth, IngestRoute};
use flush::{flush_loop, is_due};

/// Batching, retry and admission settings.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Longest time rows wait in a buffer before their segment is written (≤ 2 s).
    pub flush_interval: Duration,
    /// A buffer with this many rows is flushed at once, whatever its age: enough rows for a
    /// segment of their own. Senders with many requests in flight then wait for a write,
    /// not for the timer; while both flush slots are busy a buffer keeps growing, so
    /// segments grow with the load.
    pub worth_rows: usize,
    /// A buffer of at least `quiet_rows` rows to which no request came for `quiet_after` is
    /// flushed: its senders wait for it rather than send more (zero turns this off).
    pub quiet_after: Duration,
    pub quiet_rows: usize,
    /// Rows waiting in all buffers beyond which new requests are refused.
    pub max_buffered_rows: usize,
    /// Approximate bytes of rows waiting in all buffers beyond which new requests are refused.
    pub max_buffered_bytes: usize,
    /// Flushes running at the same time.
    pub concurrent_flushes: usize,
    /// How long after a buffer's first request its flush keeps retrying a failed put or
    /// commit before the requests are answered `Unavailable`.
    pub retry_for: Duration,
    /// How long a stored request is remembered so that the same request again is not stored
    /// twice; zero turns deduplication off.
    pub dedup_window: Duration,
    /// Other ingest processes commit to the same catalog (a cluster): a request this process
    /// does not know is looked up in the catalog before it is stored.
    pub shared_catalog: bool,
    /// How the segments a flush writes are compressed. zstd by default; a process whose
    /// merges rewrite fresh segments soon may write them faster ([`SegmentCodec`]).
    pub flush_codec: SegmentCodec,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            flush_interval: Duration::from_secs(1),
            worth_rows: WORTH_ROWS,
            quiet_after: Duration::from_millis(25),
            quiet_rows: QUIET_ROWS,
            max_buffered_rows: 500_000,
            max_buffered_bytes: 256 << 20,
            concurrent_flushes: 2,
            retry_for: Duration::from_secs(25),
            dedup_window: Duration::from_secs(600),
            shared_catalog: false,
            flush_codec: SegmentCodec::Zstd,
        }
    }
}

/// Rows worth a segment of their own: half a chunk (`trawl_storage` writes 32k-row chunks).
pub const WORTH_ROWS: usize = 16 * 1024;

/// Rows worth writing once their senders have gone quiet: one block of the token index. A
/// trickle of smaller requests waits for the timer, so it does not write a segment each.
pub const QUIET_ROWS: usize = 1024;

/// How often the catalog's remembered request keys are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

type Waiter = oneshot::Sender<Result<(), TrawlError>>;
type BufferKey = (String, String, Signal);

#[derive(Debug)]
struct Buffer {
    /// One batch per request; the flush combines them and orders their rows by time.
    parts: Vec<RowsBatch>,
    rows: usize,
    bytes: usize,
    waiters: Vec<Waiter>,
    /// Keys of the requests whose rows are here.
    keys: Vec<RequestKey>,
    opened_at: Instant,
    /// When the last request's rows arrived.
    last_arrival: Instant,
}

#[derive(Debug)]
struct Inner {
    /// Per database, table and signal (logs, spans and metrics go to separate segments).
    buffers: Mutex<HashMap<BufferKey, Buffer>>,
    writer: SegmentWriter,
    catalog: Arc<dyn Catalog>,
    config: IngestConfig,
    wake: Notify,
    flush_slots: Arc<Semaphore>,
    buffered_rows: AtomicUsize,
    buffered_bytes: AtomicUsize,
    stopping: AtomicBool,
    dedup: std::sync::Mutex<Dedup>,
}

impl Inner {
    fn dedup(&self) -> std::sync::MutexGuard<'_, Dedup> {
        // The state is plain data; a panic elsewhere does not make it wrong.
        self.dedup.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Handle to the ingest pipeline; cheap to clone.
#[derive(Debug, Clone)]
pub struct Ingestor {
    inner: Arc<Inner>,
    flusher: Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl Ingestor {
    /// Loads the request keys stored within the deduplication window and starts the flusher.
    pub async fn start(writer: SegmentWriter, catalog: Arc<dyn Catalog>, config: IngestConfig) -> Ingestor {
        let mut dedup = Dedup::new(config.dedup_window).shared(config.shared_catalog);
        if dedup.enabled() {
            let since = trawl_common::time::now_nanos().saturating_sub(dedup.window_nanos());
            match catalog.requests_since(since).await {
                Ok(keys) => {
                    for (key, at) in keys {
                        if let Some(key) = RequestKey::from_hex(&key) {
                            dedup.remember(key, at);
                        }
                    }
                    tracing::debug!(
                        keys = dedup.len(),
                        "remembered the requests stored in the deduplication window"
                    );
                }
                Err(error) => tracing::warn!(
                    %error,
                    "cannot load the requests stored recently; a retried request may be stored twice"
                ),
            }
        }
        let inner = Arc::new(Inner {
            buffers: Mutex::new(HashMap::new()),
            writer,
            catalog,
            flush_slots: Arc::new(Semaphore::new(config.concurrent_flushes.max(1))),
            config,
            wake: Notify::new(),
            buffered_rows: AtomicUsize::new(0),
            buffered_bytes: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            dedup: std::sync::Mutex::new(dedup),
        });
        let flusher = tokio::spawn(flush_loop(inner.clone()));
        Ingestor {
            inner,
            flusher: Arc::new(std::sync::Mutex::new(Some(flusher))),
        }
    }

    /// Adds `rows` of `signal` to `database.table` and returns once they are durable and
    /// registered. `key` identifies the request (see [`RequestKey`]): a request whose key was
    /// stored within the deduplication window is acknowledged without storing it again.
    /// Faces go through [`Door`], which routes, checks and counts first.
    pub async fn submit(
        &self,
        database: &str,
        table: &str,
        signal: Signal,
        rows: Vec<Row>,
        key: Option<RequestKey>,
    ) -> Result<(), TrawlError> {
        if rows.is_empty() {
            return Ok(());
        }
        let batch =
            rows_to_batch(rows).map_err(|e| TrawlError::internal(format!("could not lay out the rows: {e}")))?;
        self.submit_batch(database, table, signal, batch, key).await
    }

    /// [`Ingestor::submit`] for rows already in a batch (`trawl_storage::columns_to_batch` or
    /// `rows_to_batch`; in any order: the flush sorts a segment's rows).
    pub async fn submit_batch(
        &self,
        database: &str,
        table: &str,
        signal: Signal,
        batch: RowsBatch,
        key: Option<RequestKey>,
    ) -> Result<(), TrawlError> {
        if batch.batch.num_rows() == 0 {
            return Ok(());
        }
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return Err(TrawlError::unavailable("ingest is shutting down"));
        }
        let key = match key {
            Some(key) if inner.dedup().enabled() => match self.admit(key).await? {
                Some(key) => Some(key),
                None => return Ok(()),
            },
            _ => None,
        };
        self.buffer_and_wait(database, table, signal, batch, key).await
    }

    /// `Some(key)` when the request must be stored; `None` when it is stored already (or a
    /// copy of it was, while this one waited).
    async fn admit(&self, key: RequestKey) -> Result<Option<RequestKey>, TrawlError> {
        let now = trawl_common::time::now_nanos();
        let admission = self.inner.dedup().admit(key, now);
        let admission = match admission {
            Admission::Uncertain => {
                let stored = self.inner.catalog.request_committed(&key.to_hex()).await.map_err(|e| {
                    TrawlError::unavailable(format!(
                        "cannot tell whether this request was stored before (the catalog failed during its commit): {e}"
                    ))
                })?;
                self.inner.dedup().resolve(key, stored, now)
            }
            Admission::Check => {
                // Whether another process stored it; when the catalog cannot say, storing it
                // is the safe side (at least once).
                let stored = match self.inner.catalog.request_committed(&key.to_hex()).await {
                    Ok(stored) => stored,
                    Err(error) => {
                        tracing::debug!(%error, "cannot look a request up in the catalog; storing it");
                        false
                    }
                };
                self.inner.dedup().resolve(key, stored, now)
            }
            other => other,
        };
        match admission {
            Admission::Store => Ok(Some(key)),
            Admission::Stored => {
                METRICS.ingest_deduplicated.inc();
                Ok(None)
            }
            Admission::Wait(receiver) => {
                let result = receiver
                    .await
                    .unwrap_or_else(|_| Err(TrawlError::unavailable("ingest stopped before the batch was stored")));
                if result.is_ok() {
                    METRICS.ingest_deduplicated.inc();
                }
                result.map(|()| None)
            }
            Admission::Uncertain | Admission::Check => Err(TrawlError::unavailable(
                "cannot tell whether this request was stored before; retry later",
            )),
        }
    }

    async fn buffer_and_wait(
        &self,
        database: &str,
        table: &str,
        signal: Signal,
        batch: RowsBatch,
        key: Option<RequestKey>,
    ) -> Result<(), TrawlError> {
        let inner = &self.inner;
        let count = batch.batch.num_rows();
        let bytes = batch.batch.get_array_memory_size();
        let waiting = inner.buffered_rows.fetch_add(count, Ordering::AcqRel);
        let waiting_bytes = inner.buffered_bytes.fetch_add(bytes, Ordering::AcqRel);
        let over =
            waiting + count > inner.config.max_buffered_rows || waiting_bytes + bytes > inner.config.max_buffered_bytes;
        if over && waiting > 0 {
            inner.buffered_rows.fetch_sub(count, Ordering::AcqRel);
            inner.buffered_bytes.fetch_sub(bytes, Ordering::AcqRel);
            let refused = Err(TrawlError::unavailable(format!(
                "ingest buffers are full ({waiting} rows, {} MiB waiting); retry later",
                waiting_bytes >> 20
            )));
            if let Some(key) = key {
                // Never buffered: release the key, so the retry is stored.
                inner
                    .dedup()
                    .finish(key, &refused, false, trawl_common::time::now_nanos());
            }
            return refused;
        }
        let (sender, receiver) = oneshot::channel();
        let wake = {
            let mut buffers = inner.buffers.lock().await;
            let opened = buffers.is_empty();
            let buffer = buffers
                .entry((database.to_string(), table.to_string(), signal))
                .or_insert_with(|| Buffer {
                    parts: Vec::new(),
                    rows: 0,
                    bytes: 0,
                    waiters: Vec::new(),
                    keys: Vec::new(),
                    opened_at: Instant::now(),
                    last_arrival: Instant::now(),
                });
            buffer.parts.push(batch);
            buffer.rows += count;
            buffer.last_arrival = Instant::now();
            buffer.bytes += bytes;
            buffer.waiters.push(sender);
            buffer.keys.extend(key);
            // The first open buffer wakes the loop too, so it watches for quiet senders.
            opened || is_due(&inner.config, buffer.rows, Duration::ZERO, Duration::ZERO)
        };
        if wake {
            inner.wake.notify_one();
        }
        match receiver.await {
            Ok(result) => result,
            Err(_) => Err(TrawlError::unavailable("ingest stopped before the batch was stored")),
        }
    }

    /// Rows accepted but not yet durable.
    pub fn buffered_rows(&self) -> usize {
        self.inner.buffered_rows.load(Ordering::Acquire)
    }

    /// Approximate bytes of the rows accepted but not yet durable.
    pub fn buffered_bytes(&self) -> usize {
        self.inner.buffered_bytes.load(Ordering::Acquire)
    }

    /// Refuses new requests, flushes every buffer and waits for all flushes to finish.
    pub async fn shutdown(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.wake.notify_one();
        let handle = self.flusher.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = handle.await;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_buffer_is_written_when_worth_a_segment_old_enough_or_its_senders_wait() {
        use std::time::Duration;
        let config = super::IngestConfig::default();
        let (second, zero, quiet) = (Duration::from_secs(1), Duration::ZERO, config.quiet_after);
        assert!(!super::is_due(&config, 1_000, zero, zero));
        assert!(!super::is_due(&config, super::WORTH_ROWS - 1, second / 2, zero));
        assert!(super::is_due(&config, super::WORTH_ROWS, zero, zero));
        assert!(super::is_due(&config, 1, second, zero));
        // (An empty buffer still answers its requests when its time comes.)
        assert!(super::is_due(&config, 0, second, zero));
        // Senders that went quiet wait for this buffer: written when it holds enough rows.
        assert!(super::is_due(&config, super::QUIET_ROWS, quiet, quiet));
        assert!(!super::is_due(&config, super::QUIET_ROWS, quiet / 2, quiet / 2));
        assert!(!super::is_due(&config, super::QUIET_ROWS - 1, quiet, quiet));
        let off = super::IngestConfig {
            quiet_after: zero,
            ..config
        };
        assert!(!super::is_due(&off, super::QUIET_ROWS, second / 2, second / 2));
    }

    use super::*;
    use trawl_catalog::{FaultyCatalog, SqlCatalog};
    use trawl_common::ErrorCode;
    use trawl_common::Value;
    use trawl_common::faults::{FaultSpec, Faults};
    use trawl_storage::SegmentStore;

    fn rows(n: usize) -> Vec<Row> {
        (0..n)
            .map(|i| {
                let mut row = Row::default();
                row.push("timestamp", Value::DateTime(i as i64));
                row.push("body", Value::Dynamic(serde_json::json!(format!("line {i}"))));
                row
            })
            .collect()
    }

    async fn setup(
        config: IngestConfig,
    ) -> Result<(tempfile::TempDir, Arc<SqlCatalog>, Ingestor), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let catalog = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
        let store = SegmentStore::local(&dir.path().join("segments"))?;
        let ingestor = Ingestor::start(SegmentWriter::new(store), catalog.clone(), config).await;
        Ok((dir, catalog, ingestor))
    }

    #[tokio::test]
    async fn acknowledges_only_after_the_segment_is_registered() -> Result<(), Box<dyn std::error::Error>> {
        let config = IngestConfig {
            flush_interval: Duration::from_millis(50),
            ..Default::default()
        };
        let (_dir, catalog, ingestor) = setup(config).await?;
        let (a, b) = tokio::join!(
            ingestor.submit("default", "default", Signal::Logs, rows(10), None),
            ingestor.submit("default", "default", Signal::Logs, rows(5), None)
        );
        a?;
        b?;
        let segments = catalog.live_segments("default", "default", None).await?;
        assert_eq!(segments.iter().map(|s| s.rows).sum::<u64>(), 15);
        assert_eq!(ingestor.buffered_rows(), 0);
        ingestor.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn requests_whose_types_differ_share_one_segment() -> Result<(), Box<dyn std::error::Error>> {
        let config = IngestConfig {
            flush_interval: Duration::from_millis(100),
            ..Default::default()
        };
        let (_dir, catalog, ingestor) = setup(config).await?;
        let numbers: Vec<Row> = (0..3)
            .map(|i| {
                let mut row = Row::default();
                row.push("timestamp", Value::DateTime(10 - i));
                row.push("body", Value::Long(i));
                row.push("level", Value::Long(i));
                row
            })
            .collect();
        let (a, b) = tokio::join!(
            ingestor.submit("default", "default", Signal::Logs, rows(4), None),
            ingestor.submit("default", "default", Signal::Logs, numbers, None)
        );
        a?;
        b?;
        let segments = catalog.live_segments("default", "default", None).await?;
        assert_eq!(segments.len(), 1);
        assert_eq!(segments[0].rows, 7);
        assert_eq!((segments[0].min_time, segments[0].max_time), (0, 10));
        let types: Vec<(String, trawl_common::KqlType)> = segments[0]
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.kql_type))
            .collect();
        assert!(
            types.contains(&("body".to_string(), trawl_common::KqlType::Dynamic)),
            "{types:?}"
        );
        assert!(
            types.contains(&("level".to_string(), trawl_common::KqlType::Long)),
            "{types:?}"
        );
        ingestor.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn logs_and_spans_go_to_separate_segments() -> Result<(), Box<dyn std::error::Error>> {
        let config = IngestConfig {
            flush_interval: Duration::from_millis(50),
            ..Default::default()
        };
        let (_dir, catalog, ingestor) = setup(config).await?;
        let spans: Vec<Row> = (0..3)
            .map(|i| {
                let mut row = Row::default();
                row.push("timestamp", Value::DateTime(i));
                row.push("duration", Value::Timespan(1_000));
                row
            })
            .collect();
        let (a, b) = tokio::join!(
            ingestor.submit("default", "default", Signal::Logs, rows(4), None),
            ingestor.submit("default", "default", Signal::Traces, spans, None)
        );
        a?;
        b?;
        let mut segments: Vec<u64> = catalog
            .live_segments("default", "default", None)
            .await?
            .iter()
            .map(|s| s.rows)
            .collect();
        segments.sort_unstable();
        assert_eq!(segments, [3, 4]);
        // Each segment records the signal its rows came with.
        let mut signals: Vec<Option<Signal>> = catalog
            .live_segments("default", "default", None)
            .await?
            .iter()
            .map(|s| s.signal)
            .collect();
        signals.sort();
        assert_eq!(signals, [Some(Signal::Logs), Some(Signal::Traces)]);
        ingestor.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn refuses_when_buffers_are_full_and_after_shutdown() -> Result<(), Box<dyn std::error::Error>> {
        let config = IngestConfig {
            flush_interval: Duration::from_secs(2),
            max_buffered_rows: 10,
            ..Default::default()
        };
        let (_dir, _catalog, ingestor) = setup(config).await?;
        let first = tokio::spawn({
            let ingestor = ingestor.clone();
            async move { ingestor.submit("default", "default", Signal::Logs, rows(8), None).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = ingestor.submit("default", "default", Signal::Logs, rows(8), None).await;
        assert_eq!(refused.err().map(|e| e.code), Some(ErrorCode::Unavailable));
        ingestor.shutdown().await;
        first.await??;
        let after = ingestor.submit("default", "default", Signal::Logs, rows(1), None).await;
        assert_eq!(after.err().map(|e| e.code), Some(ErrorCode::Unavailable));
        Ok(())
    }

    /// An ingestor whose store and catalog fail as `faults` say.
    async fn faulty_setup(
        config: IngestConfig,
    ) -> Result<(tempfile::TempDir, Arc<SqlCatalog>, Arc<Faults>, Ingestor), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let catalog = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
        let faults = Arc::new(Faults::new());
        let store = SegmentStore::local(&dir.path().join("segments"))?.with_faults(faults.clone());
        let faulty: Arc<dyn Catalog> = Arc::new(FaultyCatalog::new(catalog.clone(), faults.clone()));
        let ingestor = Ingestor::start(SegmentWriter::new(store), faulty, config).await;
        Ok((dir, catalog, faults, ingestor))
    }

    fn quick(retry_for: Duration) -> IngestConfig {
        IngestConfig {
            flush_interval: Duration::from_millis(20),
            retry_for,
            ..Default::default()
        }
    }

    async fn stored_rows(catalog: &SqlCatalog) -> Result<u64, Box<dyn std::error::Error>> {
        let segments = catalog.live_segments("default", "default", None).await?;
        Ok(segments.iter().map(|s| s.rows).sum())
    }

    fn key(text: &str) -> Option<RequestKey> {
        Some(RequestKey::of_body("test", text.as_bytes()))
    }

    #[tokio::test]
    async fn a_store_outage_shorter_than_the_retry_time_is_waited_out() -> Result<(), Box<dyn std::error::Error>> {
        let (_dir, catalog, faults, ingestor) = faulty_setup(quick(Duration::from_secs(10))).await?;
        faults.apply(&FaultSpec {
            store_down_secs: Some(1),
            ..FaultSpec::default()
        });
        let started = Instant::now();
        ingestor
            .submit("default", "default", Signal::Logs, rows(7), key("a"))
            .await?;
        assert!(started.elapsed() >= Duration::from_millis(900));
        assert_eq!(stored_rows(&catalog).await?, 7);
        // Slow puts and single refused puts are retried too.
        faults.apply(&FaultSpec {
            store_failed_puts: Some(2),
            store_put_delay_ms: Some(200),
            ..FaultSpec::default()
        });
        ingestor
            .submit("default", "default", Signal::Logs, rows(3), key("b"))
            .await?;
        assert_eq!(stored_rows(&catalog).await?, 10);
        ingestor.shutdown().await;
        Ok(())
    }

    #[tokio::test]
    async fn a_longer_outage_is_unavailable_then_the_retry_is_stored_once() -> Result<(), Box<dyn std::error::Error>> {
        let (dir, catalog, faults, ingestor) = faulty_setup(quick(Duration::from_millis(600))).await?;
        faults.apply(&FaultSpec {
            store_disk_full_secs: Some(2),
            ..FaultSpec::default()
        });
        let refused = ingestor
            .submit("default", "default", Signal::Logs, rows(5), key("c"))
            .await;
        let error = refused.err().ok_or("the request should have been refused")?;
        assert_eq!(error.code, ErrorCode::Unavailable);
        assert!(error.message.contains("no space left"), "{}", error.message);
        assert_eq!(stored_rows(&catalog).await?, 0);
        // Each failed write removed its half-written file: nothing is left behind.
        assert_eq!(walk(&dir.path().join("segments"))?, Vec::<std::path::PathBuf>::new());
        tokio::time::sleep(Duration::from_secs(2)).await;
        ingestor
            .submit("default", "default", Signal::Logs, rows(5), key("c"))
            .await?;
        ingestor
            .submit("default", "default", Signal::Logs, rows(5), key("c"))
            .await?;
        assert_eq!(stored_rows(&catalog).await?, 5);
        ingestor.shutdown().await;
        Ok(())
    }

    fn walk(root: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        let mut files = Vec::new();
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(dir)? {
                let path = entry?.path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        Ok(files)
    }

    #[tokio::test]
    async fn a_commit_lost_after_it_went_through_is_stored_once() -> Result<(), Box<dyn std::error::Error>> {
        let (_dir, catalog, faults, ingestor) = faulty_setup(quick(Duration::from_secs(10))).await?;
        faults.apply(&FaultSpec {
            catalog_lost_commits: Some(1),
            ..FaultSpec::default()
        });
        // The retry inside the flush finds the segment registered.
        ingestor
            .submit("default", "default", Signal::Logs, rows(4), key("d"))
            .await?;
        assert_eq!(stored_rows(&catalog).await?, 4);
        assert_eq!(catalog.live_segments("default", "default", None).await?.len(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn an_unknown_commit_outcome_is_asked_of_the_catalog() -> Result<(), Box<dyn std::error::Error>> {
        let (_dir, catalog, faults, ingestor) = faulty_setup(quick(Duration::from_millis(500))).await?;
        // The commit goes through, the answer is lost, and the catalog stays down past the
        // retry time: the sender hears 503 and sends again.
        faults.apply(&FaultSpec {
            catalog_lost_commits: Some(1),
            ..FaultSpec::default()
        });
        let faults_later = faults.clone();
        let downer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            faults_later.apply(&FaultSpec {
                catalog_down_secs: Some(2),
                ..FaultSpec::default()
            });
        });
        let first = ingestor
            .submit("default", "default", Signal::Logs, rows(6), key("e"))
            .await;
        downer.await?;
        assert!(first.is_err());
        // While the catalog is down the copy cannot be told apart: 503 again.
        let second = ingestor
            .submit("default", "default", Signal::Logs, rows(6), key("e"))
            .await;
        assert!(second.is_err_and(|e| e.message.contains("cannot tell")));
        tokio::time::sleep(Duration::from_secs(2)).await;
        ingestor
            .submit("default", "default", Signal::Logs, rows(6), key("e"))
            .await?;
        assert_eq!(stored_rows(&catalog).await?, 6);
        Ok(())
    }

    #[tokio::test]
    async fn copies_sent_together_or_after_a_restart_are_stored_once() -> Result<(), Box<dyn std::error::Error>> {
        let (dir, catalog, _faults, ingestor) = faulty_setup(quick(Duration::from_secs(5))).await?;
        let (a, b, c) = tokio::join!(
            ingestor.submit("default", "default", Signal::Logs, rows(9), key("f")),
            ingestor.submit("default", "default", Signal::Logs, rows(9), key("f")),
            ingestor.submit("default", "default", Signal::Logs, rows(2), key("g")),
        );
        a?;
        b?;
        c?;
        assert_eq!(stored_rows(&catalog).await?, 11);
        ingestor.shutdown().await;
        // A new process remembers the keys from the catalog.
        let store = SegmentStore::local(&dir.path().join("segments"))?;
        let restarted = Ingestor::start(
            SegmentWriter::new(store),
            catalog.clone(),
            quick(Duration::from_secs(5)),
        )
        .await;
        restarted
            .submit("default", "default", Signal::Logs, rows(9), key("f"))
            .await?;
        restarted
            .submit("default", "default", Signal::Logs, rows(9), None)
            .await?;
        assert_eq!(stored_rows(&catalog).await?, 20);
        // Without a window nothing is deduplicated.
        let store = SegmentStore::local(&dir.path().join("segments"))?;
        let config = IngestConfig {
            dedup_window: Duration::ZERO,
            ..quick(Duration::from_secs(5))
        };
        let plain = Ingestor::start(SegmentWriter::new(store), catalog.clone(), config).await;
        plain
            .submit("default", "default", Signal::Logs, rows(2), key("g"))
            .await?;
        assert_eq!(stored_rows(&catalog).await?, 22);
        Ok(())
    }
}
