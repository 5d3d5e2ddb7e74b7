//! A brute-force limit on credentials: after [`MAX_FAILURES`] failed checks of one account
//! name (sign-in) or from one client address (bearer tokens) within [`WINDOW`], further
//! attempts for that name or from that address are refused without checking, with 429 and `Retry-After`, until the window
//! that began with the first failure ends. A success clears the count. Keys are bounded in
//! number, so random names cannot grow the table without limit.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed checks of one key allowed within [`WINDOW`].
pub const MAX_FAILURES: u32 = 10;
/// How long failures are remembered (and a blocked key stays blocked).
pub const WINDOW: Duration = Duration::from_secs(300);
/// Keys tracked at most; past it, expired entries go, then the oldest.
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Default)]
pub struct Throttle {
    failures: Mutex<HashMap<String, (u32, Instant)>>,
}

impl Throttle {
    /// `Err(retry_after)` while `key` is blocked.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let Ok(failures) = self.failures.lock() else {
            return Ok(());
        };
        match failures.get(key) {
            Some(&(count, since)) if count >= MAX_FAILURES && now.duration_since(since) < WINDOW => Err(WINDOW
                .saturating_sub(now.duration_since(since))
                .max(Duration::from_secs(1))),
            _ => Ok(()),
        }
    }

    /// Counts a failed check of `key`.
    pub fn failed(&self, key: &str, now: Instant) {
        let Ok(mut failures) = self.failures.lock() else {
            return;
        };
        if failures.len() >= MAX_KEYS && !failures.contains_key(key) {
            failures.retain(|_, (_, since)| now.duration_since(*since) < WINDOW);
            if failures.len() >= MAX_KEYS
                && let Some(oldest) = failures
                    .iter()
                    .min_by_key(|(_, (_, since))| *since)
                    .map(|(k, _)| k.clone())
            {
                failures.remove(&oldest);
            }
        }
        let entry = failures.entry(key.to_string()).or_insert((0, now));
        if now.duration_since(entry.1) >= WINDOW {
            *entry = (0, now);
        }
        entry.0 += 1;
    }

    /// A successful check of `key`: its failures are forgotten.
    pub fn succeeded(&self, key: &str) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_blocked_after_its_failures_until_the_window_ends() {
        let throttle = Throttle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert!(throttle.check("name:alice", start).is_ok());
            throttle.failed("name:alice", start);
        }
        let retry = throttle.check("name:alice", start + Duration::from_secs(60));
        assert_eq!(retry, Err(Duration::from_secs(240)));
        assert!(throttle.check("name:bob", start).is_ok(), "other keys are not affected");
        assert!(throttle.check("name:alice", start + WINDOW).is_ok(), "the window ended");
    }

    #[test]
    fn a_success_clears_the_count_and_old_failures_expire() {
        let throttle = Throttle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            throttle.failed("k", start);
        }
        throttle.succeeded("k");
        throttle.failed("k", start);
        assert!(throttle.check("k", start).is_ok());
        for _ in 0..MAX_FAILURES - 1 {
            throttle.failed("late", start);
        }
        throttle.failed("late", start + WINDOW);
        assert!(
            throttle.check("late", start + WINDOW).is_ok(),
            "the first failures expired"
        );
    }
}
