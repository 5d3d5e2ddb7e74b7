use std::collections::HashMap;

use serde_json::json;
use trawl_proto::vendor::trace::{
    AttributeArray, SpanEvent, SpanLink, TraceChunk, attribute_any_value::AttributeAnyValueType,
};

use super::*;

const INGEST: i64 = 42;
const START: i64 = 1_700_000_000_000_000_000;
const HIGH: u64 = 0x6543_2100_abcd_ef01;
const LOW: u64 = 0x0123_4567_89ab_cdef;

fn text(value: &str) -> Option<Value> {
    Some(Value::String(value.to_owned()))
}

fn json_cell(row: &Row, column: &str) -> Json {
    match row.get(column) {
        Some(Value::Dynamic(json)) => json.clone(),
        _ => Json::Null,
    }
}

fn map<V: Clone>(pairs: &[(&str, V)]) -> HashMap<String, V> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

/// A server span of a 128-bit trace with error, links and events, in the classic form.
fn classic_span() -> trawl_proto::vendor::trace::Span {
    trawl_proto::vendor::trace::Span {
        service: "checkout".into(),
        name: "http.request".into(),
        resource: "GET /cart".into(),
        trace_id: LOW,
        span_id: 22,
        parent_id: 11,
        start: START,
        duration: 1_500_000,
        error: 1,
        meta: map(&[
            ("_dd.p.tid", "65432100abcdef01".to_owned()),
            ("span.kind", "server".to_owned()),
            ("env", "prod".to_owned()),
            ("version", "1.4.2".to_owned()),
            ("component", "flask".to_owned()),
            ("http.method", "GET".to_owned()),
            ("error.message", "cart is gone".to_owned()),
        ]),
        metrics: map(&[("http.status_code", 500.0), ("_sampling_priority_v1", 1.0)]),
        r#type: "web".into(),
        meta_struct: HashMap::new(),
        span_links: vec![SpanLink {
            trace_id: 7,
            trace_id_high: 1,
            span_id: 9,
            attributes: map(&[("link.kind", "retry".to_owned())]),
            tracestate: "dd=s:1".into(),
            flags: LINK_FLAGS_SET | 1,
        }],
        span_events: vec![SpanEvent {
            time_unix_nano: START as u64 + 1_000,
            name: "exception".into(),
            attributes: map(&[
                (
                    "exception.message",
                    AttributeAnyValue {
                        r#type: AttributeAnyValueType::StringValue as i32,
                        string_value: "boom".into(),
                        ..AttributeAnyValue::default()
                    },
                ),
                (
                    "attempts",
                    AttributeAnyValue {
                        r#type: AttributeAnyValueType::ArrayValue as i32,
                        array_value: Some(AttributeArray {
                            values: vec![AttributeArrayValue {
                                r#type: 2,
                                int_value: 3,
                                ..AttributeArrayValue::default()
                            }],
                        }),
                        ..AttributeAnyValue::default()
                    },
                ),
            ]),
        }],
    }
}

fn classic_payload(spans: Vec<trawl_proto::vendor::trace::Span>) -> AgentPayload {
    AgentPayload {
        host_name: "agent-host".into(),
        env: "agent-env".into(),
        tracer_payloads: vec![TracerPayload {
            container_id: "c0ffee".into(),
            language_name: "python".into(),
            language_version: "3.12".into(),
            tracer_version: "2.9.0".into(),
            runtime_id: "rt-1".into(),
            chunks: vec![TraceChunk {
                priority: 1,
                spans,
                ..TraceChunk::default()
            }],
            hostname: "web-1".into(),
            app_version: "1.4.0".into(),
            ..TracerPayload::default()
        }],
        ..AgentPayload::default()
    }
}

