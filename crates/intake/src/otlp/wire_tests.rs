use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::common::v1::{AnyValue, KeyValue, any_value};
use trawl_proto::otlp::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use trawl_proto::prost::Message;
use trawl_storage::columns_to_batch;

use super::*;
use crate::ColumnsOutput;
use crate::otlp::arbitrary::{Random, by_name, flat_logs_request, flat_traces_request, logs_request, traces_request};
use crate::otlp::fixtures::{INGEST_NANOS, any_string, resource, scope};
use crate::otlp::logs::logs_from_wire;
use crate::otlp::traces::traces_from_wire;
use crate::otlp::{
    PayloadFormat, decode_logs, decode_traces, logs_protobuf_to_columns, logs_to_columns, traces_protobuf_to_columns,
    traces_to_columns,
};

type Outcome = (i64, String, Vec<(String, String, Vec<String>)>);

fn outcome(output: ColumnsOutput) -> Outcome {
    let columns = match output.columns.rows {
        0 => Vec::new(),
        rows => match columns_to_batch(output.columns) {
            Ok(batch) => by_name(&batch.batch),
            Err(error) => panic!("{rows} rows: {error}"),
        },
    };
    (output.rejected, output.error_message, columns)
}

/// What prost and the row mapping make of a body: its columns, or the decode error's text.
fn through_prost(body: &[u8]) -> Result<Outcome, String> {
    decode_logs(body, PayloadFormat::Protobuf)
        .map(|request| outcome(logs_to_columns(&request, INGEST_NANOS)))
        .map_err(|error| error.to_string())
}

/// One signal's three ways from a body to columns.
struct Signal {
    prost: fn(&[u8]) -> Result<Outcome, String>,
    in_place: fn(&[u8], i64) -> Result<ColumnsOutput, Unusual>,
    public: fn(&[u8], i64) -> Result<ColumnsOutput, crate::IntakeError>,
    request: fn(&mut Random, bool) -> Vec<u8>,
}

const LOGS: Signal = Signal {
    prost: through_prost,
    in_place: logs_from_wire,
    public: logs_protobuf_to_columns,
    request: |random, flat| match flat {
        true => flat_logs_request(random).encode_to_vec(),
        false => logs_request(random).encode_to_vec(),
    },
};

const SPANS: Signal = Signal {
    prost: |body| {
        decode_traces(body, PayloadFormat::Protobuf)
            .map(|request| outcome(traces_to_columns(&request, INGEST_NANOS)))
            .map_err(|error| error.to_string())
    },
    in_place: traces_from_wire,
    public: traces_protobuf_to_columns,
    request: |random, flat| match flat {
        true => flat_traces_request(random).encode_to_vec(),
        false => traces_request(random).encode_to_vec(),
    },
};

impl Signal {
    /// Checks `body` both ways; true when it was read in place.
    fn check(&self, body: &[u8], what: &str) -> bool {
        let expected = (self.prost)(body);
        let in_place = (self.in_place)(body, INGEST_NANOS);
        let read = in_place.is_ok();
        if let Ok(output) = in_place {
            assert_eq!(Ok(outcome(output)), expected, "{what}: {body:?}");
        }
        let public = (self.public)(body, INGEST_NANOS).map_err(|error| error.to_string());
        assert_eq!(public.map(outcome), expected, "{what}");
        read
    }
}

#[test]
fn bodies_read_in_place_map_as_prost_decodes_them() {
    for (signal, seed) in [(LOGS, 0x3172), (SPANS, 0x5a75)] {
        let mut random = Random(seed);
        let mut in_place = 0;
        for round in 0..400 {
            // Nested values are left to prost; every other request is read in place.
            let body = (signal.request)(&mut random, round % 4 != 0);
            in_place += usize::from(signal.check(&body, &format!("round {round}")));
        }
        assert!(in_place >= 300, "{in_place}");
    }
}

