//! Queries run as event streams: order of events, progress counters that match what the
//! scans did, the concurrency limit and its queue, deadlines and cancellation.

use std::time::Duration;

use trawl_common::ErrorCode;
use trawl_engine::{EngineConfig, Progress, QueryEvent, QueryEvents, QueryRequest, QueryWindow, RunOptions};

use crate::fixture::{Fixture, MINUTE, T0, TestResult, log, span};

fn request(text: &str) -> QueryRequest {
    QueryRequest {
        text: text.to_string(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    }
}

fn with_progress() -> RunOptions {
    RunOptions {
        progress_every: Some(Duration::from_millis(1)),
        timeout: None,
        snapshots: false,
        face: "",
        fanout_nodes_percent: None,
        ..RunOptions::default()
    }
}

/// Every event of a run, until it ends.
async fn drain(mut events: QueryEvents) -> Vec<QueryEvent> {
    let mut all = Vec::new();
    while let Some(event) = events.next_event().await {
        all.push(event);
    }
    all
}

fn last_progress(events: &[QueryEvent]) -> Result<Progress, String> {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            QueryEvent::Progress(p) => Some((**p).clone()),
            _ => None,
        })
        .ok_or_else(|| "no progress event".to_string())
}

/// Kinds of the events, with consecutive progress reports shown once.
fn shape(events: &[QueryEvent]) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for event in events {
        let kind = match event {
            QueryEvent::Progress(_) => "progress",
            QueryEvent::Planned { .. } => "planned",
            QueryEvent::TableStarted { .. } => "table",
            QueryEvent::Rows(_) => "rows",
            QueryEvent::Snapshot(_) => "snapshot",
            QueryEvent::TableFinished { .. } => "table-finished",
            QueryEvent::Warning(_) => "warning",
            QueryEvent::PartialFailure(_) => "partial-failure",
            QueryEvent::Finished => "finished",
            QueryEvent::Failed(_) => "failed",
        };
        if kinds.last() != Some(&kind) {
            kinds.push(kind);
        }
    }
    kinds
}

/// Three log segments (ERROR, ERROR, WARN) and one span segment.
async fn four_segments() -> Result<Fixture, Box<dyn std::error::Error>> {
    let f = Fixture::new().await?;
    f.segment((0..50).map(|m| log(m, "ERROR", "disk full", "api", None)).collect())
        .await?;
    f.segment((100..150).map(|m| log(m, "ERROR", "timeout", "db", None)).collect())
        .await?;
    f.segment((200..230).map(|m| log(m, "WARN", "slow", "db", None)).collect())
        .await?;
    f.segment((300..310).map(|m| span(m, "GET", "t1", 5, "api")).collect())
        .await?;
    Ok(f)
}

#[tokio::test]
async fn progress_reports_the_memory_a_query_holds() -> TestResult {
    let f = four_segments().await?;
    // A grouping and a sort reserve memory for their state; a count keeps almost none.
    let events = drain(f.engine.run(
        request("default | summarize n = count() by severity_text, tostring(body) | sort by n desc, severity_text asc"),
        with_progress(),
    ))
    .await;
    let progress = last_progress(&events)?;
    assert!(progress.memory_peak_bytes > 0, "{progress:?}");
    // Once the query finished, its operators released what they held.
    assert_eq!(progress.memory_reserved_bytes, 0, "{progress:?}");
    Ok(())
}