/// The same span in the indexed form.
fn idx_payload() -> AgentPayload {
    let strings: Vec<String> = [
        "",
        "checkout",
        "http.request",
        "GET /cart",
        "web",
        "prod",
        "1.4.2",
        "flask",
        "http.method",
        "GET",
        "error.message",
        "cart is gone",
        "http.status_code",
        "_sampling_priority_v1",
        "link.kind",
        "retry",
        "dd=s:1",
        "exception",
        "exception.message",
        "boom",
        "attempts",
        "c0ffee",
        "python",
        "3.12",
        "2.9.0",
        "rt-1",
        "web-1",
        "1.4.0",
        "_dd.p.tid",
        "65432100abcdef01",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let s = |text: &str| strings.iter().position(|x| x == text).unwrap_or(0) as u32;
    let string_value = |text: &str| idx::AnyValue {
        value: Some(idx::any_value::Value::StringValueRef(s(text))),
    };
    let double_value = |number: f64| idx::AnyValue {
        value: Some(idx::any_value::Value::DoubleValue(number)),
    };
    let trace_id = ((u128::from(HIGH) << 64) | u128::from(LOW)).to_be_bytes().to_vec();
    let span = idx::Span {
        service_ref: s("checkout"),
        name_ref: s("http.request"),
        resource_ref: s("GET /cart"),
        span_id: 22,
        parent_id: 11,
        start: START as u64,
        duration: 1_500_000,
        error: true,
        attributes: [
            (s("_dd.p.tid"), string_value("65432100abcdef01")),
            (s("http.method"), string_value("GET")),
            (s("error.message"), string_value("cart is gone")),
            (s("http.status_code"), double_value(500.0)),
            (s("_sampling_priority_v1"), double_value(1.0)),
        ]
        .into_iter()
        .collect(),
        type_ref: s("web"),
        span_links: vec![idx::SpanLink {
            trace_id: ((1_u128 << 64) | 7).to_be_bytes().to_vec(),
            span_id: 9,
            attributes: [(s("link.kind"), string_value("retry"))].into_iter().collect(),
            tracestate_ref: s("dd=s:1"),
            flags_ref: LINK_FLAGS_SET | 1,
        }],
        span_events: vec![idx::SpanEvent {
            time: START as u64 + 1_000,
            name_ref: s("exception"),
            attributes: [
                (s("exception.message"), string_value("boom")),
                (
                    s("attempts"),
                    idx::AnyValue {
                        value: Some(idx::any_value::Value::ArrayValue(idx::ArrayValue {
                            values: vec![idx::AnyValue {
                                value: Some(idx::any_value::Value::IntValue(3)),
                            }],
                        })),
                    },
                ),
            ]
            .into_iter()
            .collect(),
        }],
        env_ref: s("prod"),
        version_ref: s("1.4.2"),
        component_ref: s("flask"),
        kind: idx::SpanKind::Server as i32,
    };
    let tracer = idx::TracerPayload {
        container_id: s("c0ffee"),
        language_name: s("python"),
        language_version: s("3.12"),
        tracer_version: s("2.9.0"),
        runtime_id: s("rt-1"),
        hostname: s("web-1"),
        app_version: s("1.4.0"),
        chunks: vec![idx::TraceChunk {
            priority: 1,
            spans: vec![span],
            trace_id,
            ..idx::TraceChunk::default()
        }],
        strings,
        ..idx::TracerPayload::default()
    };
    AgentPayload {
        host_name: "agent-host".into(),
        env: "agent-env".into(),
        idx_tracer_payloads: vec![tracer],
        ..AgentPayload::default()
    }
}

#[test]
fn every_column_of_the_span_table() {
    let output = to_rows(&classic_payload(vec![classic_span()]), INGEST);
    assert_eq!(output.rejected, 0, "{}", output.error_message);
    let row = &output.rows[0];
    assert_eq!(row.get("timestamp"), Some(&Value::DateTime(START + 1_500_000)));
    assert_eq!(row.get("start_time"), Some(&Value::DateTime(START)));
    assert_eq!(row.get("end_time"), Some(&Value::DateTime(START + 1_500_000)));
    assert_eq!(row.get("ingest_time"), Some(&Value::DateTime(INGEST)));
    assert_eq!(row.get("duration"), Some(&Value::Timespan(1_500_000)));
    assert_eq!(row.get("trace_id"), text("65432100abcdef010123456789abcdef").as_ref());
    assert_eq!(row.get("span_id"), text("0000000000000016").as_ref());
    assert_eq!(row.get("parent_span_id"), text("000000000000000b").as_ref());
    assert_eq!(row.get("span_name"), text("GET /cart").as_ref());
    assert_eq!(row.get("span_kind"), text("SERVER").as_ref());
    assert_eq!(row.get("status_code"), text("ERROR").as_ref());
    assert_eq!(row.get("status_description"), text("cart is gone").as_ref());
    assert_eq!(row.get("sampled"), Some(&Value::Bool(true)));
    assert_eq!(
        json_cell(row, "attributes"),
        json!({
            "_dd.p.tid": "65432100abcdef01",
            "http.method": "GET",
            "error.message": "cart is gone",
            "http.status_code": 500.0,
            "_sampling_priority_v1": 1.0,
            "vx.operation_name": "http.request",
            "vx.span_type": "web",
            "vx.trace_id": LOW.to_string(),
            "vx.span_id": "22",
        })
    );
    assert_eq!(
        json_cell(row, "resource"),
        json!({
            "service.name": "checkout",
            "deployment.environment.name": "prod",
            "service.version": "1.4.2",
            "host.name": "web-1",
            "container.id": "c0ffee",
            "service.instance.id": "rt-1",
            "telemetry.sdk.language": "python",
            "telemetry.sdk.version": "2.9.0",
            "telemetry.sdk.name": "vx",
        })
    );
    assert_eq!(row.get("scope_name"), text("flask").as_ref());
    assert_eq!(row.get("scope_version"), text("2.9.0").as_ref());
    assert_eq!(
        json_cell(row, "links"),
        json!([{
            "trace_id": "00000000000000010000000000000007",
            "span_id": "0000000000000009",
            "trace_state": "dd=s:1",
            "sampled": true,
            "attributes": {"link.kind": "retry"},
        }])
    );
    assert_eq!(
        json_cell(row, "events"),
        json!([{
            "timestamp": format_datetime(START + 1_000),
            "name": "exception",
            "attributes": {"exception.message": "boom", "attempts": [3]},
        }])
    );
}

#[test]
fn classic_and_indexed_payloads_map_identically() {
    let classic = to_rows(&classic_payload(vec![classic_span()]), INGEST);
    let indexed = to_rows(&idx_payload(), INGEST);
    assert_eq!(indexed.rejected, 0, "{}", indexed.error_message);
    assert_eq!(classic.rows, indexed.rows);
}

#[test]
fn sixty_four_bit_traces_and_payload_fallbacks() {
    let mut span = classic_span();
    span.meta.clear();
    span.metrics.clear();
    span.error = 0;
    span.resource.clear();
    span.parent_id = 0;
    span.span_links.clear();
    span.span_events.clear();
    let mut payload = classic_payload(vec![span]);
    payload.tracer_payloads[0].hostname.clear();
    payload.tracer_payloads[0].chunks[0].priority = 0;
    let output = to_rows(&payload, INGEST);
    let row = &output.rows[0];
    assert_eq!(row.get("trace_id"), text("00000000000000000123456789abcdef").as_ref());
    assert_eq!(
        row.get("span_name"),
        text("http.request").as_ref(),
        "operation name when no resource"
    );
    assert_eq!(row.get("span_kind"), text("INTERNAL").as_ref());
    assert_eq!(row.get("status_code"), text("UNSET").as_ref());
    assert_eq!(row.get("status_description"), None);
    assert_eq!(row.get("parent_span_id"), None);
    assert_eq!(row.get("sampled"), None);
    assert_eq!(row.get("scope_name"), text("vx").as_ref());
    let resource = json_cell(row, "resource");
    assert_eq!(resource["deployment.environment.name"], json!("agent-env"));
    assert_eq!(resource["service.version"], json!("1.4.0"));
    assert_eq!(resource["host.name"], json!("agent-host"));
}

#[test]
fn chunk_tags_carry_the_high_bits_too() {
    let mut span = classic_span();
    span.meta.remove("_dd.p.tid");
    let mut payload = classic_payload(vec![span]);
    payload.tracer_payloads[0].chunks[0]
        .tags
        .insert("_dd.p.tid".into(), "65432100abcdef01".into());
    let row = &to_rows(&payload, INGEST).rows[0];
    assert_eq!(row.get("trace_id"), text("65432100abcdef010123456789abcdef").as_ref());
}

#[test]
fn otel_scope_and_status_outrank_the_vendor_fields() {
    let mut span = classic_span();
    span.error = 0;
    for (key, value) in [
        ("otel.scope.name", "io.opentelemetry.jdbc"),
        ("otel.scope.version", "2.1.0"),
        ("otel.status_code", "Error"),
        ("otel.status_description", "deadline exceeded"),
    ] {
        span.meta.insert(key.into(), value.into());
    }
    let row = &to_rows(&classic_payload(vec![span]), INGEST).rows[0];
    assert_eq!(row.get("scope_name"), text("io.opentelemetry.jdbc").as_ref());
    assert_eq!(row.get("scope_version"), text("2.1.0").as_ref());
    assert_eq!(
        row.get("status_code"),
        text("ERROR").as_ref(),
        "Error without the error flag"
    );
    assert_eq!(row.get("status_description"), text("deadline exceeded").as_ref());
    let attributes = json_cell(row, "attributes");
    assert_eq!(attributes["component"], json!("flask"), "an outranked component stays");
    assert_eq!(attributes.get("otel.status_code"), None);

    let mut span = classic_span();
    span.meta.remove("component");
    span.meta.insert("otel.library.name".into(), "legacy-lib".into());
    span.meta.insert("otel.status_code".into(), "Ok".into());
    let row = &to_rows(&classic_payload(vec![span]), INGEST).rows[0];
    assert_eq!(row.get("scope_name"), text("legacy-lib").as_ref());
    assert_eq!(row.get("status_code"), text("OK").as_ref());
    assert_eq!(row.get("status_description"), None);
}

#[test]
fn legacy_json_links_and_events() {
    let mut span = classic_span();
    span.span_links.clear();
    span.span_events.clear();
    span.meta.insert(
        "_dd.span_links".into(),
        json!([{
            "trace_id": "00000000000000010000000000000007",
            "span_id": "0000000000000009",
            "attributes": {"link.kind": "retry"},
            "tracestate": "dd=s:1",
            "flags": 1
        }])
        .to_string(),
    );
    span.meta.insert(
        "events".into(),
        json!([{"name": "exception", "time_unix_nano": START + 1_000,
                "attributes": {"exception.message": "boom", "attempts": [3]}}])
        .to_string(),
    );
    let legacy = to_rows(&classic_payload(vec![span]), INGEST);
    let native = to_rows(&classic_payload(vec![classic_span()]), INGEST);
    assert_eq!(legacy.rows, native.rows);

    let mut span = classic_span();
    span.meta.insert("events".into(), "not json".into());
    let row = &to_rows(&classic_payload(vec![span]), INGEST).rows[0];
    assert_eq!(
        json_cell(row, "attributes")["events"],
        json!("not json"),
        "unparsable: kept as text"
    );
}

#[test]
fn span_kinds_from_meta() {
    for (meta, expected) in [
        ("client", "CLIENT"),
        ("producer", "PRODUCER"),
        ("consumer", "CONSUMER"),
        ("internal", "INTERNAL"),
        ("weird", "INTERNAL"),
    ] {
        let mut span = classic_span();
        span.meta.insert("span.kind".into(), meta.into());
        let row = &to_rows(&classic_payload(vec![span]), INGEST).rows[0];
        assert_eq!(row.get("span_kind"), text(expected).as_ref(), "{meta}");
    }
}

#[test]
fn invalid_spans_are_counted_not_stored() {
    let mut zero_id = classic_span();
    zero_id.span_id = 0;
    let mut negative = classic_span();
    negative.duration = -1;
    let mut overflow = classic_span();
    overflow.start = i64::MAX;
    let output = to_rows(
        &classic_payload(vec![zero_id, classic_span(), negative, overflow]),
        INGEST,
    );
    assert_eq!(output.rows.len(), 1);
    assert_eq!(output.rejected, 3);
    assert!(
        output.error_message.contains("chunks[0].spans[0]"),
        "{}",
        output.error_message
    );

    let mut bad_chunk = idx_payload();
    bad_chunk.idx_tracer_payloads[0].chunks[0].trace_id = vec![1, 2, 3];
    let output = to_rows(&bad_chunk, INGEST);
    assert_eq!((output.rows.len(), output.rejected), (0, 1));
}

#[test]
fn bodies_that_are_not_agent_payloads() {
    assert!(decode(b"[{\"trace_id\": 1}]").is_err());
    assert!(decode(b"\x0a\xff\xff\xff\xff").is_err());
    let payload = classic_payload(vec![classic_span()]);
    assert_eq!(decode(&payload.encode_to_vec()).ok(), Some(payload));
}
