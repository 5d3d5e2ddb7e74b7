//! Log records to log rows (SPEC "Log rows"): one row per log record.

use trawl_common::KqlType;
use trawl_common::columns::ColumnsBuilder;
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::common::v1::KeyValue;
use trawl_proto::otlp::logs::v1::LogRecord;

use crate::otlp::common::{
    Attribute, HexBuffer, Rejections, SPAN_ID_BYTES, TRACE_ID_BYTES, ValueRef, hex_into, time_key, timestamp_nanos,
    write_value,
};
use crate::otlp::decode::{PayloadFormat, decode_logs};
use crate::otlp::sink::{
    BagText, RowSink, SharedBags, SharedSlots, Sink, TimeOrder, set_count, set_flags, set_non_empty,
};
use crate::otlp::wire::{self, Fields, KeyView, Unusual};
use crate::{ColumnsOutput, IntakeError, IntakeOutput};

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

/// Maps the records in time order ([`TimeOrder`]).
fn map_logs<K: Sink>(request: &ExportLogsServiceRequest, ingest_time_nanos: i64, sink: &mut K) -> Rejections {
    let slots = LogSlots::declare(sink);
    let mut rejections = Rejections::new("log record", "log records");
    let mut scratch = Scratch::default();
    let mut order = TimeOrder::with_capacity(0);
    for (resource_index, resource_logs) in request.resource_logs.iter().enumerate() {
        let mut shared = SharedBags::for_resource(resource_logs.resource.as_ref());
        for (scope_index, scope_logs) in resource_logs.scope_logs.iter().enumerate() {
            shared.set_scope(scope_logs.scope.as_ref());
            for (record_index, record) in scope_logs.log_records.iter().enumerate() {
                let key = time_key(record.time_unix_nano, record.observed_time_unix_nano, ingest_time_nanos);
                order.push(&shared, [resource_index, scope_index, record_index], key, record);
            }
        }
    }
    order.map(|shared, at, record| {
        if let Err(reason) = log_row(
            &LogFields::of(record),
            shared,
            ingest_time_nanos,
            sink,
            &slots,
            &mut scratch,
        ) {
            rejections.reject_at(at, || location(at), reason);
        }
    });
    rejections
}

fn location([resource_index, scope_index, record_index]: [usize; 3]) -> String {
    format!("resource_logs[{resource_index}].scope_logs[{scope_index}].log_records[{record_index}]")
}

/// An OTLP/HTTP protobuf body of logs straight to columns: keys, strings and ids are read in
/// place ([`wire`]) rather than decoded into a message per record first. A body the reader
/// leaves to prost is decoded and mapped as [`logs_to_columns`] does, errors included.
pub fn logs_protobuf_to_columns(body: &[u8], ingest_time_nanos: i64) -> Result<ColumnsOutput, IntakeError> {
    match logs_from_wire(body, ingest_time_nanos) {
        Ok(output) => Ok(output),
        Err(Unusual) => Ok(logs_to_columns(
            &decode_logs(body, PayloadFormat::Protobuf)?,
            ingest_time_nanos,
        )),
    }
}

pub(crate) fn logs_from_wire(body: &[u8], ingest_time_nanos: i64) -> Result<ColumnsOutput, Unusual> {
    let count = wire::count_items(body)?;
    let mut sink = ColumnsBuilder::with_rows(count);
    let slots = LogSlots::declare(&mut sink);
    let mut rejections = Rejections::new("log record", "log records");
    let mut scratch = Scratch::default();
    // Every record is read first (its attributes into one list), then mapped in time order,
    // as `map_logs` does. The list is sized for a few attributes a record (bounded), so it
    // is not grown by copying itself over and over.
    let mut attributes = Vec::with_capacity(count.saturating_mul(8).min(1 << 16));
    let mut order = TimeOrder::with_capacity(count);
    let mut known = wire::Known::default();
    wire::each_item(body, |shared, bytes, at| {
        let record = RecordView::read(bytes, &mut attributes, &mut known)?;
        let key = time_key(record.time_unix_nano, record.observed_time_unix_nano, ingest_time_nanos);
        order.push(shared, at, key, record);
        Ok(())
    })?;
    order.map(|shared, at, record| {
        let fields = record.fields(&attributes);
        if let Err(reason) = log_row(&fields, shared, ingest_time_nanos, &mut sink, &slots, &mut scratch) {
            rejections.reject_at(at, || location(at), reason);
        }
    });
    Ok(rejections.into_columns(sink.finish()))
}

