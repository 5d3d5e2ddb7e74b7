//! Chunks whose statistics prove that every row passes the filters are read without them.

use std::sync::Arc;

use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionContext;
use serde_json::json;
use trawl_storage::TrawlTable;
use trawl_storage::schema::table_schema;

use crate::fixture::{Fixture, TestResult, log, span};

/// A log segment, a span segment and a segment with both kinds.
async fn fixture() -> Result<Fixture, Box<dyn std::error::Error>> {
    let f = Fixture::new().await?;
    f.segment(vec![
        log(0, "INFO", "a", "s", Some("/r")),
        log(1, "ERROR", "b", "s", None),
        log(2, "INFO", "c", "t", None),
    ])
    .await?;
    f.segment(vec![span(3, "op", "t1", 5, "s"), span(4, "op2", "t2", 7, "s")])
        .await?;
    f.segment(vec![log(5, "WARN", "d", "s", None), span(6, "op3", "t3", 9, "t")])
        .await?;
    Ok(f)
}

/// A SQL context over `state` where table `t` is `default` with all of its segments.
async fn context_with_table(f: &Fixture, state: SessionState) -> Result<SessionContext, Box<dyn std::error::Error>> {
    let info = f
        .catalog
        .tables("default")
        .await?
        .into_iter()
        .find(|t| t.name == "default")
        .ok_or("no table")?;
    let table = TrawlTable::new("default", "default", table_schema(&info.columns), f.catalog.clone());
    let context = SessionContext::new_with_state(state);
    f.writer.store().register_with(context.runtime_env().as_ref())?;
    context.register_table("t", Arc::new(table))?;
    Ok(context)
}

/// The physical plan of `sql` over table `t` (all of `default`'s segments) and its answer.
async fn plan_and_count(f: &Fixture, sql: &str) -> Result<(String, i64), Box<dyn std::error::Error>> {
    let state = SessionStateBuilder::new().with_default_features().build();
    let context = context_with_table(f, state).await?;
    let frame = context.sql(sql).await?;
    let plan = frame.clone().create_physical_plan().await?;
    let text = displayable(plan.as_ref()).indent(true).to_string();
    let batches = frame.collect().await?;
    let count = batches
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Int64Array>()
        })
        .map_or(-1, |a| a.value(0));
    Ok((text, count))
}

#[tokio::test]
async fn filters_proven_by_statistics_are_not_evaluated() -> TestResult {
    let f = fixture().await?;
    // The log segment is full, the span segment is skipped, the mixed one is filtered.
    let (plan, count) = plan_and_count(&f, "SELECT count(*) FROM t WHERE severity_text IS NOT NULL").await?;
    assert_eq!(count, 4);
    assert!(plan.contains("UnionExec"), "{plan}");
    assert_eq!(plan.matches("FilterExec").count(), 1, "{plan}");
    // Only log segments hold a severity that is not null: no filter at all when the mixed
    // segment is not in the table.
    let (plan, count) = plan_and_count(&f, "SELECT count(*) FROM t WHERE span_name = 'op'").await?;
    assert_eq!(count, 1);
    assert!(plan.contains("FilterExec"), "{plan}");
    Ok(())
}

#[tokio::test]
async fn kql_answers_are_the_same_through_full_partial_and_skipped_chunks() -> TestResult {
    let f = fixture().await?;
    assert_eq!(
        f.rows("default | where isnotempty(body) | count").await?,
        vec![vec![json!(4)]]
    );
    assert_eq!(
        f.rows("default | where isnotempty(body) | summarize count() by severity_text | sort by severity_text asc")
            .await?,
        vec![
            vec![json!("ERROR"), json!(1)],
            vec![json!("INFO"), json!(2)],
            vec![json!("WARN"), json!(1)]
        ]
    );
    assert_eq!(
        f.rows("default | where isnotempty(span_name) | count").await?,
        vec![vec![json!(3)]]
    );
    assert_eq!(
        f.rows("default | where isempty(body) | count").await?,
        vec![vec![json!(3)]]
    );
    assert_eq!(
        f.rows("default | where isnotempty(body) | take 2 | count").await?,
        vec![vec![json!(2)]]
    );
    assert_eq!(
        f.rows(
            "default | where isnotempty(body) and severity_text == 'INFO' | project body | sort by tostring(body) asc"
        )
        .await?,
        vec![vec![json!("a")], vec![json!("c")]]
    );
    Ok(())
}

#[tokio::test]
async fn a_count_over_full_chunks_comes_from_the_statistics() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(vec![log(0, "INFO", "a", "s", None), log(1, "ERROR", "b", "s", None)])
        .await?;
    f.segment(vec![span(2, "op", "t1", 5, "s")]).await?;
    let (plan, count) = plan_and_count(&f, "SELECT count(*) FROM t WHERE body IS NOT NULL").await?;
    assert_eq!(count, 2);
    assert!(!plan.contains("DataSourceExec"), "{plan}");
    assert_eq!(
        f.rows("default | where isnotempty(body) | count").await?,
        vec![vec![json!(2)]]
    );
    Ok(())
}

