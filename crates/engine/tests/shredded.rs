//! Shredded keys (decision 002): hidden columns answer `tostring(bag['key'])`, never show, and
//! give the same answers as the bags, also over segments written before shredding.

use std::time::Duration;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use serde_json::json;
use trawl_common::shred::{is_hidden_column, shredded_column};
use trawl_common::{Row, Value};
use trawl_engine::{QueryRequest, QueryWindow};
use trawl_storage::{MergePolicy, Merger, rows_to_batch};

use crate::fixture::{Fixture, MINUTE, T0, TestResult, log};

/// A log row whose resource and attributes are given as JSON.
fn row(minute: i64, resource: serde_json::Value, attributes: serde_json::Value) -> Row {
    let mut row = Row::default();
    row.push("timestamp", Value::DateTime(T0 + minute * MINUTE));
    row.push("severity_text", Value::String("ERROR".into()));
    row.push("body", Value::Dynamic(json!("b")));
    row.push("resource", Value::Dynamic(resource));
    row.push("attributes", Value::Dynamic(attributes));
    row
}

fn rows(first_minute: i64) -> Vec<Row> {
    vec![
        row(
            first_minute,
            json!({"service.name": "api"}),
            json!({"http.route": "/a", "http.status_code": 500}),
        ),
        row(
            first_minute + 1,
            json!({"service.name": "api"}),
            json!({"http.route": "/b", "http.status_code": "503"}),
        ),
        row(
            first_minute + 2,
            json!({"service.name": 42}),
            json!({"http.route": {"nested": true}}),
        ),
        row(
            first_minute + 3,
            json!({"host.name": "h"}),
            json!({"http.status_code": 200}),
        ),
        row(first_minute + 4, json!({"service.name": "x"}), json!("not a bag")),
    ]
}

/// Writes `rows` as a segment as it was written before shredding: without hidden columns.
async fn legacy_segment(f: &Fixture, rows: Vec<Row>) -> TestResult {
    let made = rows_to_batch(rows)?;
    let keep: Vec<usize> = (0..made.batch.num_columns())
        .filter(|&i| !is_hidden_column(made.batch.schema().field(i).name()))
        .collect();
    let batch: RecordBatch = made.batch.project(&keep)?;
    let columns: Vec<_> = made
        .columns
        .into_iter()
        .filter(|c| !is_hidden_column(&c.name))
        .collect();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), None)?;
    writer.write(&batch)?;
    writer.close()?;
    let rows = batch.num_rows() as u64;
    let meta = f
        .writer
        .write_encoded(
            "default",
            "default",
            bytes.into(),
            columns,
            made.min_time,
            made.max_time,
            rows,
            0,
        )
        .await?;
    f.catalog.commit_segments(&[meta], &[]).await?;
    Ok(())
}

const QUERIES: &[(&str, &str)] = &[
    (
        "by service",
        "default | summarize n = count() by service = tostring(resource['service.name']) | sort by service asc",
    ),
    (
        "route filter",
        "default | where tostring(attributes['http.route']) == '/a' | summarize n = count()",
    ),
    (
        "status",
        "default | where toint(attributes['http.status_code']) >= 500 | summarize n = count() by route = tostring(attributes['http.route']) | sort by route asc",
    ),
    (
        "top then project",
        "default | top 3 by timestamp desc | project route = tostring(attributes['http.route']), service = tostring(resource['service.name'])",
    ),
    (
        "bag replaced by extend",
        "default | extend resource = dynamic({'service.name': 'replaced'}) | summarize n = count() by tostring(resource['service.name'])",
    ),
    (
        "renamed bag",
        "default | project-away attributes | project-rename attributes = resource | summarize n = count() by s = tostring(attributes['service.name']) | sort by s asc",
    ),
];

/// The answers to `QUERIES`, by name.
async fn answers(f: &Fixture) -> Result<Vec<(String, serde_json::Value)>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for (name, text) in QUERIES {
        let (columns, rows) = f.run(text).await.map_err(|e| format!("{name}: {e}"))?;
        out.push((name.to_string(), json!({"columns": columns, "rows": rows})));
    }
    Ok(out)
}

