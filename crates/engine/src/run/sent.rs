//! A result table's rows on their way out: the result limits (rows, and bytes of cell
//! data), and the first rows of a distributed plan held back until it ends.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use trawl_planner::QueryWarning;

use super::{Gone, Run};
use crate::events::QueryEvent;

/// Sends a table's rows up to the result limits (rows, and bytes of cell data as faces will
/// encode them: [`payload_bytes`]), then a `ResultTruncated` warning.
///
/// A distributed plan's first rows are held back (up to [`HELD_RESULT_BYTES`]) until the plan
/// ends: a node lost mid-run then fails the run before any row went out, and the query runs
/// again without it. A plan's last stage runs as tasks on several nodes: one task's rows can
/// be ready before a call to a node that is gone fails.
pub(super) struct SentRows<'a> {
    table: &'a str,
    limit: usize,
    /// Bytes of cell data the table may return.
    byte_limit: usize,
    /// Rows sent or held.
    pub(super) rows: usize,
    /// Bytes of cell data of those rows.
    bytes: usize,
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
    pub(super) fn new(table: &'a str, limit: usize, byte_limit: usize) -> SentRows<'a> {
        SentRows {
            table,
            limit,
            byte_limit,
            rows: 0,
            bytes: 0,
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

    /// Sends `batch`; false once a limit is reached (nothing more is sent).
    pub(super) async fn send(&mut self, run: &Run, batch: RecordBatch) -> Result<bool, Gone> {
        let limit = self.limit;
        let bytes = payload_bytes(&batch);
        let over_rows = self.rows + batch.num_rows() > limit;
        let over_bytes = self.bytes.saturating_add(bytes) > self.byte_limit;
        if over_rows || over_bytes {
            let mut keep = batch.num_rows().min(limit - self.rows);
            if over_bytes {
                keep = keep.min(rows_within(&batch, self.byte_limit.saturating_sub(self.bytes)));
            }
            self.release(run).await?;
            if keep > 0 {
                run.send_rows(batch.slice(0, keep)).await?;
            }
            self.rows += keep;
            let cut = if over_rows && self.rows == limit {
                format!("{limit} rows")
            } else {
                format!(
                    "{} rows ({} of cell data at most)",
                    self.rows,
                    trawl_common::memory::Bytes(self.byte_limit as u64)
                )
            };
            run.send(QueryEvent::Warning(QueryWarning {
                kind: "ResultTruncated".into(),
                message: format!(
                    "the result of {} was cut to {cut}; narrow the query, project fewer columns or use take",
                    self.table
                ),
                location: None,
            }))
            .await?;
            return Ok(false);
        }
        self.rows += batch.num_rows();
        self.bytes += bytes;
        if batch.num_rows() == 0 {
            return Ok(true);
        }
        let memory = batch.get_array_memory_size();
        if !self.delivered && self.held_bytes + memory <= self.hold_bytes {
            self.held_bytes += memory;
            self.held.push(batch);
            return Ok(true);
        }
        self.release(run).await?;
        run.send_rows(batch).await?;
        Ok(true)
    }

    /// Sends the rows held back; from here on rows go out as they come.
    pub(super) async fn release(&mut self, run: &Run) -> Result<(), Gone> {
        self.delivered = true;
        self.held_bytes = 0;
        for batch in std::mem::take(&mut self.held) {
            run.send_rows(batch).await?;
        }
        Ok(())
    }
}

/// Bytes of cell data of `batch` as a face encodes them: the text of its strings (each
/// string of a view array counted even when many rows share its bytes) and the fixed-width
/// values, of its rows only when it is a slice.
pub(crate) fn payload_bytes(batch: &RecordBatch) -> usize {
    batch.columns().iter().map(|column| column_bytes(column.as_ref())).sum()
}

fn column_bytes(array: &dyn Array) -> usize {
    /// What a face holds per cell besides its text: the faces build a JSON value per cell
    /// (32 bytes) before they write it, and write at least a separator and a short number.
    /// Counting it bounds what a face builds for the result, not only the Arrow rows.
    const PER_CELL: usize = 40;
    let cells = array.len().saturating_mul(PER_CELL);
    let values = match array.data_type() {
        DataType::Utf8View => array.as_string_view().lengths().map(|n| n as usize).sum(),
        DataType::BinaryView => array.as_binary_view().lengths().map(|n| n as usize).sum(),
        DataType::Utf8 => offsets_span(array.as_string::<i32>().value_offsets()),
        DataType::LargeUtf8 => offsets_span(array.as_string::<i64>().value_offsets()),
        DataType::Binary => offsets_span(array.as_binary::<i32>().value_offsets()),
        DataType::LargeBinary => offsets_span(array.as_binary::<i64>().value_offsets()),
        DataType::Dictionary(_, _) => match array.as_any_dictionary_opt() {
            Some(dictionary) => {
                let values = dictionary.values();
                // A dictionary's values repeat per row: count each row at the average value.
                let per_value = column_bytes(values.as_ref()) / values.len().max(1);
                per_value.saturating_mul(array.len())
            }
            None => 0,
        },
        _ => array
            .to_data()
            .get_slice_memory_size()
            .unwrap_or_else(|_| array.get_array_memory_size()),
    };
    values.saturating_add(cells)
}

fn offsets_span<O: datafusion::arrow::array::OffsetSizeTrait>(offsets: &[O]) -> usize {
    match (offsets.first(), offsets.last()) {
        (Some(first), Some(last)) => (last.as_usize()).saturating_sub(first.as_usize()),
        _ => 0,
    }
}

/// The most leading rows of `batch` whose cell data fits in `bytes`.
fn rows_within(batch: &RecordBatch, bytes: usize) -> usize {
    let (mut fits, mut over) = (0, batch.num_rows() + 1);
    while fits + 1 < over {
        let middle = fits + (over - fits) / 2;
        if payload_bytes(&batch.slice(0, middle)) <= bytes {
            fits = middle;
        } else {
            over = middle;
        }
    }
    fits
}

#[cfg(test)]
#[path = "sent_tests.rs"]
mod tests;
