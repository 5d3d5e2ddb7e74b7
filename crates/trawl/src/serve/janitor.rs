//! The janitor role: merges of small segments, per-table retention, purging deleted objects
//! past their restore window, deleting the objects of tombstoned segments after the grace
//! period, and sweeping orphaned objects. One process of a cluster does this at a time: the
//! one holding the `janitor` lease in the catalog.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use trawl_catalog::{Catalog, Objects};
use trawl_common::metrics::METRICS;
use trawl_storage::Merger;

use super::background::Background;
use super::wait_for;

/// The catalog lease the janitor's work is done under.
const JANITOR_LEASE: &str = "janitor";
/// How often the janitor lists the store for orphaned objects.
const ORPHAN_SWEEP_EVERY: Duration = Duration::from_secs(600);
/// How often retention and the restore window are applied.
const RETENTION_EVERY: Duration = Duration::from_secs(30);
/// The shortest lease: a holder that dies is replaced within this time.
const MIN_LEASE: Duration = Duration::from_secs(30);

/// What the janitor does, and how often.
#[derive(Debug, Clone)]
pub struct JanitorSettings {
    /// Pause between merge passes; `None` turns merging off (the rest still runs).
    pub merge_every: Option<Duration>,
    /// Age after which unregistered objects are deleted; `None` turns the sweep off.
    pub orphan_age: Option<Duration>,
    /// How long a deleted database, table or view can be restored before it is purged.
    pub restore_window: Duration,
}

impl JanitorSettings {
    /// The pause between passes: the merge interval, at most the retention interval.
    fn tick(&self) -> Duration {
        self.merge_every
            .map_or(RETENTION_EVERY, |every| every.min(RETENTION_EVERY))
    }

    /// The lease lasts three passes, at least [`MIN_LEASE`].
    fn lease(&self) -> Duration {
        (self.tick() * 3).max(MIN_LEASE)
    }
}

/// Runs the janitor until `stop`: every pass, take (or renew) the lease, and if held do the
/// work that is due. A clean stop releases the lease at once, so another janitor takes over
/// at its next pass; a holder that dies is replaced once the lease runs out.
pub async fn janitor_loop(
    merger: anyhow::Result<Merger>,
    catalog: Arc<dyn Catalog>,
    objects: Arc<dyn Objects>,
    settings: JanitorSettings,
    stop: watch::Receiver<bool>,
) {
    let merger = match merger {
        Ok(merger) => merger,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "the janitor is off: cannot start it");
            return;
        }
    };
    // Merges read, sort and encode on threads of lower priority: while ingest and queries
    // keep both cores busy, merges wait rather than slow them.
    let background = match Background::start("trawl-merge") {
        Ok(background) => Some(background),
        Err(error) => {
            tracing::warn!(%error, "cannot start the merge threads; merges run at normal priority");
            None
        }
    };
    let merger = match background.as_ref().and_then(Background::handle) {
        Some(handle) => merger.on_runtime(handle),
        None => merger,
    };
    let holder = uuid::Uuid::new_v4().simple().to_string();
    let ttl = i64::try_from(settings.lease().as_nanos()).unwrap_or(i64::MAX);
    let mut held = false;
    let mut last_merge: Option<Instant> = None;
    let mut last_retention: Option<Instant> = None;
    let mut last_sweep: Option<Instant> = None;
    let due = |last: Option<Instant>, every: Duration| last.is_none_or(|at| at.elapsed() >= every);
    loop {
        tokio::select! {
            _ = wait_for(stop.clone()) => break,
            _ = tokio::time::sleep(settings.tick()) => {}
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
        METRICS.janitor_lease_held.set(i64::from(held));
        if !held {
            continue;
        }
        let log = Log {
            catalog: catalog.as_ref(),
            node: &holder,
        };
        if let Some(every) = settings.merge_every
            && due(last_merge, every)
        {
            last_merge = Some(Instant::now());
            let started = trawl_common::time::now_nanos();
            let outcome = match merger.merge_once().await {
                Ok(report) => {
                    METRICS
                        .storage_segments_live
                        .set(i64::try_from(report.live).unwrap_or(i64::MAX));
                    METRICS
                        .storage_segments_small
                        .set(i64::try_from(report.small).unwrap_or(i64::MAX));
                    Ok((report.merges > 0 || report.failed > 0).then(|| {
                        format!(
                            "merged {} groups of {} segments ({} rows); {} groups failed; {} live segments, {} small",
                            report.merges, report.inputs, report.rows, report.failed, report.live, report.small
                        )
                    }))
                }
                Err(error) => Err(error.to_string()),
            };
            log.record("MergeSegments", started, outcome).await;
        }
        if due(last_retention, RETENTION_EVERY) {
            last_retention = Some(Instant::now());
            apply_retention(&log, objects.as_ref(), settings.restore_window).await;
        }
        let started = trawl_common::time::now_nanos();
        let outcome = match merger.purge_once().await {
            Ok(0) => Ok(None),
            Ok(deleted) => Ok(Some(format!(
                "deleted the objects of {deleted} tombstoned segments past the grace period"
            ))),
            Err(error) => Err(error.to_string()),
        };
        log.record("DeleteSegments", started, outcome).await;
        if let Some(age) = settings.orphan_age
            && due(last_sweep, ORPHAN_SWEEP_EVERY)
        {
            last_sweep = Some(Instant::now());
            let started = trawl_common::time::now_nanos();
            let outcome = match merger.sweep_orphans(age).await {
                Ok(0) => Ok(None),
                Ok(deleted) => Ok(Some(format!("deleted {deleted} orphaned objects"))),
                Err(error) => Err(error.to_string()),
            };
            log.record("SweepOrphans", started, outcome).await;
        }
    }
    if held && let Err(error) = catalog.release_lease(JANITOR_LEASE, &holder).await {
        tracing::warn!(%error, "cannot release the janitor's lease; it runs out on its own");
    }
    METRICS.janitor_lease_held.set(0);
}

