//! Storing a retried request once: senders retry what was not acknowledged, so a request whose
//! segment was registered just before a crash (or before its answer was lost) arrives again.
//! Each request's key (a hash of where it goes and its decompressed body, [`RequestKey`]) is
//! registered in the catalog in the same transaction as its segment and remembered for the
//! deduplication window: a request with a remembered key is acknowledged without storing it
//! again. A copy that arrives while the first is still being flushed waits for that flush and
//! gets its answer. The protocol is at-least-once; storage is exactly-once within the window.
//!
//! The keys live in memory (loaded from the catalog at start) and in the catalog (pruned once
//! they leave the window). When a commit's outcome is unknown (the catalog failed mid-commit
//! past the retry time), its keys are "uncertain" and the next copy asks the catalog. When
//! several ingest processes share the catalog (a cluster), a key this process does not know
//! is looked up in the catalog too ([`Dedup::shared`]): a retry that lands on another node
//! than the first attempt is still stored once.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use tokio::sync::oneshot;
use trawl_common::TrawlError;

/// A pending key older than this (nanoseconds) belongs to a flush that never finished (its
/// task failed): a new copy of the request is stored instead of waiting for it.
const STALE_PENDING_NANOS: i64 = 120 * 1_000_000_000;

/// Most keys remembered in memory; past it the oldest are forgotten early (the catalog still
/// has them for the window, but only uncertain keys are looked up there).
pub const MAX_REMEMBERED: usize = 4_000_000;

/// The identity of one request's rows bound for one table: 128 bits of XXH3 over the route,
/// the database, the table and the decompressed body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestKey(u128);

impl RequestKey {
    /// The key of a request body: `route` names the protocol and signal (`otlp/logs`,
    /// `vendor/series`, …) so the same bytes sent to two routes are two requests.
    pub fn of_body(route: &str, body: &[u8]) -> RequestKey {
        let mut hasher = twox_hash::XxHash3_128::new();
        hasher.write(route.as_bytes());
        hasher.write(&[0]);
        hasher.write(body);
        RequestKey(hasher.finish_128())
    }

    /// The key of the part of a request bound for `database.table`.
    pub fn for_table(self, database: &str, table: &str) -> RequestKey {
        let mut hasher = twox_hash::XxHash3_128::new();
        hasher.write(&self.0.to_le_bytes());
        hasher.write(database.as_bytes());
        hasher.write(&[0]);
        hasher.write(table.as_bytes());
        RequestKey(hasher.finish_128())
    }

    /// 32 hex digits, as the catalog stores it.
    pub fn to_hex(self) -> String {
        format!("{:032x}", self.0)
    }

    pub fn from_hex(text: &str) -> Option<RequestKey> {
        (text.len() == 32)
            .then(|| u128::from_str_radix(text, 16).ok())
            .flatten()
            .map(RequestKey)
    }
}

type Waiter = oneshot::Sender<Result<(), TrawlError>>;

/// What [`Dedup::admit`] decided for a request.
#[derive(Debug)]
pub enum Admission {
    /// Stored already: acknowledge.
    Stored,
    /// The same request is being flushed: wait for its answer.
    Wait(oneshot::Receiver<Result<(), TrawlError>>),
    /// Its last commit's outcome is unknown: ask the catalog first.
    Uncertain,
    /// Unknown here, and other processes write to the same catalog: ask it whether one of
    /// them stored it (when the catalog cannot answer, store it).
    Check,
    /// New: store it (its key is now pending).
    Store,
}

/// The remembered and pending keys.
#[derive(Debug)]
pub struct Dedup {
    window_nanos: i64,
    committed: HashMap<RequestKey, i64>,
    order: VecDeque<(i64, RequestKey)>,
    /// Keys in a buffer or being flushed: since when, and copies waiting for the answer.
    pending: HashMap<RequestKey, (i64, Vec<Waiter>)>,
    uncertain: HashSet<RequestKey>,
    /// Other processes commit to the same catalog: unknown keys are looked up there.
    shared: bool,
}

