use serde_json::json;
use trawl_common::Value;
use trawl_proto::otlp::common::v1::{AnyValue, ArrayValue, KeyValueList, any_value};
use trawl_proto::otlp::logs::v1::{ResourceLogs, ScopeLogs};

use super::*;
use crate::otlp::fixtures::{INGEST_NANOS, any_int, any_string, cell, columns, key_value, resource, scope};
use trawl_common::Row;

const TIME: u64 = 1_700_000_000_123_456_789;
const OBSERVED: u64 = 1_700_000_001_000_000_000;

fn request(records: Vec<LogRecord>) -> ExportLogsServiceRequest {
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource(vec![key_value("service.name", any_string("checkout"))])),
            scope_logs: vec![ScopeLogs {
                scope: Some(scope("app.logger", "2.1.0")),
                log_records: records,
                schema_url: "https://opentelemetry.io/schemas/1.24.0".into(),
            }],
            schema_url: "https://opentelemetry.io/schemas/1.24.0".into(),
        }],
    }
}

fn single_row(record: LogRecord) -> Row {
    let output = logs_to_rows(&request(vec![record]), INGEST_NANOS);
    assert_eq!((output.rejected, output.error_message.as_str()), (0, ""));
    assert_eq!(output.rows.len(), 1);
    output.rows.into_iter().next().unwrap_or_default()
}

#[test]
fn a_full_record_maps_to_every_column() {
    let record = LogRecord {
        time_unix_nano: TIME,
        observed_time_unix_nano: OBSERVED,
        severity_number: 17,
        severity_text: "ERROR".into(),
        body: Some(any_string("payment failed")),
        attributes: vec![
            key_value("http.method", any_string("POST")),
            key_value("retries", any_int(3)),
        ],
        dropped_attributes_count: 2,
        flags: 0x01,
        trace_id: vec![0x5b; 16],
        span_id: vec![0xee; 8],
        event_name: String::new(),
    };
    let row = single_row(record);
    assert_eq!(
        row.cells,
        vec![
            ("timestamp", Value::DateTime(TIME as i64)),
            ("observed_time", Value::DateTime(OBSERVED as i64)),
            ("ingest_time", Value::DateTime(INGEST_NANOS)),
            ("trace_id", Value::String("5b".repeat(16))),
            ("span_id", Value::String("ee".repeat(8))),
            ("severity_number", Value::Long(17)),
            ("severity_text", Value::String("ERROR".into())),
            ("body", Value::Dynamic(json!("payment failed"))),
            ("sampled", Value::Bool(true)),
            (
                "attributes",
                Value::Dynamic(json!({"http.method": "POST", "retries": 3}))
            ),
            ("dropped_attributes_count", Value::Long(2)),
            ("resource", Value::Dynamic(json!({"service.name": "checkout"}))),
            ("scope_name", Value::String("app.logger".into())),
            ("scope_version", Value::String("2.1.0".into())),
        ]
    );
}

#[test]
fn an_empty_record_keeps_only_times_and_shared_cells() {
    let row = single_row(LogRecord::default());
    assert_eq!(
        columns(&row),
        ["timestamp", "ingest_time", "resource", "scope_name", "scope_version"]
    );
}

#[test]
fn timestamp_falls_back_to_observed_time_then_ingest_time() {
    let observed_only = LogRecord {
        observed_time_unix_nano: OBSERVED,
        ..Default::default()
    };
    let row = single_row(observed_only);
    assert_eq!(cell(&row, "timestamp"), &Value::DateTime(OBSERVED as i64));
    assert_eq!(cell(&row, "observed_time"), &Value::DateTime(OBSERVED as i64));

    let row = single_row(LogRecord::default());
    assert_eq!(cell(&row, "timestamp"), &Value::DateTime(INGEST_NANOS));
    assert_eq!(row.get("observed_time"), None);

    let time_only = LogRecord {
        time_unix_nano: TIME,
        ..Default::default()
    };
    let row = single_row(time_only);
    assert_eq!(cell(&row, "timestamp"), &Value::DateTime(TIME as i64));
    assert_eq!(row.get("observed_time"), None);
}