#[tokio::test]
async fn hidden_columns_give_the_answers_of_the_bags_on_new_legacy_and_mixed_segments() -> TestResult {
    let shredded = Fixture::new().await?;
    shredded.segment(rows(0)).await?;
    shredded.segment(rows(10)).await?;
    let legacy = Fixture::new().await?;
    legacy_segment(&legacy, rows(0)).await?;
    legacy_segment(&legacy, rows(10)).await?;
    let mixed = Fixture::new().await?;
    mixed.segment(rows(0)).await?;
    legacy_segment(&mixed, rows(10)).await?;

    let expected = answers(&legacy).await?;
    // What the bags say, checked by hand for the first two questions.
    assert_eq!(expected[0].1["rows"], json!([["", 2], ["42", 2], ["api", 4], ["x", 2]]));
    assert_eq!(expected[1].1["rows"], json!([[2]]));
    assert_eq!(answers(&shredded).await?, expected);
    assert_eq!(answers(&mixed).await?, expected);

    // Merging a legacy and a new segment computes the hidden columns of the legacy rows.
    let policy = MergePolicy {
        min_inputs: 2,
        grace: Duration::ZERO,
        ..MergePolicy::default()
    };
    let merger = Merger::new(mixed.catalog.clone(), mixed.writer.clone(), policy)?;
    assert_eq!(merger.merge_once().await?.merges, 1);
    let live = mixed.catalog.live_segments("default", "default", None).await?;
    assert_eq!(live.len(), 1);
    let hidden = shredded_column("resource", "service.name");
    assert!(live[0].columns.iter().any(|c| c.name == hidden));
    assert_eq!(answers(&mixed).await?, expected);
    Ok(())
}

#[tokio::test]
async fn a_key_read_reads_the_hidden_column_instead_of_the_bag() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(rows(0)).await?;
    let request = QueryRequest {
        text: "default | where severity_text == 'ERROR' | summarize count() by tostring(resource['service.name'])"
            .into(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    };
    let plans = f.engine.physical_plans(&request).await?;
    let scan = plans[0]
        .0
        .lines()
        .find(|l| l.contains("DataSourceExec"))
        .ok_or("no scan")?
        .to_string();
    assert!(scan.contains(&shredded_column("resource", "service.name")), "{scan}");
    assert!(!scan.contains("[resource") && !scan.contains(" resource,"), "{scan}");

    // A segment written before shredding is read through its bag.
    legacy_segment(&f, rows(10)).await?;
    let plans = f.engine.physical_plans(&request).await?;
    assert!(plans[0].0.contains("json_as_text"), "{}", plans[0].0);
    Ok(())
}

#[tokio::test]
async fn hidden_columns_never_show() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(vec![log(0, "INFO", "a", "s", Some("/r"))]).await?;
    for text in [
        "default | take 1",
        "default | where severity_text == 'INFO'",
        "default | sort by timestamp asc | take 5",
        "default | distinct *",
        "default | getschema",
        "default | project-away body",
        "default | extend x = 1",
        "let t = default | where true; t | union default",
        "default | join kind=inner (default) on timestamp",
    ] {
        let (columns, rows) = f.run(text).await.map_err(|e| format!("{text}: {e}"))?;
        for (name, _) in &columns {
            assert!(!is_hidden_column(name), "{text}: {name}");
        }
        let text_rows = serde_json::to_string(&rows)?;
        assert!(!text_rows.contains("__trawl_shred"), "{text}: {text_rows}");
    }
    let tables = f.catalog.tables("default").await?;
    let info = tables.iter().find(|t| t.name == "default").ok_or("no table")?;
    assert!(info.columns.iter().any(|c| is_hidden_column(&c.name)));
    assert!(info.visible_columns().all(|c| !is_hidden_column(&c.name)));
    Ok(())
}
