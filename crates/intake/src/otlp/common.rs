//! Pieces every OTLP signal shares: `AnyValue` and attributes to JSON, hex ids, timestamps, trace
//! flags, the resource and scope cells repeated on every row, and the rejection counter.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Number, Value as Json};
use trawl_common::{Row, Value};
use trawl_proto::otlp::common::v1::{AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList, any_value};
use trawl_proto::otlp::resource::v1::Resource;

use crate::IntakeOutput;
use crate::otlp::base64;

pub(crate) const TRACE_ID_BYTES: usize = 16;
pub(crate) const SPAN_ID_BYTES: usize = 8;
/// Bit 0 of span, link and log flags (W3C `sampled`); of metric data point flags
/// (`no_recorded_value`).
pub(crate) const FLAG_BIT_0: u32 = 0x1;

/// A double as JSON: a number, or the OTLP/JSON names of the values JSON cannot hold
/// (`"NaN"`, `"Infinity"`, `"-Infinity"`).
pub(crate) fn double_to_json(value: f64) -> Json {
    match Number::from_f64(value) {
        Some(number) => Json::Number(number),
        None => Json::String(non_finite_name(value).to_owned()),
    }
}

/// The OTLP/JSON name of a double JSON numbers cannot hold.
fn non_finite_name(value: f64) -> &'static str {
    if value.is_nan() {
        "NaN"
    } else if value > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    }
}

/// An `AnyValue` as JSON: scalars as themselves, bytes as base64 text, arrays and key-value
/// lists as arrays and objects, an empty value as null.
pub(crate) fn any_value_to_json(value: &AnyValue) -> Json {
    let Some(value) = &value.value else {
        return Json::Null;
    };
    match value {
        any_value::Value::StringValue(text) => Json::String(text.clone()),
        any_value::Value::BoolValue(flag) => Json::Bool(*flag),
        any_value::Value::IntValue(number) => Json::Number((*number).into()),
        any_value::Value::DoubleValue(number) => double_to_json(*number),
        any_value::Value::ArrayValue(array) => Json::Array(array.values.iter().map(any_value_to_json).collect()),
        any_value::Value::KvlistValue(list) => Json::Object(attributes_to_json(&list.values)),
        any_value::Value::BytesValue(bytes) => Json::String(base64::encode(bytes)),
        // An index into a profiles dictionary; meaningless without the dictionary.
        any_value::Value::StringValueStrindex(_) => Json::Null,
    }
}

/// Key-value pairs as a JSON object, keys as-is (`http.method` stays one flat key). A repeated
/// key keeps its first position and its last value.
pub(crate) fn attributes_to_json(attributes: &[KeyValue]) -> Map<String, Json> {
    let mut object = Map::with_capacity(attributes.len());
    for attribute in attributes {
        let value = attribute.value.as_ref().map_or(Json::Null, any_value_to_json);
        object.insert(attribute.key.clone(), value);
    }
    object
}

/// Pushes attributes as a property bag; an empty list pushes nothing.
pub(crate) fn push_attributes(row: &mut Row, column: &'static str, attributes: &[KeyValue]) {
    if !attributes.is_empty() {
        row.push(column, Value::JsonText(attributes_text(attributes)));
    }
}

/// Key-value pairs as the JSON text of [`attributes_to_json`]'s object, written directly.
pub(crate) fn attributes_text(attributes: &[KeyValue]) -> Arc<str> {
    let mut out = String::with_capacity(32 * attributes.len() + 2);
    write_attributes(&mut out, attributes);
    Arc::from(out)
}

/// An `AnyValue` as the JSON text of [`any_value_to_json`]'s value, written directly.
pub(crate) fn any_value_text(value: &AnyValue) -> Arc<str> {
    let mut out = String::new();
    write_any_value(&mut out, value);
    Arc::from(out)
}

fn write_attributes(out: &mut String, attributes: &[KeyValue]) {
    write_attributes_noting(out, attributes, &mut |_, _| {});
}

