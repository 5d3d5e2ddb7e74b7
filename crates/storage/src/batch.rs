//! Rows → one Arrow batch, sorted by time, with each column's type widened across rows.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, DurationNanosecondBuilder, Float64Builder, Int64Builder, StringBuilder,
    TimestampNanosecondBuilder,
};
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::RecordBatch;
use trawl_catalog::ColumnInfo;
use trawl_common::{KqlType, Row, TIME_COLUMN, Value};

use crate::schema::{UTC, field, segment_arrow_type};
use crate::{Result, StorageError};

/// What [`rows_to_batch`] made: the batch, its columns, and its time range.
#[derive(Debug)]
pub struct RowsBatch {
    pub batch: RecordBatch,
    pub columns: Vec<ColumnInfo>,
    pub min_time: i64,
    pub max_time: i64,
}

fn time_of(row: &Row) -> i64 {
    match row.get(TIME_COLUMN) {
        Some(Value::DateTime(nanos)) => *nanos,
        _ => i64::MIN,
    }
}

/// Sorts `rows` by `timestamp` and builds one batch. A column whose values disagree in type
/// widens (`long`→`real`; anything else → `dynamic`).
pub fn rows_to_batch(mut rows: Vec<Row>) -> Result<RowsBatch> {
    if rows.is_empty() {
        return Err(StorageError::Invalid("no rows to write".into()));
    }
    rows.sort_by_key(time_of);
    let min_time = time_of(&rows[0]);
    let max_time = rows.last().map_or(min_time, time_of);

    // Column order: first seen; type: widened over all rows.
    let mut index: HashMap<&'static str, usize> = HashMap::new();
    let mut columns: Vec<(&'static str, KqlType)> = Vec::new();
    for row in &rows {
        for (name, value) in &row.cells {
            let kql_type = value.kql_type();
            match index.get(name) {
                Some(&i) => columns[i].1 = columns[i].1.widen(kql_type),
                None => {
                    index.insert(name, columns.len());
                    columns.push((name, kql_type));
                }
            }
        }
    }

    let row_count = rows.len();
    let mut cells: Vec<Vec<Option<&Value>>> = vec![vec![None; row_count]; columns.len()];
    for (row_index, row) in rows.iter().enumerate() {
        for (name, value) in &row.cells {
            if let Some(&i) = index.get(name) {
                cells[i][row_index] = Some(value);
            }
        }
    }

    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for ((name, kql_type), values) in columns.iter().zip(&cells) {
        fields.push(field(name, *kql_type, segment_arrow_type(*kql_type)));
        arrays.push(build_array(*kql_type, values));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
    let columns = columns
        .into_iter()
        .map(|(name, kql_type)| ColumnInfo {
            name: name.to_string(),
            kql_type,
        })
        .collect();
    Ok(RowsBatch {
        batch,
        columns,
        min_time,
        max_time,
    })
}

fn build_array(kql_type: KqlType, values: &[Option<&Value>]) -> ArrayRef {
    match kql_type {
        KqlType::Bool => {
            let mut b = BooleanBuilder::with_capacity(values.len());
            for v in values {
                b.append_option(match v {
                    Some(Value::Bool(x)) => Some(*x),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        KqlType::Long | KqlType::Int => {
            let mut b = Int64Builder::with_capacity(values.len());
            for v in values {
                b.append_option(match v {
                    Some(Value::Long(x)) => Some(*x),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        KqlType::Real | KqlType::Decimal => {
            let mut b = Float64Builder::with_capacity(values.len());
            for v in values {
                b.append_option(match v {
                    Some(Value::Real(x)) => Some(*x),
                    Some(Value::Long(x)) => Some(*x as f64),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        KqlType::DateTime => {
            let mut b = TimestampNanosecondBuilder::with_capacity(values.len()).with_timezone(UTC);
            for v in values {
                b.append_option(match v {
                    Some(Value::DateTime(x)) => Some(*x),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        KqlType::Timespan => {
            let mut b = DurationNanosecondBuilder::with_capacity(values.len());
            for v in values {
                b.append_option(match v {
                    Some(Value::Timespan(x)) => Some(*x),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        KqlType::String | KqlType::Guid => {
            let mut b = StringBuilder::with_capacity(values.len(), values.len() * 16);
            for v in values {
                match v {
                    Some(Value::String(s)) => b.append_value(s),
                    _ => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
        KqlType::Dynamic => {
            let mut b = StringBuilder::with_capacity(values.len(), values.len() * 64);
            for v in values {
                match v {
                    Some(value) => b.append_value(dynamic_text(value)),
                    None => b.append_null(),
                }
            }
            Arc::new(b.finish())
        }
    }
}

/// The JSON text of a value stored in a dynamic column.
fn dynamic_text(value: &Value) -> String {
    let json = match value {
        Value::Dynamic(json) => return json.to_string(),
        Value::Bool(x) => serde_json::Value::Bool(*x),
        Value::Long(x) => serde_json::Value::from(*x),
        Value::Real(x) => serde_json::Number::from_f64(*x)
            .map_or_else(|| serde_json::Value::String(x.to_string()), serde_json::Value::Number),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::DateTime(nanos) => serde_json::Value::String(trawl_common::time::format_datetime(*nanos)),
        Value::Timespan(nanos) => serde_json::Value::String(trawl_common::time::format_timespan(*nanos)),
    };
    json.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, Float64Type};

    fn row(ts: i64, cells: Vec<(&'static str, Value)>) -> Row {
        let mut row = Row::default();
        row.push(TIME_COLUMN, Value::DateTime(ts));
        for (name, value) in cells {
            row.push(name, value);
        }
        row
    }

    #[test]
    fn sorts_by_time_and_widens_types() -> Result<()> {
        let rows = vec![
            row(30, vec![("value", Value::Real(1.5))]),
            row(10, vec![("value", Value::Long(2)), ("name", Value::String("a".into()))]),
            row(20, vec![("mixed", Value::Long(1))]),
            row(25, vec![("mixed", Value::String("x".into()))]),
        ];
        let out = rows_to_batch(rows)?;
        assert_eq!((out.min_time, out.max_time), (10, 30));
        let types: Vec<(&str, KqlType)> = out.columns.iter().map(|c| (c.name.as_str(), c.kql_type)).collect();
        assert_eq!(
            types,
            vec![
                ("timestamp", KqlType::DateTime),
                ("value", KqlType::Real),
                ("name", KqlType::String),
                ("mixed", KqlType::Dynamic)
            ]
        );
        let value = out.batch.column(1).as_primitive::<Float64Type>();
        assert_eq!(value.value(0), 2.0); // the row at t=10 comes first
        assert!(value.is_null(1));
        assert_eq!(value.value(3), 1.5);
        assert_eq!(out.batch.schema().field(3).data_type(), &DataType::Utf8);
        let mixed = out.batch.column(3).as_string::<i32>();
        assert_eq!(mixed.value(1), "1");
        assert_eq!(mixed.value(2), "\"x\"");
        Ok(())
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(rows_to_batch(Vec::new()).is_err());
    }
}
