//! Operators and plugins whose output is more than one table (`funnel_sequence`, `facet`), and
//! `consume`.

use serde_json::json;
use trawl_common::ErrorCode;

use crate::fixture::{Fixture, TestResult};

const EVENTS: &str = r#"let events = datatable(user:string, t:datetime, event:string)[
    "u1", datetime(2024-01-01 00:00), "hail", "u1", datetime(2024-01-01 00:10), "tornado", "u1", datetime(2024-01-01 00:20), "wind",
    "u2", datetime(2024-01-01 01:00), "rain", "u2", datetime(2024-01-01 01:10), "tornado", "u2", datetime(2024-01-01 01:20), "hail",
    "u3", datetime(2024-01-01 02:00), "hail", "u3", datetime(2024-01-01 02:10), "tornado",
    "u4", datetime(2024-01-01 03:00), "hail", "u4", datetime(2024-01-01 09:00), "tornado", "u4", datetime(2024-01-01 09:05), "wind"];"#;

#[tokio::test]
async fn funnel_sequence_gives_three_tables_of_what_came_before_and_after() -> TestResult {
    let f = Fixture::new().await?;
    let output = f
        .execute(&format!(
            "{EVENTS} events | where user != 'nobody' \
             | evaluate funnel_sequence(user, t, datetime(2024-01-01), datetime(2024-01-02), 1h, 1d, event, \
               dynamic(['tornado']))"
        ))
        .await?;
    assert_eq!(output.tables.len(), 3);
    let columns = |i: usize| -> Vec<String> { output.tables[i].columns.iter().map(|(n, _)| n.clone()).collect() };
    assert_eq!(columns(0), ["t", "prev", "next", "dcount", "samples"]);
    assert_eq!(columns(1), ["t", "prev", "dcount", "samples"]);
    assert_eq!(columns(2), ["t", "next", "dcount", "samples"]);
    let day = json!("2024-01-01T00:00:00.0000000Z");
    // u1: hail > tornado > wind; u2: rain > tornado > hail; u3: hail > tornado > (end);
    // u4: hail six hours before (outside the 1h window) > tornado > wind.
    let without_samples = |i: usize| -> Vec<Vec<serde_json::Value>> {
        output.tables[i]
            .json_rows()
            .into_iter()
            .map(|mut row| {
                row.pop();
                row
            })
            .collect()
    };
    assert_eq!(
        without_samples(0),
        vec![
            vec![day.clone(), json!(""), json!("wind"), json!(1)],
            vec![day.clone(), json!("hail"), json!(""), json!(1)],
            vec![day.clone(), json!("hail"), json!("wind"), json!(1)],
            vec![day.clone(), json!("rain"), json!("hail"), json!(1)],
        ]
    );
    assert_eq!(
        without_samples(1),
        vec![
            vec![day.clone(), json!("hail"), json!(2)],
            vec![day.clone(), json!(""), json!(1)],
            vec![day.clone(), json!("rain"), json!(1)],
        ]
    );
    assert_eq!(
        without_samples(2),
        vec![
            vec![day.clone(), json!("wind"), json!(2)],
            vec![day.clone(), json!(""), json!(1)],
            vec![day.clone(), json!("hail"), json!(1)],
        ]
    );
    assert_eq!(output.tables[2].json_rows()[0][3], json!(["u1", "u4"]));
    // Three tables end the query.
    let error = f
        .run(&format!(
            "{EVENTS} events | evaluate funnel_sequence(user, t, datetime(2024-01-01), datetime(2024-01-02), 1h, 1d, \
             event, dynamic(['tornado'])) | count"
        ))
        .await
        .err()
        .ok_or("refused")?;
    assert_eq!(error.code, ErrorCode::BadRequest);
    Ok(())
}

#[tokio::test]
async fn a_longer_funnel_sequence_matches_consecutive_steps() -> TestResult {
    let f = Fixture::new().await?;
    let rows = f
        .rows(&format!(
            "{EVENTS} events | evaluate funnel_sequence(user, t, datetime(2024-01-01), datetime(2024-01-02), 1h, 1d, \
             event, dynamic(['hail', 'tornado']))"
        ))
        .await?;
    // u1 and u3 (u4's steps are six hours apart; u2's hail comes after its tornado).
    let counted: Vec<(serde_json::Value, serde_json::Value, serde_json::Value)> = rows
        .iter()
        .map(|r| (r[1].clone(), r[2].clone(), r[3].clone()))
        .collect();
    assert_eq!(
        counted,
        vec![(json!(""), json!(""), json!(1)), (json!(""), json!("wind"), json!(1))]
    );
    Ok(())
}

