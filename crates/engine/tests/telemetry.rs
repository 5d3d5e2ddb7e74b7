//! The telemetry extensions: alternative-layout names, `trace-find`, `otel-log-stats` and log
//! templates, `summarize hint.sample` and `hint.budget`.

use serde_json::json;
use trawl_common::{ErrorCode, Value};

use crate::fixture::{Fixture, MINUTE, T0, TestResult, log, span};

#[tokio::test]
async fn names_of_the_alternative_layout_read_the_stored_columns() -> TestResult {
    let f = Fixture::new().await?;
    let mut rows = vec![span(1, "GET /a", "t1", 5, "api"), span(2, "GET /b", "t2", 7, "api")];
    for (row, (kind, code)) in rows.iter_mut().zip([
        ("SPAN_KIND_SERVER", "STATUS_CODE_ERROR"),
        ("SPAN_KIND_CLIENT", "STATUS_CODE_OK"),
    ]) {
        row.push("span_kind", Value::String(kind.into()));
        row.push("status_code", Value::String(code.into()));
        row.push("status_description", Value::String("boom".into()));
        row.push("ingest_time", Value::DateTime(T0 + 10 * MINUTE));
    }
    f.segment(rows).await?;
    let (columns, rows) = f
        .run(
            "default | where $time > datetime(2023-11-14) and status.code == 'STATUS_CODE_ERROR' \
             | project $time, name, kind, status, late = $time_ingest > $time",
        )
        .await?;
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["$time", "name", "kind", "status", "late"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][1], json!("GET /a"));
    assert_eq!(rows[0][2], json!("SPAN_KIND_SERVER"));
    assert_eq!(rows[0][3], json!({"code": "STATUS_CODE_ERROR", "message": "boom"}));
    // A real column of the name wins; a table without the stored column has no alias.
    let (_, own) = f.run("default | extend name = 'mine' | project name | take 1").await?;
    assert_eq!(own, vec![vec![json!("mine")]]);
    assert!(f.run("print x = 1 | project kind").await.is_err());
    Ok(())
}

#[tokio::test]
async fn summarize_over_a_sample_says_so() -> TestResult {
    let f = Fixture::new().await?;
    f.segment((0..1000).map(|m| log(m, "INFO", "line", "api", None)).collect())
        .await?;
    let output = f.execute("default | summarize hint.sample = 0.5 n = count()").await?;
    let n = output.tables[0].json_rows()[0][0].as_i64().ok_or("a count")?;
    // Binomial(1000, 0.5): 350..650 is more than nine standard deviations wide.
    assert!((350..=650).contains(&n), "{n} rows sampled");
    let kinds: Vec<&str> = output.warnings.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, ["SummarizeSample"]);
    assert_eq!(
        f.rows("default | summarize hint.sample = 1 count()").await?,
        vec![vec![json!(1000)]]
    );
    let error = f
        .run("default | summarize hint.sample = 2 count()")
        .await
        .err()
        .ok_or("refused")?;
    assert_eq!(error.code, ErrorCode::BadRequest);
    Ok(())
}

#[tokio::test]
async fn a_summarize_with_its_own_budget_keeps_to_it() -> TestResult {
    // The server's budget (512 MiB by default) holds 300,000 groups; 1 MiB does not.
    let f = Fixture::with_config(trawl_engine::EngineConfig {
        target_partitions: 2,
        ..trawl_engine::EngineConfig::default()
    })
    .await?;
    let query = |hint: &str| {
        format!(
            "range x from 1 to 300000 step 1 | extend k = strcat('key-', x) \
             | summarize {hint} n = count() by k | count"
        )
    };
    let whole = f.execute(&query("")).await?;
    assert_eq!(whole.tables[0].json_rows(), vec![vec![json!(300_000)]]);
    assert!(whole.warnings.is_empty(), "{:?}", whole.warnings);
    let budgeted = f.execute(&query("hint.budget = '1MB'")).await?;
    let kept = budgeted.tables[0].json_rows()[0][0].as_i64().ok_or("a count")?;
    assert!(kept > 0 && kept < 300_000, "{kept} groups");
    let warning = budgeted.warnings.first().ok_or("a warning")?;
    assert_eq!(warning.kind, "SummarizeMemoryLimit");
    assert!(warning.message.contains("(1 MiB)"), "{}", warning.message);
    // A budget above the server's changes nothing; bad budgets are refused.
    let generous = f.execute(&query("hint.budget = 1073741824")).await?;
    assert_eq!(generous.tables[0].json_rows(), vec![vec![json!(300_000)]]);
    for bad in ["hint.budget = 'lots'", "hint.budget = 10", "hint.budget = x"] {
        let error = f.run(&query(bad)).await.err().ok_or(bad)?;
        assert_eq!(error.code, ErrorCode::BadRequest, "{bad}");
    }
    Ok(())
}

