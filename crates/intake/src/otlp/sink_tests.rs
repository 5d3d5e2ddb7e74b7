//! The ingest path writes columns; queries read what the row mapping describes. These tests
//! hold the two to the same batch, hidden columns included, on random requests.

use trawl_common::shred::SHREDDED_KEYS;
use trawl_storage::{Combined, RowsBatch, columns_to_batch, combine_by_time, rows_to_batch};

use super::*;
use crate::otlp::arbitrary::{Random, by_name, logs_request, traces_request};
use crate::otlp::fixtures::INGEST_NANOS;
use crate::otlp::{logs_to_columns, logs_to_rows, traces_to_columns, traces_to_rows};
use crate::{ColumnsOutput, IntakeOutput};

#[test]
fn every_bag_column_has_room_for_its_shredded_keys() {
    assert!(SHREDDED_KEYS.iter().all(|(_, keys)| keys.len() <= MAX_SHREDDED_KEYS));
}

fn assert_same(from_rows: &RowsBatch, from_columns: &Combined, round: usize) -> Result<(), Box<dyn std::error::Error>> {
    let schema = from_columns.batches.first().ok_or("no batches")?.schema();
    let batch = datafusion::arrow::compute::concat_batches(&schema, &from_columns.batches)?;
    assert_eq!(by_name(&batch), by_name(&from_rows.batch), "round {round}");
    let mut a = from_columns.columns.clone();
    let mut b = from_rows.columns.clone();
    a.sort_by(|x, y| x.name.cmp(&y.name));
    b.sort_by(|x, y| x.name.cmp(&y.name));
    assert_eq!(a, b, "round {round}");
    assert_eq!(
        (from_columns.min_time, from_columns.max_time),
        (from_rows.min_time, from_rows.max_time),
        "round {round}"
    );
    Ok(())
}

/// Maps 300 random requests both ways and compares; returns how many had rows to compare.
fn compare_paths<R>(
    mut random: Random,
    request: impl Fn(&mut Random) -> R,
    to_rows: impl Fn(&R) -> IntakeOutput,
    to_columns: impl Fn(&R) -> ColumnsOutput,
) -> Result<usize, Box<dyn std::error::Error>> {
    let mut compared = 0;
    for round in 0..300 {
        let request = request(&mut random);
        let rows = to_rows(&request);
        let columns = to_columns(&request);
        assert_eq!(
            (columns.rejected, &columns.error_message),
            (rows.rejected, &rows.error_message)
        );
        assert_eq!(columns.columns.rows, rows.rows.len());
        if rows.rows.is_empty() {
            continue;
        }
        assert_same(
            &rows_to_batch(rows.rows)?,
            &combine_by_time(vec![columns_to_batch(columns.columns)?])?,
            round,
        )?;
        compared += 1;
    }
    Ok(compared)
}

#[test]
fn log_columns_equal_log_rows() -> Result<(), Box<dyn std::error::Error>> {
    let compared = compare_paths(
        Random(0x1065),
        logs_request,
        |r| logs_to_rows(r, INGEST_NANOS),
        |r| logs_to_columns(r, INGEST_NANOS),
    )?;
    assert!(compared > 200, "{compared}");
    Ok(())
}

#[test]
fn span_columns_equal_span_rows() -> Result<(), Box<dyn std::error::Error>> {
    let compared = compare_paths(
        Random(0x59a5),
        traces_request,
        |r| traces_to_rows(r, INGEST_NANOS),
        |r| traces_to_columns(r, INGEST_NANOS),
    )?;
    assert!(compared > 100, "{compared}");
    Ok(())
}

/// Items leave by key; equal keys in the order they came; each with its own scope list's cells.
#[test]
fn items_leave_in_time_order_and_ties_in_request_order() {
    let first = SharedBags::for_resource(None);
    let mut second = SharedBags::for_resource(None);
    second.set_scope(Some(&trawl_proto::otlp::common::v1::InstrumentationScope {
        name: "second".into(),
        ..Default::default()
    }));
    let mapped = |items: &[(u64, [usize; 3])]| {
        let mut order = TimeOrder::with_capacity(items.len());
        for (n, &(key, at)) in items.iter().enumerate() {
            order.push(if at[0] == 0 { &first } else { &second }, at, key, n);
        }
        let mut out = Vec::new();
        order.map(|shared, at, n| out.push((n, at, !shared.scope_name.is_empty())));
        out
    };
    // Already in order: as they came.
    let sorted = [(1, [0, 0, 0]), (1, [0, 0, 1]), (2, [1, 0, 0])];
    assert_eq!(
        mapped(&sorted),
        [(0, [0, 0, 0], false), (1, [0, 0, 1], false), (2, [1, 0, 0], true)]
    );
    // Out of order, with ties: by key, ties in the request's order.
    let shuffled = [
        (5, [0, 0, 0]),
        (3, [0, 0, 1]),
        (5, [0, 0, 2]),
        (1, [1, 0, 0]),
        (3, [1, 0, 1]),
    ];
    let order: Vec<usize> = mapped(&shuffled).into_iter().map(|(n, ..)| n).collect();
    assert_eq!(order, [3, 1, 4, 0, 2]);
    let lists: Vec<bool> = mapped(&shuffled).into_iter().map(|(.., second)| second).collect();
    assert_eq!(lists, [true, false, true, false, false]);
}
