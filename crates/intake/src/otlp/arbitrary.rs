//! Random OTLP requests for the tests that hold two paths to the same result: awkward values
//! (escapes, NaN, bytes, nesting, nothing), repeated keys, ids of refused lengths, unset times.

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::array_value_to_string;
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;
use trawl_proto::otlp::common::v1::{AnyValue, ArrayValue, KeyValue, KeyValueList, any_value};
use trawl_proto::otlp::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use trawl_proto::otlp::trace::v1::span::{Event, Link};
use trawl_proto::otlp::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

use crate::otlp::fixtures::{any_bytes, any_double, any_int, any_string, resource, scope};

/// A small deterministic generator (xorshift64*).
pub(crate) struct Random(pub(crate) u64);

impl Random {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A value of any kind, awkward ones included (escapes, NaN, nesting, nothing).
pub(crate) fn any(random: &mut Random, depth: u32) -> Option<AnyValue> {
    Some(match random.below(if depth > 1 { 8 } else { 10 }) {
        0 => any_string("GET"),
        1 => any_string("a \"quoted\"\\ value\n"),
        2 => any_int(random.below(1000) as i64 - 500),
        3 => any_double(match random.below(4) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => 0.1,
            _ => 2.5e300,
        }),
        4 => AnyValue {
            value: Some(any_value::Value::BoolValue(random.below(2) == 0)),
        },
        5 => any_bytes(&[0, 255, 3]),
        6 => AnyValue { value: None },
        7 => return None,
        8 => AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue {
                values: (0..random.below(3)).filter_map(|_| any(random, depth + 1)).collect(),
            })),
        },
        _ => AnyValue {
            value: Some(any_value::Value::KvlistValue(KeyValueList {
                values: attributes(random, depth + 1),
            })),
        },
    })
}

/// Attributes with the shredded keys among others, sometimes repeated.
pub(crate) fn attributes(random: &mut Random, depth: u32) -> Vec<KeyValue> {
    const KEYS: &[&str] = &[
        "http.method",
        "http.status_code",
        "http.route",
        "service.name",
        "host.name",
        "k8s.namespace.name",
        "other",
        "with \"quote\"",
    ];
    (0..random.below(6))
        .map(|_| KeyValue {
            key: KEYS[random.below(KEYS.len() as u64) as usize].to_owned(),
            value: any(random, depth),
            key_strindex: 0,
        })
        .collect()
}

fn id(random: &mut Random, bytes: usize) -> Vec<u8> {
    match random.below(12) {
        0 => Vec::new(),
        1 => vec![7; bytes + 1], // refused
        _ => (0..bytes).map(|_| random.below(256) as u8).collect(),
    }
}

fn time(random: &mut Random) -> u64 {
    match random.below(10) {
        0 => 0,
        _ => 1_700_000_000_000_000_000 + random.below(1000) * 1_000_000,
    }
}

pub(crate) fn logs_request(random: &mut Random) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: (0..1 + random.below(3))
            .map(|r| ResourceLogs {
                resource: (random.below(5) > 0).then(|| resource(attributes(random, 0))),
                scope_logs: (0..1 + random.below(2))
                    .map(|_| ScopeLogs {
                        scope: (random.below(3) > 0).then(|| scope(&format!("s{r}"), "1.0")),
                        log_records: (0..random.below(20))
                            .map(|_| LogRecord {
                                time_unix_nano: time(random),
                                observed_time_unix_nano: time(random),
                                severity_number: random.below(30) as i32,
                                severity_text: ["", "INFO", "ERROR"][random.below(3) as usize].into(),
                                body: any(random, 0),
                                attributes: attributes(random, 0),
                                dropped_attributes_count: random.below(2) as u32,
                                flags: random.below(4) as u32,
                                trace_id: id(random, 16),
                                span_id: id(random, 8),
                                ..Default::default()
                            })
                            .collect(),
                        schema_url: String::new(),
                    })
                    .collect(),
                schema_url: String::new(),
            })
            .collect(),
    }
}

pub(crate) fn traces_request(random: &mut Random) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: (0..1 + random.below(3))
            .map(|_| ResourceSpans {
                resource: (random.below(5) > 0).then(|| resource(attributes(random, 0))),
                scope_spans: (0..1 + random.below(2))
                    .map(|_| ScopeSpans {
                        scope: (random.below(3) > 0).then(|| scope("tracer", "")),
                        spans: (0..random.below(20))
                            .map(|_| Span {
                                trace_id: id(random, 16),
                                span_id: id(random, 8),
                                parent_span_id: id(random, 8),
                                name: ["", "GET /", "db"][random.below(3) as usize].into(),
                                kind: random.below(7) as i32,
                                start_time_unix_nano: time(random),
                                end_time_unix_nano: time(random),
                                attributes: attributes(random, 0),
                                events: (0..random.below(2))
                                    .map(|_| Event {
                                        time_unix_nano: time(random),
                                        name: "e".into(),
                                        attributes: attributes(random, 1),
                                        dropped_attributes_count: 0,
                                    })
                                    .collect(),
                                links: (0..random.below(2))
                                    .map(|_| Link {
                                        trace_id: id(random, 16),
                                        span_id: id(random, 8),
                                        flags: random.below(1024) as u32,
                                        ..Default::default()
                                    })
                                    .collect(),
                                status: (random.below(2) == 0).then(|| Status {
                                    message: "m".into(),
                                    code: random.below(4) as i32,
                                }),
                                flags: random.below(3) as u32,
                                dropped_links_count: random.below(2) as u32,
                                ..Default::default()
                            })
                            .collect(),
                        schema_url: String::new(),
                    })
                    .collect(),
                schema_url: String::new(),
            })
            .collect(),
    }
}

/// Each column by name (hidden ones too) with its values as text.
pub(crate) fn by_name(batch: &RecordBatch) -> Vec<(String, String, Vec<String>)> {
    let mut columns: Vec<_> = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| {
            let values = (0..array.len())
                .map(|row| array_value_to_string(array, row).unwrap_or_else(|e| e.to_string()))
                .collect();
            (field.name().clone(), format!("{:?}", field.metadata()), values)
        })
        .collect();
    columns.sort();
    columns
}

fn flatten(value: &mut Option<AnyValue>) {
    if let Some(AnyValue {
        value: Some(any_value::Value::ArrayValue(_) | any_value::Value::KvlistValue(_)),
    }) = value
    {
        *value = Some(any_string("was nested"));
    }
}

fn flatten_all(attributes: &mut [KeyValue]) {
    for attribute in attributes {
        flatten(&mut attribute.value);
    }
}

/// [`logs_request`] with every array and key-value list value replaced by a string.
pub(crate) fn flat_logs_request(random: &mut Random) -> ExportLogsServiceRequest {
    let mut request = logs_request(random);
    for record in request
        .resource_logs
        .iter_mut()
        .flat_map(|resource| &mut resource.scope_logs)
        .flat_map(|scope| &mut scope.log_records)
    {
        flatten(&mut record.body);
        flatten_all(&mut record.attributes);
    }
    request
}

/// [`traces_request`] with every array and key-value list value replaced by a string.
pub(crate) fn flat_traces_request(random: &mut Random) -> ExportTraceServiceRequest {
    let mut request = traces_request(random);
    for span in request
        .resource_spans
        .iter_mut()
        .flat_map(|resource| &mut resource.scope_spans)
        .flat_map(|scope| &mut scope.spans)
    {
        flatten_all(&mut span.attributes);
        for event in &mut span.events {
            flatten_all(&mut event.attributes);
        }
        for link in &mut span.links {
            flatten_all(&mut link.attributes);
        }
    }
    request
}
