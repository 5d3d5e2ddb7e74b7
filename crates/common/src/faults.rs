//! Injected faults for reliability tests: an object store that is slow, refuses puts, is down
//! or has a full disk, and a catalog that is down, refuses commits or loses the connection
//! after a commit went through.
//!
//! A [`Faults`] is shared by the object store wrapper (`trawl_storage::ObservedStore`), the
//! local put path and the catalog wrapper (`trawl_catalog::FaultyCatalog`). It is installed
//! only when `trawl serve --fault-injection` is given (never by default); the operator port then
//! serves `GET`/`POST /debug/faults` to read and set it ([`FaultSpec`]). Every fault is
//! temporary: a count of calls or a duration, after which the part behaves again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What a client asks for; absent fields leave that fault as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Clears every fault first.
    #[serde(default)]
    pub clear: bool,
    /// Every object store call fails for this long, as if the store were unreachable.
    pub store_down_secs: Option<u64>,
    /// Puts fail with "no space left on device" for this long, after writing part of the file.
    pub store_disk_full_secs: Option<u64>,
    /// The next this many puts fail.
    pub store_failed_puts: Option<u32>,
    /// Every put waits this long first (0 turns it off).
    pub store_put_delay_ms: Option<u64>,
    /// Every catalog call fails for this long, as if its database were unreachable.
    pub catalog_down_secs: Option<u64>,
    /// The next this many segment commits fail before anything is written.
    pub catalog_failed_commits: Option<u32>,
    /// The next this many segment commits go through, then report a lost connection.
    pub catalog_lost_commits: Option<u32>,
    /// Every segment commit's answer arrives this long after the commit went through (0
    /// turns it off): the window in which a crash leaves a stored request unacknowledged.
    pub catalog_commit_delay_ms: Option<u64>,
}

/// The faults in force and how many were injected, as `GET /debug/faults` reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FaultReport {
    pub store_down_for_secs: f64,
    pub store_disk_full_for_secs: f64,
    pub store_failed_puts: u32,
    pub store_put_delay_ms: u64,
    pub catalog_down_for_secs: f64,
    pub catalog_failed_commits: u32,
    pub catalog_lost_commits: u32,
    pub catalog_commit_delay_ms: u64,
    /// Calls that failed or were delayed because of an injected fault.
    pub injected: u64,
}

/// How an object store call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFailure {
    /// Unreachable: a connection error.
    Down,
    /// The disk is full; a put writes part of its file first.
    DiskFull,
    /// One put refused.
    PutRefused,
}

impl StoreFailure {
    /// The error a failing call returns.
    pub fn to_io_error(self) -> std::io::Error {
        match self {
            StoreFailure::Down => std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "the object store is unreachable (injected fault)",
            ),
            StoreFailure::DiskFull => std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left on device (injected fault)",
            ),
            StoreFailure::PutRefused => std::io::Error::other("the object store refused the put (injected fault)"),
        }
    }
}

/// What a segment commit meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitFault {
    None,
    /// Fails before anything is written.
    FailBefore,
    /// Goes through, then the caller is told the connection was lost.
    LoseAfter,
}

#[derive(Debug, Default)]
struct State {
    store_down_until: Option<Instant>,
    store_disk_full_until: Option<Instant>,
    store_failed_puts: u32,
    store_put_delay: Duration,
    catalog_down_until: Option<Instant>,
    catalog_failed_commits: u32,
    catalog_lost_commits: u32,
    catalog_commit_delay: Duration,
    injected: u64,
}

/// The faults in force; cheap to consult on every call.
#[derive(Debug, Default)]
pub struct Faults {
    state: Mutex<State>,
}

fn until(secs: u64) -> Option<Instant> {
    (secs > 0).then(|| Instant::now() + Duration::from_secs(secs))
}

fn remaining(deadline: Option<Instant>) -> f64 {
    deadline.map_or(0.0, |d| d.saturating_duration_since(Instant::now()).as_secs_f64())
}

fn active(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() < d)
}

