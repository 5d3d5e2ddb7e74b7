//! A segment file as read from disk or object storage: the Parquet footer (schema, the Arrow
//! schema a writer embeds, row groups, column statistics that chunk pruning reads, page
//! indexes) and every page, decoded into Arrow batches as a scan decodes them, with each
//! column's KQL type read as the table does.
//!
//! The Parquet and Arrow decoders panic on some damaged files (this target found two: a
//! malformed embedded Arrow schema, and a column chunk with a negative offset). The server
//! reads segments where a panic is caught: in a query's task (an error for that query) and in
//! a merge (that group is skipped); `crates/engine/tests/damaged.rs` drives both with such a
//! file. So the decoding runs under the same kind of guard here, and what this target hunts is
//! what no guard catches: hangs, unbounded allocations and aborts.
#![no_main]

use std::sync::Once;

use bytes::Bytes;
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use datafusion::parquet::file::metadata::PageIndexPolicy;
use libfuzzer_sys::fuzz_target;
use trawl_functions::types::kql_type_of;

fn read(bytes: Bytes) {
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let Ok(builder) = ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options) else {
        return;
    };
    for field in builder.schema().fields() {
        let _ = kql_type_of(field);
    }
    for row_group in builder.metadata().row_groups() {
        for column in row_group.columns() {
            if let Some(statistics) = column.statistics() {
                let _ = (statistics.min_bytes_opt(), statistics.max_bytes_opt(), statistics.null_count_opt());
            }
        }
    }
    let Ok(reader) = builder.with_batch_size(1024).build() else {
        return;
    };
    // Bounded: a small file can claim millions of run-length-encoded rows (decoding them takes
    // as long as any rows do), and a few batches are enough to reach every decoder.
    for batch in reader.take(4) {
        if batch.is_err() {
            break;
        }
    }
}

static QUIET_PANICS: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    // libFuzzer's hook turns any panic into an abort; panics inside the guard are answered.
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let bytes = Bytes::copy_from_slice(data);
    let _ = std::panic::catch_unwind(move || read(bytes));
});
