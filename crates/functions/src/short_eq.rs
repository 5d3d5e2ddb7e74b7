//! `trawl_short_eq(s, literal)`: `s == literal` for a string column read as views and a
//! literal of at most 12 bytes, compared view by view.
//!
//! A string view holds its length in its low 4 bytes and, up to 12 bytes long, the string
//! itself in the other 12; so a value equals a short literal exactly when its view's length
//! and first bytes are the literal's, one masked 128-bit compare per row. Arrow's equality
//! kernel builds each value's string instead (a quarter of the CPU of "top services by
//! errors", `severity_text == "ERROR"` over 10M rows). The storage layer puts it in place of
//! `==` and `!=` in filters (`trawl_storage::short_eq`); other inputs give the kernel's
//! answer.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringViewArray};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

/// The longest literal a view holds inline.
pub const SHORT_BYTES: usize = 12;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ShortEqUdf {
    signature: Signature,
}

impl Default for ShortEqUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ShortEqUdf {
    pub const NAME: &'static str = "trawl_short_eq";

    pub fn new() -> Self {
        ShortEqUdf {
            signature: Signature::exact(vec![DataType::Utf8View, DataType::Utf8View], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ShortEqUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value, literal] = args.args.as_slice() else {
            return exec_err!("{} takes a string and a literal", Self::NAME);
        };
        let ColumnarValue::Scalar(literal) = literal else {
            return exec_err!("{} compares with a literal", Self::NAME);
        };
        let Some(text) = literal.try_as_str() else {
            return exec_err!("{} compares with a string, not {literal:?}", Self::NAME);
        };
        match (value, text) {
            (ColumnarValue::Array(array), Some(text)) => Ok(ColumnarValue::Array(equal(array, text)?)),
            (ColumnarValue::Array(array), None) => {
                Ok(ColumnarValue::Array(Arc::new(BooleanArray::new_null(array.len()))))
            }
            (ColumnarValue::Scalar(value), text) => {
                let Some(value) = value.try_as_str() else {
                    return exec_err!("{} compares a string, not {value:?}", Self::NAME);
                };
                let answer = value.zip(text).map(|(value, text)| value == text);
                Ok(ColumnarValue::Scalar(ScalarValue::Boolean(answer)))
            }
        }
    }
}

/// `array == text` row by row (null where the value is null).
fn equal(array: &ArrayRef, text: &str) -> Result<ArrayRef> {
    match array.as_string_view_opt() {
        Some(views) if text.len() <= SHORT_BYTES => Ok(Arc::new(equal_short(views, text))),
        _ => {
            let literal = StringViewArray::from(vec![text]);
            let other = datafusion::arrow::compute::cast(array, &DataType::Utf8View)?;
            Ok(Arc::new(eq(&other, &datafusion::arrow::array::Scalar::new(&literal))?))
        }
    }
}

/// The masked view compare; `text` is at most [`SHORT_BYTES`] long.
fn equal_short(array: &StringViewArray, text: &str) -> BooleanArray {
    let bytes = text.as_bytes();
    let mut target = [0u8; 16];
    target[..4].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
    target[4..4 + bytes.len()].copy_from_slice(bytes);
    let target = u128::from_le_bytes(target);
    // The length and the literal's bytes; the rest of an inline view is padding.
    let width = 32 + 8 * bytes.len() as u32;
    let mask = if width >= 128 { u128::MAX } else { (1u128 << width) - 1 };
    let views = array.views();
    let values = BooleanBuffer::collect_bool(views.len(), |i| views[i] & mask == target);
    BooleanArray::new(values, array.nulls().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(array: &StringViewArray, text: &str) -> BooleanArray {
        let literal = StringViewArray::from(vec![text]);
        eq(array, &datafusion::arrow::array::Scalar::new(&literal)).unwrap_or_else(|_| BooleanArray::new_null(0))
    }

    #[test]
    fn short_equality_answers_as_the_kernel_does() {
        let values = [
            Some("ERROR"),
            Some("ERRO"),
            Some("ERRORS"),
            None,
            Some(""),
            Some("error"),
            Some("ERROR\0"),
            Some("a string longer than twelve bytes"),
            Some("ERROR"),
            Some("twelve bytes"),
            Some("twelve bytes!"),
            Some("é"),
        ];
        let array = StringViewArray::from_iter(values);
        for text in [
            "ERROR",
            "",
            "ERRO",
            "twelve bytes",
            "é",
            "x",
            "ERROR\0",
            "a string longer than twelve bytes",
        ] {
            let answer = equal(&(Arc::new(array.clone()) as ArrayRef), text).map(|a| a.as_boolean().clone());
            assert_eq!(answer.ok(), Some(kernel(&array, text)), "{text:?}");
        }
        // Views whose padding is not zero (sliced from a longer buffer) still compare by length.
        let sliced = array.slice(1, 6);
        let answer = equal(&(Arc::new(sliced.clone()) as ArrayRef), "ERRO").map(|a| a.as_boolean().clone());
        assert_eq!(answer.ok(), Some(kernel(&sliced, "ERRO")));
    }

    #[test]
    fn a_null_literal_matches_nothing_and_scalars_compare_as_strings() -> Result<()> {
        let udf = ShortEqUdf::new();
        let call = |value: ColumnarValue, literal: ScalarValue| {
            udf.invoke_with_args(ScalarFunctionArgs {
                args: vec![value, ColumnarValue::Scalar(literal)],
                arg_fields: Vec::new(),
                number_rows: 2,
                return_field: Arc::new(datafusion::arrow::datatypes::Field::new("x", DataType::Boolean, true)),
                config_options: Arc::default(),
            })
        };
        let array: ArrayRef = Arc::new(StringViewArray::from(vec!["a", "b"]));
        let ColumnarValue::Array(nulls) = call(ColumnarValue::Array(array), ScalarValue::Utf8View(None))? else {
            return exec_err!("expected an array");
        };
        assert_eq!(nulls.null_count(), 2);
        let same = call(
            ColumnarValue::Scalar(ScalarValue::Utf8View(Some("a".into()))),
            ScalarValue::Utf8View(Some("a".into())),
        )?;
        assert!(matches!(same, ColumnarValue::Scalar(ScalarValue::Boolean(Some(true)))));
        Ok(())
    }
}
