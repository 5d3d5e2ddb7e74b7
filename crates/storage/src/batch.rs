//! Rows → one Arrow batch, sorted by time, with each column's type widened across rows.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayBuilder, ArrayRef, AsArray, BooleanBuilder, DurationNanosecondBuilder, Float64Builder, Int64Builder,
    PrimitiveArray, StringBuilder, TimestampNanosecondBuilder, UInt32Array,
};
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::datatypes::{DurationNanosecondType, Int64Type, TimestampNanosecondType};
use datafusion::arrow::record_batch::RecordBatch;
use trawl_catalog::ColumnInfo;
use trawl_common::columns::Columns;
use trawl_common::{KqlType, Row, TIME_COLUMN, Value};

use crate::schema::{UTC, field, segment_arrow_type};
use crate::shred::{HiddenBuilder, Shredder};
use crate::{Result, StorageError};

/// Rows to write: the batch, its columns, its time range and whether its rows are in time
/// order ([`rows_to_batch`] sorts them; [`columns_to_batch`] leaves that to the flush, which
/// orders all of a segment's rows at once).
#[derive(Debug)]
pub struct RowsBatch {
    pub batch: RecordBatch,
    pub columns: Vec<ColumnInfo>,
    pub min_time: i64,
    pub max_time: i64,
    pub sorted: bool,
}

impl RowsBatch {
    /// `batch` (with `columns`, in its order), its time range and order read from its
    /// `timestamp` column (a row without one counts as the earliest).
    pub fn new(batch: RecordBatch, columns: Vec<ColumnInfo>) -> RowsBatch {
        let times = times_of(&batch);
        let (mut min_time, mut max_time, mut sorted) = (i64::MAX, i64::MIN, true);
        let mut previous = i64::MIN;
        for row in 0..batch.num_rows() {
            let time = time_at(times, row);
            min_time = min_time.min(time);
            max_time = max_time.max(time);
            sorted &= previous <= time;
            previous = time;
        }
        if batch.num_rows() == 0 {
            min_time = i64::MIN;
        }
        RowsBatch {
            batch,
            columns,
            min_time,
            max_time,
            sorted,
        }
    }

    /// The rows at `rows` (in that order).
    pub fn select(&self, rows: &UInt32Array) -> Result<RowsBatch> {
        let batch = datafusion::arrow::compute::take_record_batch(&self.batch, rows)?;
        Ok(RowsBatch::new(batch, self.columns.clone()))
    }
}

/// The `timestamp` column of `batch`, when it has one of the datetime type.
pub(crate) fn times_of(batch: &RecordBatch) -> Option<&PrimitiveArray<TimestampNanosecondType>> {
    batch.column_by_name(TIME_COLUMN)?.as_primitive_opt()
}

