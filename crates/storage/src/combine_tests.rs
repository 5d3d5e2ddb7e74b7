use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use trawl_common::columns::ColumnsBuilder;
use trawl_common::shred::{is_hidden_column, shredded_column};
use trawl_common::{KqlType, Row, TIME_COLUMN, Value};

use super::*;
use crate::batch::{columns_to_batch, rows_to_batch};

/// A small deterministic generator (xorshift64*).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rows of a few shapes: columns come and go, and `mixed` and `number` change type.
fn random_rows(random: &mut Random, count: usize) -> Vec<Row> {
    (0..count)
        .map(|_| {
            let mut row = Row::default();
            if random.below(20) > 0 {
                row.push(TIME_COLUMN, Value::DateTime(random.below(50) as i64));
            }
            if random.below(2) == 0 {
                row.push("name", Value::String(format!("n{}", random.below(5))));
            }
            match random.below(4) {
                0 => row.push("number", Value::Long(random.below(100) as i64)),
                1 => row.push("number", Value::Real(random.below(100) as f64 / 4.0)),
                _ => {}
            }
            match random.below(5) {
                0 => row.push("mixed", Value::Long(7)),
                1 => row.push("mixed", Value::String("x\"y".into())),
                2 => row.push("mixed", Value::Bool(true)),
                3 => row.push("mixed", Value::DateTime(1_000_000_000)),
                _ => {}
            }
            if random.below(3) > 0 {
                let service = random.below(3);
                row.push(
                    "resource",
                    Value::JsonText(Arc::from(format!(r#"{{"service.name":"s{service}","n":{service}}}"#))),
                );
            }
            row
        })
        .collect()
}

/// Each column of `batch` by name (hidden ones too), as text, for comparison.
fn by_name(batch: &RecordBatch) -> Vec<(String, Vec<String>)> {
    let mut columns: Vec<(String, Vec<String>)> = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| {
            let values = (0..array.len())
                .map(|row| datafusion::arrow::util::display::array_value_to_string(array, row).unwrap_or_default())
                .collect();
            (field.name().clone(), values)
        })
        .collect();
    columns.sort();
    columns
}

#[test]
fn combined_parts_equal_the_batch_of_all_their_rows() -> Result<()> {
    let mut random = Random(0x5eed);
    for round in 0..40 {
        let count = 1 + random.below(60) as usize;
        let rows = random_rows(&mut random, count);
        let whole = rows_to_batch(rows.clone())?;
        // Split into parts in order, as requests arrive.
        let mut parts = Vec::new();
        let mut rest = rows;
        while !rest.is_empty() {
            let take = (1 + random.below(20) as usize).min(rest.len());
            let tail = rest.split_off(take);
            parts.push(rows_to_batch(rest)?);
            rest = tail;
        }
        let combined = combine_by_time(parts)?;
        assert_eq!(by_name(&combined.batch), by_name(&whole.batch), "round {round}");
        assert_eq!((combined.min_time, combined.max_time), (whole.min_time, whole.max_time));
        let mut a: Vec<_> = combined.columns.iter().map(|c| (c.name.clone(), c.kql_type)).collect();
        let mut b: Vec<_> = whole.columns.iter().map(|c| (c.name.clone(), c.kql_type)).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "round {round}");
        // Hidden columns come after all others, as the shredder lays them out.
        let names: Vec<bool> = combined.columns.iter().map(|c| is_hidden_column(&c.name)).collect();
        assert!(names.windows(2).all(|w| w[0] <= w[1]), "round {round}: {names:?}");
        for (field, info) in combined.batch.schema().fields().iter().zip(&combined.columns) {
            assert_eq!(field.name(), &info.name);
        }
    }
    Ok(())
}

#[test]
fn columns_equal_the_rows_they_were_written_as() -> Result<()> {
    let mut rows = Vec::new();
    let mut builder = ColumnsBuilder::new();
    let time = builder.column(TIME_COLUMN, KqlType::DateTime);
    let level = builder.column("level", KqlType::String);
    let spent = builder.column("spent", KqlType::Timespan);
    let resource = builder.column("resource", KqlType::Dynamic);
    for (i, t) in [30i64, 10, 20, 10].into_iter().enumerate() {
        let mut row = Row::default();
        row.push(TIME_COLUMN, Value::DateTime(t));
        builder.set_integer(time, t);
        if i % 2 == 0 {
            row.push("level", Value::String(format!("l{i}")));
            builder.set_text(level, &format!("l{i}"));
        }
        row.push("spent", Value::Timespan(t * 3));
        builder.set_integer(spent, t * 3);
        let text = format!(r#"{{"service.name":"s{i}","host.name":{i}}}"#);
        row.push("resource", Value::JsonText(Arc::from(text.as_str())));
        let host = i.to_string();
        builder.set_bag(resource, &text, &[Some(&format!("s{i}")), None, Some(&host)]);
        rows.push(row);
        builder.end_row();
    }
    let from_rows = rows_to_batch(rows)?;
    let unsorted = columns_to_batch(builder.finish())?;
    assert!(!unsorted.sorted);
    // Sorted when combined, as a flush does.
    let from_columns = combine_by_time(vec![unsorted])?;
    // The same columns and values; the order is the one the columns were declared in (the
    // rows' is the order in which the time-sorted rows first show them).
    assert_eq!(by_name(&from_columns.batch), by_name(&from_rows.batch));
    let declared: Vec<&str> = from_columns.columns.iter().take(4).map(|c| c.name.as_str()).collect();
    assert_eq!(declared, [TIME_COLUMN, "level", "spent", "resource"]);
    for (field, info) in from_columns.batch.schema().fields().iter().zip(&from_columns.columns) {
        assert_eq!(field.name(), &info.name);
        assert_eq!(from_rows.columns.iter().find(|c| c.name == info.name), Some(info));
    }
    assert_eq!((from_columns.min_time, from_columns.max_time), (10, 30));
    let host = from_columns
        .batch
        .column_by_name(&shredded_column("resource", "host.name"))
        .map(|a| a.as_string::<i32>().value(0).to_string());
    assert_eq!(host.as_deref(), Some("1"));
    Ok(())
}
