//! Arrow cells → JSON values as KQL prints them: datetimes as ISO 8601 with 7 fraction
//! digits, timespans as `[-][d.]hh:mm:ss[.fffffff]`, dynamic values as the JSON value itself,
//! strings never null (an absent string is the empty string), non-finite reals as strings.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use serde_json::Value as Json;
use trawl_common::KqlType;
use trawl_common::time::{format_datetime, format_timespan};

/// The JSON value of row `row` of `array`, a column of KQL type `kql_type`.
pub fn cell(array: &ArrayRef, row: usize, kql_type: KqlType) -> Json {
    if array.is_null(row) {
        return match kql_type {
            KqlType::String => Json::String(String::new()),
            _ => Json::Null,
        };
    }
    match kql_type {
        KqlType::Dynamic => dynamic_cell(array, row),
        KqlType::String | KqlType::Guid => match string_value(array, row) {
            Some(s) => Json::String(s.to_string()),
            None => Json::String(display(array, row)),
        },
        _ => typed_cell(array, row),
    }
}

fn string_value(array: &ArrayRef, row: usize) -> Option<&str> {
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row)),
        DataType::Utf8View => Some(array.as_string_view().value(row)),
        _ => None,
    }
}

fn dynamic_cell(array: &ArrayRef, row: usize) -> Json {
    match string_value(array, row) {
        // Dynamic values travel as JSON text; text that is not JSON is a string value.
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Json::String(text.to_string())),
        None => typed_cell(array, row),
    }
}

fn real(value: f64) -> Json {
    if value.is_finite() {
        serde_json::Number::from_f64(value).map_or(Json::Null, Json::Number)
    } else if value.is_nan() {
        Json::String("NaN".into())
    } else if value > 0.0 {
        Json::String("Infinity".into())
    } else {
        Json::String("-Infinity".into())
    }
}

