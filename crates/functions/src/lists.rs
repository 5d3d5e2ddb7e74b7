//! Finishers of list aggregates: Arrow lists of dynamic values (JSON texts), as `array_agg`
//! collects them for `make_list`, `make_set` and `make_bag`, turned into one dynamic value.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringViewBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::util::{Built, string_at};

/// How the elements of a list become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListFinish {
    /// A JSON array of the non-null elements, in order.
    Array,
    /// A JSON array of every element, nulls as `null`, in order (`make_list_with_nulls`).
    ArrayWithNulls,
    /// One JSON object: the keys of every element that is an object (first value wins).
    MergeBags,
    /// A JSON array of the distinct values, first occurrence first; array elements
    /// contribute their items.
    Set,
}

/// `kql_list_to_array(list)` / `kql_list_to_bag(list)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ListFinishUdf {
    finish: ListFinish,
    /// Most elements (or keys) kept.
    signature: Signature,
}

impl ListFinishUdf {
    pub fn new(finish: ListFinish) -> ListFinishUdf {
        ListFinishUdf {
            finish,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

/// Most elements (or keys) a list aggregate keeps when the query names no limit, and the
/// most it may name (ADX's `MaxSize`).
pub const MAX_LIST_SIZE: usize = 1 << 20;

fn finish_one(values: &ArrayRef, finish: ListFinish, limit: usize, built: &mut Built) -> Result<String> {
    Ok(match finish {
        ListFinish::Array | ListFinish::ArrayWithNulls => {
            let mut out = String::from("[");
            let mut count = 0;
            for i in 0..values.len() {
                if count >= limit {
                    break;
                }
                let text = match string_at(values, i) {
                    Some(text) => text,
                    None if finish == ListFinish::ArrayWithNulls => "null",
                    None => continue,
                };
                // `make_list` of dynamic arrays concatenates their items.
                if finish == ListFinish::Array
                    && text.starts_with('[')
                    && let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(text)
                {
                    for item in items.iter().take(limit - count) {
                        if count > 0 {
                            out.push(',');
                        }
                        let before = out.len();
                        out.push_str(&item.to_string());
                        built.add(out.len() - before + 1)?;
                        count += 1;
                    }
                    continue;
                }
                if count > 0 {
                    out.push(',');
                }
                out.push_str(text);
                built.add(text.len() + 1)?;
                count += 1;
            }
            out.push(']');
            out
        }
        ListFinish::Set => {
            let mut seen = std::collections::HashSet::new();
            let mut items: Vec<String> = Vec::new();
            let mut add = |text: String, items: &mut Vec<String>| -> Result<()> {
                if items.len() < limit && seen.insert(text.clone()) {
                    // The text is kept twice (the set and the list), then joined.
                    built.add(3 * text.len() + 64)?;
                    items.push(text);
                }
                Ok(())
            };
            for i in 0..values.len() {
                let Some(text) = string_at(values, i) else { continue };
                match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(serde_json::Value::Array(elements)) => {
                        for element in elements {
                            add(element.to_string(), &mut items)?;
                        }
                    }
                    Ok(serde_json::Value::Null) => {}
                    Ok(value) => add(value.to_string(), &mut items)?,
                    Err(_) => add(text.to_string(), &mut items)?,
                }
            }
            format!("[{}]", items.join(","))
        }
        ListFinish::MergeBags => {
            let mut bag = serde_json::Map::new();
            for i in 0..values.len() {
                let Some(text) = string_at(values, i) else { continue };
                if let Ok(serde_json::Value::Object(object)) = serde_json::from_str::<serde_json::Value>(text) {
                    for (key, value) in object {
                        if bag.len() >= limit {
                            break;
                        }
                        if !bag.contains_key(&key) {
                            // A parsed value takes several times its text.
                            built.add(key.len() + 4 * text.len().min(1 << 16) + 64)?;
                        }
                        bag.entry(key).or_insert(value);
                    }
                }
            }
            serde_json::Value::Object(bag).to_string()
        }
    })
}

impl ScalarUDFImpl for ListFinishUdf {
    fn name(&self) -> &str {
        match self.finish {
            ListFinish::Array => "kql_list_to_array",
            ListFinish::ArrayWithNulls => "kql_list_with_nulls_to_array",
            ListFinish::MergeBags => "kql_list_to_bag",
            ListFinish::Set => "kql_list_to_set",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8View)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let limit = match &args.args[1] {
            ColumnarValue::Scalar(ScalarValue::Int64(Some(n))) if *n > 0 => (*n as usize).min(MAX_LIST_SIZE),
            _ => MAX_LIST_SIZE,
        };
        let mut built = Built::new(match self.finish {
            ListFinish::Array => "make_list",
            ListFinish::ArrayWithNulls => "make_list_with_nulls",
            ListFinish::MergeBags => "make_bag",
            ListFinish::Set => "make_set",
        });
        let lists = args.args[0].to_array(args.number_rows)?;
        let mut builder = StringViewBuilder::with_capacity(lists.len());
        match lists.data_type() {
            DataType::List(_) => {
                let lists = lists.as_list::<i32>();
                for row in 0..lists.len() {
                    if lists.is_null(row) {
                        builder.append_value(if self.finish == ListFinish::MergeBags {
                            "{}"
                        } else {
                            "[]"
                        });
                    } else {
                        builder.append_value(finish_one(&lists.value(row), self.finish, limit, &mut built)?);
                    }
                }
            }
            DataType::LargeList(_) => {
                let lists = lists.as_list::<i64>();
                for row in 0..lists.len() {
                    if lists.is_null(row) {
                        builder.append_value(if self.finish == ListFinish::MergeBags {
                            "{}"
                        } else {
                            "[]"
                        });
                    } else {
                        builder.append_value(finish_one(&lists.value(row), self.finish, limit, &mut built)?);
                    }
                }
            }
            other => return exec_err!("{} expects a list, found {other}", self.name()),
        }
        let array: ArrayRef = Arc::new(builder.finish());
        if matches!(args.args[0], ColumnarValue::Scalar(_)) {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?));
        }
        Ok(ColumnarValue::Array(array))
    }
}

