use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::Int64Array;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use tokio::sync::mpsc;
use trawl_storage::ScanCounters;

use super::SentRows;
use crate::events::QueryEvent;
use crate::progress::Tracker;
use crate::run::Run;

fn run(sender: mpsc::Sender<QueryEvent>) -> Run {
    Run {
        sender,
        tracker: Tracker::new(Arc::new(ScanCounters::default()), Instant::now()),
        ticker: None,
        snapshots: false,
        fanout: None,
        budgets: Vec::new(),
        distributed: false,
        principal: String::new(),
        memory: trawl_common::memory::QueryMemory::standalone(1 << 30),
    }
}

fn batch(values: std::ops::Range<i64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    let column = Arc::new(Int64Array::from_iter_values(values));
    RecordBatch::try_new(schema.clone(), vec![column]).unwrap_or_else(|_| RecordBatch::new_empty(schema))
}

/// The rows a receiver got, and the kinds of the warnings among its events.
fn received(receiver: &mut mpsc::Receiver<QueryEvent>) -> (Vec<i64>, Vec<String>) {
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        match event {
            QueryEvent::Rows(batch) => {
                if let Some(column) = batch.column(0).as_any().downcast_ref::<Int64Array>() {
                    rows.extend(column.values().iter().copied());
                }
            }
            QueryEvent::Warning(warning) => warnings.push(warning.kind),
            _ => {}
        }
    }
    (rows, warnings)
}

#[tokio::test]
async fn rows_go_out_as_they_come_when_nothing_is_held() {
    let (sender, mut receiver) = mpsc::channel(16);
    let run = run(sender);
    let mut sent = SentRows::new("t", 100, 1 << 30);
    assert!(sent.send(&run, batch(0..3)).await.is_ok_and(|more| more));
    assert!(sent.delivered);
    assert_eq!(received(&mut receiver).0, vec![0, 1, 2]);
}

#[tokio::test]
async fn held_rows_wait_for_the_release_and_a_dropped_run_sends_none() {
    let (sender, mut receiver) = mpsc::channel(16);
    let run = run(sender);
    let mut sent = SentRows::new("t", 100, 1 << 30).holding(1 << 20);
    assert!(sent.send(&run, batch(0..3)).await.is_ok_and(|more| more));
    assert!(sent.send(&run, batch(3..5)).await.is_ok_and(|more| more));
    assert_eq!(sent.rows, 5);
    // A failure now leaves nothing sent: the query can run again.
    assert!(!sent.delivered);
    assert_eq!(received(&mut receiver).0, Vec::<i64>::new());
    drop(sent);
    assert_eq!(received(&mut receiver).0, Vec::<i64>::new());

    let mut sent = SentRows::new("t", 100, 1 << 30).holding(1 << 20);
    assert!(sent.send(&run, batch(0..3)).await.is_ok_and(|more| more));
    assert!(sent.release(&run).await.is_ok());
    assert!(sent.delivered);
    assert_eq!(received(&mut receiver).0, vec![0, 1, 2]);
}

#[tokio::test]
async fn rows_past_the_held_bytes_go_out_after_those_held() {
    let (sender, mut receiver) = mpsc::channel(16);
    let run = run(sender);
    let first = batch(0..1000);
    let mut sent = SentRows::new("t", 10_000, 1 << 30).holding(first.get_array_memory_size());
    assert!(sent.send(&run, first).await.is_ok_and(|more| more));
    assert!(!sent.delivered);
    assert!(sent.send(&run, batch(1000..1010)).await.is_ok_and(|more| more));
    assert!(sent.delivered);
    let (rows, _) = received(&mut receiver);
    assert_eq!(rows, (0..1010).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_result_limit_sends_the_held_rows_then_the_cut_and_a_warning() {
    let (sender, mut receiver) = mpsc::channel(16);
    let run = run(sender);
    let mut sent = SentRows::new("t", 5, 1 << 30).holding(1 << 20);
    assert!(sent.send(&run, batch(0..3)).await.is_ok_and(|more| more));
    assert!(sent.send(&run, batch(3..10)).await.is_ok_and(|more| !more));
    assert_eq!(sent.rows, 5);
    let (rows, warnings) = received(&mut receiver);
    assert_eq!(rows, vec![0, 1, 2, 3, 4]);
    assert_eq!(warnings, vec!["ResultTruncated".to_string()]);
}

#[tokio::test]
async fn the_byte_limit_cuts_within_a_batch_and_counts_strings_that_share_their_bytes() {
    use datafusion::arrow::array::StringViewBuilder;
    let (sender, mut receiver) = mpsc::channel(16);
    let run = run(sender);
    // 1,000 rows of one 1 KiB string, stored once: 1 MiB of cell data as a face writes it.
    let mut strings = StringViewBuilder::new();
    if strings.try_append_value_n("x".repeat(1024), 1000).is_err() {
        panic!("cannot build the strings");
    }
    let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8View, false)]));
    let Ok(wide) = RecordBatch::try_new(schema, vec![Arc::new(strings.finish())]) else {
        panic!("cannot build the batch");
    };
    assert!(super::payload_bytes(&wide) >= 1000 * 1024);
    assert!(wide.get_array_memory_size() < 100 * 1024, "the string is stored once");
    let mut sent = SentRows::new("t", 10_000, 100 * 1024);
    assert!(sent.send(&run, wide).await.is_ok_and(|more| !more));
    let mut rows = 0;
    let mut warnings = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        match event {
            QueryEvent::Rows(batch) => rows += batch.num_rows(),
            QueryEvent::Warning(warning) => warnings.push(warning.message),
            _ => {}
        }
    }
    // About 100 KiB of 1 KiB strings (each row writes a few bytes more than its string).
    assert!((95..=100).contains(&rows), "{rows} rows");
    assert_eq!(sent.rows, rows);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("of cell data at most"), "{}", warnings[0]);
}