/// A key-value pair the mapping writes into a bag: prost's `KeyValue`, or a view of its bytes
/// in the request ([`crate::otlp::wire`]).
pub(crate) trait Attribute {
    fn key(&self) -> &str;
    fn value(&self) -> Option<ValueRef<'_>>;
}

impl Attribute for KeyValue {
    fn key(&self) -> &str {
        &self.key
    }

    fn value(&self) -> Option<ValueRef<'_>> {
        self.value.as_ref().map(ValueRef::of)
    }
}

/// An `AnyValue` by reference: into prost's message, or (scalars only) into a request's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ValueRef<'a> {
    /// An `AnyValue` without a value.
    Unset,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(&'a [u8]),
    Strindex(i32),
    Array(&'a ArrayValue),
    Kvlist(&'a KeyValueList),
}

impl<'a> ValueRef<'a> {
    pub(crate) fn of(value: &'a AnyValue) -> ValueRef<'a> {
        match &value.value {
            None => ValueRef::Unset,
            Some(any_value::Value::StringValue(text)) => ValueRef::Str(text),
            Some(any_value::Value::BoolValue(flag)) => ValueRef::Bool(*flag),
            Some(any_value::Value::IntValue(number)) => ValueRef::Int(*number),
            Some(any_value::Value::DoubleValue(number)) => ValueRef::Double(*number),
            Some(any_value::Value::ArrayValue(array)) => ValueRef::Array(array),
            Some(any_value::Value::KvlistValue(list)) => ValueRef::Kvlist(list),
            Some(any_value::Value::BytesValue(bytes)) => ValueRef::Bytes(bytes),
            Some(any_value::Value::StringValueStrindex(index)) => ValueRef::Strindex(*index),
        }
    }

    pub(crate) fn to_any_value(self) -> AnyValue {
        AnyValue {
            value: match self {
                ValueRef::Unset => None,
                ValueRef::Str(text) => Some(any_value::Value::StringValue(text.to_owned())),
                ValueRef::Bool(flag) => Some(any_value::Value::BoolValue(flag)),
                ValueRef::Int(number) => Some(any_value::Value::IntValue(number)),
                ValueRef::Double(number) => Some(any_value::Value::DoubleValue(number)),
                ValueRef::Bytes(bytes) => Some(any_value::Value::BytesValue(bytes.to_vec())),
                ValueRef::Strindex(index) => Some(any_value::Value::StringValueStrindex(index)),
                ValueRef::Array(array) => Some(any_value::Value::ArrayValue(array.clone())),
                ValueRef::Kvlist(list) => Some(any_value::Value::KvlistValue(list.clone())),
            },
        }
    }
}

/// [`write_attributes`], calling `note` with each key and where its value's JSON text is in
/// `out`. A repeated key is written once, where it first appears, with the value it last has,
/// as [`attributes_to_json`]'s map keeps it.
pub(crate) fn write_attributes_noting<A: Attribute>(
    out: &mut String,
    attributes: &[A],
    note: &mut dyn FnMut(&str, std::ops::Range<usize>),
) {
    let kept = kept_values(attributes);
    out.push('{');
    let mut first = true;
    for (index, attribute) in attributes.iter().enumerate() {
        let value = match &kept {
            None => attribute,
            Some(kept) => match kept[index] {
                Some(last) => &attributes[last],
                None => continue,
            },
        };
        if !first {
            out.push(',');
        }
        first = false;
        write_json_string(out, attribute.key());
        out.push(':');
        let start = out.len();
        match value.value() {
            Some(value) => write_value(out, value),
            None => out.push_str("null"),
        }
        note(attribute.key(), start..out.len());
    }
    out.push('}');
}

/// For a list whose keys repeat, which attribute's value each position writes: the last
/// occurrence's at a key's first position, nothing at its later ones. None when no key
/// repeats (the usual case: every position writes its own value).
fn kept_values<A: Attribute>(attributes: &[A]) -> Option<Vec<Option<usize>>> {
    if attributes.len() <= 32 {
        // Pairwise is cheapest for short lists; a key's length and last byte pick a bit, so
        // keys are compared only when two of them share one.
        let mut seen = 0u64;
        let mut repeated = false;
        for (index, attribute) in attributes.iter().enumerate() {
            let key = attribute.key().as_bytes();
            let last = key.last().copied().unwrap_or(0) as usize;
            let bit = 1u64 << ((key.len() ^ last.wrapping_mul(5)) & 63);
            if seen & bit != 0
                && attributes[..index]
                    .iter()
                    .any(|earlier| earlier.key().as_bytes() == key)
            {
                repeated = true;
                break;
            }
            seen |= bit;
        }
        if !repeated {
            return None;
        }
    }
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(attributes.len());
    for (index, attribute) in attributes.iter().enumerate() {
        last.insert(attribute.key(), index);
    }
    if last.len() == attributes.len() {
        return None;
    }
    Some(
        attributes
            .iter()
            .map(|attribute| last.remove(attribute.key()))
            .collect(),
    )
}

pub(crate) fn write_any_value(out: &mut String, value: &AnyValue) {
    write_value(out, ValueRef::of(value));
}

/// Appends a value as the JSON text of [`any_value_to_json`]'s value.
pub(crate) fn write_value(out: &mut String, value: ValueRef<'_>) {
    match value {
        ValueRef::Unset | ValueRef::Strindex(_) => out.push_str("null"),
        ValueRef::Str(text) => write_json_string(out, text),
        ValueRef::Bool(flag) => out.push_str(if flag { "true" } else { "false" }),
        ValueRef::Int(number) => {
            let _ = write!(out, "{number}");
        }
        ValueRef::Double(number) => match Number::from_f64(number) {
            Some(number) => {
                let _ = write!(out, "{number}");
            }
            None => write_json_string(out, non_finite_name(number)),
        },
        ValueRef::Array(array) => {
            out.push('[');
            for (index, item) in array.values.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_any_value(out, item);
            }
            out.push(']');
        }
        ValueRef::Kvlist(list) => write_attributes(out, &list.values),
        ValueRef::Bytes(bytes) => write_json_string(out, &base64::encode(bytes)),
    }
}

/// Appends `text` as a JSON string, escaped as `serde_json` escapes it.
pub(crate) fn write_json_string(out: &mut String, text: &str) {
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    // Most texts need no escape: one pass without branches (it vectorizes) says so.
    let plain = !bytes.iter().fold(false, |escape, &byte| {
        escape | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
    });
    if plain {
        out.push_str(text);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[start..index]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{byte:04x}");
        } else {
            out.push_str(escape);
        }
        start = index + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// Pushes a string unless it is empty.
pub(crate) fn push_non_empty(row: &mut Row, column: &'static str, text: &str) {
    if !text.is_empty() {
        row.push(column, Value::String(text.to_owned()));
    }
}

/// Pushes a dropped-items count unless it is 0.
pub(crate) fn push_dropped_count(row: &mut Row, column: &'static str, count: u32) {
    if count > 0 {
        row.push(column, Value::Long(i64::from(count)));
    }
}

/// Pushes `bit_0_column` = true when flag bit 0 is set, and `flags` holding the bits left once
/// bit 0 is taken out, when any are left.
pub(crate) fn push_flags(row: &mut Row, bit_0_column: &'static str, flags: u32) {
    let (bit_0, remaining) = split_flags(flags);
    if bit_0 {
        row.push(bit_0_column, Value::Bool(true));
    }
    if let Some(remaining) = remaining {
        row.push("flags", Value::Long(i64::from(remaining)));
    }
}

/// Whether flag bit 0 is set, and the bits left once it is taken out (none when none are).
pub(crate) fn split_flags(flags: u32) -> (bool, Option<u32>) {
    let remaining = flags & !FLAG_BIT_0;
    (flags & FLAG_BIT_0 != 0, (remaining != 0).then_some(remaining))
}

/// Room for the hex text of the longest id (a trace id).
pub(crate) type HexBuffer = [u8; 2 * TRACE_ID_BYTES];

/// An id as lowercase hex, written into `buffer`: `Ok(None)` when empty, an error text when
/// not `expected_bytes` long.
pub(crate) fn hex_into<'a>(
    bytes: &[u8],
    expected_bytes: usize,
    field: &str,
    buffer: &'a mut HexBuffer,
) -> Result<Option<&'a str>, String> {
    match bytes.len() {
        0 => Ok(None),
        length if length == expected_bytes => {
            let out = buffer
                .get_mut(..2 * length)
                .ok_or_else(|| format!("expected {field} of at most {TRACE_ID_BYTES} bytes"))?;
            hex::encode_to_slice(bytes, out).map_err(|e| e.to_string())?;
            std::str::from_utf8(out).map(Some).map_err(|e| e.to_string())
        }
        length => Err(format!(
            "expected {field} of {expected_bytes} bytes, found {length} bytes"
        )),
    }
}

/// Like [`hex_into`], but an empty id is an error too.
pub(crate) fn required_hex_into<'a>(
    bytes: &[u8],
    expected_bytes: usize,
    field: &str,
    buffer: &'a mut HexBuffer,
) -> Result<&'a str, String> {
    hex_into(bytes, expected_bytes, field, buffer)?.ok_or_else(|| empty_id(field, expected_bytes))
}

