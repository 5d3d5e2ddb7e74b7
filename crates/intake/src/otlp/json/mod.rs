//! An OTLP/JSON reader: a parsed `serde_json::Value` to the prost messages, consuming the tree so
//! strings move instead of being copied.
//!
//! Why not the `with-serde` derives of `opentelemetry-proto`: they read camelCase names only
//! (snake_case fields are silently ignored); their flattened oneofs (`asInt`/`asDouble`, the
//! metric data kind) swallow errors and yield "no value" for malformed input; enum names, and
//! `"NaN"` in most double fields, are refused; a key-value without `key` fails; and the flattened
//! `AnyValue` buffers every attribute value twice. This reader follows the OTLP/JSON rules
//! (<https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding>) and is lenient where that
//! costs nothing:
//!
//! - field names in lowerCamelCase or snake_case; unknown fields ignored; `null` means default;
//! - 64-bit integers as JSON numbers or decimal strings (32-bit ones too);
//! - enums as integers or as their proto names (`"SPAN_KIND_SERVER"`);
//! - doubles as numbers, decimal strings or `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - trace and span ids as hex (case-insensitive), `bytesValue` as base64 (standard or URL-safe).
//!
//! Any other shape is an [`IntakeError::UnexpectedJsonValue`] naming the JSON path.

pub(crate) mod logs;
pub(crate) mod metrics;
pub(crate) mod traces;

use serde_json::{Map, Value};
use trawl_proto::otlp::common::v1::{
    AnyValue, ArrayValue, EntityRef, InstrumentationScope, KeyValue, KeyValueList, any_value,
};
use trawl_proto::otlp::resource::v1::Resource;

use crate::IntakeError;
use crate::otlp::base64;

pub(crate) type JsonResult<T> = Result<T, IntakeError>;

/// Adds the field a failing read was for to the error's JSON path.
pub(crate) trait InField<T> {
    fn in_field(self, field: &str) -> JsonResult<T>;
}

impl<T> InField<T> for JsonResult<T> {
    fn in_field(self, field: &str) -> JsonResult<T> {
        self.map_err(|error| error.within_field(field))
    }
}

/// The error for a value of the wrong shape, with a short description of what was found.
pub(crate) fn unexpected(expected: &'static str, found: &Value) -> IntakeError {
    const MAX_SHOWN_CHARS: usize = 40;
    let found = match found {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => format!("the boolean {flag}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) if text.chars().count() > MAX_SHOWN_CHARS => {
            let shown: String = text.chars().take(MAX_SHOWN_CHARS).collect();
            format!("the string {shown:?}…")
        }
        Value::String(text) => format!("the string {text:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    };
    IntakeError::UnexpectedJsonValue {
        path: String::new(),
        expected,
        found,
    }
}

/// A JSON object's fields; `null` reads as an empty object.
pub(crate) fn object(value: Value) -> JsonResult<Map<String, Value>> {
    match value {
        Value::Object(fields) => Ok(fields),
        Value::Null => Ok(Map::new()),
        other => Err(unexpected("an object", &other)),
    }
}

/// A JSON array read element by element; `null` reads as an empty array.
pub(crate) fn array<T>(value: Value, mut read: impl FnMut(Value) -> JsonResult<T>) -> JsonResult<Vec<T>> {
    match value {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                out.push(read(item).map_err(|error| error.within_index(index))?);
            }
            Ok(out)
        }
        Value::Null => Ok(Vec::new()),
        other => Err(unexpected("an array", &other)),
    }
}

/// An optional message: `null` is `None`.
pub(crate) fn optional<T>(value: Value, read: impl FnOnce(Value) -> JsonResult<T>) -> JsonResult<Option<T>> {
    match value {
        Value::Null => Ok(None),
        present => read(present).map(Some),
    }
}

pub(crate) fn string(value: Value) -> JsonResult<String> {
    match value {
        Value::String(text) => Ok(text),
        Value::Null => Ok(String::new()),
        other => Err(unexpected("a string", &other)),
    }
}

pub(crate) fn boolean(value: Value) -> JsonResult<bool> {
    match value {
        Value::Bool(flag) => Ok(flag),
        Value::Null => Ok(false),
        other => Err(unexpected("a boolean", &other)),
    }
}

