//! Builders for OTLP messages used by the tests of every signal.

use trawl_common::{Row, Value};
use trawl_proto::otlp::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use trawl_proto::otlp::resource::v1::Resource;

/// Ingest time used by mapping tests: 2024-01-02T03:04:05Z.
pub(crate) const INGEST_NANOS: i64 = 1_704_164_645_000_000_000;

pub(crate) fn any_string(text: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(text.to_owned())),
    }
}

pub(crate) fn any_int(number: i64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::IntValue(number)),
    }
}

pub(crate) fn any_double(number: f64) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::DoubleValue(number)),
    }
}

pub(crate) fn any_bytes(bytes: &[u8]) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::BytesValue(bytes.to_vec())),
    }
}

pub(crate) fn key_value(key: &str, value: AnyValue) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(value),
        key_strindex: 0,
    }
}

pub(crate) fn resource(attributes: Vec<KeyValue>) -> Resource {
    Resource {
        attributes,
        ..Default::default()
    }
}

pub(crate) fn scope(name: &str, version: &str) -> InstrumentationScope {
    InstrumentationScope {
        name: name.to_owned(),
        version: version.to_owned(),
        ..Default::default()
    }
}

/// The column names of a row, in order.
pub(crate) fn columns(row: &Row) -> Vec<&'static str> {
    row.cells.iter().map(|(name, _)| *name).collect()
}

/// A cell of a row, panicking with the row's columns when it is missing.
pub(crate) fn cell<'row>(row: &'row Row, column: &str) -> &'row Value {
    match row.get(column) {
        Some(value) => value,
        None => panic!("row has no `{column}`; columns: {:?}", columns(row)),
    }
}