fn typed_cell(array: &ArrayRef, row: usize) -> Json {
    match array.data_type() {
        DataType::Boolean => Json::Bool(array.as_boolean().value(row)),
        DataType::Int8 => Json::from(array.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => Json::from(array.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => Json::from(array.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Json::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Json::from(array.as_primitive::<UInt8Type>().value(row)),
        DataType::UInt16 => Json::from(array.as_primitive::<UInt16Type>().value(row)),
        DataType::UInt32 => Json::from(array.as_primitive::<UInt32Type>().value(row)),
        DataType::UInt64 => Json::from(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float16 => real(f64::from(array.as_primitive::<Float16Type>().value(row))),
        DataType::Float32 => real(f64::from(array.as_primitive::<Float32Type>().value(row))),
        DataType::Float64 => real(array.as_primitive::<Float64Type>().value(row)),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            Json::String(string_value(array, row).unwrap_or_default().to_string())
        }
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 => {
            Json::String(format_datetime(timestamp_nanos(array, row).unwrap_or_default()))
        }
        DataType::Duration(_) => Json::String(format_timespan(duration_nanos(array, row).unwrap_or_default())),
        _ => Json::String(display(array, row)),
    }
}

/// Nanoseconds since the Unix epoch of a timestamp or date cell.
fn timestamp_nanos(array: &ArrayRef, row: usize) -> Option<i64> {
    Some(match array.data_type() {
        DataType::Timestamp(TimeUnit::Nanosecond, _) => array.as_primitive::<TimestampNanosecondType>().value(row),
        DataType::Timestamp(TimeUnit::Microsecond, _) => array
            .as_primitive::<TimestampMicrosecondType>()
            .value(row)
            .saturating_mul(1_000),
        DataType::Timestamp(TimeUnit::Millisecond, _) => array
            .as_primitive::<TimestampMillisecondType>()
            .value(row)
            .saturating_mul(1_000_000),
        DataType::Timestamp(TimeUnit::Second, _) => array
            .as_primitive::<TimestampSecondType>()
            .value(row)
            .saturating_mul(1_000_000_000),
        DataType::Date32 => i64::from(array.as_primitive::<Date32Type>().value(row)).saturating_mul(86_400_000_000_000),
        DataType::Date64 => array.as_primitive::<Date64Type>().value(row).saturating_mul(1_000_000),
        _ => return None,
    })
}

/// Nanoseconds of a duration cell.
fn duration_nanos(array: &ArrayRef, row: usize) -> Option<i64> {
    let DataType::Duration(unit) = array.data_type() else {
        return None;
    };
    Some(match unit {
        TimeUnit::Nanosecond => array.as_primitive::<DurationNanosecondType>().value(row),
        TimeUnit::Microsecond => array
            .as_primitive::<DurationMicrosecondType>()
            .value(row)
            .saturating_mul(1_000),
        TimeUnit::Millisecond => array
            .as_primitive::<DurationMillisecondType>()
            .value(row)
            .saturating_mul(1_000_000),
        TimeUnit::Second => array
            .as_primitive::<DurationSecondType>()
            .value(row)
            .saturating_mul(1_000_000_000),
    })
}

/// A cell as a typed value, for protocols that carry types (gRPC).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Real(f64),
    String(String),
    /// Nanoseconds since the Unix epoch.
    DateTime(i64),
    /// Nanoseconds.
    Timespan(i64),
    Guid(String),
    /// Exact decimal text.
    Decimal(String),
    Dynamic(Json),
}

/// The typed value of row `row` of `array`, a column of KQL type `kql_type`. Strings are
/// never null, as in [`cell`].
pub fn cell_value(array: &ArrayRef, row: usize, kql_type: KqlType) -> Cell {
    if array.is_null(row) {
        return match kql_type {
            KqlType::String => Cell::String(String::new()),
            _ => Cell::Null,
        };
    }
    let integer = || match cell(array, row, kql_type) {
        Json::Number(n) => n.as_i64(),
        _ => None,
    };
    let typed = match kql_type {
        KqlType::Bool => match array.data_type() {
            DataType::Boolean => Some(Cell::Bool(array.as_boolean().value(row))),
            _ => None,
        },
        KqlType::Int => integer().and_then(|n| i32::try_from(n).ok()).map(Cell::Int),
        KqlType::Long => integer().map(Cell::Long),
        KqlType::Real => match cell(array, row, kql_type) {
            Json::Number(n) => n.as_f64().map(Cell::Real),
            Json::String(s) => s.parse::<f64>().ok().map(Cell::Real),
            _ => None,
        },
        KqlType::DateTime => timestamp_nanos(array, row).map(Cell::DateTime),
        KqlType::Timespan => duration_nanos(array, row).map(Cell::Timespan),
        KqlType::String | KqlType::Guid | KqlType::Decimal => match cell(array, row, kql_type) {
            Json::String(s) if kql_type == KqlType::String => Some(Cell::String(s)),
            Json::String(s) if kql_type == KqlType::Guid => Some(Cell::Guid(s)),
            other => Some(Cell::Decimal(match other {
                Json::String(s) => s,
                other => other.to_string(),
            })),
        },
        KqlType::Dynamic => Some(Cell::Dynamic(dynamic_cell(array, row))),
    };
    typed.unwrap_or_else(|| Cell::Dynamic(cell(array, row, kql_type)))
}

fn display(array: &ArrayRef, row: usize) -> String {
    match ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default()) {
        Ok(formatter) => formatter.value(row).to_string(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        DurationNanosecondArray, Float64Array, StringArray, StringViewArray, TimestampNanosecondArray,
    };
    use std::sync::Arc;

    #[test]
    fn cells_print_as_kql() {
        let ts: ArrayRef =
            Arc::new(TimestampNanosecondArray::from(vec![Some(1_000_000_000), None]).with_timezone("UTC"));
        assert_eq!(
            cell(&ts, 0, KqlType::DateTime),
            Json::String("1970-01-01T00:00:01.0000000Z".into())
        );
        assert_eq!(cell(&ts, 1, KqlType::DateTime), Json::Null);
        let span: ArrayRef = Arc::new(DurationNanosecondArray::from(vec![1_500_000_000]));
        assert_eq!(
            cell(&span, 0, KqlType::Timespan),
            Json::String("00:00:01.5000000".into())
        );
        let strings: ArrayRef = Arc::new(StringViewArray::from(vec![Some("a"), None]));
        assert_eq!(cell(&strings, 1, KqlType::String), Json::String(String::new()));
        let dynamic: ArrayRef = Arc::new(StringArray::from(vec![r#"{"a":[1,2]}"#, "not json"]));
        assert_eq!(cell(&dynamic, 0, KqlType::Dynamic), serde_json::json!({"a": [1, 2]}));
        assert_eq!(cell(&dynamic, 1, KqlType::Dynamic), Json::String("not json".into()));
        let reals: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN, 2.5]));
        assert_eq!(cell(&reals, 0, KqlType::Real), Json::String("NaN".into()));
        assert_eq!(cell(&reals, 1, KqlType::Real), serde_json::json!(2.5));
    }
}
