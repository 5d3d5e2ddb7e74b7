//! The queries of this node, running and recently finished, for `.show queries`: each with
//! its text, database, caller, start, last update, state and failure. Finished queries are
//! kept up to [`KEPT_FINISHED`], the newest first; a query's text is kept up to
//! [`TEXT_LIMIT`] bytes.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Finished queries kept.
pub const KEPT_FINISHED: usize = 200;
/// Bytes of a query's text kept.
pub const TEXT_LIMIT: usize = 64 * 1024;

/// What a query is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    InProgress,
    Completed,
    Failed,
    Cancelled,
}

impl RunState {
    /// The name ADX's `.show queries` gives the state.
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::InProgress => "InProgress",
            RunState::Completed => "Completed",
            RunState::Failed => "Failed",
            RunState::Cancelled => "Cancelled",
        }
    }
}

/// One query.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// A GUID naming this run of the query.
    pub id: String,
    /// The client's request id (`x-ms-client-request-id`), when it sent one.
    pub client_request_id: String,
    pub text: String,
    pub database: String,
    /// Who ran it (the gateway's user name; empty when unknown).
    pub principal: String,
    /// The face it came through (`adx`, `grpc`, `http`).
    pub face: &'static str,
    /// Nanoseconds since the epoch.
    pub started: i64,
    pub last_updated: i64,
    pub state: RunState,
    pub failure: String,
}

/// The journal: running queries by key, then the finished ones.
#[derive(Debug, Default)]
pub struct QueryJournal {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    running: HashMap<u64, JournalEntry>,
    finished: VecDeque<JournalEntry>,
}

impl QueryJournal {
    /// Records a query that starts now; the key ends it ([`QueryJournal::end`]).
    pub fn start(&self, mut entry: JournalEntry) -> u64 {
        if entry.text.len() > TEXT_LIMIT {
            let mut cut = TEXT_LIMIT;
            while !entry.text.is_char_boundary(cut) {
                cut -= 1;
            }
            entry.text.truncate(cut);
        }
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.next += 1;
        let key = inner.next;
        inner.running.insert(key, entry);
        key
    }

    /// The query of `key` ended in `state` (with `failure` when it failed).
    pub fn end(&self, key: u64, state: RunState, failure: String, now: i64) {
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(mut entry) = inner.running.remove(&key) else {
            return;
        };
        entry.state = state;
        entry.failure = failure;
        entry.last_updated = now;
        inner.finished.push_front(entry);
        inner.finished.truncate(KEPT_FINISHED);
    }

    /// The running queries (oldest first), then the finished ones (newest first), of
    /// `principal` only unless it is `None` (a caller who may see everyone's).
    pub fn entries(&self, principal: Option<&str>, now: i64) -> Vec<JournalEntry> {
        let inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut running: Vec<JournalEntry> = inner.running.values().cloned().collect();
        running.sort_by_key(|e| e.started);
        for entry in &mut running {
            entry.last_updated = now;
        }
        running
            .into_iter()
            .chain(inner.finished.iter().cloned())
            .filter(|e| principal.is_none_or(|p| e.principal == p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str, principal: &str, started: i64) -> JournalEntry {
        JournalEntry {
            id: format!("id-{text}"),
            client_request_id: String::new(),
            text: text.into(),
            database: "default".into(),
            principal: principal.into(),
            face: "adx",
            started,
            last_updated: started,
            state: RunState::InProgress,
            failure: String::new(),
        }
    }

    #[test]
    fn running_then_finished_newest_first_each_caller_their_own() {
        let journal = QueryJournal::default();
        let a = journal.start(entry("a", "ann", 1));
        let b = journal.start(entry("b", "bob", 2));
        let c = journal.start(entry("c", "ann", 3));
        journal.end(a, RunState::Completed, String::new(), 10);
        journal.end(c, RunState::Failed, "bad".into(), 11);
        let all: Vec<(String, RunState)> = journal
            .entries(None, 20)
            .into_iter()
            .map(|e| (e.text, e.state))
            .collect();
        assert_eq!(
            all,
            vec![
                ("b".into(), RunState::InProgress),
                ("c".into(), RunState::Failed),
                ("a".into(), RunState::Completed),
            ]
        );
        let ann: Vec<String> = journal.entries(Some("ann"), 20).into_iter().map(|e| e.text).collect();
        assert_eq!(ann, vec!["c", "a"]);
        journal.end(b, RunState::Cancelled, String::new(), 30);
        journal.end(b, RunState::Completed, String::new(), 31);
        assert_eq!(journal.entries(Some("bob"), 40)[0].state, RunState::Cancelled);
    }

    #[test]
    fn keeps_a_bounded_history_and_text() {
        let journal = QueryJournal::default();
        for i in 0..(KEPT_FINISHED + 10) {
            let key = journal.start(entry(&"é".repeat(TEXT_LIMIT), "ann", i as i64));
            journal.end(key, RunState::Completed, String::new(), i as i64);
        }
        let entries = journal.entries(None, 0);
        assert_eq!(entries.len(), KEPT_FINISHED);
        assert!(entries.iter().all(|e| e.text.len() <= TEXT_LIMIT));
        assert_eq!(entries[0].started, (KEPT_FINISHED + 9) as i64);
    }
}
