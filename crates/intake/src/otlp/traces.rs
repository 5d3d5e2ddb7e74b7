//! Spans to span rows (SPEC "Span rows"): one row per span.

use std::ops::Range;

use serde_json::{Map, Value as Json};
use trawl_common::KqlType;
use trawl_common::columns::ColumnsBuilder;
use trawl_common::time::format_datetime;
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;
use trawl_proto::otlp::common::v1::KeyValue;
use trawl_proto::otlp::trace::v1::Span;
use trawl_proto::otlp::trace::v1::span::{Event, Link, SpanKind};
use trawl_proto::otlp::trace::v1::status::StatusCode;

use crate::otlp::common::{
    Attribute, FLAG_BIT_0, HexBuffer, Rejections, SPAN_ID_BYTES, TRACE_ID_BYTES, attributes_to_json, hex_into,
    required_hex_id, required_hex_into, time_key, timestamp_nanos,
};
use crate::otlp::decode::{PayloadFormat, decode_traces};
use crate::otlp::sink::{
    BagText, RowSink, SharedBags, SharedSlots, Sink, TimeOrder, set_count, set_flags, set_non_empty,
};
use crate::otlp::wire::{self, Fields, KeyView, Known, Unusual};
use crate::{ColumnsOutput, IntakeError, IntakeOutput};

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

/// Maps the spans in time order ([`TimeOrder`]).
fn map_spans<K: Sink>(request: &ExportTraceServiceRequest, ingest_time_nanos: i64, sink: &mut K) -> Rejections {
    let slots = SpanSlots::declare(sink);
    let mut rejections = Rejections::new("span", "spans");
    let mut attributes = BagText::for_column("attributes");
    let mut order = TimeOrder::with_capacity(0);
    for (resource_index, resource_spans) in request.resource_spans.iter().enumerate() {
        let mut shared = SharedBags::for_resource(resource_spans.resource.as_ref());
        for (scope_index, scope_spans) in resource_spans.scope_spans.iter().enumerate() {
            shared.set_scope(scope_spans.scope.as_ref());
            for (span_index, span) in scope_spans.spans.iter().enumerate() {
                let key = time_key(span.end_time_unix_nano, span.start_time_unix_nano, ingest_time_nanos);
                order.push(&shared, [resource_index, scope_index, span_index], key, span);
            }
        }
    }
    order.map(|shared, at, span| {
        if let Err(reason) = span_row(
            &SpanFields::of(span),
            shared,
            ingest_time_nanos,
            sink,
            &slots,
            &mut attributes,
        ) {
            rejections.reject_at(at, || location(at), reason);
        }
    });
    rejections
}

fn location([resource_index, scope_index, span_index]: [usize; 3]) -> String {
    format!("resource_spans[{resource_index}].scope_spans[{scope_index}].spans[{span_index}]")
}

/// An OTLP/HTTP protobuf body of spans straight to columns, read in place as
/// [`crate::otlp::logs_protobuf_to_columns`] reads logs; a body the reader leaves to prost is
/// decoded and mapped as [`traces_to_columns`] does, errors included.
pub fn traces_protobuf_to_columns(body: &[u8], ingest_time_nanos: i64) -> Result<ColumnsOutput, IntakeError> {
    match traces_from_wire(body, ingest_time_nanos) {
        Ok(output) => Ok(output),
        Err(Unusual) => Ok(traces_to_columns(
            &decode_traces(body, PayloadFormat::Protobuf)?,
            ingest_time_nanos,
        )),
    }
}

pub(crate) fn traces_from_wire(body: &[u8], ingest_time_nanos: i64) -> Result<ColumnsOutput, Unusual> {
    let count = wire::count_items(body)?;
    let mut sink = ColumnsBuilder::with_rows(count);
    let slots = SpanSlots::declare(&mut sink);
    let mut rejections = Rejections::new("span", "spans");
    let mut attributes = BagText::for_column("attributes");
    // Every span is read first (its lists into lists shared by the request), then mapped in
    // time order, as `map_spans` does.
    let mut lists = SpanLists::default();
    let mut order = TimeOrder::with_capacity(count);
    wire::each_item(body, |shared, bytes, at| {
        let span = SpanView::read(bytes, &mut lists)?;
        let key = time_key(span.end_time_unix_nano, span.start_time_unix_nano, ingest_time_nanos);
        order.push(shared, at, key, span);
        Ok(())
    })?;
    order.map(|shared, at, span| {
        let fields = span.fields(&lists);
        if let Err(reason) = span_row(&fields, shared, ingest_time_nanos, &mut sink, &slots, &mut attributes) {
            rejections.reject_at(at, || location(at), reason);
        }
    });
    Ok(rejections.into_columns(sink.finish()))
}