/// A log record's fields as the mapping reads them, from prost's message or from the body.
struct LogFields<'r, A> {
    time_unix_nano: u64,
    observed_time_unix_nano: u64,
    trace_id: &'r [u8],
    span_id: &'r [u8],
    severity_number: i32,
    severity_text: &'r str,
    body: Option<ValueRef<'r>>,
    flags: u32,
    attributes: &'r [A],
    dropped_attributes_count: u32,
}

impl<'r> LogFields<'r, KeyValue> {
    fn of(record: &'r LogRecord) -> LogFields<'r, KeyValue> {
        LogFields {
            time_unix_nano: record.time_unix_nano,
            observed_time_unix_nano: record.observed_time_unix_nano,
            trace_id: &record.trace_id,
            span_id: &record.span_id,
            severity_number: record.severity_number,
            severity_text: &record.severity_text,
            body: record.body.as_ref().map(ValueRef::of),
            flags: record.flags,
            attributes: &record.attributes,
            dropped_attributes_count: record.dropped_attributes_count,
        }
    }
}

/// An encoded `LogRecord` read in place; its attributes are a range of a list shared by the
/// records of a request.
#[derive(Default)]
struct RecordView<'a> {
    time_unix_nano: u64,
    observed_time_unix_nano: u64,
    trace_id: &'a [u8],
    span_id: &'a [u8],
    severity_number: i32,
    severity_text: &'a str,
    body: Option<ValueRef<'a>>,
    flags: u32,
    attributes: std::ops::Range<usize>,
    dropped_attributes_count: u32,
}

impl<'a> RecordView<'a> {
    /// Reads `message`, its attributes appended to `attributes` (strings checked through
    /// `known`).
    fn read(
        message: &'a [u8],
        attributes: &mut Vec<KeyView<'a>>,
        known: &mut wire::Known<'a>,
    ) -> Result<RecordView<'a>, Unusual> {
        let mut view = RecordView::default();
        let first = attributes.len();
        let mut fields = Fields::new(message);
        while let Some((number, wire)) = fields.next_field()? {
            match number {
                1 => view.time_unix_nano = wire.fixed64()?,
                2 => view.severity_number = wire.varint()? as i32,
                3 => view.severity_text = wire.text()?,
                5 if view.body.is_none() => view.body = Some(wire::any_value(wire.bytes()?, known)?),
                5 => return Err(Unusual), // twice: prost merges
                6 => attributes.push(wire::key_value(wire.bytes()?, known)?),
                7 => view.dropped_attributes_count = wire.varint()? as u32,
                8 => view.flags = wire.fixed32()?,
                9 => view.trace_id = wire.bytes()?,
                10 => view.span_id = wire.bytes()?,
                11 => view.observed_time_unix_nano = wire.fixed64()?,
                12 => {
                    wire.text()?; // event_name: not stored, but prost checks it
                }
                _ => {}
            }
        }
        view.attributes = first..attributes.len();
        Ok(view)
    }

    /// The fields, with the attributes from the list [`RecordView::read`] appended them to.
    fn fields<'s>(&'s self, attributes: &'s [KeyView<'a>]) -> LogFields<'s, KeyView<'a>> {
        LogFields {
            time_unix_nano: self.time_unix_nano,
            observed_time_unix_nano: self.observed_time_unix_nano,
            trace_id: self.trace_id,
            span_id: self.span_id,
            severity_number: self.severity_number,
            severity_text: self.severity_text,
            body: self.body,
            flags: self.flags,
            attributes: attributes.get(self.attributes.clone()).unwrap_or_default(),
            dropped_attributes_count: self.dropped_attributes_count,
        }
    }
}

/// Buffers reused from record to record.
struct Scratch {
    attributes: BagText,
    body: String,
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch {
            attributes: BagText::for_column("attributes"),
            body: String::new(),
        }
    }
}

fn log_row<K: Sink, A: Attribute>(
    record: &LogFields<'_, A>,
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
    let trace_id = hex_into(record.trace_id, TRACE_ID_BYTES, "trace_id", &mut trace_hex)?;
    let span_id = hex_into(record.span_id, SPAN_ID_BYTES, "span_id", &mut span_hex)?;

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
    set_non_empty(sink, slots.severity_text, record.severity_text);
    if let Some(body) = record.body.filter(|body| !matches!(body, ValueRef::Unset)) {
        scratch.body.clear();
        write_value(&mut scratch.body, body);
        sink.set_text(slots.body, &scratch.body);
    }
    set_flags(sink, slots.sampled, slots.flags, record.flags);
    if !record.attributes.is_empty() {
        scratch.attributes.write(record.attributes);
        sink.set_bag(slots.attributes, &scratch.attributes);
    }
    set_count(sink, slots.dropped_attributes_count, record.dropped_attributes_count);
    shared.set(sink, &slots.shared);
    sink.end_row();
    Ok(())
}

#[cfg(test)]
mod tests;
