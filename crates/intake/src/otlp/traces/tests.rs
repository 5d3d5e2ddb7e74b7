use serde_json::json;
use trawl_common::Value;
use trawl_proto::otlp::trace::v1::{ResourceSpans, ScopeSpans, Status};

use super::*;
use crate::otlp::fixtures::{INGEST_NANOS, any_int, any_string, cell, columns, key_value, resource, scope};
use trawl_common::Row;

const START: u64 = 1_700_000_000_000_000_000;
const END: u64 = 1_700_000_000_250_000_100;
const TRACE_ID: [u8; 16] = [
    0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c,
];
const SPAN_ID: [u8; 8] = [0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74];

fn minimal_span() -> Span {
    Span {
        trace_id: TRACE_ID.to_vec(),
        span_id: SPAN_ID.to_vec(),
        start_time_unix_nano: START,
        end_time_unix_nano: END,
        ..Default::default()
    }
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource(vec![key_value("service.name", any_string("frontend"))])),
            scope_spans: vec![ScopeSpans {
                scope: Some(scope("http.server", "0.9")),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn single_row(span: Span) -> Row {
    let output = traces_to_rows(&request(vec![span]), INGEST_NANOS);
    assert_eq!((output.rejected, output.error_message.as_str()), (0, ""));
    assert_eq!(output.rows.len(), 1);
    output.rows.into_iter().next().unwrap_or_default()
}

#[test]
fn a_full_span_maps_to_every_column() {
    let span = Span {
        parent_span_id: vec![0x01; 8],
        trace_state: "vendor=1".into(),
        flags: 0x01,
        name: "GET /cart".into(),
        kind: SpanKind::Server as i32,
        attributes: vec![key_value("http.method", any_string("GET"))],
        dropped_attributes_count: 1,
        events: vec![Event {
            time_unix_nano: START + 1_000,
            name: "exception".into(),
            attributes: vec![key_value("exception.type", any_string("Timeout"))],
            dropped_attributes_count: 0,
        }],
        dropped_events_count: 2,
        links: vec![Link {
            trace_id: vec![0xaa; 16],
            span_id: vec![0xbb; 8],
            ..Default::default()
        }],
        dropped_links_count: 3,
        status: Some(Status {
            message: "deadline exceeded".into(),
            code: StatusCode::Error as i32,
        }),
        ..minimal_span()
    };
    let row = single_row(span);
    assert_eq!(
        row.cells,
        vec![
            ("timestamp", Value::DateTime(END as i64)),
            ("start_time", Value::DateTime(START as i64)),
            ("end_time", Value::DateTime(END as i64)),
            ("ingest_time", Value::DateTime(INGEST_NANOS)),
            ("duration", Value::Timespan(250_000_100)),
            ("trace_id", Value::String("5b8efff798038103d269b633813fc60c".into())),
            ("span_id", Value::String("eee19b7ec3c1b174".into())),
            ("parent_span_id", Value::String("0101010101010101".into())),
            ("span_name", Value::String("GET /cart".into())),
            ("span_kind", Value::String("SERVER".into())),
            ("trace_state", Value::String("vendor=1".into())),
            ("status_code", Value::String("ERROR".into())),
            ("status_description", Value::String("deadline exceeded".into())),
            ("sampled", Value::Bool(true)),
            ("attributes", Value::Dynamic(json!({"http.method": "GET"}))),
            (
                "events",
                Value::Dynamic(json!([{
                    "timestamp": "2023-11-14T22:13:20.0000010Z",
                    "name": "exception",
                    "attributes": {"exception.type": "Timeout"},
                }]))
            ),
            (
                "links",
                Value::Dynamic(json!([{
                    "trace_id": "aa".repeat(16),
                    "span_id": "bb".repeat(8),
                    "sampled": false,
                    "attributes": {},
                }]))
            ),
            ("dropped_attributes_count", Value::Long(1)),
            ("dropped_events_count", Value::Long(2)),
            ("dropped_links_count", Value::Long(3)),
            ("resource", Value::Dynamic(json!({"service.name": "frontend"}))),
            ("scope_name", Value::String("http.server".into())),
            ("scope_version", Value::String("0.9".into())),
        ]
    );
}

#[test]
fn a_minimal_span_omits_empty_and_default_fields() {
    let row = single_row(minimal_span());
    assert_eq!(
        columns(&row),
        [
            "timestamp",
            "start_time",
            "end_time",
            "ingest_time",
            "duration",
            "trace_id",
            "span_id",
            "status_code",
            "resource",
            "scope_name",
            "scope_version",
        ]
    );
    assert_eq!(cell(&row, "status_code"), &Value::String("UNSET".into()));
}

#[test]
fn span_kinds_have_their_names_and_unspecified_is_omitted() {
    let kind_of = |kind: i32| single_row(Span { kind, ..minimal_span() }).get("span_kind").cloned();
    let names = [
        (1, "INTERNAL"),
        (2, "SERVER"),
        (3, "CLIENT"),
        (4, "PRODUCER"),
        (5, "CONSUMER"),
    ];
    for (kind, name) in names {
        assert_eq!(kind_of(kind), Some(Value::String(name.into())));
    }
    assert_eq!(kind_of(0), None);
    assert_eq!(kind_of(99), None);
}

#[test]
fn status_codes_have_their_names_and_description_only_when_set() {
    let status_of = |status: Option<Status>| {
        let row = single_row(Span {
            status,
            ..minimal_span()
        });
        (row.get("status_code").cloned(), row.get("status_description").cloned())
    };
    let text = |text: &str| Some(Value::String(text.into()));
    assert_eq!(status_of(None), (text("UNSET"), None));
    let ok = Status {
        message: String::new(),
        code: 1,
    };
    assert_eq!(status_of(Some(ok)), (text("OK"), None));
    let error = Status {
        message: "boom".into(),
        code: 2,
    };
    assert_eq!(status_of(Some(error)), (text("ERROR"), text("boom")));
    let unknown = Status {
        message: String::new(),
        code: 7,
    };
    assert_eq!(status_of(Some(unknown)), (text("UNSET"), None));
}

#[test]
fn timestamp_is_end_time_with_fallbacks_when_times_are_missing() {
    let row = single_row(Span {
        end_time_unix_nano: 0,
        ..minimal_span()
    });
    assert_eq!(cell(&row, "timestamp"), &Value::DateTime(START as i64));
    assert_eq!((row.get("end_time"), row.get("duration")), (None, None));

    let row = single_row(Span {
        start_time_unix_nano: 0,
        end_time_unix_nano: 0,
        ..minimal_span()
    });
    assert_eq!(cell(&row, "timestamp"), &Value::DateTime(INGEST_NANOS));
    assert_eq!(row.get("start_time"), None);
}

#[test]
fn duration_is_end_minus_start_in_nanoseconds_even_when_negative() {
    let row = single_row(Span {
        start_time_unix_nano: END,
        end_time_unix_nano: START,
        ..minimal_span()
    });
    assert_eq!(cell(&row, "duration"), &Value::Timespan(-250_000_100));
}

#[test]
fn span_flags_split_into_sampled_and_remaining_bits() {
    let flags_of = |flags: u32| {
        let row = single_row(Span {
            flags,
            ..minimal_span()
        });
        (row.get("sampled").cloned(), row.get("flags").cloned())
    };
    assert_eq!(flags_of(0), (None, None));
    assert_eq!(flags_of(0x01), (Some(Value::Bool(true)), None));
    assert_eq!(flags_of(0x301), (Some(Value::Bool(true)), Some(Value::Long(0x300))));
    assert_eq!(flags_of(0x100), (None, Some(Value::Long(0x100))));
}

#[test]
fn events_keep_a_fixed_shape() {
    let events = vec![
        Event {
            time_unix_nano: 1_704_164_645_123_456_789,
            name: "retry".into(),
            attributes: vec![key_value("attempt", any_int(2))],
            dropped_attributes_count: 4,
        },
        Event::default(),
    ];
    let row = single_row(Span {
        events,
        ..minimal_span()
    });
    assert_eq!(
        cell(&row, "events"),
        &Value::Dynamic(json!([
            {
                "timestamp": "2024-01-02T03:04:05.1234567Z",
                "name": "retry",
                "attributes": {"attempt": 2},
                "dropped_attributes_count": 4,
            },
            {"timestamp": null, "name": "", "attributes": {}},
        ]))
    );
}

#[test]
fn link_flags_decompose_into_sampled_is_remote_and_the_rest() {
    let link = |flags: u32| Link {
        trace_id: vec![0xaa; 16],
        span_id: vec![0xbb; 8],
        trace_state: if flags == 0 { "k=v".into() } else { String::new() },
        attributes: vec![key_value("link.kind", any_string("follows"))],
        dropped_attributes_count: if flags == 0 { 1 } else { 0 },
        flags,
    };
    let links = vec![link(0), link(0x301), link(0x100), link(0x1_0002)];
    let row = single_row(Span {
        links,
        ..minimal_span()
    });
    let ids = json!({"trace_id": "aa".repeat(16), "span_id": "bb".repeat(8)});
    let with = |extra: serde_json::Value| {
        let mut bag = ids.clone();
        if let (Some(bag), Some(extra)) = (bag.as_object_mut(), extra.as_object()) {
            bag.extend(extra.clone());
        }
        bag
    };
    assert_eq!(
        cell(&row, "links"),
        &Value::Dynamic(json!([
            with(
                json!({"trace_state": "k=v", "sampled": false, "attributes": {"link.kind": "follows"}, "dropped_attributes_count": 1})
            ),
            with(json!({"sampled": true, "is_remote": true, "attributes": {"link.kind": "follows"}})),
            with(json!({"sampled": false, "is_remote": false, "attributes": {"link.kind": "follows"}})),
            with(json!({"sampled": false, "flags": 0x1_0002, "attributes": {"link.kind": "follows"}})),
        ]))
    );
}

#[test]
fn spans_with_invalid_ids_or_times_are_rejected() {
    let bad_link = Link {
        trace_id: vec![0xaa; 16],
        span_id: vec![0xbb; 4],
        ..Default::default()
    };
    let event_in_2300 = Event {
        time_unix_nano: u64::MAX,
        ..Default::default()
    };
    let spans = vec![
        minimal_span(),
        Span {
            trace_id: Vec::new(),
            ..minimal_span()
        },
        Span {
            trace_id: vec![1; 8],
            ..minimal_span()
        },
        Span {
            span_id: vec![1; 16],
            ..minimal_span()
        },
        Span {
            parent_span_id: vec![1; 3],
            ..minimal_span()
        },
        Span {
            links: vec![bad_link],
            ..minimal_span()
        },
        Span {
            events: vec![event_in_2300],
            ..minimal_span()
        },
        Span {
            end_time_unix_nano: u64::MAX,
            ..minimal_span()
        },
    ];
    let output = traces_to_rows(&request(spans), INGEST_NANOS);
    assert_eq!(output.rows.len(), 1);
    assert_eq!(output.rejected, 7);
    assert_eq!(
        output.error_message,
        "rejected 7 spans; first: resource_spans[0].scope_spans[0].spans[1]: expected trace_id of \
         16 bytes, found an empty id"
    );
    let one_bad = traces_to_rows(
        &request(vec![Span {
            span_id: vec![1; 16],
            ..minimal_span()
        }]),
        INGEST_NANOS,
    );
    assert_eq!(
        one_bad.error_message,
        "rejected 1 span: resource_spans[0].scope_spans[0].spans[0]: expected span_id of 8 \
         bytes, found 16 bytes"
    );
}

#[test]
fn an_empty_request_gives_no_rows_and_no_rejections() {
    let output = traces_to_rows(&ExportTraceServiceRequest::default(), INGEST_NANOS);
    assert_eq!(output, IntakeOutput::default());
}

#[test]
fn spans_leave_in_time_order_and_rejections_name_the_first_in_the_request() -> Result<(), Box<dyn std::error::Error>> {
    use prost::Message;
    let ending = |seconds: u64, name: &str| Span {
        name: name.into(),
        end_time_unix_nano: END + seconds * 1_000_000_000,
        events: vec![Event {
            name: format!("{name} event"),
            ..Default::default()
        }],
        ..minimal_span()
    };
    let bad = |seconds: u64, length: usize| Span {
        span_id: vec![1; length],
        ..ending(seconds, "bad")
    };
    let mut request = request(vec![ending(30, "c"), bad(40, 3), ending(10, "a")]);
    let mut second = request.resource_spans[0].clone();
    second.resource = Some(resource(vec![key_value("service.name", any_string("cart"))]));
    second.scope_spans[0].spans = vec![bad(5, 4), ending(20, "b")];
    request.resource_spans.push(second);

    let output = traces_to_rows(&request, INGEST_NANOS);
    let rows: Vec<(Value, Value)> = output
        .rows
        .iter()
        .map(|row| (cell(row, "span_name").clone(), cell(row, "resource").clone()))
        .collect();
    let row = |name: &str, service: &str| {
        let resource = Value::Dynamic(json!({"service.name": service}));
        (Value::String(name.into()), resource)
    };
    assert_eq!(rows, [row("a", "frontend"), row("b", "cart"), row("c", "frontend")]);
    // Each span keeps its own events.
    for row in &output.rows {
        let Value::String(name) = cell(row, "span_name") else {
            panic!("a span name");
        };
        let events = format!("{:?}", cell(row, "events"));
        assert!(events.contains(&format!("{name} event")), "{name}: {events}");
    }
    let message = "rejected 2 spans; first: resource_spans[0].scope_spans[0].spans[1]: expected span_id \
                   of 8 bytes, found 3 bytes";
    assert_eq!((output.rejected, output.error_message.as_str()), (2, message));

    // Read in place: the same rows (events with their own spans) and message.
    let wire = traces_protobuf_to_columns(&request.encode_to_vec(), INGEST_NANOS)?;
    assert_eq!((wire.rejected, wire.error_message.as_str()), (2, message));
    let prost = traces_to_columns(&request, INGEST_NANOS);
    assert_eq!(format!("{:?}", wire.columns), format!("{:?}", prost.columns));
    let batch = trawl_storage::columns_to_batch(wire.columns)?;
    assert!(batch.sorted);
    Ok(())
}
