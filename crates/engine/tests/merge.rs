//! Merging keeps every row exactly once, also while queries run.

use std::time::Duration;

use serde_json::json;
use trawl_storage::{MergePolicy, Merger};

use crate::fixture::{Fixture, TestResult, log, span};

#[tokio::test]
async fn merge_rewrites_small_segments_and_keeps_rows() -> TestResult {
    let f = Fixture::new().await?;
    for i in 0..6 {
        // Segments of different shapes: logs and spans, so the merged schema is a union.
        if i % 2 == 0 {
            f.segment(vec![
                log(i, "INFO", "a", "s", Some("/r")),
                log(i, "ERROR", "b", "s", None),
            ])
            .await?;
        } else {
            f.segment(vec![span(i, "op", "t1", 5, "s")]).await?;
        }
    }
    let before = f
        .rows("default | summarize count() by severity_text, span_name | sort by severity_text asc, span_name asc")
        .await?;
    let policy = MergePolicy {
        grace: Duration::ZERO,
        ..MergePolicy::default()
    };
    let merger = Merger::new(f.catalog.clone(), f.writer.clone(), policy)?;
    let report = merger.merge_once().await?;
    assert_eq!((report.merges, report.inputs, report.rows), (1, 6, 9));
    let live = f.catalog.live_segments("default", "default", None).await?;
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].merge_level, 1);
    let after = f
        .rows("default | summarize count() by severity_text, span_name | sort by severity_text asc, span_name asc")
        .await?;
    assert_eq!(before, after);
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(9)]]);
    // Rows come out time-sorted within the merged segment.
    let times = f.rows("default | project timestamp | take 100").await?;
    let mut sorted = times.clone();
    sorted.sort_by_key(|r| r[0].as_str().unwrap_or_default().to_string());
    assert_eq!(times, sorted);
    // Tombstoned inputs are deleted after the grace period.
    assert_eq!(merger.purge_once().await?, 6);
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(9)]]);
    // Nothing left to merge.
    assert_eq!(merger.merge_once().await?.merges, 0);
    Ok(())
}
