//! Test helpers: calling a registered function through `invoke_with_args`.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

use crate::registry::lookup;

pub fn s(text: &str) -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::Utf8View(Some(text.to_string())))
}

/// A dynamic value (JSON text).
pub fn d(json: &str) -> ColumnarValue {
    s(json)
}

pub fn l(v: i64) -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::Int64(Some(v)))
}

pub fn r(v: f64) -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::Float64(Some(v)))
}

pub fn b(v: bool) -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::Boolean(Some(v)))
}

/// A datetime from nanoseconds since the epoch.
pub fn dt_ns(v: i64) -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::TimestampNanosecond(Some(v), Some("UTC".into())))
}

/// A datetime from an RFC 3339 text.
pub fn dt(text: &str) -> ColumnarValue {
    let parsed = chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .and_then(|t| t.timestamp_nanos_opt());
    match parsed {
        Some(ns) => dt_ns(ns),
        None => panic!("bad test datetime {text}"),
    }
}

pub fn ts(v: i64) -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::DurationNanosecond(Some(v)))
}

pub fn null_dyn() -> ColumnarValue {
    ColumnarValue::Scalar(ScalarValue::Utf8View(None))
}

/// Calls the registered function `name`.
pub fn call(name: &str, args: &[ColumnarValue]) -> datafusion::error::Result<ColumnarValue> {
    let Some(function) = lookup(name) else {
        panic!("no function {name}");
    };
    let udf = (function.udf)();
    let types: Vec<DataType> = args.iter().map(|a| a.data_type()).collect();
    let return_type = udf.return_type(&types)?;
    let arg_fields = types
        .iter()
        .enumerate()
        .map(|(i, t)| Arc::new(Field::new(format!("a{i}"), t.clone(), true)))
        .collect();
    let rows = args
        .iter()
        .find_map(|a| match a {
            ColumnarValue::Array(a) => Some(a.len()),
            ColumnarValue::Scalar(_) => None,
        })
        .unwrap_or(1);
    udf.invoke_with_args(ScalarFunctionArgs {
        args: args.to_vec(),
        arg_fields,
        number_rows: rows,
        return_field: Arc::new(Field::new("r", return_type, true)),
        config_options: Arc::new(ConfigOptions::default()),
    })
}

/// A scalar result as text: `null`, a string as is, numbers and bools printed, datetimes
/// as RFC 3339, timespans as nanoseconds.
pub fn show(value: &ScalarValue) -> String {
    if value.is_null() {
        return "null".to_string();
    }
    match value {
        ScalarValue::Utf8View(Some(s)) | ScalarValue::Utf8(Some(s)) => s.clone(),
        ScalarValue::Float64(Some(v)) => crate::json::real_text(*v),
        ScalarValue::TimestampNanosecond(Some(v), _) => {
            chrono::DateTime::from_timestamp_nanos(*v).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        }
        ScalarValue::DurationNanosecond(Some(v)) => v.to_string(),
        other => other.to_string(),
    }
}

/// Calls `name` with scalar arguments, checks the array path gives the same value, and shows
/// the result.
pub fn run(name: &str, args: &[ColumnarValue]) -> String {
    let scalar = match call(name, args) {
        Ok(ColumnarValue::Scalar(v)) => v,
        Ok(ColumnarValue::Array(_)) => panic!("{name}: scalar call gave an array"),
        Err(e) => panic!("{name}: {e}"),
    };
    if !args.is_empty() {
        let mut arrays: Vec<ColumnarValue> = args.to_vec();
        if let ColumnarValue::Scalar(v) = &args[0]
            && let Ok(array) = v.to_array_of_size(2)
        {
            arrays[0] = ColumnarValue::Array(array);
        }
        match call(name, &arrays) {
            Ok(ColumnarValue::Array(array)) => {
                for row in 0..2 {
                    let v = ScalarValue::try_from_array(&array, row).expect("row");
                    assert_eq!(show(&v), show(&scalar), "{name}: array row {row} differs");
                }
            }
            Ok(ColumnarValue::Scalar(_)) => panic!("{name}: array call gave a scalar"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    show(&scalar)
}

/// Whether calling `name` fails.
pub fn fails(name: &str, args: &[ColumnarValue]) -> bool {
    call(name, args).is_err()
}

/// [`run`] for a function returning a real: `None` for null.
pub fn run_real(name: &str, args: &[ColumnarValue]) -> Option<f64> {
    let shown = run(name, args);
    (shown != "null").then(|| shown.parse().unwrap_or_else(|_| panic!("{name}: not a real: {shown}")))
}

/// A series result (a JSON array of numbers or nulls) as reals, nulls as NaN.
pub fn reals(text: &str) -> Vec<f64> {
    serde_json::from_str::<Vec<Option<f64>>>(text)
        .map(|v| v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
        .unwrap_or_default()
}