#[tokio::test]
async fn events_come_in_order_and_progress_counts_what_the_scan_did() -> TestResult {
    let f = four_segments().await?;
    let events = drain(
        f.engine
            .run(request("default | where body contains 'o' | count"), with_progress()),
    )
    .await;
    let kinds = shape(&events);
    assert_eq!(kinds.first(), Some(&"progress"), "{kinds:?}");
    assert_eq!(kinds[kinds.len() - 2..], ["progress", "finished"], "{kinds:?}");
    let without_progress: Vec<_> = kinds.into_iter().filter(|k| *k != "progress").collect();
    assert_eq!(
        without_progress,
        ["planned", "table", "rows", "table-finished", "finished"]
    );
    let progress = last_progress(&events)?;
    assert_eq!(progress.chunks_total, 4);
    // The span segment has no body: the filter cannot pass there.
    assert_eq!(progress.chunks_skipped_required_fields, 1);
    assert_eq!(progress.chunks_scanned, 3);
    // Every log chunk has a body (statistics), so the substring test runs inside their
    // readers: the rows that come out are those that pass ("timeout" and "slow").
    assert_eq!(progress.rows_processed, 80);
    assert!(progress.chunk_scanned_compressed_size > 0);
    assert!(progress.query_time_nanos > 0);
    assert_eq!(progress.queue_wait_nanos, None);
    assert_eq!(progress.planning, None);
    assert!((progress.percent() - 100.0).abs() < f64::EPSILON);
    assert!(progress.operators.iter().any(|o| o.kind == "DataSourceExec"));
    // Planning reports list the segments being classified.
    let planning = events.iter().find_map(|e| match e {
        QueryEvent::Progress(p) => p.planning,
        _ => None,
    });
    assert!(planning.is_some(), "the first report is made while planning");
    Ok(())
}

#[tokio::test]
async fn skipped_chunks_are_counted_by_reason() -> TestResult {
    let f = four_segments().await?;
    let events = drain(
        f.engine
            .run(request("default | where severity_text == 'WARN'"), with_progress()),
    )
    .await;
    let progress = last_progress(&events)?;
    assert_eq!(progress.chunks_total, 4);
    // The two ERROR segments: statistics rule them out. The span segment lacks the column.
    assert_eq!(progress.chunks_skipped_range, 2);
    assert_eq!(progress.chunks_skipped_required_fields, 1);
    assert_eq!(progress.chunks_scanned, 1);
    assert!(progress.chunk_skipped_compressed_size > 0);
    let rows: usize = events
        .iter()
        .map(|e| match e {
            QueryEvent::Rows(batch) => batch.num_rows(),
            _ => 0,
        })
        .sum();
    assert_eq!(rows, 30);
    Ok(())
}

#[tokio::test]
async fn bin_queries_report_completion_by_time_bin() -> TestResult {
    let f = four_segments().await?;
    let text = "default | summarize count() by bin(timestamp, 1h)";
    let events = drain(f.engine.run(request(text), with_progress())).await;
    let bins = last_progress(&events)?.bins.ok_or("a bin query reports bins")?;
    let hour = 3_600_000_000_000;
    assert_eq!(bins.bin_span, hour);
    // Segments span minutes 0 to 309 after T0: the hours they touch, all read.
    assert_eq!(bins.first_bin_start, T0.div_euclid(hour) * hour);
    let last = T0 + 309 * MINUTE;
    assert_eq!(bins.completion.len() as i64, (last - bins.first_bin_start) / hour + 1);
    assert!(bins.completion.iter().all(|&c| c == 100), "{bins:?}");
    // Other queries have none.
    let events = drain(f.engine.run(request("default | count"), with_progress())).await;
    assert_eq!(last_progress(&events)?.bins, None);
    Ok(())
}

#[tokio::test]
async fn raw_sizes_of_scanned_and_skipped_chunks_are_counted() -> TestResult {
    let f = four_segments().await?;
    let events = drain(
        f.engine
            .run(request("default | where severity_text == 'WARN'"), with_progress()),
    )
    .await;
    let progress = last_progress(&events)?;
    // One chunk read, three skipped (two by statistics, one lacking the column): each side
    // counts its chunks' uncompressed bytes, which are more than their compressed bytes.
    assert_eq!((progress.chunks_scanned, progress.chunks_total), (1, 4), "{progress:?}");
    assert!(progress.chunk_scanned_raw_body_size > 0, "{progress:?}");
    assert!(progress.chunk_skipped_raw_body_size > progress.chunk_scanned_raw_body_size, "{progress:?}");
    // The token index of `severity_text` was consulted (statistics did the skipping).
    assert!(progress.bloom_filter_bytes > 0, "{progress:?}");
    // Reading everything skips nothing.
    let events = drain(f.engine.run(request("default | summarize count() by strlen(severity_text)"), with_progress())).await;
    let all = last_progress(&events)?;
    assert!(all.chunk_scanned_raw_body_size > progress.chunk_scanned_raw_body_size, "{all:?}");
    assert_eq!(all.chunk_skipped_raw_body_size, 0, "{all:?}");
    Ok(())
}