fn empty_id(field: &str, expected_bytes: usize) -> String {
    format!("expected {field} of {expected_bytes} bytes, found an empty id")
}

/// [`hex_into`] as an owned text.
pub(crate) fn hex_id(bytes: &[u8], expected_bytes: usize, field: &str) -> Result<Option<String>, String> {
    let mut buffer = HexBuffer::default();
    hex_into(bytes, expected_bytes, field, &mut buffer).map(|id| id.map(str::to_owned))
}

/// Like [`hex_id`], but an empty id is an error too.
pub(crate) fn required_hex_id(bytes: &[u8], expected_bytes: usize, field: &str) -> Result<String, String> {
    hex_id(bytes, expected_bytes, field)?.ok_or_else(|| empty_id(field, expected_bytes))
}

/// Unsigned OTLP nanoseconds as the signed nanoseconds of `Value::DateTime`; values past
/// 2262-04-11 do not fit and are an error text.
pub(crate) fn timestamp_nanos(nanos: u64, field: &str) -> Result<i64, String> {
    i64::try_from(nanos).map_err(|_| format!("expected {field} before the year 2262, found {nanos}"))
}

/// A u64 count as `Value::Long`; counts past `i64::MAX` are an error text.
pub(crate) fn count_as_long(count: u64, field: &str) -> Result<Value, String> {
    i64::try_from(count)
        .map(Value::Long)
        .map_err(|_| format!("expected {field} at most {}, found {count}", i64::MAX))
}