#[test]
fn damaged_bodies_are_read_in_place_only_when_prost_reads_them_the_same() {
    for (signal, seed) in [(LOGS, 0xbad), (SPANS, 0xbad5)] {
        let mut random = Random(seed);
        let (mut in_place, mut refused) = (0, 0);
        for round in 0..3000 {
            let mut body = (signal.request)(&mut random, true);
            if body.is_empty() {
                continue;
            }
            for _ in 0..1 + random.below(3) {
                let at = random.below(body.len() as u64) as usize;
                match random.below(4) {
                    0 => body.truncate(at),
                    1 => body[at] ^= 1 << random.below(8),
                    2 => body[at] = [0x00, 0x80, 0xff, 0x0a, 0x12, 0x07][random.below(6) as usize],
                    _ => body.insert(at, random.below(256) as u8),
                }
                if body.is_empty() {
                    break;
                }
            }
            match signal.check(&body, &format!("round {round}")) {
                true => in_place += 1,
                false => refused += usize::from((signal.prost)(&body).is_err()),
            }
        }
        assert!(
            in_place > 100 && refused > 100,
            "{in_place} read in place, {refused} refused"
        );
    }
}

fn field(out: &mut Vec<u8>, number: u32, wire_type: u8, payload: &[u8]) {
    encode_varint(out, u64::from(number) << 3 | u64::from(wire_type));
    if wire_type == 2 {
        encode_varint(out, payload.len() as u64);
    }
    out.extend_from_slice(payload);
}

fn encode_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn request_of(record: &[u8]) -> Vec<u8> {
    let (mut scope_logs, mut resource_logs, mut request) = (Vec::new(), Vec::new(), Vec::new());
    field(&mut scope_logs, 2, 2, record);
    field(&mut resource_logs, 2, 2, &scope_logs);
    field(&mut request, 1, 2, &resource_logs);
    request
}

#[test]
fn encodings_prost_accepts_but_never_writes_read_the_same() {
    let text = |value: &str| {
        AnyValue {
            value: Some(any_value::Value::StringValue(value.into())),
        }
        .encode_to_vec()
    };
    let key_value = |key: &str, value: &str| {
        KeyValue {
            key: key.into(),
            value: Some(any_string(value)),
            key_strindex: 0,
        }
        .encode_to_vec()
    };
    let mut cases: Vec<(&str, Vec<u8>, bool)> = Vec::new();

    // Fields in reverse order, scalars given twice (the last one counts), unknown fields of
    // every wire type.
    let mut record = Vec::new();
    field(&mut record, 6, 2, &key_value("http.route", "/b"));
    field(&mut record, 5, 2, &text("second body field order"));
    field(&mut record, 3, 2, b"WARN");
    field(&mut record, 3, 2, b"ERROR");
    field(&mut record, 2, 0, &[9]);
    field(&mut record, 1, 1, &1_700_000_000_000_000_000u64.to_le_bytes());
    field(&mut record, 1, 1, &1_700_000_000_000_000_001u64.to_le_bytes());
    field(&mut record, 6, 2, &key_value("http.method", "GET"));
    field(&mut record, 99, 0, &[0x80, 0x01]);
    field(&mut record, 98, 1, &[0; 8]);
    field(&mut record, 97, 5, &[0; 4]);
    field(&mut record, 96, 2, b"anything");
    field(&mut record, 9, 2, &[1; 16]);
    field(&mut record, 9, 2, &[2; 16]);
    cases.push(("reordered and repeated", request_of(&record), true));

    // A negative severity number is ten varint bytes; an int32 keeps the low 32 bits.
    let mut record = Vec::new();
    field(
        &mut record,
        2,
        0,
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    );
    field(&mut record, 2, 0, &[0x89, 0x80, 0x80, 0x80, 0x10]);
    cases.push(("wide varints", request_of(&record), true));

    // Left to prost: a body given twice (merged), a wire type other than the field's, a
    // group, a string that is not UTF-8, an AnyValue with two values.
    let mut record = Vec::new();
    field(&mut record, 5, 2, &text("a"));
    field(&mut record, 5, 2, &text("b"));
    cases.push(("body twice", request_of(&record), false));
    let mut record = Vec::new();
    field(&mut record, 1, 0, &[5]);
    cases.push(("wrong wire type", request_of(&record), false));
    let mut record = Vec::new();
    field(&mut record, 50, 3, &[]);
    field(&mut record, 50, 4, &[]);
    cases.push(("group", request_of(&record), false));
    let mut record = Vec::new();
    field(&mut record, 3, 2, &[0xc3, 0x28]);
    cases.push(("invalid UTF-8", request_of(&record), false));
    let mut value = Vec::new();
    field(&mut value, 1, 2, b"x");
    field(&mut value, 3, 0, &[4]);
    let mut record = Vec::new();
    field(&mut record, 5, 2, &value);
    cases.push(("two values", request_of(&record), false));

    // A resource after its scopes: left to prost, which still applies it to them.
    let mut resource_logs = Vec::new();
    let mut scope_logs = Vec::new();
    field(
        &mut scope_logs,
        2,
        2,
        &LogRecord {
            body: Some(any_string("after")),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    field(&mut resource_logs, 2, 2, &scope_logs);
    field(
        &mut resource_logs,
        1,
        2,
        &resource(vec![KeyValue {
            key: "service.name".into(),
            value: Some(any_string("late")),
            key_strindex: 0,
        }])
        .encode_to_vec(),
    );
    let mut request = Vec::new();
    field(&mut request, 1, 2, &resource_logs);
    cases.push(("resource after scopes", request, false));

    // Canonical, with a scope and a resource: read in place.
    let canonical = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource(vec![])),
            scope_logs: vec![ScopeLogs {
                scope: Some(scope("lib", "2")),
                log_records: vec![LogRecord::default()],
                schema_url: "https://example.com/s".into(),
            }],
            schema_url: String::new(),
        }],
    };
    cases.push(("canonical", canonical.encode_to_vec(), true));

    for (name, body, read_in_place) in cases {
        assert!(through_prost(&body).is_ok() || !read_in_place, "{name}");
        assert_eq!(LOGS.check(&body, name), read_in_place, "{name}");
    }
}

