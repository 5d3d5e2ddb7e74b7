//! `/api/v0.2/traces`: the trace agent's `AgentPayload` to span rows. Classic tracer payloads
//! and indexed (string-table) ones are first read into one neutral [`VendorSpan`], so both
//! forms map through the same code and map identically. The mapping table is in the README
//! beside this file.

use serde_json::{Map, Value as Json};
use trawl_common::time::format_datetime;
use trawl_common::{Row, Value};
use trawl_proto::prost::Message;
use trawl_proto::vendor::trace::idx;
use trawl_proto::vendor::trace::{AgentPayload, AttributeAnyValue, AttributeArrayValue, TracerPayload};

use crate::otlp::base64;
use crate::otlp::common::{Rejections, double_to_json};
use crate::vendor::metrics::refuse_json;
use crate::{IntakeError, IntakeOutput};

/// `scope_name` of spans without a component or OpenTelemetry scope.
const SCOPE_NAME: &str = "vx";
/// Bit 31 of a link's flags: the W3C flags are set.
const LINK_FLAGS_SET: u32 = 1 << 31;
/// Cells a span row can have.
const SPAN_COLUMNS: usize = 22;

/// Decodes a `/api/v0.2/traces` body.
pub fn decode(body: &[u8]) -> Result<AgentPayload, IntakeError> {
    refuse_json(body, "a protobuf AgentPayload")?;
    AgentPayload::decode(body).map_err(|e| IntakeError::MalformedBody {
        expected: "a protobuf AgentPayload",
        found: format!("undecodable bytes ({e})"),
    })
}

/// What every span of one tracer payload shares.
#[derive(Debug, Default)]
struct TracerCells {
    host: String,
    env: String,
    app_version: String,
    language: String,
    tracer_version: String,
    runtime_id: String,
    container_id: String,
}

/// One span, read from either payload form.
#[derive(Debug, Default)]
struct VendorSpan {
    service: String,
    operation: String,
    resource: String,
    span_type: String,
    /// High 64 bits of the trace id when the payload carries them outside the meta
    /// (indexed chunks carry all 128 bits).
    trace_high: Option<u64>,
    trace_low: u64,
    span_id: u64,
    parent_id: u64,
    start: i64,
    duration: i64,
    error: bool,
    /// Meta strings and metric numbers (indexed: attributes), verbatim.
    attributes: Map<String, Json>,
    env: String,
    version: String,
    component: String,
    /// The indexed form's kind enum (0 when unset).
    kind: i32,
    links: Vec<Json>,
    events: Vec<Json>,
    /// Whether the chunk's sampling priority keeps the trace.
    sampled: bool,
}

/// Span rows of every classic and indexed tracer payload. A span is rejected, not stored,
/// when its trace or span id is zero, its duration negative, or its times past the year 2262.
pub fn to_rows(payload: &AgentPayload, ingest_time_nanos: i64) -> IntakeOutput {
    let mut rows = Vec::new();
    let mut rejections = Rejections::new("span", "spans");
    for (payload_index, tracer) in payload.tracer_payloads.iter().enumerate() {
        let cells = classic_cells(payload, tracer);
        for (chunk_index, chunk) in tracer.chunks.iter().enumerate() {
            let chunk_tid = chunk.tags.get("_dd.p.tid").and_then(|hex| parse_high_bits(hex));
            for (span_index, span) in chunk.spans.iter().enumerate() {
                let span = classic_span(span, chunk_tid, chunk.priority > 0);
                let location = || format!("tracerPayloads[{payload_index}].chunks[{chunk_index}].spans[{span_index}]");
                match span_row(&cells, span, ingest_time_nanos) {
                    Ok(row) => rows.push(row),
                    Err(reason) => rejections.reject(location, reason),
                }
            }
        }
    }
    for (payload_index, tracer) in payload.idx_tracer_payloads.iter().enumerate() {
        let strings = Strings(&tracer.strings);
        let cells = idx_cells(payload, tracer, &strings);
        for (chunk_index, chunk) in tracer.chunks.iter().enumerate() {
            let location = |span_index: usize| {
                move || format!("idxTracerPayloads[{payload_index}].chunks[{chunk_index}].spans[{span_index}]")
            };
            let trace_id = match <[u8; 16]>::try_from(chunk.trace_id.as_slice()) {
                Ok(bytes) => u128::from_be_bytes(bytes),
                Err(_) => {
                    for span_index in 0..chunk.spans.len() {
                        let reason = format!("expected a 16-byte chunk traceID, found {} bytes", chunk.trace_id.len());
                        rejections.reject(location(span_index), reason);
                    }
                    continue;
                }
            };
            for (span_index, span) in chunk.spans.iter().enumerate() {
                let span = idx_span(span, &strings, trace_id, chunk.priority > 0);
                match span_row(&cells, span, ingest_time_nanos) {
                    Ok(row) => rows.push(row),
                    Err(reason) => rejections.reject(location(span_index), reason),
                }
            }
        }
    }
    rejections.into_output(rows)
}

