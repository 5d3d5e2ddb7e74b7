//! Decoding tests: the OTLP/JSON examples of the OpenTelemetry specification (string timestamps,
//! hex ids, integer enums) decoded and mapped end to end, the leniencies of the JSON reader, and
//! protobuf round trips.

use serde_json::json;
use trawl_common::{Row, Value};
use trawl_proto::otlp::common::v1::any_value;
use trawl_proto::otlp::metrics::v1::{metric, number_data_point};

use super::*;
use crate::otlp::fixtures::{INGEST_NANOS, cell};
use crate::otlp::{logs_to_rows, metrics_to_rows, traces_to_rows};

const LOGS_EXAMPLE: &str = r#"{
  "resourceLogs": [
    {
      "resource": {
        "attributes": [
          { "key": "service.name", "value": { "stringValue": "my.service" } }
        ]
      },
      "scopeLogs": [
        {
          "scope": {
            "name": "my.library",
            "version": "1.0.0",
            "attributes": [
              { "key": "my.scope.attribute", "value": { "stringValue": "some scope attribute" } }
            ]
          },
          "logRecords": [
            {
              "timeUnixNano": "1544712660300000000",
              "observedTimeUnixNano": "1544712660300000000",
              "severityNumber": 10,
              "severityText": "Information",
              "traceId": "5B8EFFF798038103D269B633813FC60C",
              "spanId": "EEE19B7EC3C1B174",
              "body": { "stringValue": "Example log record" },
              "attributes": [
                { "key": "string.attribute", "value": { "stringValue": "some string" } },
                { "key": "boolean.attribute", "value": { "boolValue": true } },
                { "key": "int.attribute", "value": { "intValue": "10" } },
                { "key": "double.attribute", "value": { "doubleValue": 637.704 } },
                {
                  "key": "array.attribute",
                  "value": {
                    "arrayValue": { "values": [ { "stringValue": "many" }, { "stringValue": "values" } ] }
                  }
                },
                {
                  "key": "map.attribute",
                  "value": {
                    "kvlistValue": {
                      "values": [ { "key": "some.map.key", "value": { "stringValue": "some value" } } ]
                    }
                  }
                }
              ]
            }
          ]
        }
      ]
    }
  ]
}"#;

const TRACE_EXAMPLE: &str = r#"{
  "resourceSpans": [
    {
      "resource": {
        "attributes": [ { "key": "service.name", "value": { "stringValue": "my.service" } } ]
      },
      "scopeSpans": [
        {
          "scope": {
            "name": "my.library",
            "version": "1.0.0",
            "attributes": [
              { "key": "my.scope.attribute", "value": { "stringValue": "some scope attribute" } }
            ]
          },
          "spans": [
            {
              "traceId": "5B8EFFF798038103D269B633813FC60C",
              "spanId": "EEE19B7EC3C1B174",
              "parentSpanId": "EEE19B7EC3C1B173",
              "name": "I'm a server span",
              "startTimeUnixNano": "1544712660000000000",
              "endTimeUnixNano": "1544712661000000000",
              "kind": 2,
              "flags": 769,
              "status": { "code": 2, "message": "boom" },
              "events": [
                {
                  "timeUnixNano": "1544712660500000000",
                  "name": "exception",
                  "attributes": [ { "key": "exception.type", "value": { "stringValue": "Timeout" } } ]
                }
              ],
              "links": [
                { "traceId": "5B8EFFF798038103D269B633813FC60D", "spanId": "EEE19B7EC3C1B175", "flags": 257 }
              ],
              "attributes": [ { "key": "my.span.attr", "value": { "stringValue": "some value" } } ]
            }
          ]
        }
      ]
    }
  ]
}"#;