/// `kql_json_items(dynamic[, bags_as_arrays])`: the items `mv-expand` produces from a dynamic
/// value, as a list of JSON texts: an array's elements; a bag's entries as one-key bags (or,
/// with `bags_as_arrays`, as `[key, value]` arrays: `bagexpansion=array`); any other non-null
/// value as itself; null as an empty list.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct JsonItemsUdf {
    signature: Signature,
}

impl JsonItemsUdf {
    pub const NAME: &'static str = "kql_json_items";

    pub fn new() -> JsonItemsUdf {
        JsonItemsUdf {
            // Volatile so that planning never folds a constant's items into one list scalar:
            // DataFusion would copy that list into every row of every batch in one allocation
            // no meter sees (`mv-expand j = range(1, 100000)`: 8,192 copies of 100,000 items).
            // Evaluated per batch, the items are built row by row and metered.
            signature: Signature::variadic_any(Volatility::Volatile),
        }
    }

    fn item_type() -> DataType {
        DataType::List(Arc::new(datafusion::arrow::datatypes::Field::new(
            "item",
            DataType::Utf8View,
            true,
        )))
    }
}

impl Default for JsonItemsUdf {
    fn default() -> Self {
        Self::new()
    }
}

/// The `mv-expand` items of one JSON text.
pub fn json_items(text: &str, bags_as_arrays: bool) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(items)) => items.into_iter().map(|v| v.to_string()).collect(),
        Ok(serde_json::Value::Object(entries)) if bags_as_arrays => entries
            .into_iter()
            .map(|(k, v)| serde_json::json!([k, v]).to_string())
            .collect(),
        Ok(serde_json::Value::Object(entries)) => entries
            .into_iter()
            .map(|(k, v)| {
                let mut one = serde_json::Map::new();
                one.insert(k, v);
                serde_json::Value::Object(one).to_string()
            })
            .collect(),
        Ok(serde_json::Value::Null) => Vec::new(),
        Ok(value) => vec![value.to_string()],
        Err(_) => vec![serde_json::Value::String(text.to_string()).to_string()],
    }
}