fn first_non_empty(candidates: &[&str]) -> String {
    candidates
        .iter()
        .find(|c| !c.is_empty())
        .map(|c| (*c).to_owned())
        .unwrap_or_default()
}

fn classic_cells(payload: &AgentPayload, tracer: &TracerPayload) -> TracerCells {
    TracerCells {
        host: first_non_empty(&[&tracer.hostname, &payload.host_name]),
        env: first_non_empty(&[&tracer.env, &payload.env]),
        app_version: tracer.app_version.clone(),
        language: tracer.language_name.clone(),
        tracer_version: tracer.tracer_version.clone(),
        runtime_id: tracer.runtime_id.clone(),
        container_id: tracer.container_id.clone(),
    }
}

/// 16 hex digits of the high 64 bits of a trace id.
fn parse_high_bits(hex: &str) -> Option<u64> {
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

fn classic_span(span: &trawl_proto::vendor::trace::Span, chunk_tid: Option<u64>, sampled: bool) -> VendorSpan {
    // Sorted by key, so a span's stored attributes do not depend on map iteration order.
    let mut pairs: Vec<(&String, Json)> = span
        .meta
        .iter()
        .map(|(key, value)| (key, Json::String(value.clone())))
        .chain(span.metrics.iter().map(|(key, value)| (key, double_to_json(*value))))
        .collect();
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    let mut attributes: Map<String, Json> = pairs.into_iter().map(|(key, value)| (key.clone(), value)).collect();
    let env = take_string(&mut attributes, "env").unwrap_or_default();
    let version = take_string(&mut attributes, "version").unwrap_or_default();
    let component = span.meta.get("component").cloned().unwrap_or_default();
    let trace_high = span
        .meta
        .get("_dd.p.tid")
        .and_then(|hex| parse_high_bits(hex))
        .or(chunk_tid);
    let links = span
        .span_links
        .iter()
        .map(|link| {
            let trace_id = (u128::from(link.trace_id_high) << 64) | u128::from(link.trace_id);
            let attributes = link
                .attributes
                .iter()
                .map(|(k, v)| (k.clone(), Json::String(v.clone())))
                .collect();
            link_json(trace_id, link.span_id, &link.tracestate, link.flags, attributes)
        })
        .collect();
    let events = span
        .span_events
        .iter()
        .map(|event| {
            let attributes = event
                .attributes
                .iter()
                .map(|(k, v)| (k.clone(), attribute_any_value(v)))
                .collect();
            event_json(event.time_unix_nano, &event.name, attributes)
        })
        .collect();
    VendorSpan {
        service: span.service.clone(),
        operation: span.name.clone(),
        resource: span.resource.clone(),
        span_type: span.r#type.clone(),
        trace_high,
        trace_low: span.trace_id,
        span_id: span.span_id,
        parent_id: span.parent_id,
        start: span.start,
        duration: span.duration,
        error: span.error != 0,
        attributes,
        env,
        version,
        component,
        kind: 0,
        links,
        events,
        sampled,
    }
}

fn attribute_any_value(value: &AttributeAnyValue) -> Json {
    match value.r#type {
        1 => Json::Bool(value.bool_value),
        2 => Json::from(value.int_value),
        3 => double_to_json(value.double_value),
        4 => Json::Array(
            value
                .array_value
                .as_ref()
                .map(|array| array.values.iter().map(attribute_array_value).collect())
                .unwrap_or_default(),
        ),
        _ => Json::String(value.string_value.clone()),
    }
}

fn attribute_array_value(value: &AttributeArrayValue) -> Json {
    match value.r#type {
        1 => Json::Bool(value.bool_value),
        2 => Json::from(value.int_value),
        3 => double_to_json(value.double_value),
        _ => Json::String(value.string_value.clone()),
    }
}

/// A tracer payload's string table; a reference past its end reads as empty.
struct Strings<'a>(&'a [String]);