#[tokio::test]
async fn trace_find_follows_parent_links() -> TestResult {
    let f = Fixture::new().await?;
    let spans = [
        ("t1", "a1", "", "checkout", "OK", 0),
        ("t1", "a2", "a1", "db", "OK", 1),
        ("t1", "a3", "a1", "http", "ERROR", 2),
        ("t1", "a4", "a3", "cache", "ERROR", 30),
        ("t2", "b1", "", "checkout", "OK", 0),
        ("t2", "b2", "b1", "http", "OK", 1),
        ("t3", "c1", "", "login", "OK", 0),
        ("t3", "c2", "c1", "http", "ERROR", 1),
    ];
    let rows = spans
        .iter()
        .map(|(trace, id, parent, name, status, minute)| {
            let mut row = span(*minute, name, trace, 5, "api");
            row.push("span_id", Value::String((*id).into()));
            row.push("parent_span_id", Value::String((*parent).into()));
            row.push("status_code", Value::String((*status).into()));
            row
        })
        .collect();
    f.segment(rows).await?;
    let f = &f;
    let found = |query: &str| {
        let query = format!("default | trace-find {query} | order by trace_id asc | project trace_id, spans");
        async move { f.rows(&query).await }
    };
    assert_eq!(
        found("{ span_name == 'checkout' } >> { status_code == 'ERROR' }").await?,
        vec![vec![json!("t1"), json!(["a3", "a4"])]]
    );
    assert_eq!(
        found("{ span_name == 'checkout' } > { status_code == 'ERROR' }").await?,
        vec![vec![json!("t1"), json!(["a3"])]]
    );
    assert_eq!(
        found("{ status_code == 'ERROR' } < { span_name == 'checkout' or span_name == 'login' }").await?,
        vec![vec![json!("t1"), json!(["a1"])], vec![json!("t3"), json!(["c1"])]]
    );
    assert_eq!(
        found("{ span_name == 'db' } ~ { span_name == 'http' }").await?,
        vec![vec![json!("t1"), json!(["a3"])]]
    );
    assert_eq!(
        found("{ span_name == 'checkout' } >> { status_code == 'ERROR' } within 5m").await?,
        vec![vec![json!("t1"), json!(["a3"])]]
    );
    let (columns, _) = f.run("default | trace-find { span_name == 'http' }").await?;
    let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["trace_id", "start", "spans", "span_count"]);
    let error = f
        .run("print x = 1 | trace-find { x == 1 }")
        .await
        .err()
        .ok_or("refused")?;
    assert_eq!(error.code, ErrorCode::UnknownColumn);
    Ok(())
}

#[tokio::test]
async fn log_overview_and_templates() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(vec![
        log(1, "INFO", "user 42 logged in", "api", None),
        log(2, "INFO", "user 7 logged in", "api", None),
        log(3, "ERROR", "timeout after 30ms", "api", None),
        log(4, "INFO", "started worker 3", "batch", None),
    ])
    .await?;
    let rows = f
        .rows("default | otel-log-stats | project service, severity, ['count'], share, templates")
        .await?;
    assert_eq!(
        rows,
        vec![
            vec![json!("api"), json!("INFO"), json!(2), json!(0.5), json!(1)],
            vec![json!("api"), json!("ERROR"), json!(1), json!(0.25), json!(1)],
            vec![json!("batch"), json!("INFO"), json!(1), json!(0.25), json!(1)],
        ]
    );
    let templates = f
        .rows("default | summarize n = count() by t = extract_log_template(tostring(body)) | order by n desc, t asc")
        .await?;
    assert_eq!(templates[0], vec![json!("user <*> logged in"), json!(2)]);
    assert_eq!(templates.len(), 3);
    Ok(())
}