/// An integer given as a JSON number (integral floats included) or a decimal string.
fn integer<T: TryFrom<i128> + Default>(value: Value, expected: &'static str) -> JsonResult<T> {
    let wide: Option<i128> = match &value {
        Value::Null => return Ok(T::default()),
        Value::Number(number) => {
            if let Some(unsigned) = number.as_u64() {
                Some(i128::from(unsigned))
            } else if let Some(signed) = number.as_i64() {
                Some(i128::from(signed))
            } else {
                // An integral float such as 1.7e18 (JavaScript senders). The cast saturates,
                // so anything wider than 64 bits fails the conversion below.
                number
                    .as_f64()
                    .filter(|float| float.fract() == 0.0)
                    .map(|float| float as i128)
            }
        }
        Value::String(text) => text.parse::<i128>().ok(),
        _ => None,
    };
    wide.and_then(|wide| T::try_from(wide).ok())
        .ok_or_else(|| unexpected(expected, &value))
}

pub(crate) fn uint64(value: Value) -> JsonResult<u64> {
    integer(value, "an unsigned 64-bit integer (number or decimal string)")
}

pub(crate) fn int64(value: Value) -> JsonResult<i64> {
    integer(value, "a signed 64-bit integer (number or decimal string)")
}

pub(crate) fn uint32(value: Value) -> JsonResult<u32> {
    integer(value, "an unsigned 32-bit integer")
}

pub(crate) fn int32(value: Value) -> JsonResult<i32> {
    integer(value, "a signed 32-bit integer")
}

/// A double: a number, a decimal string, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub(crate) fn double(value: Value) -> JsonResult<f64> {
    let parsed = match &value {
        Value::Null => return Ok(0.0),
        Value::Number(number) => number.as_f64(),
        Value::String(text) => match text.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            other => other.parse::<f64>().ok(),
        },
        _ => None,
    };
    parsed.ok_or_else(|| unexpected("a number or \"NaN\", \"Infinity\", \"-Infinity\"", &value))
}

/// An enum: its integer value, or its proto name as `from_name` knows it. Unknown integers are
/// kept (proto3 open enums); unknown names are an error.
pub(crate) fn enumeration(value: Value, from_name: fn(&str) -> Option<i32>) -> JsonResult<i32> {
    match &value {
        Value::String(name) => match from_name(name) {
            Some(number) => Ok(number),
            None => name
                .parse::<i32>()
                .map_err(|_| unexpected("an enum as an integer or a known name", &value)),
        },
        _ => integer(value, "an enum as an integer or a known name"),
    }
}

/// Bytes given as hex (trace and span ids in OTLP/JSON); `""` is empty.
pub(crate) fn hex_bytes(value: Value) -> JsonResult<Vec<u8>> {
    match &value {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => {
            hex::decode(text).map_err(|_| unexpected("a hex string with an even number of digits", &value))
        }
        _ => Err(unexpected("a hex string", &value)),
    }
}

/// Bytes given as base64 (`bytesValue`).
pub(crate) fn base64_bytes(value: Value) -> JsonResult<Vec<u8>> {
    match &value {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => base64::decode(text).ok_or_else(|| unexpected("a base64 string", &value)),
        _ => Err(unexpected("a base64 string", &value)),
    }
}

pub(crate) fn resource(value: Value) -> JsonResult<Resource> {
    let mut resource = Resource::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "attributes" => resource.attributes = key_values(value).in_field(&field)?,
            "droppedAttributesCount" | "dropped_attributes_count" => {
                resource.dropped_attributes_count = uint32(value).in_field(&field)?
            }
            "entityRefs" | "entity_refs" => resource.entity_refs = array(value, entity_ref).in_field(&field)?,
            _ => {}
        }
    }
    Ok(resource)
}

fn entity_ref(value: Value) -> JsonResult<EntityRef> {
    let mut entity = EntityRef::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "schemaUrl" | "schema_url" => entity.schema_url = string(value).in_field(&field)?,
            "type" => entity.r#type = string(value).in_field(&field)?,
            "idKeys" | "id_keys" => entity.id_keys = array(value, string).in_field(&field)?,
            "descriptionKeys" | "description_keys" => {
                entity.description_keys = array(value, string).in_field(&field)?
            }
            _ => {}
        }
    }
    Ok(entity)
}

