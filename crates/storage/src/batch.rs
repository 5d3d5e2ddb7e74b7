//! Rows → one Arrow batch, sorted by time, with each column's type widened across rows.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, DurationNanosecondBuilder, Float64Builder, Int64Builder, StringBuilder,
    TimestampNanosecondBuilder,
};
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::RecordBatch;
use trawl_catalog::ColumnInfo;
use trawl_common::{KqlType, Row, TIME_COLUMN, Value};

use crate::schema::{UTC, field, segment_arrow_type};
use crate::shred::Shredder;
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
/// widens (`long`→`real`; anything else → `dynamic`). The hidden columns of shredded keys
/// (`trawl_common::shred`) come last; cells named like hidden columns are dropped.
pub fn rows_to_batch(mut rows: Vec<Row>) -> Result<RowsBatch> {
    if rows.is_empty() {
        return Err(StorageError::Invalid("no rows to write".into()));
    }
    rows.sort_by_key(time_of);
    let min_time = time_of(&rows[0]);
    let max_time = rows.last().map_or(min_time, time_of);

    // Column order: first seen; type: widened over all rows.
    let mut index = ColumnIndex::default();
    let mut columns: Vec<(&'static str, KqlType)> = Vec::new();
    for row in &rows {
        for (position, (name, value)) in row.cells.iter().enumerate() {
            let kql_type = value.kql_type();
            match index.get(position, name) {
                Some(i) => columns[i].1 = columns[i].1.widen(kql_type),
                None => {
                    index.insert(position, name, columns.len());
                    columns.push((name, kql_type));
                }
            }
        }
    }

    let row_count = rows.len();
    let mut builders: Vec<ColumnBuilder> = columns
        .iter()
        .map(|(_, kql_type)| ColumnBuilder::new(*kql_type, row_count))
        .collect();
    for (row_index, row) in rows.iter().enumerate() {
        for (position, (name, value)) in row.cells.iter().enumerate() {
            if let Some(i) = index.get(position, name) {
                builders[i].append(row_index, value);
            }
        }
    }
    drop(rows);

    let mut fields = Vec::with_capacity(columns.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(columns.len());
    for ((name, kql_type), builder) in columns.iter().zip(builders) {
        fields.push(field(name, *kql_type, segment_arrow_type(*kql_type)));
        arrays.push(builder.finish(row_count));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
    let columns: Vec<ColumnInfo> = columns
        .into_iter()
        .map(|(name, kql_type)| ColumnInfo {
            name: name.to_string(),
            kql_type,
        })
        .collect();
    // Hot keys of the bags get hidden columns of their own (decision 002).
    let shredder = Shredder::new(&batch.schema());
    let batch = shredder.shred(&batch)?;
    let columns = shredder.columns(&columns);
    Ok(RowsBatch {
        batch,
        columns,
        min_time,
        max_time,
    })
}

/// Column numbers by name. Rows of one request share their layout, so the column found at a
/// cell position is remembered and checked first, which saves hashing most names.
#[derive(Default)]
struct ColumnIndex {
    by_name: HashMap<&'static str, usize>,
    by_position: Vec<Option<(&'static str, usize)>>,
}

impl ColumnIndex {
    fn get(&mut self, position: usize, name: &'static str) -> Option<usize> {
        if let Some(Some((seen, column))) = self.by_position.get(position)
            && *seen == name
        {
            return Some(*column);
        }
        let column = *self.by_name.get(name)?;
        self.remember(position, name, column);
        Some(column)
    }

    fn insert(&mut self, position: usize, name: &'static str, column: usize) {
        self.by_name.insert(name, column);
        self.remember(position, name, column);
    }

    fn remember(&mut self, position: usize, name: &'static str, column: usize) {
        if self.by_position.len() <= position {
            self.by_position.resize(position + 1, None);
        }
        self.by_position[position] = Some((name, column));
    }
}

/// One column's values, appended row by row; rows without the column become nulls.
enum ColumnBuilder {
    Bool(BooleanBuilder),
    Long(Int64Builder),
    Real(Float64Builder),
    DateTime(TimestampNanosecondBuilder),
    Timespan(DurationNanosecondBuilder),
    String(StringBuilder),
    Dynamic(StringBuilder),
}

impl ColumnBuilder {
    fn new(kql_type: KqlType, rows: usize) -> ColumnBuilder {
        match kql_type {
            KqlType::Bool => ColumnBuilder::Bool(BooleanBuilder::with_capacity(rows)),
            KqlType::Long | KqlType::Int => ColumnBuilder::Long(Int64Builder::with_capacity(rows)),
            KqlType::Real | KqlType::Decimal => ColumnBuilder::Real(Float64Builder::with_capacity(rows)),
            KqlType::DateTime => {
                ColumnBuilder::DateTime(TimestampNanosecondBuilder::with_capacity(rows).with_timezone(UTC))
            }
            KqlType::Timespan => ColumnBuilder::Timespan(DurationNanosecondBuilder::with_capacity(rows)),
            KqlType::String | KqlType::Guid => ColumnBuilder::String(StringBuilder::with_capacity(rows, rows * 16)),
            KqlType::Dynamic => ColumnBuilder::Dynamic(StringBuilder::with_capacity(rows, rows * 64)),
        }
    }

    fn len(&self) -> usize {
        match self {
            ColumnBuilder::Bool(b) => b.len(),
            ColumnBuilder::Long(b) => b.len(),
            ColumnBuilder::Real(b) => b.len(),
            ColumnBuilder::DateTime(b) => b.len(),
            ColumnBuilder::Timespan(b) => b.len(),
            ColumnBuilder::String(b) | ColumnBuilder::Dynamic(b) => b.len(),
        }
    }

    fn append_nulls(&mut self, n: usize) {
        match self {
            ColumnBuilder::Bool(b) => b.append_nulls(n),
            ColumnBuilder::Long(b) => b.append_nulls(n),
            ColumnBuilder::Real(b) => b.append_nulls(n),
            ColumnBuilder::DateTime(b) => b.append_nulls(n),
            ColumnBuilder::Timespan(b) => b.append_nulls(n),
            ColumnBuilder::String(b) | ColumnBuilder::Dynamic(b) => b.append_nulls(n),
        }
    }

    /// Appends `value` as row `row_index`, after nulls for the rows before it that lacked the
    /// column. A value of another type than the column's (which widening rules out) is null.
    fn append(&mut self, row_index: usize, value: &Value) {
        let len = self.len();
        if len > row_index {
            return; // a repeated cell: the first one counts
        }
        if len < row_index {
            self.append_nulls(row_index - len);
        }
        match (self, value) {
            (ColumnBuilder::Bool(b), Value::Bool(x)) => b.append_value(*x),
            (ColumnBuilder::Long(b), Value::Long(x)) => b.append_value(*x),
            (ColumnBuilder::Real(b), Value::Real(x)) => b.append_value(*x),
            (ColumnBuilder::Real(b), Value::Long(x)) => b.append_value(*x as f64),
            (ColumnBuilder::DateTime(b), Value::DateTime(x)) => b.append_value(*x),
            (ColumnBuilder::Timespan(b), Value::Timespan(x)) => b.append_value(*x),
            (ColumnBuilder::String(b), Value::String(x)) => b.append_value(x),
            (ColumnBuilder::Dynamic(b), Value::JsonText(text)) => b.append_value(text),
            (ColumnBuilder::Dynamic(b), value) => b.append_value(dynamic_text(value)),
            (builder, _) => builder.append_nulls(1),
        }
    }

    fn finish(mut self, rows: usize) -> ArrayRef {
        let missing = rows.saturating_sub(self.len());
        if missing > 0 {
            self.append_nulls(missing);
        }
        match self {
            ColumnBuilder::Bool(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Long(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Real(mut b) => Arc::new(b.finish()),
            ColumnBuilder::DateTime(mut b) => Arc::new(b.finish()),
            ColumnBuilder::Timespan(mut b) => Arc::new(b.finish()),
            ColumnBuilder::String(mut b) | ColumnBuilder::Dynamic(mut b) => Arc::new(b.finish()),
        }
    }
}

/// The JSON text of a value stored in a dynamic column.
fn dynamic_text(value: &Value) -> String {
    let json = match value {
        Value::Dynamic(json) => return json.to_string(),
        Value::JsonText(text) => return text.to_string(),
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
            row(27, vec![("bag", Value::JsonText(Arc::from(r#"{"a":1}"#)))]),
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
                ("mixed", KqlType::Dynamic),
                ("bag", KqlType::Dynamic)
            ]
        );
        let value = out.batch.column(1).as_primitive::<Float64Type>();
        assert_eq!(value.value(0), 2.0); // the row at t=10 comes first
        assert!(value.is_null(1));
        assert_eq!(value.value(4), 1.5);
        assert_eq!(out.batch.schema().field(3).data_type(), &DataType::Utf8);
        let mixed = out.batch.column(3).as_string::<i32>();
        assert_eq!(mixed.value(1), "1");
        assert_eq!(mixed.value(2), "\"x\"");
        let bag = out.batch.column(4).as_string::<i32>();
        assert!(bag.is_null(2) && bag.is_null(4));
        assert_eq!(bag.value(3), r#"{"a":1}"#);
        Ok(())
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(rows_to_batch(Vec::new()).is_err());
    }
}
