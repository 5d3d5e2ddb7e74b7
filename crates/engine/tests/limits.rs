//! Queries that would take the process down get a clear error of their own: plans that
//! expand exponentially or nest past the planner's bounds, and operators past the per-query
//! memory limit. Queries just under the bounds still run.

use trawl_common::ErrorCode;
use trawl_engine::EngineConfig;

use crate::fixture::{Fixture, TestResult};

async fn refused(f: &Fixture, text: &str, needle: &str) -> TestResult {
    match f.run(text).await {
        Err(error) => {
            assert_eq!(error.code, ErrorCode::BadRequest, "{text}: {error:?}");
            assert!(error.message.contains(needle), "{needle:?} not in {:?}", error.message);
            Ok(())
        }
        Ok(result) => Err(format!("expected an error for {text}, got {result:?}").into()),
    }
}

#[tokio::test]
async fn exponential_expansions_are_refused() -> TestResult {
    let f = Fixture::new().await?;
    let lets = "let a0 = 1;".to_string()
        + &(0..40)
            .map(|i| format!("let a{} = a{i} + a{i};", i + 1))
            .collect::<String>();
    refused(&f, &format!("{lets} print a40"), "too large to plan").await?;
    let tables = "let t0 = print x = 1;".to_string()
        + &(0..30)
            .map(|i| format!("let t{} = union t{i}, t{i};", i + 1))
            .collect::<String>();
    refused(&f, &format!("{tables} t30 | count"), "too large to plan").await?;
    let functions = "let f0 = (x:long) { x };".to_string()
        + &(0..30)
            .map(|i| format!("let f{} = (x:long) {{ f{i}(x) + f{i}(x) }};", i + 1))
            .collect::<String>();
    refused(&f, &format!("{functions} print f30(1)"), "too large to plan").await?;
    Ok(())
}

#[tokio::test]
async fn let_chains_nest_no_deeper_than_the_bound() -> TestResult {
    let f = Fixture::new().await?;
    let chain = |n: usize| {
        "let a0 = 1;".to_string()
            + &(0..n)
                .map(|i| format!("let a{} = a{i} + 1;", i + 1))
                .collect::<String>()
            + &format!("print a{n}")
    };
    let (_, rows) = f.run(&chain(300)).await?;
    assert_eq!(rows, vec![vec![serde_json::json!(301)]]);
    refused(&f, &chain(2_500), "").await?;
    Ok(())
}

#[tokio::test]
async fn long_chains_and_pipelines_under_the_bound_run() -> TestResult {
    let f = Fixture::new().await?;
    let sum = format!("print {}", vec!["1"; 900].join(" + "));
    assert_eq!(f.run(&sum).await?.1, vec![vec![serde_json::json!(900)]]);
    let pipeline = format!("print x = 1 {}", "| extend x = x + 1 ".repeat(300));
    assert_eq!(f.run(&pipeline).await?.1, vec![vec![serde_json::json!(301)]]);
    // Stages of projections with filters and renames between them keep their meaning.
    let mixed = format!(
        "range i from 1 to 10 step 1 | extend x = i {} | project i, x | where x > 24 | summarize n = count(), top = max(x)",
        "| extend x = x + 1 | where x > i | extend y = x * 2 | project-away y ".repeat(20)
    );
    assert_eq!(
        f.run(&mixed).await?.1,
        vec![vec![serde_json::json!(6), serde_json::json!(30)]]
    );
    Ok(())
}

#[tokio::test]
async fn a_join_past_the_query_memory_limit_fails_alone() -> TestResult {
    let f = Fixture::with_config(EngineConfig {
        query_memory_limit_bytes: 16 << 20,
        ..EngineConfig::default()
    })
    .await?;
    let join = "range x from 1 to 1000000 step 1 | extend s = strcat('abcdefghijklmnopqrstuvwxyz', x) \
                | join kind=inner (range x from 1 to 1000000 step 1 | extend t = strcat('abcdefghijklmnopqrstuvwxyz', x)) on x \
                | summarize max(strlen(s)), max(strlen(t))";
    refused(&f, join, "the query needs more memory than its limit").await?;
    // The same engine goes on answering.
    assert_eq!(f.run("print 1").await?.1, vec![vec![serde_json::json!(1)]]);
    Ok(())
}

async fn warning_kinds(f: &Fixture, text: &str) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let request = trawl_engine::QueryRequest {
        text: text.into(),
        database: "default".into(),
        window: trawl_engine::QueryWindow::default(),
        parameters: Default::default(),
    };
    let output = f.engine.execute(&request).await?;
    Ok(output.warnings.iter().map(|w| w.kind.clone()).collect())
}

#[tokio::test]
async fn reading_a_large_table_with_no_time_bound_is_advised_or_refused() -> TestResult {
    let rows = || {
        (0..50)
            .map(|m| crate::fixture::log(m, "INFO", "line", "api", None))
            .collect()
    };
    let f = Fixture::with_config(EngineConfig {
        time_filter_advice_bytes: Some(1),
        ..EngineConfig::default()
    })
    .await?;
    f.segment(rows()).await?;
    assert_eq!(warning_kinds(&f, "default | count").await?, ["MissingTimeFilter"]);
    assert_eq!(
        warning_kinds(&f, "default | where severity_text == 'INFO' | count").await?,
        ["MissingTimeFilter"]
    );
    let bounded = "default | where timestamp > datetime(2023-11-14) | count";
    assert!(warning_kinds(&f, bounded).await?.is_empty());
    assert!(warning_kinds(&f, "print 1").await?.is_empty());
    // Under the threshold: no advice.
    let small = Fixture::new().await?;
    small.segment(rows()).await?;
    assert!(warning_kinds(&small, "default | count").await?.is_empty());
    // Strict: refused, bounded queries still run.
    let strict = Fixture::with_config(EngineConfig {
        time_filter_advice_bytes: Some(1),
        require_time_filter: true,
        ..EngineConfig::default()
    })
    .await?;
    strict.segment(rows()).await?;
    refused(&strict, "default | take 1", "MissingTimeFilter").await?;
    assert_eq!(strict.rows(bounded).await?, vec![vec![serde_json::json!(50)]]);
    Ok(())
}