impl Strings<'_> {
    fn get(&self, index: u32) -> &str {
        self.0.get(index as usize).map_or("", String::as_str)
    }

    fn value(&self, value: &idx::AnyValue) -> Json {
        use idx::any_value::Value as V;
        match &value.value {
            None => Json::Null,
            Some(V::StringValueRef(index)) => Json::String(self.get(*index).to_owned()),
            Some(V::BoolValue(flag)) => Json::Bool(*flag),
            Some(V::DoubleValue(number)) => double_to_json(*number),
            Some(V::IntValue(number)) => Json::from(*number),
            Some(V::BytesValue(bytes)) => Json::String(base64::encode(bytes)),
            Some(V::ArrayValue(array)) => Json::Array(array.values.iter().map(|v| self.value(v)).collect()),
            Some(V::KeyValueList(list)) => Json::Object(
                list.key_values
                    .iter()
                    .map(|kv| {
                        let value = kv.value.as_ref().map_or(Json::Null, |v| self.value(v));
                        (self.get(kv.key).to_owned(), value)
                    })
                    .collect(),
            ),
        }
    }

    fn attributes<'b>(&self, attributes: impl Iterator<Item = (&'b u32, &'b idx::AnyValue)>) -> Map<String, Json> {
        attributes
            .map(|(key, value)| (self.get(*key).to_owned(), self.value(value)))
            .collect()
    }
}

fn idx_cells(payload: &AgentPayload, tracer: &idx::TracerPayload, strings: &Strings<'_>) -> TracerCells {
    TracerCells {
        host: first_non_empty(&[strings.get(tracer.hostname), &payload.host_name]),
        env: first_non_empty(&[strings.get(tracer.env), &payload.env]),
        app_version: strings.get(tracer.app_version).to_owned(),
        language: strings.get(tracer.language_name).to_owned(),
        tracer_version: strings.get(tracer.tracer_version).to_owned(),
        runtime_id: strings.get(tracer.runtime_id).to_owned(),
        container_id: strings.get(tracer.container_id).to_owned(),
    }
}

fn idx_span(span: &idx::Span, strings: &Strings<'_>, trace_id: u128, sampled: bool) -> VendorSpan {
    let attributes = strings.attributes(span.attributes.iter());
    let links = span
        .span_links
        .iter()
        .map(|link| {
            let trace_id = <[u8; 16]>::try_from(link.trace_id.as_slice()).map_or(0, u128::from_be_bytes);
            let attributes = strings.attributes(link.attributes.iter());
            let trace_state = strings.get(link.tracestate_ref);
            link_json(trace_id, link.span_id, trace_state, link.flags_ref, attributes)
        })
        .collect();
    let events = span
        .span_events
        .iter()
        .map(|event| {
            let attributes = strings.attributes(event.attributes.iter());
            event_json(event.time, strings.get(event.name_ref), attributes)
        })
        .collect();
    VendorSpan {
        service: strings.get(span.service_ref).to_owned(),
        operation: strings.get(span.name_ref).to_owned(),
        resource: strings.get(span.resource_ref).to_owned(),
        span_type: strings.get(span.type_ref).to_owned(),
        trace_high: Some((trace_id >> 64) as u64),
        trace_low: trace_id as u64,
        span_id: span.span_id,
        parent_id: span.parent_id,
        start: i64::try_from(span.start).unwrap_or(i64::MAX),
        duration: i64::try_from(span.duration).unwrap_or(i64::MAX),
        error: span.error,
        attributes,
        env: strings.get(span.env_ref).to_owned(),
        version: strings.get(span.version_ref).to_owned(),
        component: strings.get(span.component_ref).to_owned(),
        kind: span.kind,
        links,
        events,
        sampled,
    }
}

/// `{trace_id, span_id[, trace_state], sampled[, flags], attributes}`; flags count only when
/// bit 31 says they are set, bit 0 is `sampled`, other bits stay in `flags`.
fn link_json(trace_id: u128, span_id: u64, trace_state: &str, flags: u32, attributes: Map<String, Json>) -> Json {
    let mut bag = Map::with_capacity(6);
    bag.insert("trace_id".into(), Json::String(format!("{trace_id:032x}")));
    bag.insert("span_id".into(), Json::String(format!("{span_id:016x}")));
    if !trace_state.is_empty() {
        bag.insert("trace_state".into(), Json::String(trace_state.to_owned()));
    }
    let flags = if flags & LINK_FLAGS_SET != 0 {
        flags & !LINK_FLAGS_SET
    } else {
        0
    };
    bag.insert("sampled".into(), Json::Bool(flags & 1 != 0));
    if flags & !1 != 0 {
        bag.insert("flags".into(), Json::from(flags & !1));
    }
    bag.insert("attributes".into(), Json::Object(attributes));
    Json::Object(bag)
}

