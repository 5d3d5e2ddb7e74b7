//! Golden query files: `tests/golden/NAME.kql` holds a query, `NAME.expected` its result
//! (columns with types, and rows) or its error (code and message). Every case runs with one
//! and with four partitions, over the same stored data; both must match.
//!
//! Rows compare as a multiset unless the query's first line is `// ordered`.
//! Update mode rewrites the expected files: `TRAWL_UPDATE_GOLDEN=1 cargo test -p trawl-engine golden`.

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};
use trawl_engine::{EngineConfig, QueryRequest, QueryWindow};

use crate::fixture::{Fixture, TestResult, log, span};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

async fn dataset(partitions: usize) -> Result<Fixture, Box<dyn std::error::Error>> {
    let fixture = Fixture::with_config(EngineConfig {
        target_partitions: partitions,
        ..EngineConfig::default()
    })
    .await?;
    fixture
        .segment(vec![
            log(0, "INFO", "user login ok", "auth", Some("/login")),
            log(1, "ERROR", "Connection reset by peer", "checkout", Some("/api/x")),
            log(2, "ERROR", "deadlock detected in tx 42", "checkout", Some("/api/y")),
            log(3, "WARN", "slow query took 1200ms", "db", None),
        ])
        .await?;
    fixture
        .segment(vec![
            span(4, "GET /api/x", "aaaa", 250, "checkout"),
            span(5, "SELECT cart", "aaaa", 10, "db"),
            span(6, "GET /login", "bbbb", 40, "auth"),
            log(7, "INFO", "cart updated", "checkout", Some("/api/x")),
        ])
        .await?;
    Ok(fixture)
}

async fn outcome(fixture: &Fixture, text: &str) -> Json {
    let request = QueryRequest {
        text: text.to_string(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    };
    match fixture.engine.execute(&request).await {
        Ok(output) => {
            let table = &output.tables[0];
            json!({
                "columns": table.columns.iter().map(|(n, t)| json!([n, t.as_str()])).collect::<Vec<_>>(),
                "rows": table.json_rows(),
            })
        }
        Err(error) => json!({ "error": { "code": error.code.as_str(), "message": error.message } }),
    }
}

fn normalized(mut value: Json, ordered: bool) -> Json {
    if !ordered && let Some(rows) = value.get_mut("rows").and_then(Json::as_array_mut) {
        rows.sort_by_key(|r| r.to_string());
    }
    value
}

#[tokio::test]
async fn golden_queries() -> TestResult {
    let update = std::env::var("TRAWL_UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let single = dataset(1).await?;
    let parallel = dataset(4).await?;
    let mut cases: Vec<PathBuf> = std::fs::read_dir(golden_dir())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "kql"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no golden cases in {}", golden_dir().display());
    let mut failures = Vec::new();
    for case in &cases {
        let text = std::fs::read_to_string(case)?;
        let ordered = text.lines().next().is_some_and(|l| l.trim() == "// ordered");
        let one = normalized(outcome(&single, &text).await, ordered);
        let many = normalized(outcome(&parallel, &text).await, ordered);
        let expected_path = case.with_extension("expected");
        if update {
            std::fs::write(&expected_path, serde_json::to_string_pretty(&one)? + "\n")?;
        }
        let expected: Json = match std::fs::read_to_string(&expected_path) {
            Ok(text) => serde_json::from_str(&text)?,
            Err(_) => {
                failures.push(format!(
                    "{}: no expected file (run with TRAWL_UPDATE_GOLDEN=1)",
                    case.display()
                ));
                continue;
            }
        };
        let expected = normalized(expected, ordered);
        let name = case
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if one != expected {
            failures.push(format!(
                "{name} (1 partition):\n  expected {expected}\n  actual   {one}"
            ));
        }
        if many != expected {
            failures.push(format!(
                "{name} (4 partitions):\n  expected {expected}\n  actual   {many}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden case(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    Ok(())
}
