//! Log records to log rows (SPEC "Log rows"): one row per log record.

use trawl_common::{Row, Value};
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::logs::v1::LogRecord;

use crate::IntakeOutput;
use crate::otlp::common::{
    Rejections, SPAN_ID_BYTES, SharedCells, TRACE_ID_BYTES, any_value_text, hex_id, push_attributes,
    push_dropped_count, push_flags, push_non_empty, timestamp_nanos,
};

/// Cells a log row can have besides the resource and scope ones.
const LOG_COLUMNS: usize = 12;

/// Maps every log record of `request` to a row. A record is rejected, not stored, when its trace
/// id is neither empty nor 16 bytes, its span id neither empty nor 8 bytes, or a time is past
/// the year 2262.
pub fn logs_to_rows(request: &ExportLogsServiceRequest, ingest_time_nanos: i64) -> IntakeOutput {
    let record_count = request
        .resource_logs
        .iter()
        .flat_map(|resource_logs| &resource_logs.scope_logs)
        .map(|scope_logs| scope_logs.log_records.len())
        .sum();
    let mut rows = Vec::with_capacity(record_count);
    let mut rejections = Rejections::new("log record", "log records");
    for (resource_index, resource_logs) in request.resource_logs.iter().enumerate() {
        let resource_cells = SharedCells::for_resource(resource_logs.resource.as_ref());
        for (scope_index, scope_logs) in resource_logs.scope_logs.iter().enumerate() {
            let shared = resource_cells.with_scope(scope_logs.scope.as_ref());
            for (record_index, record) in scope_logs.log_records.iter().enumerate() {
                match log_row(record, &shared, ingest_time_nanos) {
                    Ok(row) => rows.push(row),
                    Err(reason) => rejections.reject(
                        || {
                            format!(
                                "resource_logs[{resource_index}].scope_logs[{scope_index}]\
                                 .log_records[{record_index}]"
                            )
                        },
                        reason,
                    ),
                }
            }
        }
    }
    rejections.into_output(rows)
}

fn log_row(record: &LogRecord, shared: &SharedCells, ingest_time_nanos: i64) -> Result<Row, String> {
    let time = timestamp_nanos(record.time_unix_nano, "time_unix_nano")?;
    let observed = timestamp_nanos(record.observed_time_unix_nano, "observed_time_unix_nano")?;
    let trace_id = hex_id(&record.trace_id, TRACE_ID_BYTES, "trace_id")?;
    let span_id = hex_id(&record.span_id, SPAN_ID_BYTES, "span_id")?;

    let mut row = Row::with_capacity(LOG_COLUMNS + shared.len());
    let timestamp = [time, observed].into_iter().find(|nanos| *nanos != 0);
    row.push("timestamp", Value::DateTime(timestamp.unwrap_or(ingest_time_nanos)));
    if observed != 0 {
        row.push("observed_time", Value::DateTime(observed));
    }
    row.push("ingest_time", Value::DateTime(ingest_time_nanos));
    if let Some(trace_id) = trace_id {
        row.push("trace_id", Value::String(trace_id));
    }
    if let Some(span_id) = span_id {
        row.push("span_id", Value::String(span_id));
    }
    if (1..=24).contains(&record.severity_number) {
        row.push("severity_number", Value::Long(i64::from(record.severity_number)));
    }
    push_non_empty(&mut row, "severity_text", &record.severity_text);
    if let Some(body) = record.body.as_ref().filter(|body| body.value.is_some()) {
        row.push("body", Value::JsonText(any_value_text(body)));
    }
    push_flags(&mut row, "sampled", record.flags);
    push_attributes(&mut row, "attributes", &record.attributes);
    push_dropped_count(&mut row, "dropped_attributes_count", record.dropped_attributes_count);
    shared.append_to(&mut row);
    debug_assert!(row.cells.len() <= LOG_COLUMNS + shared.len());
    Ok(row)
}

#[cfg(test)]
mod tests;
