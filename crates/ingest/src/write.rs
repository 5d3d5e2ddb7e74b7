//! A flush's write: combine the buffer's batches and encode them once, put the segment durably and register it
//! with its request keys, retrying a failed put or commit with doubling backoff until the
//! buffer's deadline.

use std::time::{Duration, Instant};

use trawl_catalog::{Catalog, CatalogError};
use trawl_common::metrics::{METRICS, label, seconds_since};
use trawl_common::{ErrorCode, Signal, TrawlError};
use trawl_storage::{RowsBatch, SegmentCodec, SegmentWriter, encode_parts};

use crate::RequestKey;

/// First pause between attempts of a failed flush step; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Whether a failed flush's segment may be registered after all.
#[derive(Debug)]
pub(crate) enum CommitOutcome {
    /// Nothing was registered.
    NotRegistered,
    /// A commit was attempted and its outcome is unknown (the catalog failed mid-commit).
    Unknown,
}

#[allow(clippy::too_many_arguments)] // the destination (database, table, signal), the parts and their codec
pub(crate) async fn write_and_register(
    writer: &SegmentWriter,
    catalog: &dyn Catalog,
    database: &str,
    table: &str,
    signal: Signal,
    parts: Vec<RowsBatch>,
    codec: SegmentCodec,
    keys: &[RequestKey],
    deadline: Instant,
) -> Result<(), (TrawlError, CommitOutcome)> {
    let encoded = encode_parts(parts, codec).await.map_err(|e| {
        (
            TrawlError::new(ErrorCode::Unavailable, format!("could not store the batch: {e}")),
            CommitOutcome::NotRegistered,
        )
    })?;
    let mut segment = writer.prepare(database, table, &encoded, 0);
    segment.signal = Some(signal);
    let store = writer.store();
    retrying("store", deadline, || {
        store.put_durable(&segment.path, encoded.bytes.clone())
    })
    .await
    .map_err(|e| {
        (
            TrawlError::unavailable(format!("could not store the batch: {e}")),
            CommitOutcome::NotRegistered,
        )
    })?;
    METRICS.storage_segments_written.inc();
    METRICS.storage_segment_bytes_written.inc_by(segment.bytes);
    let keys: Vec<String> = keys.iter().map(|k| k.to_hex()).collect();
    let committing = Instant::now();
    let committed = retrying("catalog", deadline, || async {
        let result = catalog.commit_ingest(&segment, &keys).await;
        if result.is_err() {
            METRICS.catalog_errors.inc();
        }
        result.map_err(Retry::from_catalog)
    })
    .await;
    METRICS.catalog_commit_seconds.observe(seconds_since(committing));
    if let Err(error) = committed {
        // The commit may have gone through before the catalog failed: the object stays (a
        // query sees it only if it is registered) and the request keys become uncertain.
        return Err((
            TrawlError::unavailable(format!("could not register the batch: {error}")),
            CommitOutcome::Unknown,
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

/// A failed attempt: worth retrying or not.
#[derive(Debug)]
enum Retry {
    Again(String),
    Never(String),
}

impl Retry {
    fn from_catalog(error: CatalogError) -> Retry {
        match error {
            // Invalid data (a column whose type conflicts) fails the same way every time.
            CatalogError::Corrupt(message) => Retry::Never(message),
            other => Retry::Again(other.to_string()),
        }
    }
}

impl From<trawl_storage::StorageError> for Retry {
    fn from(error: trawl_storage::StorageError) -> Retry {
        Retry::Again(error.to_string())
    }
}

impl std::fmt::Display for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Retry::Again(message) | Retry::Never(message) => f.write_str(message),
        }
    }
}

/// Runs `attempt` until it succeeds, fails for good, or `deadline` passes, pausing with
/// doubling backoff between attempts (always at least one attempt).
async fn retrying<F, Fut, E>(part: &'static str, deadline: Instant, mut attempt: F) -> Result<(), Retry>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
    E: Into<Retry>,
{
    let mut pause = FIRST_BACKOFF;
    let mut attempts = 0_u32;
    loop {
        attempts += 1;
        let error = match attempt().await {
            Ok(()) => {
                if attempts > 1 {
                    tracing::info!(part, attempts, "a flush step succeeded after retrying");
                }
                return Ok(());
            }
            Err(error) => error.into(),
        };
        let now = Instant::now();
        if matches!(error, Retry::Never(_)) || now + pause > deadline {
            return Err(error);
        }
        tracing::warn!(part, attempts, %error, retry_in_ms = pause.as_millis() as u64, "a flush step failed; retrying");
        METRICS.ingest_retries.get_or_create(&label("part", part)).inc();
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_BACKOFF);
    }
}