impl Dedup {
    pub fn new(window: Duration) -> Dedup {
        Dedup {
            window_nanos: i64::try_from(window.as_nanos()).unwrap_or(i64::MAX),
            committed: HashMap::new(),
            order: VecDeque::new(),
            pending: HashMap::new(),
            uncertain: HashSet::new(),
            shared: false,
        }
    }

    /// The same, for a process that shares its catalog with other ingest processes.
    pub fn shared(mut self, shared: bool) -> Dedup {
        self.shared = shared;
        self
    }

    pub fn enabled(&self) -> bool {
        self.window_nanos > 0
    }

    pub fn window_nanos(&self) -> i64 {
        self.window_nanos
    }

    /// Keys remembered.
    pub fn len(&self) -> usize {
        self.committed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.committed.is_empty()
    }

    /// Remembers a key committed at `at` (nanoseconds).
    pub fn remember(&mut self, key: RequestKey, at: i64) {
        self.uncertain.remove(&key);
        if self.committed.insert(key, at).is_none() {
            self.order.push_back((at, key));
        }
        while self.order.len() > MAX_REMEMBERED {
            if let Some((_, old)) = self.order.pop_front() {
                self.committed.remove(&old);
            }
        }
    }

    /// Forgets keys committed before the window.
    pub fn expire(&mut self, now: i64) {
        let cutoff = now.saturating_sub(self.window_nanos);
        while let Some(&(at, key)) = self.order.front() {
            if at >= cutoff {
                break;
            }
            self.order.pop_front();
            if self.committed.get(&key) == Some(&at) {
                self.committed.remove(&key);
            }
        }
    }

    /// Decides what to do with a request of `key` arriving at `now`.
    pub fn admit(&mut self, key: RequestKey, now: i64) -> Admission {
        self.decide(key, now, self.shared)
    }

    fn decide(&mut self, key: RequestKey, now: i64, check_unknown: bool) -> Admission {
        self.expire(now);
        if self.committed.contains_key(&key) {
            return Admission::Stored;
        }
        match self.pending.get_mut(&key) {
            Some((since, waiters)) if now.saturating_sub(*since) < STALE_PENDING_NANOS => {
                let (sender, receiver) = oneshot::channel();
                waiters.push(sender);
                return Admission::Wait(receiver);
            }
            Some(_) => {
                // Its flush never answered: the copies waiting for it are told to retry.
                let failed = Err(TrawlError::unavailable(
                    "the earlier copy of this request was lost; retry",
                ));
                if let Some((_, waiters)) = self.pending.remove(&key) {
                    for waiter in waiters {
                        let _ = waiter.send(failed.clone());
                    }
                }
            }
            None => {}
        }
        if self.uncertain.contains(&key) {
            return Admission::Uncertain;
        }
        if check_unknown {
            return Admission::Check;
        }
        self.pending.insert(key, (now, Vec::new()));
        Admission::Store
    }

    /// The catalog answered for an uncertain or unknown key: `stored` or not (then it is
    /// pending now, or a copy of it is).
    pub fn resolve(&mut self, key: RequestKey, stored: bool, now: i64) -> Admission {
        self.uncertain.remove(&key);
        if stored {
            self.remember(key, now);
            return Admission::Stored;
        }
        self.decide(key, now, false)
    }

