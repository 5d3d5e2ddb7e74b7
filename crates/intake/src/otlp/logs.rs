//! Log records to log rows (SPEC "Log rows"): one row per log record.

use trawl_common::KqlType;
use trawl_common::columns::ColumnsBuilder;
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::logs::v1::LogRecord;

use crate::otlp::common::{
    HexBuffer, Rejections, SPAN_ID_BYTES, TRACE_ID_BYTES, hex_into, timestamp_nanos, write_any_value,
};
use crate::otlp::sink::{BagText, RowSink, SharedBags, SharedSlots, Sink, set_count, set_flags, set_non_empty};
use crate::{ColumnsOutput, IntakeOutput};

/// Maps every log record of `request` to a row. A record is rejected, not stored, when its trace
/// id is neither empty nor 16 bytes, its span id neither empty nor 8 bytes, or a time is past
/// the year 2262.
pub fn logs_to_rows(request: &ExportLogsServiceRequest, ingest_time_nanos: i64) -> IntakeOutput {
    let mut sink = RowSink::default();
    let rejections = map_logs(request, ingest_time_nanos, &mut sink);
    rejections.into_output(sink.rows)
}

/// [`logs_to_rows`] written straight into columns (the ingest path).
pub fn logs_to_columns(request: &ExportLogsServiceRequest, ingest_time_nanos: i64) -> ColumnsOutput {
    let rows = request
        .resource_logs
        .iter()
        .flat_map(|resource| &resource.scope_logs)
        .map(|scope| scope.log_records.len())
        .sum();
    let mut sink = ColumnsBuilder::with_rows(rows);
    let rejections = map_logs(request, ingest_time_nanos, &mut sink);
    rejections.into_columns(sink.finish())
}

/// The columns of log rows, in the order of the SPEC's layout.
struct LogSlots<S> {
    timestamp: S,
    observed_time: S,
    ingest_time: S,
    trace_id: S,
    span_id: S,
    severity_number: S,
    severity_text: S,
    body: S,
    sampled: S,
    flags: S,
    attributes: S,
    dropped_attributes_count: S,
    shared: SharedSlots<S>,
}

impl<S: Copy> LogSlots<S> {
    fn declare(sink: &mut impl Sink<Slot = S>) -> LogSlots<S> {
        LogSlots {
            timestamp: sink.column("timestamp", KqlType::DateTime),
            observed_time: sink.column("observed_time", KqlType::DateTime),
            ingest_time: sink.column("ingest_time", KqlType::DateTime),
            trace_id: sink.column("trace_id", KqlType::String),
            span_id: sink.column("span_id", KqlType::String),
            severity_number: sink.column("severity_number", KqlType::Long),
            severity_text: sink.column("severity_text", KqlType::String),
            body: sink.column("body", KqlType::Dynamic),
            sampled: sink.column("sampled", KqlType::Bool),
            flags: sink.column("flags", KqlType::Long),
            attributes: sink.column("attributes", KqlType::Dynamic),
            dropped_attributes_count: sink.column("dropped_attributes_count", KqlType::Long),
            shared: SharedSlots::declare(sink),
        }
    }
}

fn map_logs<K: Sink>(request: &ExportLogsServiceRequest, ingest_time_nanos: i64, sink: &mut K) -> Rejections {
    let slots = LogSlots::declare(sink);
    let mut rejections = Rejections::new("log record", "log records");
    let mut scratch = Scratch {
        attributes: BagText::for_column("attributes"),
        body: String::new(),
    };
    for (resource_index, resource_logs) in request.resource_logs.iter().enumerate() {
        let mut shared = SharedBags::for_resource(resource_logs.resource.as_ref());
        for (scope_index, scope_logs) in resource_logs.scope_logs.iter().enumerate() {
            shared.set_scope(scope_logs.scope.as_ref());
            for (record_index, record) in scope_logs.log_records.iter().enumerate() {
                match log_row(record, &shared, ingest_time_nanos, sink, &slots, &mut scratch) {
                    Ok(()) => {}
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
    rejections
}

/// Buffers reused from record to record.
struct Scratch {
    attributes: BagText,
    body: String,
}

fn log_row<K: Sink>(
    record: &LogRecord,
    shared: &SharedBags,
    ingest_time_nanos: i64,
    sink: &mut K,
    slots: &LogSlots<K::Slot>,
    scratch: &mut Scratch,
) -> Result<(), String> {
    // Everything that can refuse the record comes before its first cell.
    let time = timestamp_nanos(record.time_unix_nano, "time_unix_nano")?;
    let observed = timestamp_nanos(record.observed_time_unix_nano, "observed_time_unix_nano")?;
    let (mut trace_hex, mut span_hex) = (HexBuffer::default(), HexBuffer::default());
    let trace_id = hex_into(&record.trace_id, TRACE_ID_BYTES, "trace_id", &mut trace_hex)?;
    let span_id = hex_into(&record.span_id, SPAN_ID_BYTES, "span_id", &mut span_hex)?;

    let timestamp = [time, observed].into_iter().find(|nanos| *nanos != 0);
    sink.set_integer(slots.timestamp, timestamp.unwrap_or(ingest_time_nanos));
    if observed != 0 {
        sink.set_integer(slots.observed_time, observed);
    }
    sink.set_integer(slots.ingest_time, ingest_time_nanos);
    if let Some(trace_id) = trace_id {
        sink.set_text(slots.trace_id, trace_id);
    }
    if let Some(span_id) = span_id {
        sink.set_text(slots.span_id, span_id);
    }
    if (1..=24).contains(&record.severity_number) {
        sink.set_integer(slots.severity_number, i64::from(record.severity_number));
    }
    set_non_empty(sink, slots.severity_text, &record.severity_text);
    if let Some(body) = record.body.as_ref().filter(|body| body.value.is_some()) {
        scratch.body.clear();
        write_any_value(&mut scratch.body, body);
        sink.set_text(slots.body, &scratch.body);
    }
    set_flags(sink, slots.sampled, slots.flags, record.flags);
    if !record.attributes.is_empty() {
        scratch.attributes.write(&record.attributes);
        sink.set_bag(slots.attributes, &scratch.attributes);
    }
    set_count(sink, slots.dropped_attributes_count, record.dropped_attributes_count);
    shared.set(sink, &slots.shared);
    sink.end_row();
    Ok(())
}

#[cfg(test)]
mod tests;
