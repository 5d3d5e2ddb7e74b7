//! The batches of one ingest buffer (one per request) → the one batch of its segment: column
//! sets united (types widened as [`KqlType::widen`] says, hidden columns after the others as
//! the [`Shredder`] lays them out) and rows ordered by time.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder, new_null_array};
use datafusion::arrow::compute::{cast, interleave};
use datafusion::arrow::datatypes::{
    DataType, DurationNanosecondType, Float64Type, Int64Type, Schema, TimestampNanosecondType,
};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::HashMap;
use trawl_catalog::ColumnInfo;
use trawl_common::shred::is_hidden_column;
use trawl_common::{KqlType, Value};

use crate::batch::{RowsBatch, dynamic_text, time_at, times_of};
use crate::schema::{field, segment_arrow_type};
use crate::shred::Shredder;
use crate::{Result, StorageError};

/// The rows of one buffer in time order, as the batches to encode one after the other.
#[derive(Debug)]
pub struct Combined {
    /// All of one schema; together they hold the rows ordered by time.
    pub batches: Vec<RecordBatch>,
    pub columns: Vec<ColumnInfo>,
    pub min_time: i64,
    pub max_time: i64,
}

impl Combined {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

impl From<RowsBatch> for Combined {
    /// A batch already in time order.
    fn from(sorted: RowsBatch) -> Combined {
        Combined {
            batches: vec![sorted.batch],
            columns: sorted.columns,
            min_time: sorted.min_time,
            max_time: sorted.max_time,
        }
    }
}

/// The rows of all `parts`, ordered by `timestamp` (rows of equal time keep the order of their
/// parts and within them). Parts that are sorted and do not overlap in time (one sender's
/// requests, a backfill, requests that arrive out of order) are passed on as they are, in time
/// order: no row is copied. Otherwise the rows are interleaved into one batch.
pub fn combine_by_time(mut parts: Vec<RowsBatch>) -> Result<Combined> {
    if parts.is_empty() {
        return Err(StorageError::Invalid("no rows to write".into()));
    }
    if let [part] = parts.as_slice()
        && part.sorted
    {
        return parts
            .pop()
            .map(Combined::from)
            .ok_or_else(|| StorageError::Invalid("no rows to write".into()));
    }
    let min_time = parts.iter().map(|p| p.min_time).min().unwrap_or(i64::MIN);
    let max_time = parts.iter().map(|p| p.max_time).max().unwrap_or(i64::MIN);

    // The kept (not hidden) columns, first seen first, widened.
    let mut united: Vec<ColumnInfo> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::default();
    for part in &parts {
        for column in part.columns.iter().filter(|c| !is_hidden_column(&c.name)) {
            match position.get(column.name.as_str()) {
                Some(&i) => united[i].kql_type = united[i].kql_type.widen(column.kql_type),
                None => {
                    position.insert(column.name.clone(), united.len());
                    united.push(column.clone());
                }
            }
        }
    }
    let kept = Schema::new(
        united
            .iter()
            .map(|c| field(&c.name, c.kql_type, segment_arrow_type(c.kql_type)))
            .collect::<Vec<_>>(),
    );
    let shredder = Shredder::new(&kept);
    let schema = shredder.schema();
    let columns = shredder.columns(&united);

    // Every part in the united layout.
    let mut laid_out: Vec<Vec<ArrayRef>> = Vec::with_capacity(parts.len());
    for part in &parts {
        laid_out.push(lay_out(part, &united, &schema)?);
    }

    let batches = match time_order(&parts)? {
        Order::Parts(order) => {
            let mut laid_out: Vec<Option<Vec<ArrayRef>>> = laid_out.into_iter().map(Some).collect();
            order
                .into_iter()
                .filter_map(|p| laid_out.get_mut(p).and_then(Option::take))
                .map(|arrays| RecordBatch::try_new(Arc::clone(&schema), arrays))
                .collect::<std::result::Result<Vec<_>, _>>()?
        }
        Order::Rows(order) => {
            let arrays = (0..schema.fields().len())
                .map(|c| {
                    let pieces: Vec<&dyn Array> = laid_out.iter().map(|p| p[c].as_ref()).collect();
                    interleave(&pieces, &order)
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            drop(laid_out);
            vec![RecordBatch::try_new(schema, arrays)?]
        }
    };
    Ok(Combined {
        batches,
        columns,
        min_time,
        max_time,
    })
}

/// `part`'s columns in the order of `schema` (the united kept columns, then hidden ones):
/// widened where its type is narrower, nulls where it lacks a column.
fn lay_out(part: &RowsBatch, united: &[ColumnInfo], schema: &Schema) -> Result<Vec<ArrayRef>> {
    let rows = part.batch.num_rows();
    let part_schema = part.batch.schema();
    let own = |name: &str| -> Option<(usize, KqlType)> {
        let index = part_schema.index_of(name).ok()?;
        let kql_type = part.columns.iter().find(|c| c.name == name).map(|c| c.kql_type)?;
        Some((index, kql_type))
    };
    let mut arrays = Vec::with_capacity(schema.fields().len());
    for (i, target) in schema.fields().iter().enumerate() {
        let array = match own(target.name()) {
            Some((index, from)) => {
                let to = united.get(i).map_or(KqlType::String, |c| c.kql_type);
                let array = part.batch.column(index).clone();
                if from == to || i >= united.len() {
                    array
                } else {
                    widen(&array, from, to)?
                }
            }
            None => new_null_array(target.data_type(), rows),
        };
        if array.data_type() != target.data_type() {
            return Err(StorageError::Invalid(format!(
                "column {} is {} in one request and {} in the batch",
                target.name(),
                array.data_type(),
                target.data_type()
            )));
        }
        arrays.push(array);
    }
    Ok(arrays)
}

/// How the rows of the parts come in time order.
#[derive(Debug, PartialEq)]
enum Order {
    /// Whole parts, in this order (each sorted, none overlapping the next).
    Parts(Vec<usize>),
    /// `(part, row)` by row.
    Rows(Vec<(usize, usize)>),
}

/// The time order of the parts' rows. Whole parts when each is sorted and, ordered by their
/// first time, each ends before the next begins (or at the same time, when it came first), or
/// when there is no time column; else row by row.
fn time_order(parts: &[RowsBatch]) -> Result<Order> {
    if parts.iter().all(|p| p.sorted) {
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|&p| (parts[p].min_time, parts[p].max_time)); // stable
        let follows = |a: usize, b: usize| {
            let (a_end, b_start) = (parts[a].max_time, parts[b].min_time);
            a_end < b_start || (a_end == b_start && a < b)
        };
        if order.windows(2).all(|w| follows(w[0], w[1])) {
            return Ok(Order::Parts(order));
        }
    }
    let total: usize = parts.iter().map(|p| p.batch.num_rows()).sum();
    let mut keyed: Vec<(i64, u32, u32)> = Vec::with_capacity(total);
    for (p, part) in parts.iter().enumerate() {
        let Some(times) = times_of(&part.batch) else {
            return Ok(Order::Parts((0..parts.len()).collect()));
        };
        let p = u32::try_from(p).map_err(|_| StorageError::Invalid("too many parts".into()))?;
        for row in 0..times.len() {
            let time = time_at(Some(times), row);
            let row = u32::try_from(row).map_err(|_| StorageError::Invalid("too many rows".into()))?;
            keyed.push((time, p, row));
        }
    }
    // Stable: equal times keep the order of their parts and rows.
    keyed.sort_by_key(|&(time, _, _)| time);
    Ok(Order::Rows(
        keyed
            .into_iter()
            .map(|(_, p, row)| (p as usize, row as usize))
            .collect(),
    ))
}

/// `array` (of KQL type `from`) as KQL type `to`, `to` being `from` widened: a long as a
/// real, anything else as the JSON text of a dynamic value.
fn widen(array: &ArrayRef, from: KqlType, to: KqlType) -> Result<ArrayRef> {
    match to {
        KqlType::Real => Ok(cast(array, &DataType::Float64)?),
        KqlType::Long => Ok(cast(array, &DataType::Int64)?),
        KqlType::Dynamic => {
            let mut out = StringBuilder::with_capacity(array.len(), array.len() * 8);
            for row in 0..array.len() {
                match value_at(array.as_ref(), from, row) {
                    Some(value) => out.append_value(dynamic_text(&value)),
                    None => out.append_null(),
                }
            }
            Ok(Arc::new(out.finish()))
        }
        other => Err(StorageError::Invalid(format!("cannot widen {from} to {other}"))),
    }
}

/// The value at `row` of a segment column of KQL type `kql_type`; `None` when null.
fn value_at(array: &dyn Array, kql_type: KqlType, row: usize) -> Option<Value> {
    if array.is_null(row) {
        return None;
    }
    Some(match kql_type {
        KqlType::Bool => Value::Bool(array.as_boolean_opt()?.value(row)),
        KqlType::Long | KqlType::Int => Value::Long(array.as_primitive_opt::<Int64Type>()?.value(row)),
        KqlType::Real | KqlType::Decimal => Value::Real(array.as_primitive_opt::<Float64Type>()?.value(row)),
        KqlType::DateTime => Value::DateTime(array.as_primitive_opt::<TimestampNanosecondType>()?.value(row)),
        KqlType::Timespan => Value::Timespan(array.as_primitive_opt::<DurationNanosecondType>()?.value(row)),
        KqlType::String | KqlType::Guid => Value::String(array.as_string_opt::<i32>()?.value(row).to_string()),
        KqlType::Dynamic => Value::JsonText(Arc::from(array.as_string_opt::<i32>()?.value(row))),
    })
}

#[cfg(test)]
#[path = "combine_tests.rs"]
mod tests;