/// The cells every row of one resource (and scope) carries, computed once and copied per row:
/// `resource`, `dropped_resource_attributes_count`, `scope_name`, `scope_version`, `scope`,
/// `dropped_scope_attributes_count`.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedCells {
    cells: Vec<(&'static str, Value)>,
}

impl SharedCells {
    /// The resource cells (the resource's `schema_url` and entity refs are not stored).
    pub(crate) fn for_resource(resource: Option<&Resource>) -> SharedCells {
        let mut row = Row::default();
        if let Some(resource) = resource {
            push_attributes(&mut row, "resource", &resource.attributes);
            push_dropped_count(
                &mut row,
                "dropped_resource_attributes_count",
                resource.dropped_attributes_count,
            );
        }
        SharedCells { cells: row.cells }
    }

    /// These cells plus the scope cells.
    pub(crate) fn with_scope(&self, scope: Option<&InstrumentationScope>) -> SharedCells {
        let mut row = Row {
            cells: self.cells.clone(),
        };
        if let Some(scope) = scope {
            push_non_empty(&mut row, "scope_name", &scope.name);
            push_non_empty(&mut row, "scope_version", &scope.version);
            push_attributes(&mut row, "scope", &scope.attributes);
            push_dropped_count(
                &mut row,
                "dropped_scope_attributes_count",
                scope.dropped_attributes_count,
            );
        }
        SharedCells { cells: row.cells }
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// Appends a copy of every cell to `row`.
    pub(crate) fn append_to(&self, row: &mut Row) {
        row.cells.extend(self.cells.iter().cloned());
    }
}

/// The time a row of an item will have (its time, else its observed time, else the ingest
/// time), as the key that orders a request's items before they are mapped: rows leave the
/// intake in time order, so a flush can pass requests on without sorting their rows again.
/// Times past the year 2262 (refused when mapped) sort last.
pub(crate) fn time_key(time_unix_nano: u64, observed_time_unix_nano: u64, ingest_time_nanos: i64) -> u64 {
    [time_unix_nano, observed_time_unix_nano]
        .into_iter()
        .find(|nanos| *nanos != 0)
        .unwrap_or(ingest_time_nanos.max(0) as u64)
}

/// Counts refused items (spans, log records, data points) and keeps the first reason, for the
/// partial-success part of the response.
#[derive(Debug)]
pub(crate) struct Rejections {
    singular: &'static str,
    plural: &'static str,
    count: i64,
    first_reason: Option<String>,
    /// Where the first reason's item is, for [`Rejections::reject_at`].
    first_at: Option<[usize; 3]>,
}

impl Rejections {
    pub(crate) fn new(singular: &'static str, plural: &'static str) -> Rejections {
        Rejections {
            singular,
            plural,
            count: 0,
            first_reason: None,
            first_at: None,
        }
    }

