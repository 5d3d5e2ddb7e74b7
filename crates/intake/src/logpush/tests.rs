use serde_json::json;

use super::*;

fn cell<'a>(row: &'a Row, column: &str) -> Option<&'a Value> {
    row.get(column)
}

#[test]
fn json_envelope_with_and_without_metadata() -> Result<(), IntakeError> {
    let body = json!({
        "streams": [{
            "stream": {"job": "shop/checkout", "level": "error", "exporter": "OTLP", "pod": "p-1", "team": "a"},
            "values": [
                ["1700000000000000001", "first"],
                ["1700000000000000002", "second", {"trace_id": "abc", "http_method": "GET", "user_id": "7"}]
            ],
            "extra": true
        }],
        "unknown": 1
    });
    let streams = decode_json(body.to_string().as_bytes())?;
    let output = streams_to_rows(&streams, 42);
    assert_eq!(output.rows.len(), 2);
    let row = &output.rows[1];
    assert_eq!(
        cell(row, "timestamp"),
        Some(&Value::DateTime(1_700_000_000_000_000_002))
    );
    assert_eq!(cell(row, "severity_text"), Some(&Value::String("error".into())));
    assert_eq!(cell(row, "severity_number"), Some(&Value::Long(17)));
    assert_eq!(cell(row, "body"), Some(&Value::Dynamic(json!("second"))));
    assert_eq!(
        cell(row, "resource"),
        Some(&Value::Dynamic(json!({
            "service.name": "checkout", "service.namespace": "shop", "k8s.pod.name": "p-1"
        })))
    );
    // `exporter` dropped, `level` became the severity; metadata keys dotted only for the
    // listed prefixes.
    assert_eq!(
        cell(row, "attributes"),
        Some(&Value::Dynamic(json!({
            "team": "a", "job": "shop/checkout", "trace_id": "abc", "http.method": "GET", "user_id": "7"
        })))
    );
    Ok(())
}

#[test]
fn explicit_service_labels_win_over_job() -> Result<(), IntakeError> {
    let body = json!({"streams": [{"stream": {"job": "ns/x", "service": "svc", "service_name": "named"}, "values": [["0", "l"]]}]});
    let output = streams_to_rows(&decode_json(body.to_string().as_bytes())?, 42);
    let row = &output.rows[0];
    assert_eq!(
        cell(row, "resource"),
        Some(&Value::Dynamic(json!({"service.name": "named"})))
    );
    // A zero timestamp takes the ingest time.
    assert_eq!(cell(row, "timestamp"), Some(&Value::DateTime(42)));
    Ok(())
}

#[test]
fn malformed_bodies_say_where() {
    for (body, path) in [
        (json!({"nope": []}), ".streams"),
        (json!({"streams": [{"values": [[1, "x"]]}]}), ".streams[0].values[0][0]"),
        (json!({"streams": [{"values": [["1", 2]]}]}), ".streams[0].values[0][1]"),
        (
            json!({"streams": [{"stream": {"a": 1}, "values": []}]}),
            ".streams[0].stream.a",
        ),
    ] {
        let error = decode_json(body.to_string().as_bytes())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains(path), "{error}");
    }
    assert!(decode_json(b"not json").is_err());
}

#[test]
fn protobuf_with_snappy() -> Result<(), Box<dyn std::error::Error>> {
    let request = logproto::PushRequest {
        streams: vec![logproto::StreamAdapter {
            labels: r#"{service_name="api", level="warn", note="a \"quoted\" value"}"#.into(),
            entries: vec![logproto::EntryAdapter {
                timestamp: Some(prost_types::Timestamp {
                    seconds: 1_700_000_000,
                    nanos: 5,
                }),
                line: "hello".into(),
                structured_metadata: vec![logproto::LabelPairAdapter {
                    name: "k8s_pod_name".into(),
                    value: "p".into(),
                }],
            }],
            hash: 0,
        }],
    };
    let compressed = snap::raw::Encoder::new().compress_vec(&prost::Message::encode_to_vec(&request))?;
    let output = streams_to_rows(&decode_protobuf(&compressed)?, 42);
    let row = &output.rows[0];
    assert_eq!(
        cell(row, "timestamp"),
        Some(&Value::DateTime(1_700_000_000_000_000_005))
    );
    assert_eq!(cell(row, "severity_number"), Some(&Value::Long(13)));
    assert_eq!(
        cell(row, "resource"),
        Some(&Value::Dynamic(json!({"service.name": "api"})))
    );
    assert_eq!(
        cell(row, "attributes"),
        Some(&Value::Dynamic(
            json!({"note": "a \"quoted\" value", "k8s.pod.name": "p"})
        ))
    );
    assert!(decode_protobuf(b"\xff\xff not snappy").is_err());
    Ok(())
}

#[test]
fn label_text() {
    assert_eq!(parse_labels("{}"), Ok(vec![]));
    assert_eq!(
        parse_labels(r#"{a="1",b = "x\ny"}"#),
        Ok(vec![("a".into(), "1".into()), ("b".into(), "x\ny".into())])
    );
    assert!(parse_labels("a=1").is_err());
    assert!(parse_labels(r#"{a="open}"#).is_err());
}

#[test]
fn severity_names() {
    assert_eq!(severity_number("WARNING"), Some(13));
    assert_eq!(severity_number("critical"), Some(21));
    assert_eq!(severity_number("chatty"), None);
}