/// The time of row `row`; a row without one counts as the earliest.
pub(crate) fn time_at(times: Option<&PrimitiveArray<TimestampNanosecondType>>, row: usize) -> i64 {
    times.filter(|t| t.is_valid(row)).map_or(i64::MIN, |t| t.value(row))
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
pub fn rows_to_batch(rows: Vec<Row>) -> Result<RowsBatch> {
    if rows.is_empty() {
        return Err(StorageError::Invalid("no rows to write".into()));
    }
    // The order by time, found once: the rows themselves stay where they are.
    let times: Vec<i64> = rows.iter().map(time_of).collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    if !times.is_sorted() {
        order.sort_by_key(|&i| times[i]);
    }
    let min_time = times[order[0]];
    let max_time = order.last().map_or(min_time, |&i| times[i]);

    // Column order: first seen; type: widened over all rows.
    let mut index = ColumnIndex::default();
    let mut columns: Vec<(&'static str, KqlType)> = Vec::new();
    for &i in &order {
        for (position, (name, value)) in rows[i].cells.iter().enumerate() {
            let kql_type = value.kql_type();
            match index.get(position, name) {
                Some(c) => columns[c].1 = columns[c].1.widen(kql_type),
                None => {
                    index.insert(position, name, columns.len());
                    columns.push((name, kql_type));
                }
            }
        }
    }
    let fields: Vec<_> = columns
        .iter()
        .map(|(name, kql_type)| field(name, *kql_type, segment_arrow_type(*kql_type)))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    // Hot keys of the bags get hidden columns of their own (decision 002), taken from each
    // bag's text as it is appended.
    let shredder = Shredder::new(&schema);

    let row_count = rows.len();
    let mut builders: Vec<ColumnBuilder> = columns
        .iter()
        .map(|(_, kql_type)| ColumnBuilder::new(*kql_type, row_count))
        .collect();
    // By column: the bags come in column order, so their hidden columns do too.
    let mut hidden: Vec<Option<HiddenBuilder>> = (0..columns.len()).map(|_| None).collect();
    for (column, builder) in shredder.hidden_builders(row_count) {
        hidden[column] = Some(builder);
    }
    for (row_index, &i) in order.iter().enumerate() {
        for (position, (name, value)) in rows[i].cells.iter().enumerate() {
            if let Some(c) = index.get(position, name) {
                builders[c].append(row_index, value);
                if let Some(hidden) = &mut hidden[c] {
                    append_hidden(hidden, row_index, value);
                }
            }
        }
    }
    drop(rows);

    let arrays: Vec<ArrayRef> = builders.into_iter().map(|b| b.finish(row_count)).collect();
    let batch = RecordBatch::try_new(schema, arrays)?;
    let hidden: Vec<ArrayRef> = hidden
        .into_iter()
        .flatten()
        .flat_map(|builder| builder.finish(row_count))
        .collect();
    let batch = shredder.assemble(&batch, hidden)?;
    let columns: Vec<ColumnInfo> = columns
        .into_iter()
        .map(|(name, kql_type)| ColumnInfo {
            name: name.to_string(),
            kql_type,
        })
        .collect();
    let columns = shredder.columns(&columns);
    Ok(RowsBatch {
        batch,
        columns,
        min_time,
        max_time,
        sorted: true,
    })
}

/// The hidden values of a bag cell, from the text the bag column holds for it. A bag text
/// shared by several rows is walked once (its address names it while the rows live).
fn append_hidden(hidden: &mut HiddenBuilder, row: usize, value: &Value) {
    match value {
        Value::JsonText(text) => {
            let shared = (Arc::strong_count(text) > 1).then_some(Arc::as_ptr(text) as *const u8 as usize);
            hidden.append(row, text, shared);
        }
        other => hidden.append(row, &dynamic_text(other), None),
    }
}

/// Column numbers by name. Rows of one request share their layout, so the column found at a
/// cell position is remembered and checked first, which saves hashing most names.
#[derive(Default)]
struct ColumnIndex {
    by_name: datafusion::common::HashMap<&'static str, usize>,
    by_position: Vec<Option<(&'static str, usize)>>,
}

impl ColumnIndex {
    fn get(&mut self, position: usize, name: &'static str) -> Option<usize> {
        // Names are the mapping's constants: the same text is usually the same address.
        if let Some(Some((seen, column))) = self.by_position.get(position)
            && (std::ptr::eq(*seen, name) || *seen == name)
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
pub(crate) fn dynamic_text(value: &Value) -> String {
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

/// The rows a protocol mapping wrote into columns ([`trawl_common::columns`]) as one batch,
/// laid out as [`rows_to_batch`] lays out the same rows: the columns in the order the mapping
/// declared them, then the hidden columns of the bags' shredded keys. The rows keep their
/// order (the flush sorts a segment's rows once).
pub fn columns_to_batch(columns: Columns) -> Result<RowsBatch> {
    if columns.rows == 0 {
        return Err(StorageError::Invalid("no rows to write".into()));
    }
    let mut fields = Vec::with_capacity(columns.columns.len());
    let mut arrays = Vec::with_capacity(columns.columns.len());
    let mut hidden = Vec::new();
    let mut infos = Vec::with_capacity(columns.columns.len());
    for column in columns.columns {
        let values: ArrayRef = match (column.kql_type, column.values.as_primitive_opt::<Int64Type>()) {
            (KqlType::DateTime, Some(nanos)) => {
                Arc::new(nanos.reinterpret_cast::<TimestampNanosecondType>().with_timezone(UTC))
            }
            (KqlType::Timespan, Some(nanos)) => Arc::new(nanos.reinterpret_cast::<DurationNanosecondType>()),
            _ => column.values,
        };
        let data_type = segment_arrow_type(column.kql_type);
        if values.data_type() != &data_type {
            return Err(StorageError::Invalid(format!(
                "column {} holds {} values, expected {data_type}",
                column.name,
                values.data_type()
            )));
        }
        fields.push(field(column.name, column.kql_type, data_type));
        arrays.push(values);
        hidden.extend(column.hidden);
        infos.push(ColumnInfo {
            name: column.name.to_string(),
            kql_type: column.kql_type,
        });
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
    let shredder = Shredder::new(&batch.schema());
    let batch = shredder.assemble(&batch, hidden)?;
    Ok(RowsBatch::new(batch, shredder.columns(&infos)))
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
    fn hidden_columns_built_with_the_rows_equal_shredding_the_written_bags()
    -> std::result::Result<(), Box<dyn std::error::Error>> {
        use trawl_common::shred::{HIDDEN_PREFIX, shredded_column};
        let shared: Arc<str> = Arc::from(r#"{"service.name":"checkout","host.name":"h1"}"#);
        let other: Arc<str> = Arc::from(r#"{"service.name":"cart","k8s.namespace.name":{"a":1}}"#);
        let mut rows = Vec::new();
        for i in 0..40i64 {
            // Out of time order, shared bags interleaved with a row's own and with rows that
            // have none, a bag of another type, and a hidden-named cell that must not survive.
            let mut cells = vec![(
                "resource",
                Value::JsonText(if i % 3 == 0 { shared.clone() } else { other.clone() }),
            )];
            match i % 5 {
                0 => cells.push((
                    "attributes",
                    Value::JsonText(Arc::from(format!(r#"{{"http.route":"/r{i}"}}"#))),
                )),
                1 => cells.push(("attributes", Value::Long(i))),
                2 => cells.push(("attributes", Value::Dynamic(serde_json::json!({"http.method": "GET"})))),
                3 => cells.push(("__trawl_shred:attributes:http.route", Value::String("forged".into()))),
                _ => {}
            }
            if i % 7 == 0 {
                cells.remove(0);
            }
            rows.push(row((i * 37) % 41, cells));
        }
        let out = rows_to_batch(rows)?;
        let batch = &out.batch;
        let bags: Vec<usize> = ["resource", "attributes"]
            .iter()
            .filter_map(|name| batch.schema().index_of(name).ok())
            .collect();
        assert_eq!(bags.len(), 2);
        // The reference: shred the written bag columns as a merge does.
        let own: Vec<usize> = (0..batch.num_columns())
            .filter(|&i| !batch.schema().field(i).name().starts_with(HIDDEN_PREFIX))
            .collect();
        let written = batch.project(&own)?;
        let reference = Shredder::new(&written.schema()).shred(&written)?;
        assert_eq!(reference.schema(), batch.schema());
        for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
            let expected = reference.column_by_name(field.name()).ok_or("no reference column")?;
            assert_eq!(column.as_ref(), expected.as_ref(), "column {}", field.name());
        }
        let route = batch
            .column_by_name(&shredded_column("attributes", "http.route"))
            .ok_or("no hidden route")?
            .as_string::<i32>();
        assert!(route.iter().all(|value| value != Some("forged")));
        assert!(route.iter().any(|value| value == Some("/r0")));
        Ok(())
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(rows_to_batch(Vec::new()).is_err());
    }
}