/// Drops rows past their table's retention, and purges deleted objects whose restore window
/// has passed (their segments become tombstones, whose objects the janitor deletes after the
/// grace period).
async fn apply_retention(log: &Log<'_>, objects: &dyn Objects, window: Duration) {
    let window = i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
    let started = trawl_common::time::now_nanos();
    let outcome = match objects.apply_retention(started).await {
        Ok(0) => Ok(None),
        Ok(dropped) => Ok(Some(format!("dropped {dropped} segments past their table's retention"))),
        Err(error) => Err(error.to_string()),
    };
    log.record("Retention", started, outcome).await;
    let started = trawl_common::time::now_nanos();
    let outcome = match objects.purge_deleted(started.saturating_sub(window), started).await {
        Ok(purged) if purged.is_empty() => Ok(None),
        Ok(purged) => Ok(Some(format!(
            "purged {} past their restore window: {}",
            purged.len(),
            purged.join(", ")
        ))),
        Err(error) => Err(error.to_string()),
    };
    log.record("PurgeDeleted", started, outcome).await;
}

/// Where the janitor says what it did: the log, and the catalog's operations (`.show
/// operations`) when it did something or failed.
struct Log<'a> {
    catalog: &'a dyn Catalog,
    node: &'a str,
}

impl Log<'_> {
    async fn record(&self, kind: &str, started_at: i64, outcome: Result<Option<String>, String>) {
        let (state, status) = match outcome {
            Ok(None) => return,
            Ok(Some(done)) => {
                tracing::info!(operation = kind, "{done}");
                ("Completed", done)
            }
            Err(error) => {
                tracing::warn!(operation = kind, %error, "janitor work failed; will retry");
                ("Failed", error)
            }
        };
        let record = trawl_catalog::OperationRecord {
            id: uuid::Uuid::new_v4().to_string(),
            kind: kind.to_string(),
            node: self.node.to_string(),
            started_at,
            finished_at: trawl_common::time::now_nanos(),
            state: state.to_string(),
            status,
        };
        if let Err(error) = self.catalog.record_operation(&record).await {
            tracing::warn!(%error, "cannot record the janitor's operation");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_outlasts_three_passes_and_half_a_minute() {
        let settings = |merge_every| JanitorSettings {
            merge_every,
            orphan_age: None,
            restore_window: Duration::from_secs(1),
        };
        assert_eq!(settings(Some(Duration::from_secs(2))).tick(), Duration::from_secs(2));
        assert_eq!(settings(Some(Duration::from_secs(2))).lease(), MIN_LEASE);
        assert_eq!(settings(Some(Duration::from_secs(300))).tick(), RETENTION_EVERY);
        assert_eq!(settings(None).tick(), RETENTION_EVERY);
        assert_eq!(settings(None).lease(), Duration::from_secs(90));
    }
}