/// A span's fields as the mapping reads them, from prost's message or from the body.
struct SpanFields<'r, A> {
    trace_id: &'r [u8],
    span_id: &'r [u8],
    trace_state: &'r str,
    parent_span_id: &'r [u8],
    flags: u32,
    name: &'r str,
    kind: i32,
    start_time_unix_nano: u64,
    end_time_unix_nano: u64,
    attributes: &'r [A],
    dropped_attributes_count: u32,
    events: &'r [Event],
    dropped_events_count: u32,
    links: &'r [Link],
    dropped_links_count: u32,
    /// The status's message and code.
    status: Option<(&'r str, i32)>,
}

impl<'r> SpanFields<'r, KeyValue> {
    fn of(span: &'r Span) -> SpanFields<'r, KeyValue> {
        SpanFields {
            trace_id: &span.trace_id,
            span_id: &span.span_id,
            trace_state: &span.trace_state,
            parent_span_id: &span.parent_span_id,
            flags: span.flags,
            name: &span.name,
            kind: span.kind,
            start_time_unix_nano: span.start_time_unix_nano,
            end_time_unix_nano: span.end_time_unix_nano,
            attributes: &span.attributes,
            dropped_attributes_count: span.dropped_attributes_count,
            events: &span.events,
            dropped_events_count: span.dropped_events_count,
            links: &span.links,
            dropped_links_count: span.dropped_links_count,
            status: span
                .status
                .as_ref()
                .map(|status| (status.message.as_str(), status.code)),
        }
    }
}

/// The attributes, events and links of a request's spans, one list each; a [`SpanView`] holds
/// ranges of them.
#[derive(Default)]
struct SpanLists<'a> {
    attributes: Vec<KeyView<'a>>,
    events: Vec<Event>,
    links: Vec<Link>,
    /// The strings of the request found to be UTF-8 so far.
    known: wire::Known<'a>,
}

/// An encoded `Span` read in place. Its attributes are borrowed; its events and links (few, and
/// written as JSON values) are made into prost's messages.
#[derive(Default)]
struct SpanView<'a> {
    trace_id: &'a [u8],
    span_id: &'a [u8],
    trace_state: &'a str,
    parent_span_id: &'a [u8],
    flags: u32,
    name: &'a str,
    kind: i32,
    start_time_unix_nano: u64,
    end_time_unix_nano: u64,
    attributes: Range<usize>,
    dropped_attributes_count: u32,
    events: Range<usize>,
    dropped_events_count: u32,
    links: Range<usize>,
    dropped_links_count: u32,
    status: Option<(&'a str, i32)>,
}

impl<'a> SpanView<'a> {
    /// Reads `message`, its attributes, events and links appended to `lists`.
    fn read(message: &'a [u8], lists: &mut SpanLists<'a>) -> Result<SpanView<'a>, Unusual> {
        let mut view = SpanView::default();
        let (attributes, events, links) = (lists.attributes.len(), lists.events.len(), lists.links.len());
        let mut fields = Fields::new(message);
        while let Some((number, wire)) = fields.next_field()? {
            match number {
                1 => view.trace_id = wire.bytes()?,
                2 => view.span_id = wire.bytes()?,
                3 => view.trace_state = wire.text()?,
                4 => view.parent_span_id = wire.bytes()?,
                5 => view.name = wire.text()?,
                6 => view.kind = wire.varint()? as i32,
                7 => view.start_time_unix_nano = wire.fixed64()?,
                8 => view.end_time_unix_nano = wire.fixed64()?,
                9 => lists.attributes.push(wire::key_value(wire.bytes()?, &mut lists.known)?),
                10 => view.dropped_attributes_count = wire.varint()? as u32,
                11 => lists.events.push(event(wire.bytes()?, &mut lists.known)?),
                12 => view.dropped_events_count = wire.varint()? as u32,
                13 => lists.links.push(link(wire.bytes()?, &mut lists.known)?),
                14 => view.dropped_links_count = wire.varint()? as u32,
                15 if view.status.is_none() => view.status = Some(status(wire.bytes()?)?),
                15 => return Err(Unusual), // twice: prost merges
                16 => view.flags = wire.fixed32()?,
                _ => {}
            }
        }
        view.attributes = attributes..lists.attributes.len();
        view.events = events..lists.events.len();
        view.links = links..lists.links.len();
        Ok(view)
    }

    /// The fields, with the lists from the ones [`SpanView::read`] appended them to.
    fn fields<'s>(&'s self, lists: &'s SpanLists<'a>) -> SpanFields<'s, KeyView<'a>> {
        SpanFields {
            trace_id: self.trace_id,
            span_id: self.span_id,
            trace_state: self.trace_state,
            parent_span_id: self.parent_span_id,
            flags: self.flags,
            name: self.name,
            kind: self.kind,
            start_time_unix_nano: self.start_time_unix_nano,
            end_time_unix_nano: self.end_time_unix_nano,
            attributes: lists.attributes.get(self.attributes.clone()).unwrap_or_default(),
            dropped_attributes_count: self.dropped_attributes_count,
            events: lists.events.get(self.events.clone()).unwrap_or_default(),
            dropped_events_count: self.dropped_events_count,
            links: lists.links.get(self.links.clone()).unwrap_or_default(),
            dropped_links_count: self.dropped_links_count,
            status: self.status,
        }
    }
}

