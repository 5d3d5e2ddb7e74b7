//! A damaged segment file on disk affects only the queries and merges that read it: the engine
//! keeps serving, queries leave the segment out and name it as a partial failure, and the good
//! segments' rows stay. The files are the `segment_file` fuzz target's findings: two on which
//! the Parquet and Arrow decoders panic (a footer whose embedded Arrow schema has an integer of
//! an impossible width, and a column chunk with a negative offset), and one on which the
//! Parquet decoder spins (a footer claiming billions of booleans).

use std::time::Duration;

use trawl_storage::{MergePolicy, Merger};

use trawl_engine::{PartialFailure, QueryEvent, QueryRequest, QueryWindow, RunOptions};

use crate::fixture::{Fixture, MINUTE, T0, TestResult, log};

#[tokio::test]
async fn a_footer_with_a_malformed_arrow_schema_affects_only_its_readers() -> TestResult {
    damaged_segment_affects_only_its_readers(
        include_bytes!("data/segment_bad_arrow_schema.parquet"),
        "cannot be read",
    )
    .await
}

#[tokio::test]
async fn a_column_chunk_with_a_negative_offset_affects_only_its_readers() -> TestResult {
    damaged_segment_affects_only_its_readers(
        include_bytes!("data/segment_negative_column_offset.parquet"),
        "cannot be read",
    )
    .await
}

/// A footer with a field the decoder does not know: thousands of lists, each claiming two
/// billion booleans. The Parquet crate's decoder skips them element by element without reading
/// a byte (37 s for this 12 KB file in a fuzzing build; hours in a bigger one); the segment
/// check refuses it at once.
#[tokio::test]
async fn a_footer_claiming_billions_of_booleans_is_refused_at_once() -> TestResult {
    damaged_segment_affects_only_its_readers(
        include_bytes!("data/segment_footer_claims_billions_of_booleans.parquet"),
        "its footer does not decode: a collection claims more elements than bytes remain",
    )
    .await
}

/// `reason` is part of the partial failure's message.
async fn damaged_segment_affects_only_its_readers(damaged_file: &'static [u8], reason: &str) -> TestResult {
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

    // A query that reads the damaged segment leaves it out and says so; the engine goes on.
    let query = "default | where body == 'fine' | count";
    let (rows, failures) = rows_and_failures(&f, query).await?;
    assert_eq!(rows, vec![vec![serde_json::json!(8)]]);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].segment_ids, vec!["damaged".to_string()]);
    assert!(
        failures[0].message.contains("cannot be read") && failures[0].message.contains(reason),
        "{}",
        failures[0].message
    );
    // The faces without a field for it get a warning naming the segment.
    let output = f.engine.execute(&request(query)).await?;
    assert!(
        output
            .warnings
            .iter()
            .any(|w| w.kind == "PartialFailure" && w.message.contains("damaged")),
        "{:?}",
        output.warnings
    );
    assert_eq!(f.rows("print x = 1").await?, vec![vec![serde_json::json!(1)]]);
    // A count of all rows is answered from the catalog's row counts and opens no segment.
    assert_eq!(rows_and_failures(&f, "default | count").await?.1, Vec::new());
    // A query whose window leaves it out (it has minute 0's time range) reads the rest.
    let later = QueryWindow {
        since: Some(T0 + MINUTE),
        until: None,
    };
    assert_eq!(f.run_window(query, later).await?.1, vec![vec![serde_json::json!(7)]]);

    // Merges on a runtime of their own, as `trawl serve` runs them.
    let background = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let merger = Merger::new(
        f.catalog.clone(),
        f.writer.clone(),
        MergePolicy {
            grace: Duration::ZERO,
            ..MergePolicy::default()
        },
    )?
    .on_runtime(background.handle().clone());
    // The merge of its group fails (logged; those segments stay live), the pass goes on.
    let report = merger.merge_once().await?;
    background.shutdown_background();
    assert_eq!(report.failed, 1, "{report:?}");
    assert_eq!((report.live, report.small), (9, 9));
    assert_eq!(f.catalog.live_segments("default", "default", None).await?.len(), 9);
    assert_eq!(f.run_window(query, later).await?.1, vec![vec![serde_json::json!(7)]]);
    Ok(())
}

