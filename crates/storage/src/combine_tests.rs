use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use trawl_common::columns::ColumnsBuilder;
use trawl_common::shred::{is_hidden_column, shredded_column};
use trawl_common::{KqlType, Row, TIME_COLUMN, Value};

use super::*;
use crate::batch::{columns_to_batch, rows_to_batch, time_at, times_of};

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

/// The combined batches as one.
fn one_batch(combined: &Combined) -> Result<RecordBatch> {
    let schema = combined.batches.first().ok_or("no batches").map(|b| b.schema());
    let schema = schema.map_err(|e| StorageError::Invalid(e.into()))?;
    Ok(datafusion::arrow::compute::concat_batches(&schema, &combined.batches)?)
}

/// The times of the combined rows, in order.
fn times(combined: &Combined) -> Vec<i64> {
    combined
        .batches
        .iter()
        .flat_map(|b| {
            let times = times_of(b);
            (0..b.num_rows()).map(move |row| time_at(times, row))
        })
        .collect()
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
        assert_eq!(by_name(&one_batch(&combined)?), by_name(&whole.batch), "round {round}");
        assert_eq!((combined.min_time, combined.max_time), (whole.min_time, whole.max_time));
        let mut a: Vec<_> = combined.columns.iter().map(|c| (c.name.clone(), c.kql_type)).collect();
        let mut b: Vec<_> = whole.columns.iter().map(|c| (c.name.clone(), c.kql_type)).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "round {round}");
        // Hidden columns come after all others, as the shredder lays them out.
        let names: Vec<bool> = combined.columns.iter().map(|c| is_hidden_column(&c.name)).collect();
        assert!(names.windows(2).all(|w| w[0] <= w[1]), "round {round}: {names:?}");
        for (field, info) in one_batch(&combined)?.schema().fields().iter().zip(&combined.columns) {
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
    assert_eq!(from_columns.batches.len(), 1);
    let from_columns = RowsBatch {
        batch: one_batch(&from_columns)?,
        columns: from_columns.columns,
        min_time: from_columns.min_time,
        max_time: from_columns.max_time,
        sorted: true,
    };
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

#[test]
fn sorted_parts_apart_in_time_are_passed_on_whole_in_time_order() -> std::result::Result<(), Box<dyn std::error::Error>>
{
    let part = |times: &[i64], tag: &str| -> Result<RowsBatch> {
        let rows = times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let mut row = Row::default();
                row.push(TIME_COLUMN, Value::DateTime(t));
                row.push("tag", Value::String(format!("{tag}{i}")));
                if tag == "c" {
                    row.push("extra", Value::Long(i as i64));
                }
                row
            })
            .collect();
        rows_to_batch(rows)
    };
    // Arrival order c, a, b; time order a, b, c. `b` starts when `a` ends, and came after it.
    let combined = combine_by_time(vec![
        part(&[50, 60], "c")?,
        part(&[1, 5, 9], "a")?,
        part(&[9, 20], "b")?,
    ])?;
    assert_eq!(combined.batches.len(), 3, "passed on whole, not copied into one batch");
    assert_eq!(times(&combined), [1, 5, 9, 9, 20, 50, 60]);
    let batch = one_batch(&combined)?;
    let tags = batch.column_by_name("tag").ok_or("no tag")?.as_string::<i32>();
    let tags: Vec<&str> = tags.iter().flatten().collect();
    assert_eq!(tags, ["a0", "a1", "a2", "b0", "b1", "c0", "c1"]);
    // A column only one part has is null in the others.
    assert_eq!(batch.column_by_name("extra").ok_or("no extra")?.null_count(), 5);
    assert_eq!((combined.min_time, combined.max_time), (1, 60));

    // Touching at the same time in the other arrival order, or overlapping: one
    // interleaved batch, equal times in arrival order.
    for parts in [
        vec![part(&[9, 20], "b")?, part(&[1, 9], "a")?],
        vec![part(&[1, 30], "a")?, part(&[9, 20], "b")?],
    ] {
        let combined = combine_by_time(parts)?;
        assert_eq!(combined.batches.len(), 1);
        let times = times(&combined);
        assert!(times.is_sorted(), "{times:?}");
        let batch = one_batch(&combined)?;
        let tags = batch.column_by_name("tag").ok_or("no tag")?.as_string::<i32>();
        let tags: Vec<&str> = tags.iter().flatten().collect();
        if times == [1, 9, 9, 20] {
            assert_eq!(tags, ["a0", "b0", "a1", "b1"]);
        }
    }
    Ok(())
}