#[test]
fn varints_read_as_prost_reads_them() {
    let values = [0, 1, 127, 128, 255, 300, 16_383, 16_384, 2_097_151, 1 << 35, u64::MAX];
    for value in values {
        let mut bytes = Vec::new();
        encode_varint(&mut bytes, value);
        bytes.push(0x2a); // the next field's key stays unread
        let mut fields = Fields::new(&bytes);
        assert_eq!(fields.varint(), Ok(value), "{value}");
        assert_eq!(fields.rest, [0x2a], "{value}");
        let mut prost_bytes = &bytes[..];
        assert_eq!(
            trawl_proto::prost::encoding::decode_varint(&mut prost_bytes).ok(),
            Some(value)
        );
    }
    // Cut short, and an eleventh byte or a tenth above 1: refused, as prost refuses them.
    for bad in [&[0x80][..], &[0xff, 0xff], &[0xff; 10], &[0xff; 11]] {
        assert_eq!(Fields::new(bad).varint(), Err(Unusual), "{bad:?}");
        let mut prost_bytes = bad;
        assert!(
            trawl_proto::prost::encoding::decode_varint(&mut prost_bytes).is_err(),
            "{bad:?}"
        );
    }
    // Non-minimal encodings (a value padded with continuation bytes) read as the value.
    assert_eq!(Fields::new(&[0x81, 0x00]).varint(), Ok(1));
    assert_eq!(Fields::new(&[0x81, 0x80, 0x00]).varint(), Ok(1));
}

/// A string already found to be UTF-8 is given back for the same bytes; other bytes in its
/// slot are checked (invalid ones refused) and take the slot.
#[test]
fn known_strings_are_checked_once_and_others_always() {
    let body = b"http.method|http.method|h\xfftp.method".to_vec();
    let (first, again, invalid) = (&body[..11], &body[12..23], &body[24..]);
    let mut known = Known::default();
    assert_eq!(known.text(Wire::Len(first)), Ok("http.method"));
    assert_eq!(known.text(Wire::Len(again)), Ok("http.method"));
    // The same length, first and last byte as the known one, so the same slot: still refused.
    assert_eq!(known.text(Wire::Len(invalid)), Err(Unusual));
    assert_eq!(known.text(Wire::Len(b"http.methox")), Ok("http.methox"));
    assert_eq!(known.text(Wire::Len(b"hxxx.method")), Ok("hxxx.method"));
    assert_eq!(known.text(Wire::Len(b"")), Ok(""));
    assert_eq!(known.text(Wire::Varint(1)), Err(Unusual));
}