/// `{timestamp, name, attributes}`, the timestamp as ISO 8601 text (null when 0 or out of range).
fn event_json(time_unix_nano: u64, name: &str, attributes: Map<String, Json>) -> Json {
    let mut bag = Map::with_capacity(3);
    let timestamp = match i64::try_from(time_unix_nano) {
        Ok(nanos) if nanos > 0 => Json::String(format_datetime(nanos)),
        _ => Json::Null,
    };
    bag.insert("timestamp".into(), timestamp);
    bag.insert("name".into(), Json::String(name.to_owned()));
    bag.insert("attributes".into(), Json::Object(attributes));
    Json::Object(bag)
}

/// Links from the legacy `_dd.span_links` meta: a JSON array of `{trace_id (32 hex),
/// span_id (16 hex), attributes, tracestate, flags}`.
fn legacy_links(text: &str) -> Option<Vec<Json>> {
    let items: Vec<Map<String, Json>> = serde_json::from_str(text).ok()?;
    items
        .into_iter()
        .map(|item| {
            let trace_id = u128::from_str_radix(item.get("trace_id")?.as_str()?, 16).ok()?;
            let span_id = u64::from_str_radix(item.get("span_id")?.as_str()?, 16).ok()?;
            let trace_state = item.get("tracestate").and_then(Json::as_str).unwrap_or("");
            let flags = item.get("flags").and_then(Json::as_u64).unwrap_or(0) as u32;
            let attributes = match item.get("attributes") {
                Some(Json::Object(attributes)) => attributes.clone(),
                _ => Map::new(),
            };
            Some(link_json(
                trace_id,
                span_id,
                trace_state,
                flags | LINK_FLAGS_SET,
                attributes,
            ))
        })
        .collect()
}

/// Events from the legacy `events` meta: a JSON array of `{name, time_unix_nano, attributes}`.
fn legacy_events(text: &str) -> Option<Vec<Json>> {
    let items: Vec<Map<String, Json>> = serde_json::from_str(text).ok()?;
    items
        .into_iter()
        .map(|item| {
            let name = item.get("name")?.as_str()?;
            let time = item.get("time_unix_nano").and_then(Json::as_u64).unwrap_or(0);
            let attributes = match item.get("attributes") {
                Some(Json::Object(attributes)) => attributes.clone(),
                _ => Map::new(),
            };
            Some(event_json(time, name, attributes))
        })
        .collect()
}

/// `span.kind` text or the indexed kind enum; missing or unknown: INTERNAL.
fn span_kind(kind: i32, text: Option<&str>) -> &'static str {
    let from_text = |text: &str| match text.to_ascii_lowercase().as_str() {
        "server" => Some("SERVER"),
        "client" => Some("CLIENT"),
        "producer" => Some("PRODUCER"),
        "consumer" => Some("CONSUMER"),
        "internal" => Some("INTERNAL"),
        _ => None,
    };
    match kind {
        2 => "SERVER",
        3 => "CLIENT",
        4 => "PRODUCER",
        5 => "CONSUMER",
        1 => "INTERNAL",
        _ => text.and_then(from_text).unwrap_or("INTERNAL"),
    }
}

fn take_string(attributes: &mut Map<String, Json>, key: &str) -> Option<String> {
    match attributes.get(key) {
        Some(Json::String(_)) => match attributes.remove(key) {
            Some(Json::String(text)) => Some(text),
            _ => None,
        },
        _ => None,
    }
}