#[tokio::test]
async fn facet_counts_each_column_after_the_with_table() -> TestResult {
    let f = Fixture::new().await?;
    let output = f
        .execute(&format!(
            "{EVENTS} events | where user != 'u4' | facet by event, user with (where event == 'hail' | project user)"
        ))
        .await?;
    assert_eq!(output.tables.len(), 3);
    assert_eq!(output.tables[0].json_rows().len(), 3);
    let columns: Vec<&str> = output.tables[1].columns.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(columns, ["event", "count_event"]);
    // Most rows first, then by value.
    assert_eq!(
        output.tables[1].json_rows(),
        vec![
            vec![json!("hail"), json!(3)],
            vec![json!("tornado"), json!(3)],
            vec![json!("rain"), json!(1)],
            vec![json!("wind"), json!(1)],
        ]
    );
    assert_eq!(output.tables[2].json_rows().len(), 3);
    // facet ends its query; an unknown column is named.
    let misplaced = f.run(&format!("{EVENTS} events | facet by event | count")).await;
    assert_eq!(misplaced.err().map(|e| e.code), Some(ErrorCode::BadRequest));
    let unknown = f.run(&format!("{EVENTS} events | facet by nope")).await;
    assert_eq!(unknown.err().map(|e| e.code), Some(ErrorCode::UnknownColumn));
    Ok(())
}

#[tokio::test]
async fn consume_reads_everything_and_returns_nothing() -> TestResult {
    let f = Fixture::new().await?;
    let (columns, rows) = f.run(&format!("{EVENTS} events | consume")).await?;
    assert_eq!(columns.len(), 3);
    assert!(rows.is_empty());
    Ok(())
}

const GRAPH: &str = r#"let nodes = datatable(name:string, type:string, age:long)
[ "Alice", "Person", 23, "Bob", "Person", 31, "Eve", "Person", 17, "Trent", "System", 99 ];
let edges = datatable(source:string, destination:string, edge_type:string)
[ "Alice", "Bob", "communicatesWith", "Alice", "Trent", "trusts", "Bob", "Trent", "hasPermission",
  "Eve", "Alice", "attacks", "Mallory", "Alice", "attacks", "Mallory", "Bob", "attacks" ];
"#;

#[tokio::test]
async fn graph_to_table_names_its_nodes_and_edges_tables() -> TestResult {
    let f = Fixture::new().await?;
    let both = "edges | make-graph source --> destination with nodes on name \
                | graph-to-table nodes as N with_node_id=NodeId, edges as E with_source_id=SourceId";
    // Bound for the statements after it.
    let output = f
        .execute(&format!(
            "{GRAPH}{both}; N | count; E | where edge_type == 'attacks' | count"
        ))
        .await?;
    assert_eq!(output.tables.len(), 2);
    assert_eq!(output.tables[0].json_rows(), vec![vec![json!(5)]]);
    assert_eq!(output.tables[1].json_rows(), vec![vec![json!(3)]]);
    // As the last statement, both tables are the result.
    let output = f.execute(&format!("{GRAPH}{both}")).await?;
    let names: Vec<&str> = output.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["N", "E"]);
    assert_eq!(output.tables[0].columns[0].0, "NodeId");
    assert_eq!(output.tables[1].columns[0].0, "SourceId");
    assert_eq!(output.tables[1].json_rows().len(), 6);
    // Both tables need names.
    let unnamed = f
        .run(&format!(
            "{GRAPH}edges | make-graph source --> destination with nodes on name | graph-to-table nodes, edges"
        ))
        .await;
    assert_eq!(unnamed.err().map(|e| e.code), Some(ErrorCode::BadRequest));
    Ok(())
}

#[tokio::test]
async fn preview_gives_the_first_rows_and_the_count() -> TestResult {
    let f = Fixture::new().await?;
    let output = f
        .execute("range x from 1 to 100 step 1 | where x % 2 == 0 | evaluate preview(3)")
        .await?;
    assert_eq!(output.tables.len(), 2);
    assert_eq!(output.tables[0].json_rows().len(), 3);
    assert_eq!(output.tables[1].json_rows(), vec![vec![json!(50)]]);
    // It ends its query; its row count is a constant.
    let after = f.run("range x from 1 to 3 step 1 | evaluate preview(2) | count").await;
    assert_eq!(after.err().map(|e| e.code), Some(ErrorCode::BadRequest));
    let variable = f.run("range x from 1 to 3 step 1 | evaluate preview(x)").await;
    assert_eq!(variable.err().map(|e| e.code), Some(ErrorCode::BadRequest));
    Ok(())
}
