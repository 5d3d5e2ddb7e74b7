//! Dynamic values: stored and passed around as JSON text.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::arrow::array::StringViewBuilder;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

use crate::util::{all_scalar, map_strings};

/// If `text` is a JSON string literal, its content (unescaped); else `None`.
pub fn unquote_json_string(text: &str) -> Option<Cow<'_, str>> {
    let bytes = text.as_bytes();
    if bytes.len() < 2 || bytes[0] != b'"' || bytes[bytes.len() - 1] != b'"' {
        return None;
    }
    let inner = &text[1..text.len() - 1];
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// KQL `tostring()` of a dynamic value: a JSON string gives its content, any other value
/// its JSON text, null gives the empty string.
pub fn dynamic_to_string(text: Option<&str>) -> Cow<'_, str> {
    match text {
        None => Cow::Borrowed(""),
        Some("null") => Cow::Borrowed(""),
        Some(text) => unquote_json_string(text).unwrap_or(Cow::Borrowed(text)),
    }
}

/// `kql_dynamic_to_string(dynamic)`: see [`dynamic_to_string`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DynamicToStringUdf {
    signature: Signature,
}

impl DynamicToStringUdf {
    pub const NAME: &'static str = "kql_dynamic_to_string";

    pub fn new() -> DynamicToStringUdf {
        let variants = [DataType::Utf8View, DataType::Utf8, DataType::LargeUtf8]
            .into_iter()
            .map(|t| TypeSignature::Exact(vec![t]))
            .collect();
        DynamicToStringUdf {
            signature: Signature::one_of(variants, Volatility::Immutable),
        }
    }
}

impl Default for DynamicToStringUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for DynamicToStringUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8View)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_strings(&args.args, args.number_rows, |v| {
            Some(dynamic_to_string(v).into_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tostring_of_dynamic_values() {
        assert_eq!(dynamic_to_string(Some("\"abc\"")), "abc");
        assert_eq!(dynamic_to_string(Some("\"a\\nb\"")), "a\nb");
        assert_eq!(dynamic_to_string(Some("5")), "5");
        assert_eq!(dynamic_to_string(Some("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(dynamic_to_string(Some("null")), "");
        assert_eq!(dynamic_to_string(None), "");
    }
}

/// `kql_to_json_string(string)`: a string as a dynamic string value (its JSON text).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToJsonStringUdf {
    signature: Signature,
}

impl ToJsonStringUdf {
    pub const NAME: &'static str = "kql_to_json_string";

    pub fn new() -> ToJsonStringUdf {
        let variants = [DataType::Utf8View, DataType::Utf8, DataType::LargeUtf8]
            .into_iter()
            .map(|t| TypeSignature::Exact(vec![t]))
            .collect();
        ToJsonStringUdf {
            signature: Signature::one_of(variants, Volatility::Immutable),
        }
    }
}

impl Default for ToJsonStringUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for ToJsonStringUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8View)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_strings(&args.args, args.number_rows, |v| {
            v.map(|s| serde_json::Value::String(s.to_string()).to_string())
        })
    }
}

/// `kql_format(value)`: KQL's `tostring()` of a datetime (ISO 8601 with 7 fraction digits),
/// a timespan (`[-][d.]hh:mm:ss[.fffffff]`) or a real (whole values without a fraction).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FormatValueUdf {
    signature: Signature,
}

impl FormatValueUdf {
    pub const NAME: &'static str = "kql_format";

    pub fn new() -> FormatValueUdf {
        FormatValueUdf {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl Default for FormatValueUdf {
    fn default() -> Self {
        Self::new()
    }
}

/// KQL's text of a real.
pub fn format_real(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

impl ScalarUDFImpl for FormatValueUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8View)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::{DurationNanosecondType, Float64Type, TimeUnit, TimestampNanosecondType};
        let scalar = all_scalar(&args.args);
        let input = args.args[0].to_array(args.number_rows)?;
        let mut builder = StringViewBuilder::with_capacity(input.len());
        match input.data_type() {
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                let values = input.as_primitive::<TimestampNanosecondType>();
                for i in 0..values.len() {
                    if values.is_null(i) {
                        builder.append_value("");
                    } else {
                        builder.append_value(trawl_common::time::format_datetime(values.value(i)));
                    }
                }
            }
            DataType::Duration(TimeUnit::Nanosecond) => {
                let values = input.as_primitive::<DurationNanosecondType>();
                for i in 0..values.len() {
                    if values.is_null(i) {
                        builder.append_value("");
                    } else {
                        builder.append_value(trawl_common::time::format_timespan(values.value(i)));
                    }
                }
            }
            DataType::Float64 => {
                let values = input.as_primitive::<Float64Type>();
                for i in 0..values.len() {
                    if values.is_null(i) {
                        builder.append_value("");
                    } else {
                        builder.append_value(format_real(values.value(i)));
                    }
                }
            }
            _ => {
                let text = datafusion::arrow::compute::cast(&input, &DataType::Utf8View)?;
                let text = text.as_string_view();
                for i in 0..text.len() {
                    builder.append_value(if text.is_null(i) { "" } else { text.value(i) });
                }
            }
        }
        let array: datafusion::arrow::array::ArrayRef = Arc::new(builder.finish());
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?));
        }
        Ok(ColumnarValue::Array(array))
    }
}