    /// The flush of `key` ended: copies waiting for it get `result`; a stored key is
    /// remembered; when `unknown`, the commit may or may not have gone through.
    pub fn finish(&mut self, key: RequestKey, result: &Result<(), TrawlError>, unknown: bool, now: i64) {
        for waiter in self
            .pending
            .remove(&key)
            .map(|(_, waiters)| waiters)
            .unwrap_or_default()
        {
            let _ = waiter.send(result.clone());
        }
        match result {
            Ok(()) => self.remember(key, now),
            Err(_) if unknown => {
                self.uncertain.insert(key);
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_catalog_is_asked_about_keys_this_process_does_not_know() {
        let key = RequestKey::of_body("otlp/logs", b"body");
        let mut shared = Dedup::new(Duration::from_secs(60)).shared(true);
        assert!(matches!(shared.admit(key, 1), Admission::Check));
        // Another node stored it: acknowledged, and remembered here from now on.
        assert!(matches!(shared.resolve(key, true, 2), Admission::Stored));
        assert!(matches!(shared.admit(key, 3), Admission::Stored));
        // Nobody stored it: this copy stores it, and a copy arriving meanwhile waits for it.
        let other = RequestKey::of_body("otlp/logs", b"other");
        assert!(matches!(shared.admit(other, 4), Admission::Check));
        assert!(matches!(shared.resolve(other, false, 5), Admission::Store));
        assert!(matches!(shared.admit(other, 6), Admission::Wait(_)));
        // A process of its own never asks.
        let mut alone = Dedup::new(Duration::from_secs(60));
        assert!(matches!(alone.admit(key, 1), Admission::Store));
    }

    #[test]
    fn keys_differ_by_route_table_and_body_and_survive_hex() {
        let a = RequestKey::of_body("otlp/logs", b"body");
        assert_ne!(a, RequestKey::of_body("otlp/traces", b"body"));
        assert_ne!(a, RequestKey::of_body("otlp/logs", b"body2"));
        assert_ne!(a.for_table("db", "t"), a.for_table("db", "u"));
        assert_ne!(a.for_table("db", "t"), a.for_table("dbt", ""));
        let key = a.for_table("db", "t");
        assert_eq!(RequestKey::from_hex(&key.to_hex()), Some(key));
        assert_eq!(RequestKey::from_hex("zz"), None);
    }

    #[test]
    fn a_request_is_stored_once_within_the_window() {
        let second = 1_000_000_000;
        let mut dedup = Dedup::new(Duration::from_secs(60));
        let key = RequestKey::of_body("r", b"x");
        assert!(matches!(dedup.admit(key, 0), Admission::Store));
        // A copy while the first is flushing waits for its answer.
        let Admission::Wait(mut waiting) = dedup.admit(key, second) else {
            panic!("the copy should wait");
        };
        dedup.finish(key, &Ok(()), false, 2 * second);
        assert!(matches!(waiting.try_recv(), Ok(Ok(()))));
        assert!(matches!(dedup.admit(key, 30 * second), Admission::Stored));
        // Past the window it is new again.
        assert!(matches!(dedup.admit(key, 63 * second), Admission::Store));
        assert!(dedup.is_empty());
    }

    #[test]
    fn a_flush_that_never_answers_does_not_hold_copies_forever() {
        let second = 1_000_000_000;
        let mut dedup = Dedup::new(Duration::from_secs(600));
        let key = RequestKey::of_body("r", b"x");
        assert!(matches!(dedup.admit(key, 0), Admission::Store));
        let Admission::Wait(mut waiting) = dedup.admit(key, 10 * second) else {
            panic!("the copy should wait");
        };
        // Long after, its flush has not answered: the next copy is stored, the waiting one
        // is told to retry.
        assert!(matches!(dedup.admit(key, 200 * second), Admission::Store));
        assert!(matches!(waiting.try_recv(), Ok(Err(_))));
    }

    #[test]
    fn failed_flushes_are_retried_and_unknown_outcomes_asked_about() {
        let mut dedup = Dedup::new(Duration::from_secs(60));
        let key = RequestKey::of_body("r", b"x");
        assert!(matches!(dedup.admit(key, 0), Admission::Store));
        dedup.finish(key, &Err(TrawlError::unavailable("down")), false, 0);
        assert!(matches!(dedup.admit(key, 0), Admission::Store));
        dedup.finish(key, &Err(TrawlError::unavailable("lost")), true, 0);
        assert!(matches!(dedup.admit(key, 0), Admission::Uncertain));
        assert!(matches!(dedup.resolve(key, true, 0), Admission::Stored));
        assert_eq!(dedup.len(), 1);
    }
}
