//! OTLP/JSON reader for `ExportTraceServiceRequest`.

use serde_json::Value;
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;
use trawl_proto::otlp::trace::v1::span::{Event, Link, SpanKind};
use trawl_proto::otlp::trace::v1::status::StatusCode;
use trawl_proto::otlp::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

use super::{
    InField, JsonResult, array, enumeration, hex_bytes, key_values, object, optional, resource, scope, string, uint32,
    uint64,
};

pub(crate) fn request(value: Value) -> JsonResult<ExportTraceServiceRequest> {
    let mut request = ExportTraceServiceRequest::default();
    for (field, value) in object(value)? {
        if let "resourceSpans" | "resource_spans" = field.as_str() {
            request.resource_spans = array(value, resource_spans).in_field(&field)?;
        }
    }
    Ok(request)
}

fn resource_spans(value: Value) -> JsonResult<ResourceSpans> {
    let mut out = ResourceSpans::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "resource" => out.resource = optional(value, resource).in_field(&field)?,
            "scopeSpans" | "scope_spans" => out.scope_spans = array(value, scope_spans).in_field(&field)?,
            "schemaUrl" | "schema_url" => out.schema_url = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(out)
}

fn scope_spans(value: Value) -> JsonResult<ScopeSpans> {
    let mut out = ScopeSpans::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "scope" => out.scope = optional(value, scope).in_field(&field)?,
            "spans" => out.spans = array(value, span).in_field(&field)?,
            "schemaUrl" | "schema_url" => out.schema_url = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(out)
}

fn span_kind_from_name(name: &str) -> Option<i32> {
    SpanKind::from_str_name(name).map(|kind| kind as i32)
}

fn status_code_from_name(name: &str) -> Option<i32> {
    StatusCode::from_str_name(name).map(|code| code as i32)
}

fn span(value: Value) -> JsonResult<Span> {
    let mut span = Span::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "traceId" | "trace_id" => span.trace_id = hex_bytes(value).in_field(&field)?,
            "spanId" | "span_id" => span.span_id = hex_bytes(value).in_field(&field)?,
            "traceState" | "trace_state" => span.trace_state = string(value).in_field(&field)?,
            "parentSpanId" | "parent_span_id" => span.parent_span_id = hex_bytes(value).in_field(&field)?,
            "flags" => span.flags = uint32(value).in_field(&field)?,
            "name" => span.name = string(value).in_field(&field)?,
            "kind" => span.kind = enumeration(value, span_kind_from_name).in_field(&field)?,
            "startTimeUnixNano" | "start_time_unix_nano" => {
                span.start_time_unix_nano = uint64(value).in_field(&field)?
            }
            "endTimeUnixNano" | "end_time_unix_nano" => span.end_time_unix_nano = uint64(value).in_field(&field)?,
            "attributes" => span.attributes = key_values(value).in_field(&field)?,
            "droppedAttributesCount" | "dropped_attributes_count" => {
                span.dropped_attributes_count = uint32(value).in_field(&field)?
            }
            "events" => span.events = array(value, event).in_field(&field)?,
            "droppedEventsCount" | "dropped_events_count" => {
                span.dropped_events_count = uint32(value).in_field(&field)?
            }
            "links" => span.links = array(value, link).in_field(&field)?,
            "droppedLinksCount" | "dropped_links_count" => span.dropped_links_count = uint32(value).in_field(&field)?,
            "status" => span.status = optional(value, status).in_field(&field)?,
            _ => {}
        }
    }
    Ok(span)
}

fn event(value: Value) -> JsonResult<Event> {
    let mut event = Event::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "timeUnixNano" | "time_unix_nano" => event.time_unix_nano = uint64(value).in_field(&field)?,
            "name" => event.name = string(value).in_field(&field)?,
            "attributes" => event.attributes = key_values(value).in_field(&field)?,
            "droppedAttributesCount" | "dropped_attributes_count" => {
                event.dropped_attributes_count = uint32(value).in_field(&field)?
            }
            _ => {}
        }
    }
    Ok(event)
}

fn link(value: Value) -> JsonResult<Link> {
    let mut link = Link::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "traceId" | "trace_id" => link.trace_id = hex_bytes(value).in_field(&field)?,
            "spanId" | "span_id" => link.span_id = hex_bytes(value).in_field(&field)?,
            "traceState" | "trace_state" => link.trace_state = string(value).in_field(&field)?,
            "attributes" => link.attributes = key_values(value).in_field(&field)?,
            "droppedAttributesCount" | "dropped_attributes_count" => {
                link.dropped_attributes_count = uint32(value).in_field(&field)?
            }
            "flags" => link.flags = uint32(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(link)
}

fn status(value: Value) -> JsonResult<Status> {
    let mut status = Status::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "message" => status.message = string(value).in_field(&field)?,
            "code" => status.code = enumeration(value, status_code_from_name).in_field(&field)?,
            _ => {}
        }
    }
    Ok(status)
}