impl Faults {
    pub fn new() -> Faults {
        Faults::default()
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        // A poisoned lock only means a panic elsewhere; the plain data inside is still usable.
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut state)
    }

    /// Applies `spec` and returns the faults now in force.
    pub fn apply(&self, spec: &FaultSpec) -> FaultReport {
        self.with_state(|state| {
            if spec.clear {
                *state = State {
                    injected: state.injected,
                    ..State::default()
                };
            }
            if let Some(secs) = spec.store_down_secs {
                state.store_down_until = until(secs);
            }
            if let Some(secs) = spec.store_disk_full_secs {
                state.store_disk_full_until = until(secs);
            }
            if let Some(count) = spec.store_failed_puts {
                state.store_failed_puts = count;
            }
            if let Some(ms) = spec.store_put_delay_ms {
                state.store_put_delay = Duration::from_millis(ms);
            }
            if let Some(secs) = spec.catalog_down_secs {
                state.catalog_down_until = until(secs);
            }
            if let Some(count) = spec.catalog_failed_commits {
                state.catalog_failed_commits = count;
            }
            if let Some(count) = spec.catalog_lost_commits {
                state.catalog_lost_commits = count;
            }
            if let Some(ms) = spec.catalog_commit_delay_ms {
                state.catalog_commit_delay = Duration::from_millis(ms);
            }
        });
        self.report()
    }

    pub fn report(&self) -> FaultReport {
        self.with_state(|state| FaultReport {
            store_down_for_secs: remaining(state.store_down_until),
            store_disk_full_for_secs: remaining(state.store_disk_full_until),
            store_failed_puts: state.store_failed_puts,
            store_put_delay_ms: u64::try_from(state.store_put_delay.as_millis()).unwrap_or(u64::MAX),
            catalog_down_for_secs: remaining(state.catalog_down_until),
            catalog_failed_commits: state.catalog_failed_commits,
            catalog_lost_commits: state.catalog_lost_commits,
            catalog_commit_delay_ms: u64::try_from(state.catalog_commit_delay.as_millis()).unwrap_or(u64::MAX),
            injected: state.injected,
        })
    }

    /// The delay before a put and how it fails, if it does.
    pub fn on_put(&self) -> (Duration, Option<StoreFailure>) {
        self.with_state(|state| {
            let failure = if active(state.store_down_until) {
                Some(StoreFailure::Down)
            } else if active(state.store_disk_full_until) {
                Some(StoreFailure::DiskFull)
            } else if state.store_failed_puts > 0 {
                state.store_failed_puts -= 1;
                Some(StoreFailure::PutRefused)
            } else {
                None
            };
            let delay = state.store_put_delay;
            if failure.is_some() || !delay.is_zero() {
                state.injected += 1;
            }
            (delay, failure)
        })
    }

    /// How any other object store call (get, list, delete) fails, if it does.
    pub fn on_store_call(&self) -> Option<StoreFailure> {
        self.with_state(|state| {
            let down = active(state.store_down_until);
            if down {
                state.injected += 1;
            }
            down.then_some(StoreFailure::Down)
        })
    }

    /// Whether a catalog call fails (its database is unreachable).
    pub fn catalog_down(&self) -> bool {
        self.with_state(|state| {
            let down = active(state.catalog_down_until);
            if down {
                state.injected += 1;
            }
            down
        })
    }

    /// How long a commit's answer is held after the commit went through.
    pub fn commit_delay(&self) -> Duration {
        self.with_state(|state| state.catalog_commit_delay)
    }

    /// What a segment commit meets.
    pub fn on_commit(&self) -> CommitFault {
        self.with_state(|state| {
            let fault = if active(state.catalog_down_until) || state.catalog_failed_commits > 0 {
                state.catalog_failed_commits = state.catalog_failed_commits.saturating_sub(1);
                CommitFault::FailBefore
            } else if state.catalog_lost_commits > 0 {
                state.catalog_lost_commits -= 1;
                CommitFault::LoseAfter
            } else {
                CommitFault::None
            };
            if fault != CommitFault::None {
                state.injected += 1;
            }
            fault
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_faults_run_out_and_clear_resets() {
        let faults = Faults::new();
        assert_eq!(faults.on_put(), (Duration::ZERO, None));
        faults.apply(&FaultSpec {
            store_failed_puts: Some(2),
            catalog_lost_commits: Some(1),
            ..FaultSpec::default()
        });
        assert_eq!(faults.on_put().1, Some(StoreFailure::PutRefused));
        assert_eq!(faults.on_put().1, Some(StoreFailure::PutRefused));
        assert_eq!(faults.on_put().1, None);
        assert_eq!(faults.on_commit(), CommitFault::LoseAfter);
        assert_eq!(faults.on_commit(), CommitFault::None);
        assert_eq!(faults.report().injected, 3);

        faults.apply(&FaultSpec {
            store_down_secs: Some(60),
            catalog_down_secs: Some(60),
            ..FaultSpec::default()
        });
        assert_eq!(faults.on_store_call(), Some(StoreFailure::Down));
        assert_eq!(faults.on_put().1, Some(StoreFailure::Down));
        assert!(faults.catalog_down());
        assert_eq!(faults.on_commit(), CommitFault::FailBefore);
        let report = faults.apply(&FaultSpec {
            clear: true,
            ..FaultSpec::default()
        });
        assert_eq!(report.store_down_for_secs, 0.0);
        assert_eq!(faults.on_store_call(), None);
        assert!(!faults.catalog_down());
        assert_eq!(report.injected, 7);
    }

    #[test]
    fn specs_refuse_unknown_fields() {
        assert!(serde_json::from_str::<FaultSpec>(r#"{"store_down_secs": 10}"#).is_ok());
        assert!(serde_json::from_str::<FaultSpec>(r#"{"store_dwn_secs": 10}"#).is_err());
    }
}
