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
//!
//! Before decoding, the file's Thrift structures are checked as the server checks them (the
//! footer, the page index, the page headers of every column chunk; `crates/storage/src/
//! checked.rs`): the Parquet decoder spins on some damaged ones (a list claiming billions of
//! booleans, which this target found). The check's own code is compiled in here from the
//! storage crate, so what is fuzzed is what the server runs, without the storage crate's
//! object-store and network dependencies.
#![no_main]

use std::sync::Once;

use bytes::Bytes;
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
use libfuzzer_sys::fuzz_target;
use trawl_functions::types::kql_type_of;

#[path = "../../crates/storage/src/thrift_check.rs"]
#[allow(dead_code)]
mod thrift_check;

/// The server's checks, in its order: `false` when the file is refused before decoding.
fn passes_checks(bytes: &Bytes) -> bool {
    let Ok(footer_len) = thrift_check::footer_len(bytes) else {
        return false;
    };
    let end = bytes.len() - 8;
    let Some(start) = usize::try_from(footer_len).ok().and_then(|len| end.checked_sub(len)) else {
        return false;
    };
    if thrift_check::check_footer(&bytes[start..end]).is_err() {
        return false;
    }
    let Ok(footer) = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Skip)
        .parse_and_finish(bytes)
    else {
        return false;
    };
    let Ok(ranges) = thrift_check::page_index_ranges(&footer, bytes.len() as u64) else {
        return false;
    };
    let index: Vec<Bytes> = ranges.iter().map(|r| bytes.slice(r.start as usize..r.end as usize)).collect();
    if thrift_check::check_page_index(&ranges, &index).is_err() {
        return false;
    }
    for group in footer.row_groups() {
        for column in group.columns() {
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset());
            let chunk = u64::try_from(start)
                .ok()
                .zip(u64::try_from(column.compressed_size()).ok())
                .and_then(|(start, len)| Some(start..start.checked_add(len)?))
                .filter(|chunk| chunk.end <= bytes.len() as u64);
            let Some(chunk) = chunk else {
                return false;
            };
            let pages = &bytes[chunk.start as usize..chunk.end as usize];
            if thrift_check::check_page_headers(chunk.start, pages).is_err() {
                return false;
            }
        }
    }
    true
}

fn read(bytes: Bytes) {
    if !passes_checks(&bytes) {
        return;
    }
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
