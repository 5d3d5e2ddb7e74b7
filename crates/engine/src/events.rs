//! What a running query reports, in order ([`QueryEvent`]), the stream that carries it
//! ([`QueryEvents`]), and how a query is asked to run ([`RunOptions`]). `run.rs` runs it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::record_batch::RecordBatch;
use tokio::sync::mpsc;
use trawl_common::{KqlType, TrawlError};
use trawl_planner::{QueryWarning, Visualization};

use crate::progress::Progress;

/// How a query is run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Report progress this often (and once at the start and the end); none: never.
    pub progress_every: Option<Duration>,
    /// How long the query may run, as the client asked (none: the engine's default). The
    /// engine cuts it to its `max_timeout` and stops the query with a `Timeout` error then.
    pub timeout: Option<Duration>,
    /// Send refined snapshots ([`QueryEvent::Snapshot`]) of time-sliced queries.
    pub snapshots: bool,
    /// The face the query came through (`grpc`, `adx`, `http`), for metrics; `http` when
    /// empty.
    pub face: &'static str,
    /// The share of a cluster's query nodes the query may spread over, in percent (ADX's
    /// `query_fanout_nodes_percent`); none: all of them. A share of one node keeps the query
    /// on the node that received it.
    pub fanout_nodes_percent: Option<u8>,
    /// Who runs the query (the gateway's user name), for `.show queries`.
    pub principal: String,
    /// The client's request id, for `.show queries`.
    pub client_request_id: String,
}

/// What happens while a query runs, in order: progress at any time; `Planned` once; per
/// result table `TableStarted`, its `Rows`, `TableFinished`; then `Finished` or `Failed`.
#[derive(Debug, Clone)]
pub enum QueryEvent {
    Progress(Box<Progress>),
    /// Planning succeeded: the warnings and visualization known before running.
    Planned {
        warnings: Vec<QueryWarning>,
        visualization: Option<Visualization>,
    },
    /// A result table starts: `PrimaryResult`, then `ExtraTable_0`, ...
    TableStarted {
        name: String,
        columns: Vec<(String, KqlType)>,
    },
    /// Rows of the table last started.
    Rows(RecordBatch),
    /// A refined snapshot of the table last started, before its final rows: it replaces every
    /// row (and snapshot) sent so far. Only with [`RunOptions::snapshots`], for queries that
    /// run in time slices (see `slices.rs`); the final rows follow as `Rows`.
    Snapshot(Vec<RecordBatch>),
    /// The table last started has all its rows.
    TableFinished {
        rows: usize,
    },
    /// A warning found while running (such as a truncated result).
    Warning(QueryWarning),
    /// Segments the query left out because they cannot be read; the result holds the rest.
    PartialFailure(PartialFailure),
    /// The query succeeded; nothing follows.
    Finished,
    /// The query failed; nothing follows.
    Failed(TrawlError),
}

/// Segments a query left out because they cannot be read, with the same reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialFailure {
    pub segment_ids: Vec<String>,
    pub message: String,
}

impl PartialFailure {
    /// `segments` grouped by their reason, in the order each reason first appears.
    pub fn grouped(segments: Vec<trawl_storage::UnreadableSegment>) -> Vec<PartialFailure> {
        let mut failures: Vec<PartialFailure> = Vec::new();
        for segment in segments {
            match failures.iter_mut().find(|f| f.message == segment.message) {
                Some(failure) => failure.segment_ids.push(segment.id),
                None => failures.push(PartialFailure {
                    segment_ids: vec![segment.id],
                    message: segment.message,
                }),
            }
        }
        failures
    }

    /// The failure as a warning, for faces without a field of their own for it.
    pub fn warning(&self) -> QueryWarning {
        const NAMED: usize = 10;
        let mut ids = self
            .segment_ids
            .iter()
            .take(NAMED)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if self.segment_ids.len() > NAMED {
            ids.push_str(&format!(" and {} more", self.segment_ids.len() - NAMED));
        }
        QueryWarning {
            kind: "PartialFailure".to_string(),
            message: format!(
                "the result leaves out {} segment(s) that cannot be read ({}): {ids}",
                self.segment_ids.len(),
                self.message
            ),
            location: None,
        }
    }
}

/// The events of a running query. Dropping it cancels the query.
#[derive(Debug)]
pub struct QueryEvents {
    receiver: mpsc::Receiver<QueryEvent>,
    ended: bool,
}

impl QueryEvents {
    pub(crate) fn new(receiver: mpsc::Receiver<QueryEvent>) -> QueryEvents {
        QueryEvents { receiver, ended: false }
    }

    /// The next event; `None` after `Finished` or `Failed`.
    pub async fn next_event(&mut self) -> Option<QueryEvent> {
        futures::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<QueryEvent>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.receiver.poll_recv(cx) {
            Poll::Ready(Some(event)) => {
                self.ended = matches!(event, QueryEvent::Finished | QueryEvent::Failed(_));
                Poll::Ready(Some(event))
            }
            // The run ended without saying so: it panicked.
            Poll::Ready(None) => {
                self.ended = true;
                Poll::Ready(Some(QueryEvent::Failed(TrawlError::internal(
                    "the query stopped unexpectedly; the server log has details",
                ))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl futures::Stream for QueryEvents {
    type Item = QueryEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<QueryEvent>> {
        self.get_mut().poll_event(cx)
    }
}
