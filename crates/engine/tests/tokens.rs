//! The token index (`trawl_storage::tokens`): text filters read only the blocks of rows that
//! may hold their terms, and answer exactly what a full read answers.

use std::time::Duration;

use serde_json::json;
use trawl_common::{Row, Value};
use trawl_engine::{Progress, QueryEvent, QueryRequest, QueryWindow, RunOptions};

use crate::fixture::{Fixture, MINUTE, T0, TestResult};

/// Rows of the segment: four chunks, the last one short.
const ROWS: usize = 3 * 32 * 1024 + 500;
/// Rows whose body holds the rare token, in three different chunks.
const RARE: [usize; 3] = [5, 40_000, 70_000];
/// The row whose body is exactly [`EXACT`].
const EXACT_ROW: usize = 50_000;
const EXACT: &str = "deadlock detected on table t1";

fn row(i: usize) -> Row {
    let body = if RARE.contains(&i) {
        format!("request {i} served with Zqxjkv ref")
    } else if i == EXACT_ROW {
        EXACT.to_string()
    } else {
        format!("request {i} served in {} ms by worker-{}", i % 100, i % 7)
    };
    let mut row = Row::default();
    row.push("timestamp", Value::DateTime(T0 + (i as i64) * MINUTE / 100));
    row.push(
        "severity_text",
        Value::String(if i.is_multiple_of(50) { "ERROR" } else { "INFO" }.into()),
    );
    row.push("body", Value::Dynamic(json!(body)));
    row.push("service", Value::String(format!("svc-{}", i % 3)));
    row
}

async fn fixture() -> Result<Fixture, Box<dyn std::error::Error>> {
    let f = Fixture::new().await?;
    f.segment((0..ROWS).map(row).collect()).await?;
    Ok(f)
}

/// The single number a query answers, and its last progress report.
async fn count_with_progress(f: &Fixture, text: &str) -> Result<(i64, Progress), Box<dyn std::error::Error>> {
    let options = RunOptions {
        progress_every: Some(Duration::from_millis(1)),
        timeout: None,
        snapshots: false,
        face: "",
        fanout_nodes_percent: None,
        ..RunOptions::default()
    };
    let request = QueryRequest {
        text: text.to_string(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    };
    let mut events = f.engine.run(request, options);
    let mut progress = None;
    let mut count = None;
    while let Some(event) = events.next_event().await {
        match event {
            QueryEvent::Progress(p) => progress = Some((*p).clone()),
            QueryEvent::Failed(error) => return Err(format!("{text}: {error}").into()),
            _ => {}
        }
    }
    if let Some(rows) = f.rows(text).await?.first() {
        count = rows.first().and_then(|v| v.as_i64());
    }
    Ok((
        count.ok_or(format!("{text}: no count"))?,
        progress.ok_or("no progress")?,
    ))
}

/// How many of the rare rows `keep` keeps.
fn rare_where(keep: impl Fn(usize) -> bool) -> i64 {
    RARE.iter().filter(|i| keep(**i)).count() as i64
}

#[tokio::test]
async fn text_filters_skip_blocks_without_their_terms_and_answer_exactly() -> TestResult {
    let f = fixture().await?;
    let rare = RARE.len() as i64;
    let cases: &[(&str, i64)] = &[
        (r#"default | where body has "zqxjkv" | count"#, rare),
        (r#"default | where body has "ZQXJKV" | count"#, rare),
        (r#"default | where body has_cs "Zqxjkv" | count"#, rare),
        (r#"default | where body has_cs "zqxjkv" | count"#, 0),
        (r#"default | where body has "served with Zqxjkv" | count"#, rare),
        (r#"default | where body has_any ("zqxjkv", "qqqqqq") | count"#, rare),
        (r#"default | where body has_all ("zqxjkv", "served") | count"#, rare),
        (r#"default | where body has_all ("zqxjkv", "deadlock") | count"#, 0),
        (
            r#"default | where body has "zqxjkv" or body has "deadlock" | count"#,
            rare + 1,
        ),
        (
            r#"default | where tostring(body) == "deadlock detected on table t1" | count"#,
            1,
        ),
        (
            r#"default | where body has "zqxjkv" and severity_text == "INFO" | count"#,
            rare_where(|i| i % 50 != 0),
        ),
        (
            r#"default | where body has "zqxjkv" and severity_text == "ERROR" | count"#,
            rare_where(|i| i % 50 == 0),
        ),
        (r#"default | search "zqxjkv" | count"#, rare),
        (
            r#"default | where service == "svc-1" and body has "zqxjkv" | count"#,
            rare_where(|i| i % 3 == 1),
        ),
        (
            r#"default | where service in ("svc-0", "svc-2") | count"#,
            (0..ROWS).filter(|i| i % 3 != 1).count() as i64,
        ),
        (
            r#"default | where body !has "zqxjkv" | count"#,
            (ROWS - RARE.len()) as i64,
        ),
        (r#"default | where body contains "qxjk" | count"#, rare),
    ];
    for (text, expected) in cases {
        let (count, _) = count_with_progress(&f, text).await?;
        assert_eq!(count, *expected, "{text}");
    }
    // The rare token is in three of four chunks: the fourth is skipped whole, and in the
    // others only its blocks are read.
    let (_, progress) = count_with_progress(&f, r#"default | where body has "zqxjkv" | count"#).await?;
    assert_eq!(progress.chunks_total, 4, "{progress:?}");
    assert_eq!(progress.chunks_skipped_bloom, 1, "{progress:?}");
    // A term in no block: nothing is read.
    let (count, progress) = count_with_progress(&f, r#"default | where body has "absentterm" | count"#).await?;
    assert_eq!(count, 0);
    assert_eq!(progress.chunks_skipped_bloom, 4, "{progress:?}");
    assert_eq!(progress.chunks_scanned, 0, "{progress:?}");
    // A negation cannot use the index.
    let (_, progress) = count_with_progress(&f, r#"default | where body !has "zqxjkv" | count"#).await?;
    assert_eq!(progress.chunks_skipped_bloom, 0, "{progress:?}");
    Ok(())
}

#[tokio::test]
async fn rows_found_through_the_index_are_the_right_rows() -> TestResult {
    let f = fixture().await?;
    let rows = f
        .rows(r#"default | where body has "zqxjkv" | project body = tostring(body) | order by body asc"#)
        .await?;
    let mut expected: Vec<String> = RARE
        .iter()
        .map(|i| format!("request {i} served with Zqxjkv ref"))
        .collect();
    expected.sort();
    let got: Vec<String> = rows
        .iter()
        .filter_map(|r| r.first().and_then(|v| v.as_str()).map(str::to_string))
        .collect();
    assert_eq!(got, expected);
    let rows = f
        .rows(r#"default | where service == "svc-1" | where body has "worker" | count"#)
        .await?;
    let expected = (0..ROWS)
        .filter(|i| i % 3 == 1 && !RARE.contains(i) && *i != EXACT_ROW)
        .count() as i64;
    assert_eq!(rows[0][0], json!(expected));
    Ok(())
}
