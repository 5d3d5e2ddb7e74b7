//! Merging keeps every row exactly once, also while queries run.

use std::time::Duration;

use serde_json::json;
use trawl_storage::{MergePolicy, Merger};

use crate::fixture::{Fixture, TestResult, log, span};

#[tokio::test]
async fn merge_rewrites_small_segments_and_keeps_rows() -> TestResult {
    let f = Fixture::new().await?;
    for i in 0..8 {
        // Segments of two kinds, logs (with and without attributes) and spans, interleaved in
        // time: each kind is merged on its own.
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
    // On a runtime of its own, as `trawl serve` runs merges; the catalog is used from this one.
    let background = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let merger = Merger::new(f.catalog.clone(), f.writer.clone(), policy)?.on_runtime(background.handle().clone());
    let report = merger.merge_once().await?;
    assert_eq!((report.merges, report.inputs, report.rows), (2, 8, 12));
    assert_eq!((report.live, report.small), (2, 2));
    let live = f.catalog.live_segments("default", "default", None).await?;
    assert_eq!(live.len(), 2);
    assert!(live.iter().all(|s| s.merge_level == 1));
    let mut kinds: Vec<_> = live
        .iter()
        .map(|s| trawl_storage::schema::row_kind(s.columns.iter().map(|c| c.name.as_str())))
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["logs", "spans"]);
    assert_eq!(live.iter().map(|s| s.rows).collect::<Vec<_>>().iter().sum::<u64>(), 12);
    let after = f
        .rows("default | summarize count() by severity_text, span_name | sort by severity_text asc, span_name asc")
        .await?;
    assert_eq!(before, after);
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(12)]]);
    // Tombstoned inputs are deleted after the grace period.
    assert_eq!(merger.purge_once().await?, 8);
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(12)]]);
    // Nothing left to merge.
    assert_eq!(merger.merge_once().await?.merges, 0);
    background.shutdown_background();
    Ok(())
}

#[tokio::test]
async fn merge_streams_overlapping_segments_into_time_order_a_few_at_a_time() -> TestResult {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::TimestampNanosecondType;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let f = Fixture::new().await?;
    // Ten segments whose times interleave: segment i holds minutes i, i + 10 and i + 20.
    for i in 0..10 {
        f.segment(vec![
            log(i + 20, "INFO", "c", "s", None),
            log(i, "INFO", "a", "s", None),
            log(i + 10, "INFO", "b", "s", None),
        ])
        .await?;
    }
    let policy = MergePolicy {
        max_inputs: 4,
        ..MergePolicy::default()
    };
    let merger = Merger::new(f.catalog.clone(), f.writer.clone(), policy)?;
    let report = merger.merge_once().await?;
    // Groups of 4, 4 and 2; the last is under `min_inputs` and waits.
    assert_eq!((report.merges, report.inputs, report.rows), (2, 8, 24));
    let live = f.catalog.live_segments("default", "default", None).await?;
    assert_eq!(live.len(), 4);
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(30)]]);
    for merged in live.iter().filter(|s| s.merge_level == 1) {
        let bytes = f.writer.store().get(&merged.path).await?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)?.build()?;
        let mut times = Vec::new();
        for batch in reader {
            let batch = batch?;
            let column = batch.column_by_name("timestamp").ok_or("no timestamp column")?;
            let column = column.as_primitive::<TimestampNanosecondType>();
            times.extend((0..column.len()).map(|i| column.value(i)));
        }
        assert_eq!(times.len(), 12);
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "not time-sorted: {times:?}");
    }
    Ok(())
}

/// Objects written but never registered (a crash between the put and the commit) are deleted
/// once they are older than the threshold; registered segments and young objects stay.
#[tokio::test]
async fn orphaned_objects_are_swept_and_registered_ones_kept() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(vec![log(0, "INFO", "kept", "s", None)]).await?;
    let store = f.writer.store();
    store
        .put_durable(
            "default/default/orphan.parquet",
            "not registered".as_bytes().to_vec().into(),
        )
        .await?;
    let merger = Merger::new(f.catalog.clone(), f.writer.clone(), MergePolicy::default())?;
    // Young: left alone (its commit may be on its way).
    assert_eq!(merger.sweep_orphans(Duration::from_secs(3600)).await?, 0);
    assert!(store.get("default/default/orphan.parquet").await.is_ok());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(merger.sweep_orphans(Duration::from_millis(10)).await?, 1);
    assert!(store.get("default/default/orphan.parquet").await.is_err());
    assert_eq!(f.rows("default | count").await?, vec![vec![json!(1)]]);
    assert_eq!(merger.sweep_orphans(Duration::ZERO).await?, 0);
    Ok(())
}

/// Merges group segments by the signal the catalog recorded for them, and the merged segment
/// keeps it: a log record whose attributes happen to include a `duration` column stays with
/// the logs (its columns alone would say spans).
#[tokio::test]
async fn merges_group_by_the_recorded_signal_and_keep_it() -> TestResult {
    use trawl_common::Signal;

    let f = Fixture::new().await?;
    for minute in 0..8 {
        let (signal, rows) = if minute % 2 == 0 {
            let mut row = log(minute, "INFO", "a log with a duration attribute", "s", None);
            row.push("duration", trawl_common::Value::Timespan(5));
            (Signal::Logs, vec![row])
        } else {
            (Signal::Traces, vec![span(minute, "op", "t1", 5, "s")])
        };
        let mut meta = f.writer.write_rows("default", "default", rows).await?;
        meta.signal = Some(signal);
        f.catalog.commit_segments(&[meta], &[]).await?;
    }
    let policy = MergePolicy {
        grace: Duration::ZERO,
        ..MergePolicy::default()
    };
    let merger = Merger::new(f.catalog.clone(), f.writer.clone(), policy)?;
    let report = merger.merge_once().await?;
    assert_eq!((report.merges, report.inputs), (2, 8));
    let mut signals: Vec<Option<Signal>> = f
        .catalog
        .live_segments("default", "default", None)
        .await?
        .iter()
        .map(|s| s.signal)
        .collect();
    signals.sort();
    assert_eq!(signals, vec![Some(Signal::Logs), Some(Signal::Traces)]);
    Ok(())
}