#[tokio::test]
async fn filters_scans_and_merges_are_timed_and_counted() -> TestResult {
    let f = four_segments().await?;
    // A filter above the scan (`tostring(body)` is not decided by statistics), a scan, and a
    // grouping whose partial results are merged.
    let text = "default | where tostring(body) != 'x' | summarize n = count() by severity_text | sort by n";
    let events = drain(f.engine.run(request(text), with_progress())).await;
    let progress = last_progress(&events)?;
    // Every row is checked (a span has no body, and `tostring` of it is empty: it passes).
    assert!(progress.predicate_checks >= 130, "{progress:?}");
    assert!(progress.chunk_scan_time_nanos > 0, "{progress:?}");
    assert!(progress.merge_time_nanos > 0, "{progress:?}");
    // A filter evaluated inside the readers counts the rows it was evaluated on too.
    let events = drain(
        f.engine
            .run(request("default | where body contains 'o' | count"), with_progress()),
    )
    .await;
    let progress = last_progress(&events)?;
    assert!(progress.predicate_checks >= 130, "{progress:?}");
    Ok(())
}

/// Two segments of a table with numbers: `n` 0 to 49 and 100 to 149, `x` a tenth of `n`.
async fn numbers() -> Result<Fixture, Box<dyn std::error::Error>> {
    let f = Fixture::new().await?;
    let row = |i: i64| {
        let mut row = log(i, "INFO", "n", "api", None);
        row.push("n", trawl_common::Value::Long(i));
        row.push("x", trawl_common::Value::Real(i as f64 / 10.0));
        row
    };
    f.segment((0..50).map(row).collect()).await?;
    f.segment((100..150).map(row).collect()).await?;
    Ok(f)
}

#[tokio::test]
async fn number_bins_report_completion_from_chunk_statistics() -> TestResult {
    let f = numbers().await?;
    let bins = |text: &str| {
        let run = f.engine.run(request(text), with_progress());
        async move { Ok::<_, String>(last_progress(&drain(run).await)?.bins.ok_or("no bins")?) }
    };
    // bin(n, 10): values 0 to 149 make bins 0, 10, ..., 140; all read.
    let by_ten = bins("default | summarize count() by bin(n, 10)").await?;
    assert_eq!((by_ten.first_bin_start, by_ten.bin_span, by_ten.time), (0, 10, false));
    assert_eq!(by_ten.completion, vec![100; 15]);
    // bin_at(n, 25, 5): bins start at 5 + 25k, from -20.
    let at = bins("default | summarize count() by bin_at(n, 25, 5)").await?;
    assert_eq!((at.first_bin_start, at.bin_span), (-20, 25));
    assert_eq!(at.completion.len(), 7, "{at:?}");
    // A real column binned by a whole number.
    let real = bins("default | summarize count() by bin(x, 2)").await?;
    assert_eq!((real.first_bin_start, real.bin_span, real.time), (0, 2, false));
    assert_eq!(real.completion.len(), 8, "{real:?}");
    // Bins of a fraction cannot be told in whole numbers: none.
    let events = drain(f.engine.run(request("default | summarize count() by bin(x, 0.5)"), with_progress())).await;
    assert_eq!(last_progress(&events)?.bins, None);
    // bin_auto and bin_at over time are time bins.
    let auto = bins("default | summarize count() by bin_auto(timestamp)").await?;
    assert!(auto.time && auto.bin_span > 0, "{auto:?}");
    assert!(auto.completion.iter().all(|&c| c == 100), "{auto:?}");
    let hour = 3_600_000_000_000;
    let at_time = bins("default | summarize count() by bin_at(timestamp, 1h, datetime(2023-11-14 00:30))").await?;
    assert_eq!(at_time.bin_span, hour);
    assert_eq!((at_time.first_bin_start - T0.div_euclid(hour) * hour).rem_euclid(hour), hour / 2);
    assert!(at_time.first_bin_start <= T0, "{at_time:?}");
    Ok(())
}