fn event<'a>(message: &'a [u8], known: &mut Known<'a>) -> Result<Event, Unusual> {
    let mut event = Event::default();
    let mut fields = Fields::new(message);
    while let Some((number, wire)) = fields.next_field()? {
        match number {
            1 => event.time_unix_nano = wire.fixed64()?,
            2 => wire.text()?.clone_into(&mut event.name),
            3 => event
                .attributes
                .push(wire::key_value(wire.bytes()?, known)?.to_key_value()),
            4 => event.dropped_attributes_count = wire.varint()? as u32,
            _ => {}
        }
    }
    Ok(event)
}

fn link<'a>(message: &'a [u8], known: &mut Known<'a>) -> Result<Link, Unusual> {
    let mut link = Link::default();
    let mut fields = Fields::new(message);
    while let Some((number, wire)) = fields.next_field()? {
        match number {
            1 => wire.bytes()?.clone_into(&mut link.trace_id),
            2 => wire.bytes()?.clone_into(&mut link.span_id),
            3 => wire.text()?.clone_into(&mut link.trace_state),
            4 => link
                .attributes
                .push(wire::key_value(wire.bytes()?, known)?.to_key_value()),
            5 => link.dropped_attributes_count = wire.varint()? as u32,
            6 => link.flags = wire.fixed32()?,
            _ => {}
        }
    }
    Ok(link)
}

/// A status's message and code.
fn status(message: &[u8]) -> Result<(&str, i32), Unusual> {
    let (mut text, mut code) = ("", 0);
    let mut fields = Fields::new(message);
    while let Some((number, wire)) = fields.next_field()? {
        match number {
            2 => text = wire.text()?,
            3 => code = wire.varint()? as i32,
            _ => {}
        }
    }
    Ok((text, code))
}

fn span_row<K: Sink, A: Attribute>(
    span: &SpanFields<'_, A>,
    shared: &SharedBags,
    ingest_time_nanos: i64,
    sink: &mut K,
    slots: &SpanSlots<K::Slot>,
    attributes: &mut BagText,
) -> Result<(), String> {
    // Everything that can refuse the span comes before its first cell.
    let (mut trace_hex, mut span_hex, mut parent_hex) =
        (HexBuffer::default(), HexBuffer::default(), HexBuffer::default());
    let trace_id = required_hex_into(span.trace_id, TRACE_ID_BYTES, "trace_id", &mut trace_hex)?;
    let span_id = required_hex_into(span.span_id, SPAN_ID_BYTES, "span_id", &mut span_hex)?;
    let parent_span_id = hex_into(span.parent_span_id, SPAN_ID_BYTES, "parent_span_id", &mut parent_hex)?;
    let start = timestamp_nanos(span.start_time_unix_nano, "start_time_unix_nano")?;
    let end = timestamp_nanos(span.end_time_unix_nano, "end_time_unix_nano")?;
    let events = events_json(span.events)?;
    let links = links_json(span.links)?;

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
    set_non_empty(sink, slots.span_name, span.name);
    if let Some(kind) = span_kind_name(span.kind) {
        sink.set_text(slots.span_kind, kind);
    }
    set_non_empty(sink, slots.trace_state, span.trace_state);
    let status_code = span.status.map_or(StatusCode::Unset as i32, |(_, code)| code);
    sink.set_text(slots.status_code, status_code_name(status_code));
    if let Some((message, _)) = span.status {
        set_non_empty(sink, slots.status_description, message);
    }
    set_flags(sink, slots.sampled, slots.flags, span.flags);
    if !span.attributes.is_empty() {
        attributes.write(span.attributes);
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
