//! Spans to span rows (SPEC "Span rows"): one row per span.

use serde_json::{Map, Value as Json};
use trawl_common::KqlType;
use trawl_common::columns::ColumnsBuilder;
use trawl_common::time::format_datetime;
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;
use trawl_proto::otlp::trace::v1::Span;
use trawl_proto::otlp::trace::v1::span::{Event, Link, SpanKind};
use trawl_proto::otlp::trace::v1::status::StatusCode;

use crate::otlp::common::{
    FLAG_BIT_0, HexBuffer, Rejections, SPAN_ID_BYTES, TRACE_ID_BYTES, attributes_to_json, hex_into, required_hex_id,
    required_hex_into, timestamp_nanos,
};
use crate::otlp::sink::{BagText, RowSink, SharedBags, SharedSlots, Sink, set_count, set_flags, set_non_empty};
use crate::{ColumnsOutput, IntakeOutput};

/// Link flag bit 8: the sender knows whether the linked context is remote.
const LINK_HAS_IS_REMOTE: u32 = 0x100;
/// Link flag bit 9: the linked context is remote (meaningful only with bit 8).
const LINK_IS_REMOTE: u32 = 0x200;

/// Maps every span of `request` to a row. A span is rejected, not stored, when its trace id is
/// not 16 bytes, its span id not 8, its parent span id neither empty nor 8, a link's ids are not
/// 16 and 8 bytes, or a time is past the year 2262.
pub fn traces_to_rows(request: &ExportTraceServiceRequest, ingest_time_nanos: i64) -> IntakeOutput {
    let mut sink = RowSink::default();
    let rejections = map_spans(request, ingest_time_nanos, &mut sink);
    rejections.into_output(sink.rows)
}

/// [`traces_to_rows`] written straight into columns (the ingest path).
pub fn traces_to_columns(request: &ExportTraceServiceRequest, ingest_time_nanos: i64) -> ColumnsOutput {
    let rows = request
        .resource_spans
        .iter()
        .flat_map(|resource| &resource.scope_spans)
        .map(|scope| scope.spans.len())
        .sum();
    let mut sink = ColumnsBuilder::with_rows(rows);
    let rejections = map_spans(request, ingest_time_nanos, &mut sink);
    rejections.into_columns(sink.finish())
}

/// The columns of span rows, in the order of the SPEC's layout.
struct SpanSlots<S> {
    timestamp: S,
    start_time: S,
    end_time: S,
    ingest_time: S,
    duration: S,
    trace_id: S,
    span_id: S,
    parent_span_id: S,
    span_name: S,
    span_kind: S,
    trace_state: S,
    status_code: S,
    status_description: S,
    sampled: S,
    flags: S,
    attributes: S,
    events: S,
    links: S,
    dropped_attributes_count: S,
    dropped_events_count: S,
    dropped_links_count: S,
    shared: SharedSlots<S>,
}

impl<S: Copy> SpanSlots<S> {
    fn declare(sink: &mut impl Sink<Slot = S>) -> SpanSlots<S> {
        SpanSlots {
            timestamp: sink.column("timestamp", KqlType::DateTime),
            start_time: sink.column("start_time", KqlType::DateTime),
            end_time: sink.column("end_time", KqlType::DateTime),
            ingest_time: sink.column("ingest_time", KqlType::DateTime),
            duration: sink.column("duration", KqlType::Timespan),
            trace_id: sink.column("trace_id", KqlType::String),
            span_id: sink.column("span_id", KqlType::String),
            parent_span_id: sink.column("parent_span_id", KqlType::String),
            span_name: sink.column("span_name", KqlType::String),
            span_kind: sink.column("span_kind", KqlType::String),
            trace_state: sink.column("trace_state", KqlType::String),
            status_code: sink.column("status_code", KqlType::String),
            status_description: sink.column("status_description", KqlType::String),
            sampled: sink.column("sampled", KqlType::Bool),
            flags: sink.column("flags", KqlType::Long),
            attributes: sink.column("attributes", KqlType::Dynamic),
            events: sink.column("events", KqlType::Dynamic),
            links: sink.column("links", KqlType::Dynamic),
            dropped_attributes_count: sink.column("dropped_attributes_count", KqlType::Long),
            dropped_events_count: sink.column("dropped_events_count", KqlType::Long),
            dropped_links_count: sink.column("dropped_links_count", KqlType::Long),
            shared: SharedSlots::declare(sink),
        }
    }
}