#[tokio::test]
async fn a_take_completes_early() -> TestResult {
    let f = four_segments().await?;
    let events = drain(f.engine.run(request("default | take 3"), with_progress())).await;
    let progress = last_progress(&events)?;
    assert!(progress.short_circuit_completion, "{progress:?}");
    assert!(progress.chunks_scanned < progress.chunks_total, "{progress:?}");
    Ok(())
}

#[tokio::test]
async fn queued_queries_wait_and_report_how_long() -> TestResult {
    let config = EngineConfig {
        max_concurrent_queries: 1,
        ..EngineConfig::default()
    };
    let f = Fixture::with_config(config).await?;
    f.segment((0..20).map(|m| log(m, "ERROR", "x", "api", None)).collect())
        .await?;
    // The first query fills its event queue with progress reports and then waits for a
    // reader, holding the only slot.
    let mut first = f.engine.run(request("default | count"), with_progress());
    let Some(QueryEvent::Progress(_)) = first.next_event().await else {
        return Err("the first query should report progress".into());
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut second = f.engine.run(request("default | count"), with_progress());
    let Some(QueryEvent::Progress(waiting)) = second.next_event().await else {
        return Err("the second query should report progress while it waits".into());
    };
    assert!(waiting.queue_wait_nanos.is_some(), "{waiting:?}");
    assert_eq!(f.engine.queries_waiting(), 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(first);
    let events = drain(second).await;
    assert!(matches!(events.last(), Some(QueryEvent::Finished)), "{events:?}");
    let waited = last_progress(&events)?.queue_wait_nanos.unwrap_or(0);
    assert!(waited >= 20_000_000, "waited {waited} ns");
    Ok(())
}

#[tokio::test]
async fn a_full_queue_refuses_more_queries() -> TestResult {
    let config = EngineConfig {
        max_concurrent_queries: 1,
        max_queued_queries: 0,
        ..EngineConfig::default()
    };
    let f = Fixture::with_config(config).await?;
    f.segment(vec![log(0, "ERROR", "x", "api", None)]).await?;
    let mut first = f.engine.run(request("default | count"), with_progress());
    let Some(QueryEvent::Progress(_)) = first.next_event().await else {
        return Err("the first query should report progress".into());
    };
    let error = match f.engine.execute(&request("default | count")).await {
        Err(error) => error,
        Ok(_) => return Err("the second query should be refused".into()),
    };
    assert_eq!(error.code, ErrorCode::Unavailable);
    drop(first);
    Ok(())
}

#[tokio::test]
async fn a_zero_time_limit_stops_the_query() -> TestResult {
    let f = four_segments().await?;
    let options = RunOptions {
        progress_every: None,
        timeout: Some(Duration::ZERO),
        snapshots: false,
        face: "",
        fanout_nodes_percent: None,
        ..RunOptions::default()
    };
    let events = drain(f.engine.run(request("default | count"), options)).await;
    match events.last() {
        Some(QueryEvent::Failed(error)) => assert_eq!(error.code, ErrorCode::Timeout),
        other => return Err(format!("expected a timeout, got {other:?}").into()),
    }
    Ok(())
}

#[tokio::test]
async fn every_query_has_the_engine_default_time_limit() -> TestResult {
    let config = EngineConfig {
        default_timeout: Duration::ZERO,
        ..EngineConfig::default()
    };
    let f = Fixture::with_config(config).await?;
    // `execute` (the HTTP and ADX faces) asks for no limit of its own: the default applies.
    match f.engine.execute(&request("print 1")).await {
        Err(error) => assert_eq!(error.code, ErrorCode::Timeout),
        Ok(output) => return Err(format!("expected a timeout, got {output:?}").into()),
    }
    Ok(())
}

#[tokio::test]
async fn a_client_limit_is_cut_to_the_engine_maximum() -> TestResult {
    let config = EngineConfig {
        max_timeout: Duration::ZERO,
        ..EngineConfig::default()
    };
    let f = Fixture::with_config(config).await?;
    let asked = request("print 1");
    match f
        .engine
        .execute_within(&asked, Some(Duration::from_secs(3600)), "http")
        .await
    {
        Err(error) => assert_eq!(error.code, ErrorCode::Timeout),
        Ok(output) => return Err(format!("expected a timeout, got {output:?}").into()),
    }
    Ok(())
}

/// The rows of `events`' final result (as JSON), and of each snapshot before it.
fn results(events: &[QueryEvent]) -> (Vec<Vec<serde_json::Value>>, Vec<Vec<Vec<serde_json::Value>>>) {
    let mut snapshots = Vec::new();
    let mut table = trawl_engine::ResultTable {
        name: String::new(),
        columns: Vec::new(),
        batches: Vec::new(),
    };
    for event in events {
        match event {
            QueryEvent::TableStarted { columns, .. } => table.columns = columns.clone(),
            QueryEvent::Snapshot(batches) => {
                let snapshot = trawl_engine::ResultTable {
                    batches: batches.clone(),
                    ..table.clone()
                };
                snapshots.push(snapshot.json_rows());
            }
            QueryEvent::Rows(batch) => table.batches.push(batch.clone()),
            _ => {}
        }
    }
    (table.json_rows(), snapshots)
}

#[tokio::test]
async fn newest_rows_come_from_time_slices_with_snapshots_first() -> TestResult {
    let f = four_segments().await?;
    let options = RunOptions {
        snapshots: true,
        ..RunOptions::default()
    };
    let sliced = drain(f.engine.run(
        request("default | top 25 by timestamp desc | project timestamp, body"),
        options.clone(),
    ))
    .await;
    let kinds = shape(&sliced);
    assert!(kinds.contains(&"snapshot"), "{kinds:?}");
    let (rows, snapshots) = results(&sliced);
    // The same question in a shape that does not slice.
    let reference = f
        .rows("default | extend t = timestamp | top 25 by t desc | project timestamp, body")
        .await?;
    assert_eq!(rows, reference);
    for snapshot in &snapshots {
        assert!(snapshot.len() < 25 && !snapshot.is_empty());
        assert_eq!(
            snapshot.as_slice(),
            &reference[..snapshot.len()],
            "a snapshot is the newest rows so far"
        );
    }
    // Without snapshots asked for: the same rows, no snapshot.
    let plain = drain(f.engine.run(
        request("default | top 25 by timestamp desc | project timestamp, body"),
        RunOptions::default(),
    ))
    .await;
    assert!(!shape(&plain).contains(&"snapshot"));
    assert_eq!(results(&plain).0, reference);
    Ok(())
}

#[tokio::test]
async fn time_bins_come_from_whole_bin_slices() -> TestResult {
    let f = four_segments().await?;
    let options = RunOptions {
        snapshots: true,
        ..RunOptions::default()
    };
    let sliced = drain(f.engine.run(
        request("default | summarize n = count(), b = dcount(body) by bin(timestamp, 10m) | extend k = 1"),
        options,
    ))
    .await;
    let (mut rows, snapshots) = results(&sliced);
    let mut reference = f
        .rows("default | summarize n = count(), b = dcount(body) by bin(timestamp + 0s, 10m) | extend k = 1")
        .await?;
    rows.sort_by_key(|r| r[0].to_string());
    reference.sort_by_key(|r| r[0].to_string());
    assert_eq!(rows, reference);
    assert!(!snapshots.is_empty(), "bins arrive slice by slice");
    Ok(())
}
