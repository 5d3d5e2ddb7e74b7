//! A damaged segment file on disk affects only the queries and merges that read it: the engine
//! keeps serving and the good segments' rows stay. The files are the `segment_file` fuzz
//! target's findings, on which the Parquet and Arrow decoders panic: a footer whose embedded
//! Arrow schema has an integer of an impossible width, and a column chunk with a negative
//! offset.

use std::time::Duration;

use trawl_storage::{MergePolicy, Merger};

use trawl_engine::QueryWindow;

use crate::fixture::{Fixture, MINUTE, T0, TestResult, log};

#[tokio::test]
async fn a_footer_with_a_malformed_arrow_schema_affects_only_its_readers() -> TestResult {
    damaged_segment_affects_only_its_readers(include_bytes!("data/segment_bad_arrow_schema.parquet")).await
}

#[tokio::test]
async fn a_column_chunk_with_a_negative_offset_affects_only_its_readers() -> TestResult {
    damaged_segment_affects_only_its_readers(include_bytes!("data/segment_negative_column_offset.parquet")).await
}

async fn damaged_segment_affects_only_its_readers(damaged_file: &'static [u8]) -> TestResult {
    let f = Fixture::new().await?;
    for minute in 0..8 {
        f.segment(vec![log(minute, "INFO", "fine", "s", None)]).await?;
    }
    // The damaged file is registered as a segment like the others (its catalog row says what
    // a good one of its size would).
    let live = f.catalog.live_segments("default", "default", None).await?;
    let mut damaged = live.first().ok_or("no segment")?.clone();
    damaged.id = "damaged".into();
    damaged.path = "default/default/damaged.parquet".into();
    damaged.bytes = damaged_file.len() as u64;
    f.writer.store().put_durable(&damaged.path, damaged_file.into()).await?;
    f.catalog.commit_segments(&[damaged], &[]).await?;

    // A query that reads the damaged segment is answered with an error; the engine goes on.
    let query = "default | where body == 'fine' | count";
    let failed = f.run(query).await;
    assert!(failed.is_err_and(|e| !e.message.is_empty()));
    assert_eq!(f.rows("print x = 1").await?, vec![vec![serde_json::json!(1)]]);
    // A query whose window leaves it out (it has minute 0's time range) reads the rest.
    let later = QueryWindow {
        since: Some(T0 + MINUTE),
        until: None,
    };
    assert_eq!(f.run_window(query, later).await?.1, vec![vec![serde_json::json!(7)]]);

    let merger = Merger::new(
        f.catalog.clone(),
        f.writer.clone(),
        MergePolicy {
            grace: Duration::ZERO,
            ..MergePolicy::default()
        },
    )?;
    // The merge of its group fails (logged; those segments stay live), the pass goes on.
    let report = merger.merge_once().await?;
    assert_eq!(report.failed, 1, "{report:?}");
    assert_eq!(f.catalog.live_segments("default", "default", None).await?.len(), 9);
    assert_eq!(f.run_window(query, later).await?.1, vec![vec![serde_json::json!(7)]]);
    Ok(())
}
