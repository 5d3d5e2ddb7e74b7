//! Start-up warming: the footers, and a few small queries of the common shapes.

use crate::fixture::{Fixture, TestResult, log};
use trawl_engine::journal::RunState;

#[tokio::test]
async fn warm_up_queries_run_over_the_newest_segment_and_all_succeed() -> TestResult {
    let f = Fixture::new().await?;
    // No data yet: only the query that reads no table.
    assert_eq!(f.engine.warm_queries().await?, 1);
    f.segment(vec![
        log(0, "INFO", "a", "s", Some("/r")),
        log(1, "ERROR", "b", "s", None),
    ])
    .await?;
    f.segment(vec![log(5, "WARN", "d", "t", None)]).await?;
    let ran = f.engine.warm_queries().await?;
    assert_eq!(ran, 7, "every warm-up query succeeds");
    let now = trawl_common::time::now_nanos();
    let entries = f.engine.journal().entries(Some("warm-up"), now);
    assert_eq!(entries.len(), 8, "{entries:?}");
    assert!(entries.iter().all(|e| e.state == RunState::Completed), "{entries:?}");
    // The data is unchanged and queries answer as before.
    assert_eq!(f.rows("default | count").await?, vec![vec![serde_json::json!(3)]]);
    Ok(())
}