fn map_spans<K: Sink>(request: &ExportTraceServiceRequest, ingest_time_nanos: i64, sink: &mut K) -> Rejections {
    let slots = SpanSlots::declare(sink);
    let mut rejections = Rejections::new("span", "spans");
    let mut attributes = BagText::for_column("attributes");
    for (resource_index, resource_spans) in request.resource_spans.iter().enumerate() {
        let mut shared = SharedBags::for_resource(resource_spans.resource.as_ref());
        for (scope_index, scope_spans) in resource_spans.scope_spans.iter().enumerate() {
            shared.set_scope(scope_spans.scope.as_ref());
            for (span_index, span) in scope_spans.spans.iter().enumerate() {
                match span_row(span, &shared, ingest_time_nanos, sink, &slots, &mut attributes) {
                    Ok(()) => {}
                    Err(reason) => rejections.reject(
                        || {
                            format!(
                                "resource_spans[{resource_index}].scope_spans[{scope_index}]\
                                 .spans[{span_index}]"
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

fn span_row<K: Sink>(
    span: &Span,
    shared: &SharedBags,
    ingest_time_nanos: i64,
    sink: &mut K,
    slots: &SpanSlots<K::Slot>,
    attributes: &mut BagText,
) -> Result<(), String> {
    // Everything that can refuse the span comes before its first cell.
    let (mut trace_hex, mut span_hex, mut parent_hex) =
        (HexBuffer::default(), HexBuffer::default(), HexBuffer::default());
    let trace_id = required_hex_into(&span.trace_id, TRACE_ID_BYTES, "trace_id", &mut trace_hex)?;
    let span_id = required_hex_into(&span.span_id, SPAN_ID_BYTES, "span_id", &mut span_hex)?;
    let parent_span_id = hex_into(&span.parent_span_id, SPAN_ID_BYTES, "parent_span_id", &mut parent_hex)?;
    let start = timestamp_nanos(span.start_time_unix_nano, "start_time_unix_nano")?;
    let end = timestamp_nanos(span.end_time_unix_nano, "end_time_unix_nano")?;
    let events = events_json(&span.events)?;
    let links = links_json(&span.links)?;

    let timestamp = [end, start].into_iter().find(|nanos| *nanos != 0);
    sink.set_integer(slots.timestamp, timestamp.unwrap_or(ingest_time_nanos));
    if start != 0 {
        sink.set_integer(slots.start_time, start);
    }
    if end != 0 {
        sink.set_integer(slots.end_time, end);
    }
    sink.set_integer(slots.ingest_time, ingest_time_nanos);
    if start != 0 && end != 0 {
        sink.set_integer(slots.duration, end - start);
    }
    sink.set_text(slots.trace_id, trace_id);
    sink.set_text(slots.span_id, span_id);
    if let Some(parent_span_id) = parent_span_id {
        sink.set_text(slots.parent_span_id, parent_span_id);
    }
    set_non_empty(sink, slots.span_name, &span.name);
    if let Some(kind) = span_kind_name(span.kind) {
        sink.set_text(slots.span_kind, kind);
    }
    set_non_empty(sink, slots.trace_state, &span.trace_state);
    let status = span.status.as_ref();
    let status_code = status.map_or(StatusCode::Unset as i32, |status| status.code);
    sink.set_text(slots.status_code, status_code_name(status_code));
    if let Some(status) = status {
        set_non_empty(sink, slots.status_description, &status.message);
    }
    set_flags(sink, slots.sampled, slots.flags, span.flags);
    if !span.attributes.is_empty() {
        attributes.write(&span.attributes);
        sink.set_bag(slots.attributes, attributes);
    }
    if !events.is_empty() {
        sink.set_text(slots.events, &Json::Array(events).to_string());
    }
    if !links.is_empty() {
        sink.set_text(slots.links, &Json::Array(links).to_string());
    }
    set_count(sink, slots.dropped_attributes_count, span.dropped_attributes_count);
    set_count(sink, slots.dropped_events_count, span.dropped_events_count);
    set_count(sink, slots.dropped_links_count, span.dropped_links_count);
    shared.set(sink, &slots.shared);
    sink.end_row();
    Ok(())
}

/// The stored name of a span kind; `None` for UNSPECIFIED and values this version does not know.
fn span_kind_name(kind: i32) -> Option<&'static str> {
    match SpanKind::try_from(kind).ok()? {
        SpanKind::Unspecified => None,
        SpanKind::Internal => Some("INTERNAL"),
        SpanKind::Server => Some("SERVER"),
        SpanKind::Client => Some("CLIENT"),
        SpanKind::Producer => Some("PRODUCER"),
        SpanKind::Consumer => Some("CONSUMER"),
    }
}

/// The stored name of a status code; values this version does not know read as UNSET.
fn status_code_name(code: i32) -> &'static str {
    match StatusCode::try_from(code) {
        Ok(StatusCode::Ok) => "OK",
        Ok(StatusCode::Error) => "ERROR",
        Ok(StatusCode::Unset) | Err(_) => "UNSET",
    }
}

/// Events as property bags `{timestamp, name, attributes[, dropped_attributes_count]}`; the
/// timestamp is ISO 8601 text (dynamic values have no datetime type), null when 0.
fn events_json(events: &[Event]) -> Result<Vec<Json>, String> {
    let mut out = Vec::with_capacity(events.len());
    for event in events {
        let time = timestamp_nanos(event.time_unix_nano, "event time_unix_nano")?;
        let mut bag = Map::with_capacity(4);
        let timestamp = if time == 0 {
            Json::Null
        } else {
            Json::String(format_datetime(time))
        };
        bag.insert("timestamp".to_owned(), timestamp);
        bag.insert("name".to_owned(), Json::String(event.name.clone()));
        bag.insert(
            "attributes".to_owned(),
            Json::Object(attributes_to_json(&event.attributes)),
        );
        if event.dropped_attributes_count > 0 {
            bag.insert(
                "dropped_attributes_count".to_owned(),
                event.dropped_attributes_count.into(),
            );
        }
        out.push(Json::Object(bag));
    }
    Ok(out)
}

/// Links as property bags `{trace_id, span_id[, trace_state], sampled[, is_remote][, flags],
/// attributes[, dropped_attributes_count]}`. Flags are decomposed: bit 0 is `sampled`, bits 8
/// and 9 are `is_remote` (present only when bit 8 says it is known), and `flags` keeps whatever
/// bits remain.
fn links_json(links: &[Link]) -> Result<Vec<Json>, String> {
    let mut out = Vec::with_capacity(links.len());
    for link in links {
        let trace_id = required_hex_id(&link.trace_id, TRACE_ID_BYTES, "link trace_id")?;
        let span_id = required_hex_id(&link.span_id, SPAN_ID_BYTES, "link span_id")?;
        let mut bag = Map::with_capacity(8);
        bag.insert("trace_id".to_owned(), Json::String(trace_id));
        bag.insert("span_id".to_owned(), Json::String(span_id));
        if !link.trace_state.is_empty() {
            bag.insert("trace_state".to_owned(), Json::String(link.trace_state.clone()));
        }
        bag.insert("sampled".to_owned(), Json::Bool(link.flags & FLAG_BIT_0 != 0));
        if link.flags & LINK_HAS_IS_REMOTE != 0 {
            bag.insert("is_remote".to_owned(), Json::Bool(link.flags & LINK_IS_REMOTE != 0));
        }
        let remaining = link.flags & !(FLAG_BIT_0 | LINK_HAS_IS_REMOTE | LINK_IS_REMOTE);
        if remaining != 0 {
            bag.insert("flags".to_owned(), remaining.into());
        }
        bag.insert(
            "attributes".to_owned(),
            Json::Object(attributes_to_json(&link.attributes)),
        );
        if link.dropped_attributes_count > 0 {
            bag.insert(
                "dropped_attributes_count".to_owned(),
                link.dropped_attributes_count.into(),
            );
        }
        out.push(Json::Object(bag));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
