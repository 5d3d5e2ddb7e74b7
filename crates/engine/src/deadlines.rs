//! Queries past their time limit are given up by a thread of their own.
//!
//! A query's run waits for its deadline on the runtime; but a function evaluating a batch
//! (a regex over a long string, an array of millions of elements) holds its worker thread
//! until the batch is done, and when that work runs inside the run's own task the deadline
//! cannot even be seen. This thread keeps every running query's deadline and gives the
//! query's memory account up when it passes ([`QueryMemory::give_up`]): the function's meter
//! sees that at its next check and fails the batch, the worker is free again, and the run
//! answers with its timeout.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Instant;

use trawl_common::memory::QueryMemory;

/// A deadline being watched; dropping it stops the watch (the run ended in time).
pub(crate) struct Watched(Option<(Instant, u64)>);

impl Drop for Watched {
    fn drop(&mut self) {
        if let (Some(key), Some(watch)) = (self.0.take(), WATCH.get().and_then(Option::as_deref))
            && let Ok(mut pending) = watch.pending.lock()
        {
            pending.remove(&key);
        }
    }
}

#[derive(Default)]
struct Watch {
    /// Deadlines of running queries, soonest first (ties told apart by a sequence number).
    pending: Mutex<BTreeMap<(Instant, u64), Weak<QueryMemory>>>,
    changed: Condvar,
}

static WATCH: OnceLock<Option<Arc<Watch>>> = OnceLock::new();

fn watch() -> Option<&'static Watch> {
    WATCH
        .get_or_init(|| {
            let watch = Arc::new(Watch::default());
            let thread = Arc::clone(&watch);
            std::thread::Builder::new()
                .name("trawl-deadlines".into())
                .spawn(move || run(&thread))
                .map_err(|error| tracing::warn!(%error, "no deadline thread; long functions run to their batch's end"))
                .ok()
                .map(|_| watch)
        })
        .as_deref()
}

fn run(watch: &Watch) {
    let Ok(mut pending) = watch.pending.lock() else {
        return;
    };
    loop {
        let now = Instant::now();
        while let Some(entry) = pending.first_entry()
            && entry.key().0 <= now
        {
            if let Some(account) = entry.remove().upgrade() {
                account.give_up();
            }
        }
        let next = pending.keys().next().map(|(at, _)| *at);
        pending = match next {
            Some(at) => match watch.changed.wait_timeout(pending, at.saturating_duration_since(now)) {
                Ok((guard, _)) => guard,
                Err(_) => return,
            },
            None => match watch.changed.wait(pending) {
                Ok(guard) => guard,
                Err(_) => return,
            },
        };
    }
}

/// Gives `account` up at `at`, unless the returned watch is dropped first.
pub(crate) fn give_up_at(at: Instant, account: &Arc<QueryMemory>) -> Watched {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let Some(watch) = watch() else {
        return Watched(None);
    };
    let key = (at, SEQUENCE.fetch_add(1, Ordering::Relaxed));
    let Ok(mut pending) = watch.pending.lock() else {
        return Watched(None);
    };
    let earliest = pending.keys().next().is_none_or(|first| key < *first);
    pending.insert(key, Arc::downgrade(account));
    if earliest {
        watch.changed.notify_one();
    }
    Watched(Some(key))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_account_is_given_up_at_its_deadline() {
        let later = QueryMemory::standalone(1 << 20);
        let soon = QueryMemory::standalone(1 << 20);
        let _later = give_up_at(Instant::now() + Duration::from_secs(3600), &later);
        let _soon = give_up_at(Instant::now() + Duration::from_millis(50), &soon);
        let ended = QueryMemory::standalone(1 << 20);
        drop(give_up_at(Instant::now() + Duration::from_millis(20), &ended));
        let waited = Instant::now();
        while soon.exceeded().is_none() && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            soon.exceeded().map(|e| e.kind),
            Some(trawl_common::memory::LimitKind::GivenUp)
        );
        assert!(later.exceeded().is_none());
        assert!(ended.exceeded().is_none(), "a run that ended in time is not given up");
    }
}