    /// Counts one refused item. `location` is only called for the first one.
    pub(crate) fn reject(&mut self, location: impl FnOnce() -> String, reason: String) {
        self.count += 1;
        if self.first_reason.is_none() {
            self.first_reason = Some(format!("{}: {reason}", location()));
        }
    }

    /// Counts one refused item at position `at` (resource, scope, item) of the request. The
    /// message names the first one in the request's order, whatever order items are mapped in.
    pub(crate) fn reject_at(&mut self, at: [usize; 3], location: impl FnOnce() -> String, reason: String) {
        self.count += 1;
        if self.first_at.is_none_or(|first| at < first) {
            self.first_at = Some(at);
            self.first_reason = Some(format!("{}: {reason}", location()));
        }
    }

    pub(crate) fn into_output(self, rows: Vec<Row>) -> IntakeOutput {
        IntakeOutput {
            rows,
            rejected: self.count,
            error_message: self.message(),
        }
    }

    pub(crate) fn into_columns(self, columns: trawl_common::columns::Columns) -> crate::ColumnsOutput {
        crate::ColumnsOutput {
            columns,
            rejected: self.count,
            error_message: self.message(),
        }
    }

    fn message(&self) -> String {
        match (self.count, &self.first_reason) {
            (0, _) | (_, None) => String::new(),
            (1, Some(reason)) => format!("rejected 1 {}: {reason}", self.singular),
            (count, Some(reason)) => format!("rejected {count} {}; first: {reason}", self.plural),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otlp::fixtures::{any_bytes, any_int, any_string, key_value, resource, scope};
    use serde_json::json;
    use trawl_proto::otlp::common::v1::{ArrayValue, KeyValueList};

    #[test]
    fn any_values_become_json() {
        let nested = AnyValue {
            value: Some(any_value::Value::KvlistValue(KeyValueList {
                values: vec![
                    key_value("inner", any_int(-7)),
                    KeyValue {
                        key: "missing".into(),
                        value: None,
                        key_strindex: 0,
                    },
                ],
            })),
        };
        let array = AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue {
                values: vec![
                    any_string("a"),
                    AnyValue {
                        value: Some(any_value::Value::BoolValue(true)),
                    },
                    AnyValue {
                        value: Some(any_value::Value::DoubleValue(1.5)),
                    },
                    AnyValue { value: None },
                ],
            })),
        };
        assert_eq!(any_value_to_json(&nested), json!({"inner": -7, "missing": null}));
        assert_eq!(any_value_to_json(&array), json!(["a", true, 1.5, null]));
        assert_eq!(any_value_to_json(&any_bytes(b"foobar")), json!("Zm9vYmFy"));
        assert_eq!(any_value_to_json(&AnyValue::default()), Json::Null);
    }