#[test]
fn bodies_keep_their_shape() {
    let kvlist = AnyValue {
        value: Some(any_value::Value::KvlistValue(KeyValueList {
            values: vec![key_value("user", any_string("ada")), key_value("id", any_int(7))],
        })),
    };
    let array = AnyValue {
        value: Some(any_value::Value::ArrayValue(ArrayValue {
            values: vec![any_string("a"), any_int(1)],
        })),
    };
    let body_of = |body: Option<AnyValue>| {
        single_row(LogRecord {
            body,
            ..Default::default()
        })
        .get("body")
        .cloned()
    };
    assert_eq!(
        body_of(Some(kvlist)),
        Some(Value::Dynamic(json!({"user": "ada", "id": 7})))
    );
    assert_eq!(body_of(Some(array)), Some(Value::Dynamic(json!(["a", 1]))));
    assert_eq!(body_of(Some(any_int(42))), Some(Value::Dynamic(json!(42))));
    assert_eq!(body_of(Some(AnyValue::default())), None);
    assert_eq!(body_of(None), None);
}

#[test]
fn severity_number_is_kept_only_in_range() {
    let severity_of = |severity_number: i32| {
        let record = LogRecord {
            severity_number,
            ..Default::default()
        };
        single_row(record).get("severity_number").cloned()
    };
    assert_eq!(severity_of(1), Some(Value::Long(1)));
    assert_eq!(severity_of(24), Some(Value::Long(24)));
    assert_eq!(severity_of(0), None);
    assert_eq!(severity_of(25), None);
    assert_eq!(severity_of(-3), None);
}

#[test]
fn flags_split_into_sampled_and_remaining_bits() {
    let flags_of = |flags: u32| {
        let row = single_row(LogRecord {
            flags,
            ..Default::default()
        });
        (row.get("sampled").cloned(), row.get("flags").cloned())
    };
    assert_eq!(flags_of(0), (None, None));
    assert_eq!(flags_of(1), (Some(Value::Bool(true)), None));
    assert_eq!(flags_of(3), (Some(Value::Bool(true)), Some(Value::Long(2))));
    assert_eq!(flags_of(0x100), (None, Some(Value::Long(0x100))));
}

#[test]
fn empty_strings_ids_and_bags_are_omitted() {
    let record = LogRecord {
        severity_text: String::new(),
        trace_id: Vec::new(),
        span_id: Vec::new(),
        attributes: Vec::new(),
        ..Default::default()
    };
    let mut request = request(vec![record]);
    request.resource_logs[0].resource = Some(resource(Vec::new()));
    request.resource_logs[0].scope_logs[0].scope = Some(scope("", ""));
    let output = logs_to_rows(&request, INGEST_NANOS);
    assert_eq!(columns(&output.rows[0]), ["timestamp", "ingest_time"]);
}

#[test]
fn invalid_records_are_rejected_and_the_rest_stored() {
    let records = vec![
        LogRecord {
            trace_id: vec![1, 2, 3],
            ..Default::default()
        },
        LogRecord {
            body: Some(any_string("fine")),
            ..Default::default()
        },
        LogRecord {
            span_id: vec![1; 16],
            ..Default::default()
        },
        LogRecord {
            time_unix_nano: u64::MAX,
            ..Default::default()
        },
    ];
    let output = logs_to_rows(&request(records), INGEST_NANOS);
    assert_eq!(output.rows.len(), 1);
    assert_eq!(cell(&output.rows[0], "body"), &Value::Dynamic(json!("fine")));
    assert_eq!(output.rejected, 3);
    assert_eq!(
        output.error_message,
        "rejected 3 log records; first: resource_logs[0].scope_logs[0].log_records[0]: expected \
         trace_id of 16 bytes, found 3 bytes"
    );
}