const METRICS_EXAMPLE: &str = r#"{
  "resourceMetrics": [
    {
      "resource": {
        "attributes": [ { "key": "service.name", "value": { "stringValue": "my.service" } } ]
      },
      "scopeMetrics": [
        {
          "scope": { "name": "my.library", "version": "1.0.0" },
          "metrics": [
            {
              "name": "my.counter",
              "unit": "1",
              "description": "I am a Counter",
              "sum": {
                "aggregationTemporality": 1,
                "isMonotonic": true,
                "dataPoints": [
                  {
                    "asDouble": 5,
                    "startTimeUnixNano": "1544712660300000000",
                    "timeUnixNano": "1544712660300000000",
                    "attributes": [ { "key": "my.counter.attr", "value": { "stringValue": "some value" } } ]
                  }
                ]
              }
            },
            {
              "name": "my.gauge",
              "unit": "1",
              "description": "I am a Gauge",
              "gauge": {
                "dataPoints": [ { "asInt": "10", "timeUnixNano": "1544712660300000000" } ]
              }
            },
            {
              "name": "my.histogram",
              "unit": "1",
              "description": "I am a Histogram",
              "histogram": {
                "aggregationTemporality": 1,
                "dataPoints": [
                  {
                    "startTimeUnixNano": "1544712660300000000",
                    "timeUnixNano": "1544712660300000000",
                    "count": 2,
                    "sum": 2,
                    "bucketCounts": [1, "1"],
                    "explicitBounds": [1],
                    "min": 0,
                    "max": 2
                  }
                ]
              }
            },
            {
              "name": "my.exponential.histogram",
              "unit": "1",
              "description": "I am an Exponential Histogram",
              "exponentialHistogram": {
                "aggregationTemporality": 1,
                "dataPoints": [
                  {
                    "startTimeUnixNano": "1544712660300000000",
                    "timeUnixNano": "1544712660300000000",
                    "count": "3",
                    "sum": 10,
                    "scale": 0,
                    "zeroCount": "1",
                    "positive": { "offset": 1, "bucketCounts": [0, 2] },
                    "min": 0,
                    "max": 5,
                    "zeroThreshold": 0
                  }
                ]
              }
            },
            {
              "name": "my.summary",
              "summary": {
                "dataPoints": [
                  {
                    "timeUnixNano": "1544712660300000000",
                    "count": "4",
                    "sum": 8.5,
                    "quantileValues": [ { "quantile": 0.5, "value": 2 }, { "quantile": 1, "value": "Infinity" } ]
                  }
                ]
              }
            }
          ]
        }
      ]
    }
  ]
}"#;

const TIME_NANOS: i64 = 1_544_712_660_300_000_000;

fn decode_error<T: std::fmt::Debug>(result: Result<T, IntakeError>) -> String {
    match result {
        Ok(value) => panic!("expected an error, decoded {value:?}"),
        Err(error) => error.to_string(),
    }
}

fn only_row(rows: Vec<Row>) -> Row {
    assert_eq!(rows.len(), 1);
    rows.into_iter().next().unwrap_or_default()
}