    #[test]
    fn json_text_is_written_as_serde_json_writes_it() {
        for text in [
            "plain",
            "quote \" and \\ backslash",
            "lines\n\r\t",
            "\u{0}\u{1f}\u{8}\u{c}\u{7f}",
            "é 🚀",
            "",
        ] {
            let mut out = String::new();
            write_json_string(&mut out, text);
            assert_eq!(out, Json::String(text.to_owned()).to_string());
        }
        let values = [
            any_string("a\"b"),
            any_int(i64::MIN),
            any_bytes(b"\x00\xff"),
            AnyValue {
                value: Some(any_value::Value::DoubleValue(f64::NAN)),
            },
            AnyValue {
                value: Some(any_value::Value::DoubleValue(0.1)),
            },
            AnyValue {
                value: Some(any_value::Value::DoubleValue(3.0)),
            },
            AnyValue {
                value: Some(any_value::Value::KvlistValue(KeyValueList {
                    values: vec![
                        key_value("k", any_int(1)),
                        key_value("nested.key", any_string("v")),
                        key_value("k", any_int(2)),
                    ],
                })),
            },
            AnyValue {
                value: Some(any_value::Value::ArrayValue(ArrayValue {
                    values: vec![any_string("x"), AnyValue::default()],
                })),
            },
            AnyValue::default(),
        ];
        for value in &values {
            assert_eq!(
                &*any_value_text(value),
                any_value_to_json(value).to_string(),
                "{value:?}"
            );
        }
        let attributes = [key_value("b", any_int(1)), key_value("a", any_string("x"))];
        assert_eq!(&*attributes_text(&attributes), r#"{"b":1,"a":"x"}"#);
    }

    #[test]
    fn non_finite_doubles_become_their_otlp_json_names() {
        assert_eq!(double_to_json(f64::NAN), json!("NaN"));
        assert_eq!(double_to_json(f64::INFINITY), json!("Infinity"));
        assert_eq!(double_to_json(f64::NEG_INFINITY), json!("-Infinity"));
        assert_eq!(double_to_json(-0.25), json!(-0.25));
    }

    #[test]
    fn attribute_keys_stay_flat_and_a_repeated_key_keeps_its_last_value() {
        let attributes = vec![
            key_value("http.method", any_string("GET")),
            key_value("http.status_code", any_int(200)),
            key_value("http.method", any_string("POST")),
        ];
        let bag = Json::Object(attributes_to_json(&attributes));
        assert_eq!(bag, json!({"http.method": "POST", "http.status_code": 200}));
        let object = attributes_to_json(&attributes);
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        assert_eq!(keys, ["http.method", "http.status_code"]);
    }

    /// The text written in one pass keeps what the map keeps: each key once, at its first
    /// position, with its last value; the noted ranges hold those values.
    #[test]
    fn written_attributes_settle_repeated_keys_as_the_map_does() {
        let nested = AnyValue {
            value: Some(any_value::Value::KvlistValue(KeyValueList {
                values: vec![key_value("k", any_int(1)), key_value("k", any_int(2))],
            })),
        };
        let short = vec![
            key_value("http.method", any_string("GET")),
            key_value("a", any_int(1)),
            key_value("http.method", any_string("POST")),
            key_value("b", nested),
            key_value("a", AnyValue::default()),
            key_value("http.method", any_string("PUT")),
        ];
        // Past 32 attributes the repeats are found through a hash map.
        let long: Vec<KeyValue> = (0..100)
            .map(|i| key_value(&format!("key{}", i % 37), any_int(i)))
            .collect();
        let distinct: Vec<KeyValue> = (0..40).map(|i| key_value(&format!("key{i}"), any_int(i))).collect();
        for attributes in [&short, &long, &distinct] {
            let mut out = String::new();
            let mut noted = Vec::new();
            write_attributes_noting(&mut out, attributes, &mut |key, range| {
                noted.push((key.to_owned(), range));
            });
            let map = attributes_to_json(attributes);
            assert_eq!(out, Json::Object(map.clone()).to_string());
            let keys: Vec<&str> = noted.iter().map(|(key, _)| key.as_str()).collect();
            assert_eq!(keys, map.keys().map(String::as_str).collect::<Vec<_>>());
            for (key, range) in &noted {
                assert_eq!(out[range.clone()], map[key].to_string(), "{key}");
            }
        }
        assert_eq!(
            &*attributes_text(&short),
            r#"{"http.method":"PUT","a":null,"b":{"k":2}}"#
        );
    }

    #[test]
    fn ids_must_have_their_exact_length() {
        assert_eq!(hex_id(&[], SPAN_ID_BYTES, "span_id"), Ok(None));
        assert_eq!(hex_id(&[0xab; 8], SPAN_ID_BYTES, "span_id"), Ok(Some("ab".repeat(8))));
        assert_eq!(
            hex_id(&[1, 2, 3], TRACE_ID_BYTES, "trace_id"),
            Err("expected trace_id of 16 bytes, found 3 bytes".to_owned())
        );
        assert_eq!(
            required_hex_id(&[], TRACE_ID_BYTES, "trace_id"),
            Err("expected trace_id of 16 bytes, found an empty id".to_owned())
        );
    }

    #[test]
    fn flags_split_into_bit_0_and_the_rest() {
        let mut row = Row::default();
        push_flags(&mut row, "sampled", 0x1);
        assert_eq!(row.cells, vec![("sampled", Value::Bool(true))]);
        let mut row = Row::default();
        push_flags(&mut row, "sampled", 0x302);
        assert_eq!(row.cells, vec![("flags", Value::Long(0x302))]);
        let mut row = Row::default();
        push_flags(&mut row, "sampled", 0);
        assert!(row.cells.is_empty());
    }

    #[test]
    fn shared_cells_hold_resource_then_scope_and_skip_empty_parts() {
        let mut with_everything = resource(vec![key_value("service.name", any_string("api"))]);
        with_everything.dropped_attributes_count = 2;
        let mut full_scope = scope("lib", "1.0");
        full_scope.attributes = vec![key_value("scope.attr", any_int(1))];
        full_scope.dropped_attributes_count = 3;
        let cells = SharedCells::for_resource(Some(&with_everything)).with_scope(Some(&full_scope));
        let mut row = Row::default();
        cells.append_to(&mut row);
        assert_eq!(
            row.cells,
            vec![
                ("resource", Value::Dynamic(json!({"service.name": "api"}))),
                ("dropped_resource_attributes_count", Value::Long(2)),
                ("scope_name", Value::String("lib".into())),
                ("scope_version", Value::String("1.0".into())),
                ("scope", Value::Dynamic(json!({"scope.attr": 1}))),
                ("dropped_scope_attributes_count", Value::Long(3)),
            ]
        );
        let empty =
            SharedCells::for_resource(Some(&resource(vec![]))).with_scope(Some(&InstrumentationScope::default()));
        assert_eq!(empty.len(), 0);
        assert_eq!(SharedCells::for_resource(None).with_scope(None).len(), 0);
    }

    #[test]
    fn rejections_report_the_count_and_the_first_reason() {
        let mut rejections = Rejections::new("span", "spans");
        assert_eq!(rejections_output(&mut rejections), (0, String::new()));
        rejections.reject(|| "spans[0]".to_owned(), "bad id".to_owned());
        assert_eq!(
            rejections_output(&mut rejections),
            (1, "rejected 1 span: spans[0]: bad id".into())
        );
        rejections.reject(|| unreachable!("only the first location is built"), "other".to_owned());
        assert_eq!(
            rejections_output(&mut rejections),
            (2, "rejected 2 spans; first: spans[0]: bad id".into())
        );
    }

    fn rejections_output(rejections: &mut Rejections) -> (i64, String) {
        let snapshot = Rejections {
            singular: rejections.singular,
            plural: rejections.plural,
            count: rejections.count,
            first_reason: rejections.first_reason.clone(),
            first_at: rejections.first_at,
        };
        let output = snapshot.into_output(Vec::new());
        (output.rejected, output.error_message)
    }
}