#[test]
fn every_row_gets_the_cells_of_its_own_resource_and_scope() {
    let mut request = request(vec![LogRecord::default()]);
    let mut second_resource = request.resource_logs[0].clone();
    second_resource.resource = Some(resource(vec![key_value("service.name", any_string("cart"))]));
    second_resource.scope_logs[0].scope = None;
    second_resource.scope_logs.push(ScopeLogs {
        scope: Some(scope("other", "")),
        log_records: vec![LogRecord::default(), LogRecord::default()],
        schema_url: String::new(),
    });
    request.resource_logs.push(second_resource);
    let output = logs_to_rows(&request, INGEST_NANOS);
    assert_eq!(output.rows.len(), 4);
    assert!(
        output
            .rows
            .iter()
            .all(|row| row.get("ingest_time") == Some(&Value::DateTime(INGEST_NANOS)))
    );
    assert_eq!(
        cell(&output.rows[0], "resource"),
        &Value::Dynamic(json!({"service.name": "checkout"}))
    );
    assert_eq!(
        cell(&output.rows[1], "resource"),
        &Value::Dynamic(json!({"service.name": "cart"}))
    );
    assert_eq!(output.rows[1].get("scope_name"), None);
    assert_eq!(cell(&output.rows[3], "scope_name"), &Value::String("other".into()));
}

#[test]
fn schema_urls_and_event_names_are_not_stored() {
    let record = LogRecord {
        event_name: "browser.click".into(),
        ..Default::default()
    };
    let row = single_row(record);
    assert!(
        !columns(&row)
            .iter()
            .any(|column| column.contains("schema") || column.contains("event"))
    );
}

#[test]
fn records_leave_in_time_order_and_rejections_name_the_first_in_the_request() -> Result<(), Box<dyn std::error::Error>>
{
    use prost::Message;
    let at = |seconds: u64, service: &str| LogRecord {
        time_unix_nano: TIME + seconds * 1_000_000_000,
        body: Some(any_string(service)),
        ..Default::default()
    };
    let bad = |seconds: u64, length: usize| LogRecord {
        span_id: vec![1; length],
        ..at(seconds, "bad")
    };
    // Two resources, each holding records in its own time order, interleaved in time; the
    // first refused record (in the request) comes after a later refused one in time.
    let mut request = request(vec![at(30, "checkout"), bad(40, 3), at(10, "checkout")]);
    let mut second = request.resource_logs[0].clone();
    second.resource = Some(resource(vec![key_value("service.name", any_string("cart"))]));
    second.scope_logs[0].log_records = vec![bad(5, 4), at(20, "cart"), LogRecord::default()];
    request.resource_logs.push(second);

    let output = logs_to_rows(&request, INGEST_NANOS);
    let rows: Vec<(Option<Value>, Value)> = output
        .rows
        .iter()
        .map(|row| (row.get("body").cloned(), cell(row, "resource").clone()))
        .collect();
    let row = |body: &str, service: &str| {
        let resource = Value::Dynamic(json!({"service.name": service}));
        (Some(Value::Dynamic(json!(body))), resource)
    };
    // The record without a time gets the ingest time, later than the others here.
    assert_eq!(
        rows,
        [
            row("checkout", "checkout"),
            row("cart", "cart"),
            row("checkout", "checkout"),
            (None, Value::Dynamic(json!({"service.name": "cart"})))
        ]
    );
    let message = "rejected 2 log records; first: resource_logs[0].scope_logs[0].log_records[1]: \
                   expected span_id of 8 bytes, found 3 bytes";
    assert_eq!((output.rejected, output.error_message.as_str()), (2, message));

    // Read in place: the same message, and rows in time order.
    let wire = logs_protobuf_to_columns(&request.encode_to_vec(), INGEST_NANOS)?;
    assert_eq!((wire.rejected, wire.error_message.as_str()), (2, message));
    let batch = trawl_storage::columns_to_batch(wire.columns)?;
    assert!(batch.sorted);
    assert_eq!(batch.batch.num_rows(), 4);
    Ok(())
}
