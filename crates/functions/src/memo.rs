//! [`DistinctValuesUdf`]: runs a scalar function once per distinct value of its first argument.
//!
//! Bags such as `resource` repeat: a segment holds a few hundred distinct resources for
//! millions of rows, and Parquet keeps them dictionary-encoded. Read as string views, equal
//! values of one chunk point at the same bytes of the dictionary, so rows are grouped by their
//! view (length, buffer and offset, or the inline bytes) without comparing text, and
//! `tostring(resource['service.name'])` parses each distinct resource once per batch.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// `inner`, evaluated on the distinct values of its first argument only, with the same results
/// row by row. Only when the other arguments are scalars (a JSON path); otherwise `inner` runs
/// as it is.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DistinctValuesUdf {
    inner: Arc<ScalarUDF>,
    name: String,
}

impl DistinctValuesUdf {
    pub fn new(inner: Arc<ScalarUDF>) -> DistinctValuesUdf {
        let name = format!("{}_per_distinct", inner.name());
        DistinctValuesUdf { inner, name }
    }
}

/// A batch is worth grouping when its distinct values are at most this share of its rows.
const MOST_DISTINCT_SHARE: usize = 4;

impl ScalarUDFImpl for DistinctValuesUdf {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rest_scalar = args
            .args
            .iter()
            .skip(1)
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
        let grouped = match args.args.first() {
            Some(ColumnarValue::Array(values)) if rest_scalar && values.data_type() == &DataType::Utf8View => {
                distinct_rows(values).map(|grouping| (Arc::clone(values), grouping))
            }
            _ => None,
        };
        let Some((values, (firsts, of_row))) = grouped else {
            return self.inner.invoke_with_args(args);
        };
        let mut arguments = args.args;
        arguments[0] = ColumnarValue::Array(take(values.as_ref(), &firsts, None)?);
        let number_rows = firsts.len();
        let results = self.inner.invoke_with_args(ScalarFunctionArgs {
            args: arguments,
            arg_fields: args.arg_fields,
            number_rows,
            return_field: args.return_field,
            config_options: args.config_options,
        })?;
        let results = results.into_array(number_rows)?;
        Ok(ColumnarValue::Array(take(results.as_ref(), &of_row, None)?))
    }
}

/// For a string view array: the first row of each distinct value (null counts as one), and for
/// every row the index of its value among them; `None` when nearly every row differs.
fn distinct_rows(values: &ArrayRef) -> Option<(UInt32Array, UInt32Array)> {
    let views = values.as_string_view();
    let rows = views.len();
    let mut index: HashMap<Option<u128>, u32> = HashMap::new();
    let mut firsts: Vec<u32> = Vec::new();
    let mut of_row: Vec<u32> = Vec::with_capacity(rows);
    for (row, view) in views.views().iter().enumerate() {
        let key = (!views.is_null(row)).then_some(*view);
        let next = u32::try_from(firsts.len()).ok()?;
        let slot = *index.entry(key).or_insert(next);
        if slot == next {
            firsts.push(u32::try_from(row).ok()?);
            if firsts.len() * MOST_DISTINCT_SHARE > rows {
                return None;
            }
        }
        of_row.push(slot);
    }
    Some((UInt32Array::from(firsts), UInt32Array::from(of_row)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{StringViewArray, StringViewBuilder};
    use datafusion::arrow::datatypes::Field;
    use datafusion::config::ConfigOptions;

    fn invoke(udf: &dyn ScalarUDFImpl, values: &ArrayRef) -> Result<ArrayRef> {
        let field = Arc::new(Field::new("v", DataType::Utf8View, true));
        let rows = values.len();
        udf.invoke_with_args(ScalarFunctionArgs {
            args: vec![ColumnarValue::Array(Arc::clone(values))],
            arg_fields: vec![Arc::clone(&field)],
            number_rows: rows,
            return_field: field,
            config_options: Arc::new(ConfigOptions::default()),
        })?
        .into_array(rows)
    }

    #[test]
    fn repeated_values_are_computed_once_with_the_same_answers() -> std::result::Result<(), Box<dyn std::error::Error>>
    {
        // As Parquet dictionaries read: equal long values share their bytes.
        let mut builder = StringViewBuilder::new().with_deduplicate_strings();
        let long = "\"a value longer than twelve bytes\"";
        let pattern = [
            Some(long),
            Some("\"x\""),
            None,
            Some(long),
            Some("null"),
            Some(long),
            Some("\"x\""),
        ];
        for value in pattern.iter().cycle().take(4 * pattern.len()) {
            builder.append_option(*value);
        }
        let values: ArrayRef = Arc::new(builder.finish());
        let (firsts, _) = distinct_rows(&values).ok_or("not grouped")?;
        assert_eq!(firsts.values().to_vec(), vec![0, 1, 2, 4]);
        let inner = crate::dynamic::DynamicToStringUdf::new();
        let wrapped = DistinctValuesUdf::new(Arc::new(ScalarUDF::from(crate::dynamic::DynamicToStringUdf::new())));
        assert_eq!(invoke(&wrapped, &values)?.as_ref(), invoke(&inner, &values)?.as_ref());
        Ok(())
    }

    #[test]
    fn mostly_distinct_batches_are_not_grouped() {
        let values: ArrayRef = Arc::new(StringViewArray::from(vec!["\"a\"", "\"b\"", "\"c\"", "\"d\""]));
        assert!(distinct_rows(&values).is_none());
    }
}