#[test]
fn the_spec_logs_example_decodes_and_maps() {
    let request = decode_logs(LOGS_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let Ok(request) = request else { panic!("{request:?}") };
    let output = logs_to_rows(&request, INGEST_NANOS);
    assert_eq!(output.rejected, 0);
    let row = only_row(output.rows);
    assert_eq!(
        row.cells,
        vec![
            ("timestamp", Value::DateTime(TIME_NANOS)),
            ("observed_time", Value::DateTime(TIME_NANOS)),
            ("ingest_time", Value::DateTime(INGEST_NANOS)),
            ("trace_id", Value::String("5b8efff798038103d269b633813fc60c".into())),
            ("span_id", Value::String("eee19b7ec3c1b174".into())),
            ("severity_number", Value::Long(10)),
            ("severity_text", Value::String("Information".into())),
            ("body", Value::Dynamic(json!("Example log record"))),
            (
                "attributes",
                Value::Dynamic(json!({
                    "string.attribute": "some string",
                    "boolean.attribute": true,
                    "int.attribute": 10,
                    "double.attribute": 637.704,
                    "array.attribute": ["many", "values"],
                    "map.attribute": {"some.map.key": "some value"},
                }))
            ),
            ("resource", Value::Dynamic(json!({"service.name": "my.service"}))),
            ("scope_name", Value::String("my.library".into())),
            ("scope_version", Value::String("1.0.0".into())),
            (
                "scope",
                Value::Dynamic(json!({"my.scope.attribute": "some scope attribute"}))
            ),
        ]
    );
}

#[test]
fn the_spec_trace_example_decodes_and_maps() {
    let request = decode_traces(TRACE_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let Ok(request) = request else { panic!("{request:?}") };
    let output = traces_to_rows(&request, INGEST_NANOS);
    assert_eq!(output.rejected, 0);
    let row = only_row(output.rows);
    assert_eq!(cell(&row, "timestamp"), &Value::DateTime(1_544_712_661_000_000_000));
    assert_eq!(cell(&row, "duration"), &Value::Timespan(1_000_000_000));
    assert_eq!(
        cell(&row, "trace_id"),
        &Value::String("5b8efff798038103d269b633813fc60c".into())
    );
    assert_eq!(cell(&row, "parent_span_id"), &Value::String("eee19b7ec3c1b173".into()));
    assert_eq!(cell(&row, "span_name"), &Value::String("I'm a server span".into()));
    assert_eq!(cell(&row, "span_kind"), &Value::String("SERVER".into()));
    assert_eq!(cell(&row, "status_code"), &Value::String("ERROR".into()));
    assert_eq!(cell(&row, "status_description"), &Value::String("boom".into()));
    assert_eq!(cell(&row, "sampled"), &Value::Bool(true));
    assert_eq!(cell(&row, "flags"), &Value::Long(768));
    assert_eq!(
        cell(&row, "attributes"),
        &Value::Dynamic(json!({"my.span.attr": "some value"}))
    );
    assert_eq!(
        cell(&row, "events"),
        &Value::Dynamic(json!([{
            "timestamp": "2018-12-13T14:51:00.5000000Z",
            "name": "exception",
            "attributes": {"exception.type": "Timeout"},
        }]))
    );
    assert_eq!(
        cell(&row, "links"),
        &Value::Dynamic(json!([{
            "trace_id": "5b8efff798038103d269b633813fc60d",
            "span_id": "eee19b7ec3c1b175",
            "sampled": true,
            "is_remote": false,
            "attributes": {},
        }]))
    );
    assert_eq!(
        cell(&row, "scope"),
        &Value::Dynamic(json!({"my.scope.attribute": "some scope attribute"}))
    );
}

#[test]
fn the_spec_metrics_example_decodes_and_maps_every_type() {
    let request = decode_metrics(METRICS_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let Ok(request) = request else { panic!("{request:?}") };
    let output = metrics_to_rows(&request, INGEST_NANOS);
    assert_eq!(output.rejected, 0);
    let [sum, gauge, histogram, exponential, summary] = output.rows.as_slice() else {
        panic!("expected five rows, got {:?}", output.rows);
    };
    assert_eq!(cell(sum, "metric_type"), &Value::String("sum".into()));
    assert_eq!(cell(sum, "value"), &Value::Real(5.0));
    assert_eq!(cell(sum, "aggregation_temporality"), &Value::String("DELTA".into()));
    assert_eq!(cell(sum, "is_monotonic"), &Value::Bool(true));
    assert_eq!(
        cell(sum, "attributes"),
        &Value::Dynamic(json!({"my.counter.attr": "some value"}))
    );
    assert_eq!(cell(gauge, "value"), &Value::Long(10));
    assert_eq!(cell(gauge, "timestamp"), &Value::DateTime(TIME_NANOS));
    assert_eq!(cell(gauge, "metric_description"), &Value::String("I am a Gauge".into()));
    assert_eq!(cell(histogram, "count"), &Value::Long(2));
    assert_eq!(cell(histogram, "bucket_counts"), &Value::Dynamic(json!([1, 1])));
    assert_eq!(cell(histogram, "explicit_bounds"), &Value::Dynamic(json!([1.0])));
    assert_eq!(cell(histogram, "min"), &Value::Real(0.0));
    assert_eq!(cell(exponential, "zero_count"), &Value::Long(1));
    assert_eq!(cell(exponential, "scale"), &Value::Long(0));
    assert_eq!(
        cell(exponential, "positive"),
        &Value::Dynamic(json!({"offset": 1, "bucket_counts": [0, 2]}))
    );
    assert_eq!(exponential.get("negative"), None);
    assert_eq!(cell(summary, "count"), &Value::Long(4));
    assert_eq!(
        cell(summary, "quantile_values"),
        &Value::Dynamic(json!([{"quantile": 0.5, "value": 2.0}, {"quantile": 1.0, "value": "Infinity"}]))
    );
    assert_eq!(summary.get("metric_unit"), None);
}

#[test]
fn snake_case_names_numbers_and_enum_names_are_accepted() {
    let document = json!({"resource_spans": [{"scope_spans": [{"spans": [{
        "trace_id": "5b8efff798038103d269b633813fc60c",
        "span_id": "eee19b7ec3c1b174",
        "start_time_unix_nano": 1_544_712_660_000_000_000u64,
        "end_time_unix_nano": "1544712661000000000",
        "kind": "SPAN_KIND_CLIENT",
        "status": {"code": "STATUS_CODE_OK"},
        "dropped_attributes_count": "2",
        "unknownField": {"anything": [1, 2]}
    }]}]}]});
    let request = decode_traces(document.to_string().as_bytes(), PayloadFormat::Json);
    let Ok(request) = request else { panic!("{request:?}") };
    let span = &request.resource_spans[0].scope_spans[0].spans[0];
    assert_eq!(span.start_time_unix_nano, 1_544_712_660_000_000_000);
    assert_eq!(span.end_time_unix_nano, 1_544_712_661_000_000_000);
    assert_eq!(
        (span.kind, span.status.as_ref().map(|status| status.code)),
        (3, Some(1))
    );
    assert_eq!(span.dropped_attributes_count, 2);

    let logs = json!({"resource_logs": [{"scope_logs": [{"log_records": [{
        "time_unix_nano": "1",
        "severity_number": "SEVERITY_NUMBER_WARN",
        "body": {"kvlist_value": {"values": [{"key": "k", "value": {"int_value": 5}}]}}
    }]}]}]});
    let request = decode_logs(logs.to_string().as_bytes(), PayloadFormat::Json);
    let Ok(request) = request else { panic!("{request:?}") };
    let record = &request.resource_logs[0].scope_logs[0].log_records[0];
    assert_eq!((record.time_unix_nano, record.severity_number), (1, 13));
    let Some(any_value::Value::KvlistValue(body)) = record.body.as_ref().and_then(|body| body.value.clone()) else {
        panic!("expected a kvlist body, got {:?}", record.body);
    };
    assert_eq!(body.values[0].key, "k");

    let metrics = json!({"resource_metrics": [{"scope_metrics": [{"metrics": [{
        "name": "m",
        "sum": {"data_points": [{"as_int": 7, "time_unix_nano": "5"}], "aggregation_temporality": "AGGREGATION_TEMPORALITY_CUMULATIVE", "is_monotonic": true}
    }]}]}]});
    let request = decode_metrics(metrics.to_string().as_bytes(), PayloadFormat::Json);
    let Ok(request) = request else { panic!("{request:?}") };
    let Some(metric::Data::Sum(sum)) = &request.resource_metrics[0].scope_metrics[0].metrics[0].data else {
        panic!("expected a sum");
    };
    assert_eq!(sum.aggregation_temporality, 2);
    assert_eq!(sum.data_points[0].value, Some(number_data_point::Value::AsInt(7)));
}

#[test]
fn nulls_and_empty_documents_decode_to_defaults() {
    for body in [
        r#"{}"#,
        r#"{"resourceLogs": null}"#,
        r#"{"resourceLogs": [{"resource": null, "scopeLogs": [{"logRecords": [{"body": null, "traceId": ""}]}]}]}"#,
    ] {
        let decoded = decode_logs(body.as_bytes(), PayloadFormat::Json);
        assert!(decoded.is_ok(), "{body}: {decoded:?}");
    }
}

#[test]
fn malformed_json_is_an_error_naming_what_was_expected() {
    assert_eq!(
        decode_error(decode_logs(b"{\"resourceLogs\": [", PayloadFormat::Json)),
        "expected an otlp/json logs export request, found malformed json: EOF while parsing a list \
         at line 1 column 18"
    );
    assert_eq!(
        decode_error(decode_logs(b"[]", PayloadFormat::Json)),
        "expected an object at `$`, found an array"
    );
    let bad_id = r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}"#;
    assert_eq!(
        decode_error(decode_traces(bad_id.as_bytes(), PayloadFormat::Json)),
        "expected a hex string with an even number of digits at \
         `$.resourceSpans[0].scopeSpans[0].spans[0].traceId`, found the string \"xyz\""
    );
    let bad_count =
        r#"{"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"histogram": {"dataPoints": [{"count": "-1"}]}}]}]}]}"#;
    assert_eq!(
        decode_error(decode_metrics(bad_count.as_bytes(), PayloadFormat::Json)),
        "expected an unsigned 64-bit integer (number or decimal string) at \
         `$.resourceMetrics[0].scopeMetrics[0].metrics[0].histogram.dataPoints[0].count`, found \
         the string \"-1\""
    );
    let bad_value =
        r#"{"resourceMetrics": [{"scopeMetrics": [{"metrics": [{"gauge": {"dataPoints": [{"asInt": "ten"}]}}]}]}]}"#;
    assert!(decode_metrics(bad_value.as_bytes(), PayloadFormat::Json).is_err());
}

#[test]
fn deeply_nested_json_is_refused_without_overflowing_the_stack() {
    let depth = 10_000;
    let mut body = String::from(r#"{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": "#);
    body.push_str(&r#"{"arrayValue": {"values": ["#.repeat(depth));
    body.push_str(&"]}}".repeat(depth));
    body.push_str("}]}]}]}");
    assert!(decode_logs(body.as_bytes(), PayloadFormat::Json).is_err());
}

#[test]
fn protobuf_round_trips_for_every_signal() {
    let logs = decode_logs(LOGS_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let traces = decode_traces(TRACE_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let metrics = decode_metrics(METRICS_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let (Ok(logs), Ok(traces), Ok(metrics)) = (logs, traces, metrics) else {
        panic!("the examples must decode");
    };
    let decoded = decode_logs(&logs.encode_to_vec(), PayloadFormat::Protobuf);
    assert_eq!(decoded.ok(), Some(logs));
    let decoded = decode_traces(&traces.encode_to_vec(), PayloadFormat::Protobuf);
    assert_eq!(decoded.ok(), Some(traces));
    let decoded = decode_metrics(&metrics.encode_to_vec(), PayloadFormat::Protobuf);
    assert_eq!(decoded.ok(), Some(metrics));
}

#[test]
fn protobuf_and_json_of_the_same_request_give_the_same_rows() {
    let json_request = decode_logs(LOGS_EXAMPLE.as_bytes(), PayloadFormat::Json);
    let Ok(json_request) = json_request else {
        panic!("{json_request:?}")
    };
    let protobuf_request = decode_logs(&json_request.encode_to_vec(), PayloadFormat::Protobuf);
    let Ok(protobuf_request) = protobuf_request else {
        panic!("{protobuf_request:?}")
    };
    assert_eq!(
        logs_to_rows(&json_request, INGEST_NANOS),
        logs_to_rows(&protobuf_request, INGEST_NANOS)
    );
}

#[test]
fn garbage_protobuf_is_an_error_and_empty_protobuf_an_empty_request() {
    let text = decode_error(decode_traces(&[0x0a, 0xff, 0xff, 0xff], PayloadFormat::Protobuf));
    assert!(
        text.starts_with("expected a protobuf otlp traces export request, found undecodable bytes:"),
        "{text}"
    );
    assert_eq!(
        decode_metrics(&[], PayloadFormat::Protobuf).ok(),
        Some(Default::default())
    );
    let error = decode_logs(&[0xff], PayloadFormat::Protobuf).err();
    assert_eq!(
        error.map(|error| error.code()),
        Some(trawl_common::ErrorCode::BadRequest)
    );
}

#[test]
fn content_types_select_the_format() {
    assert_eq!(
        PayloadFormat::from_content_type("application/x-protobuf"),
        Some(PayloadFormat::Protobuf)
    );
    assert_eq!(
        PayloadFormat::from_content_type("application/json; charset=utf-8"),
        Some(PayloadFormat::Json)
    );
    assert_eq!(
        PayloadFormat::from_content_type("Application/JSON"),
        Some(PayloadFormat::Json)
    );
    assert_eq!(PayloadFormat::from_content_type("text/plain"), None);
}
