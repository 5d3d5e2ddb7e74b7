//! Spans to span rows (SPEC "Span rows"): one row per span.

use serde_json::{Map, Value as Json};
use trawl_common::time::format_datetime;
use trawl_common::{Row, Value};
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;
use trawl_proto::otlp::trace::v1::Span;
use trawl_proto::otlp::trace::v1::span::{Event, Link, SpanKind};
use trawl_proto::otlp::trace::v1::status::StatusCode;

use crate::IntakeOutput;
use crate::otlp::common::{
    FLAG_BIT_0, Rejections, SPAN_ID_BYTES, SharedCells, TRACE_ID_BYTES, attributes_to_json, hex_id, push_attributes,
    push_dropped_count, push_flags, push_non_empty, required_hex_id, timestamp_nanos,
};

/// Link flag bit 8: the sender knows whether the linked context is remote.
const LINK_HAS_IS_REMOTE: u32 = 0x100;
/// Link flag bit 9: the linked context is remote (meaningful only with bit 8).
const LINK_IS_REMOTE: u32 = 0x200;

/// Cells a span row can have besides the resource and scope ones.
const SPAN_COLUMNS: usize = 21;

/// Maps every span of `request` to a row. A span is rejected, not stored, when its trace id is
/// not 16 bytes, its span id not 8, its parent span id neither empty nor 8, a link's ids are not
/// 16 and 8 bytes, or a time is past the year 2262.
pub fn traces_to_rows(request: &ExportTraceServiceRequest, ingest_time_nanos: i64) -> IntakeOutput {
    let span_count = request
        .resource_spans
        .iter()
        .flat_map(|resource_spans| &resource_spans.scope_spans)
        .map(|scope_spans| scope_spans.spans.len())
        .sum();
    let mut rows = Vec::with_capacity(span_count);
    let mut rejections = Rejections::new("span", "spans");
    for (resource_index, resource_spans) in request.resource_spans.iter().enumerate() {
        let resource_cells = SharedCells::for_resource(resource_spans.resource.as_ref());
        for (scope_index, scope_spans) in resource_spans.scope_spans.iter().enumerate() {
            let shared = resource_cells.with_scope(scope_spans.scope.as_ref());
            for (span_index, span) in scope_spans.spans.iter().enumerate() {
                match span_row(span, &shared, ingest_time_nanos) {
                    Ok(row) => rows.push(row),
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
    rejections.into_output(rows)
}

fn span_row(span: &Span, shared: &SharedCells, ingest_time_nanos: i64) -> Result<Row, String> {
    let trace_id = required_hex_id(&span.trace_id, TRACE_ID_BYTES, "trace_id")?;
    let span_id = required_hex_id(&span.span_id, SPAN_ID_BYTES, "span_id")?;
    let parent_span_id = hex_id(&span.parent_span_id, SPAN_ID_BYTES, "parent_span_id")?;
    let start = timestamp_nanos(span.start_time_unix_nano, "start_time_unix_nano")?;
    let end = timestamp_nanos(span.end_time_unix_nano, "end_time_unix_nano")?;
    let events = events_json(&span.events)?;
    let links = links_json(&span.links)?;

    let mut row = Row::with_capacity(SPAN_COLUMNS + shared.len());
    let timestamp = [end, start].into_iter().find(|nanos| *nanos != 0);
    row.push("timestamp", Value::DateTime(timestamp.unwrap_or(ingest_time_nanos)));
    if start != 0 {
        row.push("start_time", Value::DateTime(start));
    }
    if end != 0 {
        row.push("end_time", Value::DateTime(end));
    }
    row.push("ingest_time", Value::DateTime(ingest_time_nanos));
    if start != 0 && end != 0 {
        row.push("duration", Value::Timespan(end - start));
    }
    row.push("trace_id", Value::String(trace_id));
    row.push("span_id", Value::String(span_id));
    if let Some(parent_span_id) = parent_span_id {
        row.push("parent_span_id", Value::String(parent_span_id));
    }
    push_non_empty(&mut row, "span_name", &span.name);
    if let Some(kind) = span_kind_name(span.kind) {
        row.push("span_kind", Value::String(kind.to_owned()));
    }
    push_non_empty(&mut row, "trace_state", &span.trace_state);
    let status = span.status.as_ref();
    let status_code = status.map_or(StatusCode::Unset as i32, |status| status.code);
    row.push("status_code", Value::String(status_code_name(status_code).to_owned()));
    if let Some(status) = status {
        push_non_empty(&mut row, "status_description", &status.message);
    }
    push_flags(&mut row, "sampled", span.flags);
    push_attributes(&mut row, "attributes", &span.attributes);
    if !events.is_empty() {
        row.push("events", Value::Dynamic(Json::Array(events)));
    }
    if !links.is_empty() {
        row.push("links", Value::Dynamic(Json::Array(links)));
    }
    push_dropped_count(&mut row, "dropped_attributes_count", span.dropped_attributes_count);
    push_dropped_count(&mut row, "dropped_events_count", span.dropped_events_count);
    push_dropped_count(&mut row, "dropped_links_count", span.dropped_links_count);
    shared.append_to(&mut row);
    debug_assert!(row.cells.len() <= SPAN_COLUMNS + shared.len());
    Ok(row)
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