pub(crate) fn scope(value: Value) -> JsonResult<InstrumentationScope> {
    let mut scope = InstrumentationScope::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "name" => scope.name = string(value).in_field(&field)?,
            "version" => scope.version = string(value).in_field(&field)?,
            "attributes" => scope.attributes = key_values(value).in_field(&field)?,
            "droppedAttributesCount" | "dropped_attributes_count" => {
                scope.dropped_attributes_count = uint32(value).in_field(&field)?
            }
            _ => {}
        }
    }
    Ok(scope)
}

pub(crate) fn key_values(value: Value) -> JsonResult<Vec<KeyValue>> {
    array(value, key_value)
}

fn key_value(value: Value) -> JsonResult<KeyValue> {
    let mut key_value = KeyValue::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "key" => key_value.key = string(value).in_field(&field)?,
            "value" => key_value.value = optional(value, any_value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(key_value)
}

/// An `AnyValue`: an object with one of `stringValue`, `boolValue`, `intValue`, `doubleValue`,
/// `arrayValue`, `kvlistValue`, `bytesValue`; none of them is an empty value.
pub(crate) fn any_value(value: Value) -> JsonResult<AnyValue> {
    let mut any = AnyValue::default();
    for (field, value) in object(value)? {
        if value.is_null() {
            continue;
        }
        let read = match field.as_str() {
            "stringValue" | "string_value" => string(value).map(any_value::Value::StringValue),
            "boolValue" | "bool_value" => boolean(value).map(any_value::Value::BoolValue),
            "intValue" | "int_value" => int64(value).map(any_value::Value::IntValue),
            "doubleValue" | "double_value" => double(value).map(any_value::Value::DoubleValue),
            "bytesValue" | "bytes_value" => base64_bytes(value).map(any_value::Value::BytesValue),
            "arrayValue" | "array_value" => array_value(value).map(any_value::Value::ArrayValue),
            "kvlistValue" | "kvlist_value" => key_value_list(value).map(any_value::Value::KvlistValue),
            _ => continue,
        };
        any.value = Some(read.in_field(&field)?);
    }
    Ok(any)
}

fn array_value(value: Value) -> JsonResult<ArrayValue> {
    let mut array_value = ArrayValue::default();
    for (field, value) in object(value)? {
        if field == "values" {
            array_value.values = array(value, any_value).in_field(&field)?;
        }
    }
    Ok(array_value)
}

fn key_value_list(value: Value) -> JsonResult<KeyValueList> {
    let mut list = KeyValueList::default();
    for (field, value) in object(value)? {
        if field == "values" {
            list.values = key_values(value).in_field(&field)?;
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error_text<T: std::fmt::Debug>(result: JsonResult<T>) -> String {
        match result {
            Ok(value) => panic!("expected an error, got {value:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn integers_come_as_numbers_or_strings() {
        assert_eq!(
            uint64(json!("1700000000000000000")).ok(),
            Some(1_700_000_000_000_000_000)
        );
        assert_eq!(
            uint64(json!(1_700_000_000_000_000_000u64)).ok(),
            Some(1_700_000_000_000_000_000)
        );
        assert_eq!(uint64(json!(u64::MAX.to_string())).ok(), Some(u64::MAX));
        assert_eq!(uint64(json!(1.5e9)).ok(), Some(1_500_000_000));
        assert_eq!(uint64(Value::Null).ok(), Some(0));
        assert_eq!(int64(json!("-42")).ok(), Some(-42));
        assert_eq!(int64(json!(-42)).ok(), Some(-42));
        assert_eq!(uint32(json!("7")).ok(), Some(7));
        assert_eq!(
            error_text(uint64(json!(-1))),
            "expected an unsigned 64-bit integer (number or decimal string) at `$`, found the number -1"
        );
        assert!(uint64(json!("12abc")).is_err());
        assert!(uint64(json!(1.5)).is_err());
        assert!(int64(json!("9223372036854775808")).is_err());
        assert!(uint32(json!(4_294_967_296u64)).is_err());
        assert!(int64(json!(true)).is_err());
    }

    #[test]
    fn doubles_accept_special_names() {
        assert_eq!(double(json!(2.5)).ok(), Some(2.5));
        assert_eq!(double(json!(3)).ok(), Some(3.0));
        assert_eq!(double(json!("2.5")).ok(), Some(2.5));
        assert!(double(json!("NaN")).is_ok_and(f64::is_nan));
        assert_eq!(double(json!("Infinity")).ok(), Some(f64::INFINITY));
        assert_eq!(double(json!("-Infinity")).ok(), Some(f64::NEG_INFINITY));
        assert!(double(json!("lots")).is_err());
    }

    #[test]
    fn enums_come_as_integers_or_names() {
        use trawl_proto::otlp::trace::v1::span::SpanKind;
        let from_name = |name: &str| SpanKind::from_str_name(name).map(|kind| kind as i32);
        assert_eq!(enumeration(json!(2), from_name).ok(), Some(2));
        assert_eq!(enumeration(json!("2"), from_name).ok(), Some(2));
        assert_eq!(enumeration(json!("SPAN_KIND_CLIENT"), from_name).ok(), Some(3));
        assert_eq!(enumeration(json!(42), from_name).ok(), Some(42));
        assert!(enumeration(json!("SPAN_KIND_NONSENSE"), from_name).is_err());
    }

    #[test]
    fn ids_are_hex_and_bytes_are_base64() {
        assert_eq!(hex_bytes(json!("0aFF")).ok(), Some(vec![0x0a, 0xff]));
        assert_eq!(hex_bytes(json!("")).ok(), Some(vec![]));
        assert!(hex_bytes(json!("abc")).is_err());
        assert!(hex_bytes(json!("zz")).is_err());
        assert_eq!(base64_bytes(json!("Zm9v")).ok(), Some(b"foo".to_vec()));
        assert!(base64_bytes(json!("*")).is_err());
    }

    #[test]
    fn any_values_read_every_kind_in_both_spellings() {
        let read = |value: Value| any_value(value).ok().and_then(|any| any.value);
        assert_eq!(
            read(json!({"stringValue": "x"})),
            Some(any_value::Value::StringValue("x".into()))
        );
        assert_eq!(
            read(json!({"string_value": "x"})),
            Some(any_value::Value::StringValue("x".into()))
        );
        assert_eq!(
            read(json!({"boolValue": true})),
            Some(any_value::Value::BoolValue(true))
        );
        assert_eq!(read(json!({"intValue": "12"})), Some(any_value::Value::IntValue(12)));
        assert_eq!(read(json!({"intValue": 12})), Some(any_value::Value::IntValue(12)));
        assert_eq!(
            read(json!({"doubleValue": 0.5})),
            Some(any_value::Value::DoubleValue(0.5))
        );
        assert_eq!(
            read(json!({"bytesValue": "Zm9v"})),
            Some(any_value::Value::BytesValue(b"foo".to_vec()))
        );
        assert_eq!(
            read(json!({"arrayValue": {"values": [{"intValue": "1"}, {}]}})),
            Some(any_value::Value::ArrayValue(ArrayValue {
                values: vec![
                    AnyValue {
                        value: Some(any_value::Value::IntValue(1))
                    },
                    AnyValue::default()
                ],
            }))
        );
        let Some(any_value::Value::KvlistValue(list)) =
            read(json!({"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}))
        else {
            panic!("expected a kvlist");
        };
        assert_eq!(list.values[0].key, "k");
        assert_eq!(read(json!({})), None);
        assert_eq!(read(json!({"futureValue": 1})), None);
    }

    #[test]
    fn errors_name_the_json_path() {
        let document = json!({"attributes": [
            {"key": "ok", "value": {"intValue": "1"}},
            {"key": "bad", "value": {"arrayValue": {"values": [{"intValue": "one"}]}}}
        ]});
        assert_eq!(
            error_text(resource(document)),
            "expected a signed 64-bit integer (number or decimal string) at \
             `$.attributes[1].value.arrayValue.values[0].intValue`, found the string \"one\""
        );
        assert_eq!(
            error_text(resource(json!({"attributes": {"key": "x"}}))),
            "expected an array at `$.attributes`, found an object"
        );
        assert_eq!(
            error_text(object(json!([1]))),
            "expected an object at `$`, found an array"
        );
    }

    #[test]
    fn long_strings_are_cut_in_error_messages() {
        let long = "x".repeat(100);
        let text = error_text(boolean(json!(long)));
        assert!(
            text.ends_with(&format!("found the string \"{}\"…", "x".repeat(40))),
            "{text}"
        );
    }
}
