//! A result table's rows on their way out: the result limit, and the first rows of a
//! distributed plan held back until it ends.

use datafusion::arrow::record_batch::RecordBatch;
use trawl_planner::QueryWarning;

use super::{Gone, Run};
use crate::events::QueryEvent;

/// Sends a table's rows up to the result limit, then a `ResultTruncated` warning.
///
/// A distributed plan's first rows are held back (up to [`HELD_RESULT_BYTES`]) until the plan
/// ends: a node lost mid-run then fails the run before any row went out, and the query runs
/// again without it. A plan's last stage runs as tasks on several nodes: one task's rows can
/// be ready before a call to a node that is gone fails.
pub(super) struct SentRows<'a> {
    table: &'a str,
    limit: usize,
    /// Rows sent or held.
    pub(super) rows: usize,
    held: Vec<RecordBatch>,
    held_bytes: usize,
    /// Bytes of rows held back at most (0: none).
    hold_bytes: usize,
    /// Whether any row went out.
    pub(super) delivered: bool,
}

/// The most result bytes a distributed plan holds back before sending them (see [`SentRows`]).
pub(super) const HELD_RESULT_BYTES: usize = 8 << 20;

impl<'a> SentRows<'a> {
    pub(super) fn new(table: &'a str, limit: usize) -> SentRows<'a> {
        SentRows {
            table,
            limit,
            rows: 0,
            held: Vec::new(),
            held_bytes: 0,
            hold_bytes: 0,
            delivered: false,
        }
    }

    /// Holds up to `bytes` of the first rows back until [`SentRows::release`].
    pub(super) fn holding(mut self, bytes: usize) -> SentRows<'a> {
        self.hold_bytes = bytes;
        self
    }

    /// Sends `batch`; false once the limit is reached (nothing more is sent).
    pub(super) async fn send(&mut self, run: &Run, batch: RecordBatch) -> Result<bool, Gone> {
        let limit = self.limit;
        if self.rows + batch.num_rows() > limit {
            self.release(run).await?;
            run.send(QueryEvent::Rows(batch.slice(0, limit - self.rows))).await?;
            self.rows = limit;
            run.send(QueryEvent::Warning(QueryWarning {
                kind: "ResultTruncated".into(),
                message: format!(
                    "the result of {} was cut to {limit} rows; narrow the query or use take",
                    self.table
                ),
                location: None,
            }))
            .await?;
            return Ok(false);
        }
        self.rows += batch.num_rows();
        if batch.num_rows() == 0 {
            return Ok(true);
        }
        let bytes = batch.get_array_memory_size();
        if !self.delivered && self.held_bytes + bytes <= self.hold_bytes {
            self.held_bytes += bytes;
            self.held.push(batch);
            return Ok(true);
        }
        self.release(run).await?;
        run.send(QueryEvent::Rows(batch)).await?;
        Ok(true)
    }

    /// Sends the rows held back; from here on rows go out as they come.
    pub(super) async fn release(&mut self, run: &Run) -> Result<(), Gone> {
        self.delivered = true;
        self.held_bytes = 0;
        for batch in std::mem::take(&mut self.held) {
            run.send(QueryEvent::Rows(batch)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "sent_tests.rs"]
mod tests;
