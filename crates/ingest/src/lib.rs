//! Admission, batching and durable commit of ingested rows.
//!
//! [`Ingestor::submit`] adds a request's rows to the buffer of their table and waits. A
//! flusher task writes a buffer as one segment when it is `flush_interval` old (at most 2 s
//! by default 1 s) or holds `max_batch_rows`, puts it durably, registers it in the catalog,
//! and only then answers every waiting request. Any failure before the catalog commit
//! answers `Unavailable` (503 / UNAVAILABLE), and the sender retries: nothing acknowledged is
//! ever lost. When more than `max_buffered_rows` rows or `max_buffered_bytes` bytes wait, new
//! requests are refused with `Unavailable` (backpressure) instead of growing memory.
//!
//! This crate knows nothing of HTTP or gRPC.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, Notify, Semaphore, oneshot};
use tokio::task::JoinHandle;
use trawl_catalog::Catalog;
use trawl_common::metrics::{METRICS, label, seconds_since};
use trawl_common::{ErrorCode, Row, TrawlError};
use trawl_storage::SegmentWriter;
use trawl_storage::schema::row_kind;

/// Batching and admission settings.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Longest time rows wait in a buffer before their segment is written (≤ 2 s).
    pub flush_interval: Duration,
    /// A buffer with this many rows is flushed at once.
    pub max_batch_rows: usize,
    /// Rows waiting in all buffers beyond which new requests are refused.
    pub max_buffered_rows: usize,
    /// Approximate bytes of rows waiting in all buffers beyond which new requests are refused.
    pub max_buffered_bytes: usize,
    /// Flushes running at the same time.
    pub concurrent_flushes: usize,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            flush_interval: Duration::from_secs(1),
            max_batch_rows: 250_000,
            max_buffered_rows: 500_000,
            max_buffered_bytes: 256 << 20,
            concurrent_flushes: 2,
        }
    }
}