#[tokio::test]
async fn count_by_a_string_column_counts_dictionary_indices() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(vec![
        log(0, "INFO", "a", "s", None),
        log(1, "ERROR", "b", "s", None),
        log(2, "INFO", "c", "t", None),
    ])
    .await?;
    let mut without_severity = log(3, "INFO", "d", "t", None);
    without_severity.remove("severity_text");
    f.segment(vec![log(4, "WARN", "e", "s", None), without_severity])
        .await?;
    let query = "default | where isnotempty(body) | summarize count() by severity_text | sort by severity_text asc";
    let expected = vec![
        vec![json!(""), json!(1)],
        vec![json!("ERROR"), json!(1)],
        vec![json!("INFO"), json!(2)],
        vec![json!("WARN"), json!(1)],
    ];
    assert_eq!(f.rows(query).await?, expected);
    // The same in SQL, and the plan uses the dictionary count.
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(trawl_storage::count_by::CountByDictionary))
        .build();
    let context = context_with_table(&f, state).await?;
    let frame = context
        .sql("SELECT severity_text, count(*) AS n FROM t WHERE body IS NOT NULL GROUP BY severity_text ORDER BY severity_text")
        .await?;
    let plan = displayable(frame.clone().create_physical_plan().await?.as_ref())
        .indent(true)
        .to_string();
    assert!(plan.contains("CountByDictionaryExec"), "{plan}");
    let batches = frame.collect().await?;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
    assert!(text.contains("| ERROR         | 1 |"), "{text}");
    assert!(text.contains("| INFO          | 2 |"), "{text}");
    assert!(text.contains("|               | 1 |"), "{text}");
    Ok(())
}

#[tokio::test]
async fn segments_of_one_column_set_are_classified_together_and_each_keeps_its_own_chunks() -> TestResult {
    let f = Fixture::new().await?;
    // Same columns in each: all INFO (full for INFO), all ERROR (skipped for INFO), both
    // (filtered), all INFO again.
    f.segment(vec![log(0, "INFO", "a", "s", None), log(1, "INFO", "b", "s", None)])
        .await?;
    f.segment(vec![log(2, "ERROR", "c", "s", None), log(3, "ERROR", "d", "s", None)])
        .await?;
    f.segment(vec![log(4, "INFO", "e", "s", None), log(5, "ERROR", "f", "s", None)])
        .await?;
    f.segment(vec![log(6, "INFO", "g", "s", None)]).await?;
    let (plan, count) = plan_and_count(&f, "SELECT count(*) FROM t WHERE severity_text = 'INFO'").await?;
    assert_eq!(count, 4);
    assert_eq!(
        plan.matches("FilterExec").count(),
        1,
        "only the mixed segment is filtered: {plan}"
    );
    let (_, count) = plan_and_count(&f, "SELECT count(*) FROM t WHERE severity_text = 'ERROR'").await?;
    assert_eq!(count, 3);
    for (kql, expected) in [
        ("default | where severity_text == 'INFO' | count", 4),
        ("default | where severity_text == 'ERROR' | count", 3),
        ("default | where severity_text != 'INFO' | count", 3),
        ("default | where severity_text in ('INFO', 'ERROR') | count", 7),
        ("default | where severity_text == 'WARN' | count", 0),
    ] {
        // Twice: classified, then from the remembered classification.
        for _ in 0..2 {
            assert_eq!(f.rows(kql).await?, vec![vec![json!(expected)]], "{kql}");
        }
    }
    assert_eq!(
        f.rows("default | where severity_text == 'INFO' | project body | sort by tostring(body) asc")
            .await?,
        vec![vec![json!("a")], vec![json!("b")], vec![json!("e")], vec![json!("g")]]
    );
    Ok(())
}

#[tokio::test]
async fn short_string_equality_compares_views_and_answers_as_before() -> TestResult {
    let f = Fixture::new().await?;
    f.segment(vec![
        log(0, "INFO", "a", "s", None),
        log(1, "ERROR", "b", "s", None),
        log(2, "ERRORS", "c", "s", None),
        log(3, "", "d", "s", None),
    ])
    .await?;
    f.segment(vec![span(4, "op", "t1", 5, "s")]).await?;
    let plan = f
        .engine
        .physical_plans(&trawl_engine::QueryRequest {
            text: "default | where severity_text == 'ERROR' | count".into(),
            database: "default".into(),
            window: Default::default(),
            parameters: Default::default(),
        })
        .await?;
    let text: String = plan.iter().map(|(p, _)| p.as_str()).collect();
    assert!(text.contains("trawl_short_eq"), "{text}");
    for (kql, expected) in [
        ("default | where severity_text == 'ERROR' | count", 1),
        ("default | where severity_text != 'ERROR' | count", 4),
        ("default | where 'ERRORS' == severity_text | count", 1),
        ("default | where severity_text == '' | count", 2),
        (
            "default | where severity_text == 'a value longer than twelve' | count",
            0,
        ),
        (
            "default | where severity_text == 'ERROR' or severity_text == 'INFO' | count",
            2,
        ),
    ] {
        assert_eq!(f.rows(kql).await?, vec![vec![json!(expected)]], "{kql}");
    }
    Ok(())
}
