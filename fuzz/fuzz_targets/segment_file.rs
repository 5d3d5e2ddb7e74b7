//! A segment file as read from disk or object storage: the Parquet footer (schema, row groups,
//! column statistics that chunk pruning reads, page indexes) and every page, decoded into
//! Arrow batches as a scan decodes them, with each column's KQL type read as the table does.
//! A damaged or hostile file must be an error, never a panic or an unbounded allocation.
#![no_main]

use bytes::Bytes;
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use datafusion::parquet::file::metadata::PageIndexPolicy;
use libfuzzer_sys::fuzz_target;
use trawl_functions::types::kql_type_of;

fuzz_target!(|data: &[u8]| {
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let Ok(builder) = ParquetRecordBatchReaderBuilder::try_new_with_options(Bytes::copy_from_slice(data), options)
    else {
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
    // Bounded: a file claiming billions of rows is read a little at a time, and a few batches
    // are enough to reach every decoder.
    for batch in reader.take(64) {
        if batch.is_err() {
            break;
        }
    }
});
