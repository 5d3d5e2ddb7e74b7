//! The flusher: one task that takes the buffers due (worth a segment, old enough, or their
//! senders gone quiet), writes each as a segment on a bounded number of slots, answers their
//! senders, and now and then prunes the remembered request keys.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use trawl_common::Signal;
use trawl_common::metrics::{METRICS, label, seconds_since};

use super::write::{CommitOutcome, write_and_register};
use super::{Buffer, BufferKey, IngestConfig, Inner, PRUNE_EVERY};

pub(super) async fn flush_loop(inner: Arc<Inner>) {
    // An idle process wakes rarely; while a buffer is open, often enough to see its senders
    // go quiet (a request that opens a buffer wakes the loop).
    let idle_tick = (inner.config.flush_interval / 4).max(Duration::from_millis(10));
    let busy_tick = match inner.config.quiet_after.is_zero() {
        true => idle_tick,
        false => idle_tick
            .min(inner.config.quiet_after / 2)
            .max(Duration::from_millis(5)),
    };
    let mut pruned = Instant::now();
    loop {
        let stopping = inner.stopping.load(Ordering::Acquire);
        let (due, open) = take_due_buffers(&inner, stopping).await;
        for ((database, table, signal), buffer) in due {
            let Ok(slot) = inner.flush_slots.clone().acquire_owned().await else {
                return;
            };
            let inner = inner.clone();
            tokio::spawn(async move {
                flush(&inner, &database, &table, signal, buffer).await;
                drop(slot);
            });
        }
        if stopping {
            // Wait for every flush in flight, then stop.
            let slots = inner.config.concurrent_flushes.max(1) as u32;
            let _ = inner.flush_slots.acquire_many(slots).await;
            return;
        }
        if pruned.elapsed() >= PRUNE_EVERY {
            pruned = Instant::now();
            prune_request_keys(&inner).await;
        }
        let tick = if open { busy_tick } else { idle_tick };
        tokio::select! {
            _ = inner.wake.notified() => {}
            _ = tokio::time::sleep(tick) => {}
        }
    }
}

/// Forgets request keys past the deduplication window, in memory and in the catalog.
async fn prune_request_keys(inner: &Inner) {
    let now = trawl_common::time::now_nanos();
    let cutoff = {
        let mut dedup = inner.dedup();
        if !dedup.enabled() {
            return;
        }
        dedup.expire(now);
        now.saturating_sub(dedup.window_nanos())
    };
    if let Err(error) = inner.catalog.forget_requests_before(cutoff).await {
        tracing::warn!(%error, "cannot prune old request keys from the catalog; will retry");
    }
}

/// Whether a buffer of `rows` rows, opened `age` ago and `quiet` since its last request, is
/// written now: once it is worth a segment, once its senders went quiet with enough rows, or
/// once it is as old as the flush interval.
pub(super) fn is_due(config: &IngestConfig, rows: usize, age: Duration, quiet: Duration) -> bool {
    let gone_quiet = !config.quiet_after.is_zero() && quiet >= config.quiet_after && rows >= config.quiet_rows;
    rows >= config.worth_rows || age >= config.flush_interval || gone_quiet
}

/// The buffers due now, taken out, and whether any other stays open.
async fn take_due_buffers(inner: &Inner, everything: bool) -> (Vec<(BufferKey, Buffer)>, bool) {
    let mut buffers = inner.buffers.lock().await;
    let due: Vec<BufferKey> = buffers
        .iter()
        .filter(|(_, b)| everything || is_due(&inner.config, b.rows, b.opened_at.elapsed(), b.last_arrival.elapsed()))
        .map(|(key, _)| key.clone())
        .collect();
    let taken = due.into_iter().filter_map(|key| buffers.remove_entry(&key)).collect();
    (taken, !buffers.is_empty())
}

async fn flush(inner: &Inner, database: &str, table: &str, signal: Signal, buffer: Buffer) {
    let count = buffer.rows;
    let started = Instant::now();
    let deadline = buffer.opened_at + inner.config.retry_for;
    let outcome = write_and_register(
        &inner.writer,
        inner.catalog.as_ref(),
        database,
        table,
        signal,
        buffer.parts,
        inner.config.flush_codec,
        &buffer.keys,
        deadline,
    )
    .await;
    inner.buffered_rows.fetch_sub(count, Ordering::AcqRel);
    inner.buffered_bytes.fetch_sub(buffer.bytes, Ordering::AcqRel);
    let result = outcome.as_ref().map(|_| ()).map_err(|(error, _)| error.clone());
    match &result {
        Ok(()) => {
            METRICS.ingest_flush_seconds.observe(seconds_since(started));
            METRICS
                .ingest_records
                .get_or_create(&label("signal", signal.name()))
                .inc_by(count as u64);
        }
        Err(error) => {
            METRICS.ingest_flush_errors.inc();
            tracing::error!(database, table, rows = count, %error, "flush failed; senders are told to retry");
        }
    }
    let unknown = matches!(outcome, Err((_, CommitOutcome::Unknown)));
    if !buffer.keys.is_empty() {
        let now = trawl_common::time::now_nanos();
        let mut dedup = inner.dedup();
        for key in &buffer.keys {
            dedup.finish(*key, &result, unknown, now);
        }
    }
    for waiter in buffer.waiters {
        let _ = waiter.send(result.clone());
    }
}