type Waiter = oneshot::Sender<Result<(), TrawlError>>;
type BufferKey = (String, String, &'static str);

#[derive(Debug)]
struct Buffer {
    rows: Vec<Row>,
    bytes: usize,
    waiters: Vec<Waiter>,
    opened_at: Instant,
}

#[derive(Debug)]
struct Inner {
    /// Per database, table and kind of rows (logs, spans and metrics go to separate segments).
    buffers: Mutex<HashMap<BufferKey, Buffer>>,
    writer: SegmentWriter,
    catalog: Arc<dyn Catalog>,
    config: IngestConfig,
    wake: Notify,
    flush_slots: Arc<Semaphore>,
    buffered_rows: AtomicUsize,
    buffered_bytes: AtomicUsize,
    stopping: AtomicBool,
}

/// Handle to the ingest pipeline; cheap to clone.
#[derive(Debug, Clone)]
pub struct Ingestor {
    inner: Arc<Inner>,
    flusher: Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl Ingestor {
    /// Starts the flusher task.
    pub fn start(writer: SegmentWriter, catalog: Arc<dyn Catalog>, config: IngestConfig) -> Ingestor {
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
        });
        let flusher = tokio::spawn(flush_loop(inner.clone()));
        Ingestor {
            inner,
            flusher: Arc::new(std::sync::Mutex::new(Some(flusher))),
        }
    }

    /// Adds `rows` to `database.table` and returns once they are durable and registered.
    pub async fn submit(&self, database: &str, table: &str, rows: Vec<Row>) -> Result<(), TrawlError> {
        if rows.is_empty() {
            return Ok(());
        }
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return Err(TrawlError::unavailable("ingest is shutting down"));
        }
        let count = rows.len();
        let bytes: usize = rows.iter().map(Row::approximate_bytes).sum();
        let waiting = inner.buffered_rows.fetch_add(count, Ordering::AcqRel);
        let waiting_bytes = inner.buffered_bytes.fetch_add(bytes, Ordering::AcqRel);
        let over =
            waiting + count > inner.config.max_buffered_rows || waiting_bytes + bytes > inner.config.max_buffered_bytes;
        if over && waiting > 0 {
            inner.buffered_rows.fetch_sub(count, Ordering::AcqRel);
            inner.buffered_bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Err(TrawlError::unavailable(format!(
                "ingest buffers are full ({waiting} rows, {} MiB waiting); retry later",
                waiting_bytes >> 20
            )));
        }
        let (sender, receiver) = oneshot::channel();
        let full = {
            let mut buffers = inner.buffers.lock().await;
            let kind = rows
                .first()
                .map_or("logs", |row| row_kind(row.cells.iter().map(|(name, _)| *name)));
            let buffer = buffers
                .entry((database.to_string(), table.to_string(), kind))
                .or_insert_with(|| Buffer {
                    rows: Vec::new(),
                    bytes: 0,
                    waiters: Vec::new(),
                    opened_at: Instant::now(),
                });
            buffer.rows.extend(rows);
            buffer.bytes += bytes;
            buffer.waiters.push(sender);
            buffer.rows.len() >= inner.config.max_batch_rows
        };
        if full {
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

async fn flush_loop(inner: Arc<Inner>) {
    let tick = (inner.config.flush_interval / 4).max(Duration::from_millis(10));
    loop {
        let stopping = inner.stopping.load(Ordering::Acquire);
        let due = take_due_buffers(&inner, stopping).await;
        for ((database, table, kind), buffer) in due {
            let Ok(slot) = inner.flush_slots.clone().acquire_owned().await else {
                return;
            };
            let inner = inner.clone();
            tokio::spawn(async move {
                flush(&inner, &database, &table, kind, buffer).await;
                drop(slot);
            });
        }
        if stopping {
            // Wait for every flush in flight, then stop.
            let slots = inner.config.concurrent_flushes.max(1) as u32;
            let _ = inner.flush_slots.acquire_many(slots).await;
            return;
        }
        tokio::select! {
            _ = inner.wake.notified() => {}
            _ = tokio::time::sleep(tick) => {}
        }
    }
}

async fn take_due_buffers(inner: &Inner, everything: bool) -> Vec<(BufferKey, Buffer)> {
    let mut buffers = inner.buffers.lock().await;
    let due: Vec<BufferKey> = buffers
        .iter()
        .filter(|(_, b)| {
            everything
                || b.rows.len() >= inner.config.max_batch_rows
                || b.opened_at.elapsed() >= inner.config.flush_interval
        })
        .map(|(key, _)| key.clone())
        .collect();
    due.into_iter().filter_map(|key| buffers.remove_entry(&key)).collect()
}

async fn flush(inner: &Inner, database: &str, table: &str, kind: &'static str, buffer: Buffer) {
    let count = buffer.rows.len();
    let started = Instant::now();
    let result = write_and_register(inner, database, table, buffer.rows).await;
    inner.buffered_rows.fetch_sub(count, Ordering::AcqRel);
    inner.buffered_bytes.fetch_sub(buffer.bytes, Ordering::AcqRel);
    match &result {
        Ok(()) => {
            METRICS.ingest_flush_seconds.observe(seconds_since(started));
            METRICS
                .ingest_records
                .get_or_create(&label("signal", signal_of(kind)))
                .inc_by(count as u64);
        }
        Err(error) => {
            METRICS.ingest_flush_errors.inc();
            tracing::error!(database, table, rows = count, %error, "flush failed; senders are told to retry");
        }
    }
    for waiter in buffer.waiters {
        let _ = waiter.send(result.clone());
    }
}

async fn write_and_register(inner: &Inner, database: &str, table: &str, rows: Vec<Row>) -> Result<(), TrawlError> {
    let segment = inner
        .writer
        .write_rows(database, table, rows)
        .await
        .map_err(|e| TrawlError::new(ErrorCode::Unavailable, format!("could not store the batch: {e}")))?;
    METRICS.storage_segments_written.inc();
    METRICS.storage_segment_bytes_written.inc_by(segment.bytes);
    let committing = Instant::now();
    let committed = inner.catalog.commit_segments(std::slice::from_ref(&segment), &[]).await;
    METRICS.catalog_commit_seconds.observe(seconds_since(committing));
    if let Err(error) = committed {
        METRICS.catalog_errors.inc();
        // The object is unregistered, so no query sees it; remove it, best effort.
        let _ = inner.writer.store().delete(&segment.path).await;
        return Err(TrawlError::new(
            ErrorCode::Unavailable,
            format!("could not register the batch: {error}"),
        ));
    }
    tracing::debug!(
        database,
        table,
        rows = segment.rows,
        bytes = segment.bytes,
        "segment committed"
    );
    Ok(())
}

/// The signal a buffer's kind of rows is (`row_kind`'s names).
fn signal_of(kind: &str) -> &'static str {
    match kind {
        "spans" => "traces",
        "metrics" => "metrics",
        _ => "logs",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl_catalog::SqliteCatalog;
    use trawl_common::Value;
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
    ) -> Result<(tempfile::TempDir, Arc<SqliteCatalog>, Ingestor), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let catalog = Arc::new(SqliteCatalog::open(&dir.path().join("catalog.db")).await?);
        let store = SegmentStore::local(&dir.path().join("segments"))?;
        let ingestor = Ingestor::start(SegmentWriter::new(store), catalog.clone(), config);
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
            ingestor.submit("default", "default", rows(10)),
            ingestor.submit("default", "default", rows(5))
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
            ingestor.submit("default", "default", rows(4)),
            ingestor.submit("default", "default", spans)
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
            async move { ingestor.submit("default", "default", rows(8)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = ingestor.submit("default", "default", rows(8)).await;
        assert_eq!(refused.err().map(|e| e.code), Some(ErrorCode::Unavailable));
        ingestor.shutdown().await;
        first.await??;
        let after = ingestor.submit("default", "default", rows(1)).await;
        assert_eq!(after.err().map(|e| e.code), Some(ErrorCode::Unavailable));
        Ok(())
    }
}