#[tokio::test]
async fn a_segment_whose_object_is_missing_is_left_out_and_named() -> TestResult {
    let f = Fixture::new().await?;
    for minute in 0..3 {
        f.segment(vec![log(minute, "INFO", "fine", "s", None)]).await?;
    }
    let live = f.catalog.live_segments("default", "default", None).await?;
    let mut missing = live.first().ok_or("no segment")?.clone();
    missing.id = "missing".into();
    missing.path = "default/default/missing.parquet".into();
    f.catalog.commit_segments(&[missing], &[]).await?;
    let (rows, failures) = rows_and_failures(&f, "default | summarize n = count() by body").await?;
    assert_eq!(rows, vec![vec![serde_json::json!("fine"), serde_json::json!(3)]]);
    assert_eq!(
        failures,
        vec![PartialFailure {
            segment_ids: vec!["missing".into()],
            message: "the segment's object is missing".into(),
        }]
    );
    Ok(())
}

fn request(text: &str) -> QueryRequest {
    QueryRequest {
        text: text.to_string(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    }
}

/// The rows of the first result of `query`, and the partial failures its run reported.
async fn rows_and_failures(
    f: &Fixture,
    query: &str,
) -> Result<(Vec<Vec<serde_json::Value>>, Vec<PartialFailure>), Box<dyn std::error::Error>> {
    let mut events = f.engine.run(request(query), RunOptions::default());
    let mut batches = Vec::new();
    let mut columns = Vec::new();
    let mut failures = Vec::new();
    while let Some(event) = events.next_event().await {
        match event {
            QueryEvent::TableStarted { columns: started, .. } if columns.is_empty() => columns = started,
            QueryEvent::Rows(batch) => batches.push(batch),
            QueryEvent::PartialFailure(failure) => failures.push(failure),
            QueryEvent::Failed(error) => return Err(error.into()),
            _ => {}
        }
    }
    let rows = trawl_engine::ResultTable {
        name: "PrimaryResult".into(),
        columns,
        batches,
    }
    .json_rows();
    Ok((rows, failures))
}

/// A page header with a field the decoder does not know: a list claiming two billion
/// booleans. The footer is sound, so planning keeps the segment; the scan's reader checks the
/// header before the Parquet decoder walks it, and the query fails at once, naming the segment.
#[tokio::test]
async fn a_page_header_claiming_billions_of_booleans_fails_its_query_at_once() -> TestResult {
    use datafusion::parquet::file::metadata::ParquetMetaDataReader;

    let f = Fixture::new().await?;
    f.segment(vec![log(0, "INFO", "fine", "s", None)]).await?;
    let live = f.catalog.live_segments("default", "default", None).await?;
    let segment = live.first().ok_or("no segment")?.clone();
    let original = f.writer.store().get(&segment.path).await?;
    let footer = ParquetMetaDataReader::new().parse_and_finish(&original)?;
    let mut bytes = original.to_vec();
    let body = footer
        .row_group(0)
        .columns()
        .iter()
        .find(|c| c.column_path().string() == "body")
        .ok_or("no body column")?;
    let start = usize::try_from(body.dictionary_page_offset().unwrap_or(body.data_page_offset()))?;
    // Field 100, a list of 0x7fffffff booleans, written over the start of the first header.
    let claim = [0x09, 0xc8, 0x01, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07];
    bytes[start..start + claim.len()].copy_from_slice(&claim);
    f.writer.store().put_durable(&segment.path, bytes.into()).await?;

    let error = f
        .engine
        .execute(&request("default | where body == 'fine' | count"))
        .await
        .err()
        .ok_or("the query over a damaged page header succeeded")?;
    let message = error.to_string();
    assert!(
        message.contains(&format!("page header at byte {start} does not decode")) && message.contains(&segment.path),
        "{message}"
    );
    assert_eq!(f.rows("print x = 1").await?, vec![vec![serde_json::json!(1)]]);
    Ok(())
}