impl ScalarUDFImpl for JsonItemsUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(Self::item_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::ListBuilder;
        let Some(first) = args.args.first() else {
            return datafusion::common::exec_err!("{} takes a dynamic value", Self::NAME);
        };
        let bags_as_arrays = matches!(
            args.args.get(1),
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))
        );
        let mut builder = ListBuilder::new(StringViewBuilder::new()).with_field(Arc::new(
            datafusion::arrow::datatypes::Field::new("item", DataType::Utf8View, true),
        ));
        // One long array in every row (a constant) makes as many items per row: asked of the
        // query's memory as they are made. Items are about as long as their text; each takes
        // a view more, and as much again in the rows the expansion makes of them.
        let mut built = Built::operator("mv-expand");
        let mut append = |items: &[String], builder: &mut ListBuilder<StringViewBuilder>| -> Result<()> {
            for item in items {
                built.add(2 * (item.len() + 16))?;
                builder.values().append_value(item);
            }
            builder.append(true);
            Ok(())
        };
        match first {
            ColumnarValue::Scalar(value) => {
                // A constant: its items once, then in every row.
                let items = match value.try_as_str().flatten() {
                    Some(text) => json_items(text, bags_as_arrays),
                    None => Vec::new(),
                };
                for _ in 0..args.number_rows {
                    append(&items, &mut builder)?;
                }
            }
            ColumnarValue::Array(input) => {
                for row in 0..input.len() {
                    let items = match string_at(input, row) {
                        Some(text) => json_items(text, bags_as_arrays),
                        None => Vec::new(),
                    };
                    append(&items, &mut builder)?;
                }
            }
        }
        Ok(ColumnarValue::Array(Arc::new(builder.finish())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finish(values: &ArrayRef, finish: ListFinish, limit: usize) -> String {
        finish_one(values, finish, limit, &mut Built::new("make_list")).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn make_list_concatenates_arrays_and_keeps_the_limit() {
        let values: ArrayRef = std::sync::Arc::new(datafusion::arrow::array::StringArray::from(vec![
            Some("[1,[2]]"),
            None,
            Some("3"),
            Some("\"[not an array]\""),
            Some("[]"),
        ]));
        assert_eq!(
            finish(&values, ListFinish::Array, 100),
            r#"[1,[2],3,"[not an array]"]"#
        );
        assert_eq!(finish(&values, ListFinish::Array, 2), "[1,[2]]");
        assert_eq!(
            finish(&values, ListFinish::ArrayWithNulls, 100),
            r#"[[1,[2]],null,3,"[not an array]",[]]"#
        );
    }

    #[test]
    fn items_of_arrays_bags_and_scalars() {
        assert_eq!(json_items("[1,\"a\",[2]]", false), vec!["1", "\"a\"", "[2]"]);
        assert_eq!(json_items("{\"a\":1,\"b\":2}", false), vec!["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(json_items("{\"a\":1,\"b\":2}", true), vec!["[\"a\",1]", "[\"b\",2]"]);
        assert_eq!(json_items("[{\"a\":1}]", true), vec!["{\"a\":1}"]);
        assert_eq!(json_items("5", false), vec!["5"]);
        assert!(json_items("null", false).is_empty());
        assert!(json_items("[]", false).is_empty());
    }
}

/// `kql_dense_series(indexes, values, bins, default)`: a dynamic array of `bins` values where
/// position `indexes[i]` holds `values[i]` (JSON texts) and every other position `default`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DenseSeriesUdf {
    signature: Signature,
}

impl DenseSeriesUdf {
    pub const NAME: &'static str = "kql_dense_series";

    pub fn new() -> DenseSeriesUdf {
        DenseSeriesUdf {
            signature: Signature::any(4, Volatility::Immutable),
        }
    }
}

impl Default for DenseSeriesUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for DenseSeriesUdf {
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
        use datafusion::arrow::datatypes::Int64Type;
        let rows = args.number_rows;
        let indexes = args.args[0].to_array(rows)?;
        let values = args.args[1].to_array(rows)?;
        let bins = match &args.args[2] {
            ColumnarValue::Scalar(ScalarValue::Int64(Some(n))) if *n >= 0 => *n as usize,
            _ => return exec_err!("{} needs a constant number of bins", Self::NAME),
        };
        let default = match &args.args[3] {
            ColumnarValue::Scalar(scalar) => crate::util::scalar_string(scalar)?.unwrap_or_else(|| "null".into()),
            ColumnarValue::Array(_) => return exec_err!("{} needs a constant default", Self::NAME),
        };
        let (DataType::List(_), DataType::List(_)) = (indexes.data_type(), values.data_type()) else {
            return exec_err!("{} expects two lists", Self::NAME);
        };
        let indexes = indexes.as_list::<i32>();
        let values = values.as_list::<i32>();
        let mut builder = StringViewBuilder::with_capacity(indexes.len());
        let mut built = Built::operator("make-series");
        for row in 0..indexes.len() {
            // Each row's series is built whole: asked for before it is.
            built.reserve(bins.saturating_mul(default.len() + 2 + std::mem::size_of::<String>()))?;
            built.add(bins.saturating_mul(default.len() + 1))?;
            let mut series: Vec<String> = vec![default.clone(); bins];
            if !indexes.is_null(row) && !values.is_null(row) {
                let row_indexes = indexes.value(row);
                let row_values = values.value(row);
                if let Some(positions) = row_indexes.as_primitive_opt::<Int64Type>() {
                    for i in 0..positions.len().min(row_values.len()) {
                        if positions.is_null(i) {
                            continue;
                        }
                        let position = positions.value(i);
                        if let Ok(position) = usize::try_from(position)
                            && position < bins
                            && let Some(text) = string_at(&row_values, i)
                        {
                            series[position] = text.to_string();
                        }
                    }
                }
            }
            builder.append_value(format!("[{}]", series.join(",")));
        }
        Ok(ColumnarValue::Array(Arc::new(builder.finish())))
    }
}