fn span_row(cells: &TracerCells, mut span: VendorSpan, ingest_time_nanos: i64) -> Result<Row, String> {
    if span.trace_low == 0 && span.trace_high.unwrap_or(0) == 0 {
        return Err("trace id is zero".to_owned());
    }
    if span.span_id == 0 {
        return Err("span id is zero".to_owned());
    }
    if span.duration < 0 {
        return Err(format!("duration {} ns is negative", span.duration));
    }
    let end = span
        .start
        .checked_add(span.duration)
        .ok_or_else(|| "start plus duration is past the year 2262".to_owned())?;
    let attributes = &mut span.attributes;
    let trace_high = span.trace_high.unwrap_or(0);

    // Columns the meta feeds; these keys leave the attributes.
    let kind_text = take_string(attributes, "span.kind");
    let span_kind = span_kind(span.kind, kind_text.as_deref());
    if let Some(links) = attributes
        .get("_dd.span_links")
        .and_then(Json::as_str)
        .and_then(legacy_links)
    {
        attributes.remove("_dd.span_links");
        span.links.extend(links);
    }
    if let Some(events) = attributes.get("events").and_then(Json::as_str).and_then(legacy_events) {
        attributes.remove("events");
        span.events.extend(events);
    }
    let otel_scope_name =
        take_string(attributes, "otel.scope.name").or_else(|| take_string(attributes, "otel.library.name"));
    let otel_scope_version =
        take_string(attributes, "otel.scope.version").or_else(|| take_string(attributes, "otel.library.version"));
    let (scope_name, scope_version) = match otel_scope_name {
        Some(name) => (name, otel_scope_version.unwrap_or_default()),
        None if !span.component.is_empty() => {
            attributes.remove("component");
            (span.component.clone(), cells.tracer_version.clone())
        }
        None => (SCOPE_NAME.to_owned(), cells.tracer_version.clone()),
    };
    let mut status_code = if span.error { "ERROR" } else { "UNSET" };
    let mut status_description = if span.error {
        ["error.message", "error.msg"]
            .iter()
            .find_map(|key| attributes.get(*key).and_then(Json::as_str))
            .map(str::to_owned)
    } else {
        None
    };
    if let Some(code) = take_string(attributes, "otel.status_code") {
        match code.to_ascii_lowercase().as_str() {
            "ok" => status_code = "OK",
            "error" => status_code = "ERROR",
            "unset" => status_code = "UNSET",
            _ => {}
        }
    }
    if let Some(description) = take_string(attributes, "otel.status_description") {
        status_description = Some(description);
    }
    if status_code != "ERROR" {
        status_description = None;
    }
    attributes.insert("vx.operation_name".into(), Json::String(span.operation.clone()));
    if !span.span_type.is_empty() {
        attributes.insert("vx.span_type".into(), Json::String(span.span_type.clone()));
    }
    attributes.insert("vx.trace_id".into(), Json::String(span.trace_low.to_string()));
    attributes.insert("vx.span_id".into(), Json::String(span.span_id.to_string()));

    let mut resource = Map::with_capacity(9);
    let mut put = |key: &str, value: &str| {
        if !value.is_empty() {
            resource.insert(key.to_owned(), Json::String(value.to_owned()));
        }
    };
    put("service.name", &span.service);
    put(
        "deployment.environment.name",
        first_non_empty(&[&span.env, &cells.env]).as_str(),
    );
    put(
        "service.version",
        first_non_empty(&[&span.version, &cells.app_version]).as_str(),
    );
    put("host.name", &cells.host);
    put("container.id", &cells.container_id);
    put("service.instance.id", &cells.runtime_id);
    put("telemetry.sdk.language", &cells.language);
    put("telemetry.sdk.version", &cells.tracer_version);
    put("telemetry.sdk.name", SCOPE_NAME);

    let name = if span.resource.is_empty() {
        &span.operation
    } else {
        &span.resource
    };
    let mut row = Row::with_capacity(SPAN_COLUMNS);
    let timestamp = if end > 0 { end } else { ingest_time_nanos };
    row.push("timestamp", Value::DateTime(timestamp));
    if span.start > 0 {
        row.push("start_time", Value::DateTime(span.start));
        row.push("end_time", Value::DateTime(end));
    }
    row.push("ingest_time", Value::DateTime(ingest_time_nanos));
    row.push("duration", Value::Timespan(span.duration));
    row.push(
        "trace_id",
        Value::String(format!("{trace_high:016x}{:016x}", span.trace_low)),
    );
    row.push("span_id", Value::String(format!("{:016x}", span.span_id)));
    if span.parent_id != 0 {
        row.push("parent_span_id", Value::String(format!("{:016x}", span.parent_id)));
    }
    if !name.is_empty() {
        row.push("span_name", Value::String(name.clone()));
    }
    row.push("span_kind", Value::String(span_kind.to_owned()));
    row.push("status_code", Value::String(status_code.to_owned()));
    if let Some(description) = status_description.filter(|d| !d.is_empty()) {
        row.push("status_description", Value::String(description));
    }
    if span.sampled {
        row.push("sampled", Value::Bool(true));
    }
    row.push("attributes", Value::Dynamic(Json::Object(span.attributes)));
    if !span.events.is_empty() {
        row.push("events", Value::Dynamic(Json::Array(span.events)));
    }
    if !span.links.is_empty() {
        row.push("links", Value::Dynamic(Json::Array(span.links)));
    }
    row.push("resource", Value::Dynamic(Json::Object(resource)));
    row.push("scope_name", Value::String(scope_name));
    if !scope_version.is_empty() {
        row.push("scope_version", Value::String(scope_version));
    }
    Ok(row)
}

#[cfg(test)]
mod tests;
