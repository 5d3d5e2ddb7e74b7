//! Distributed queries: three engines over one catalog and one segment store, each serving
//! its worker on a local port, answer as one engine alone does.

use std::sync::Arc;

use serde_json::Value as Json;
use std::time::Duration;
use trawl_common::Row;

use trawl_engine::{ClusterSettings, Engine, EngineConfig, QueryEvent, QueryRequest, QueryWindow, RunOptions, Workers};
use trawl_storage::SegmentStore;

use crate::fixture::{Fixture, TestResult, log, span};

/// An engine of a three-node cluster, serving its worker on `listener`.
async fn node(
    fixture: &Fixture,
    store: &SegmentStore,
    listener: tokio::net::TcpListener,
    workers: Arc<Workers>,
) -> Result<Engine, Box<dyn std::error::Error>> {
    let address = listener.local_addr()?;
    let settings = ClusterSettings {
        self_url: format!("http://{address}"),
        channels: Arc::new(datafusion_distributed::grpc::DefaultChannelResolver::default()),
        min_bytes: 0,
        min_segments: 0,
        // One process: the scans' live totals of all three nodes are this node's.
        probe: None,
    };
    let engine =
        Engine::new(fixture.catalog.clone(), store, EngineConfig::default())?.with_cluster(settings, workers)?;
    let worker = engine.worker().ok_or("a cluster engine has a worker")?;
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(worker.into_worker_server())
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    Ok(engine)
}

/// Three engines over the fixture's catalog and store, each serving its worker.
async fn cluster(fixture: &Fixture) -> Result<Vec<Engine>, Box<dyn std::error::Error>> {
    cluster_with_gone(fixture, 3, 0).await
}

/// `live` engines over the fixture's catalog and store, each serving its worker, and `gone`
/// nodes listed beside them that no longer listen (killed, and not yet dropped by meta).
async fn cluster_with_gone(
    fixture: &Fixture,
    live: usize,
    gone: usize,
) -> Result<Vec<Engine>, Box<dyn std::error::Error>> {
    let store = fixture.writer.store().clone();
    let mut listeners = Vec::new();
    for _ in 0..live + gone {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await?);
    }
    let workers = Arc::new(Workers::default());
    let addresses: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| format!("http://{a}")))
        .collect::<Result<_, _>>()?;
    workers.set(&addresses);
    listeners.truncate(live);
    let mut nodes = Vec::new();
    for listener in listeners {
        nodes.push(node(fixture, &store, listener, workers.clone()).await?);
    }
    Ok(nodes)
}

fn rows_of(day: i64) -> Vec<Row> {
    let services = ["checkout", "cart", "search", "auth"];
    let severities = ["INFO", "WARN", "ERROR", "INFO", "DEBUG"];
    (0..40)
        .map(|i| {
            let minute = day * 100 + i;
            let route = (i % 3 == 0).then_some("/api/pay");
            log(
                minute,
                severities[(i as usize + day as usize) % severities.len()],
                &format!("request {i} took {} ms for user{}", (i * 37 + day) % 500, i % 7),
                services[(i as usize * 3 + day as usize) % services.len()],
                route,
            )
        })
        .collect()
}

async fn run(engine: &Engine, text: &str) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let request = QueryRequest {
        text: text.to_string(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    };
    let output = engine.execute(&request).await?;
    // The order of a set's elements is not defined: compared sorted.
    let sets = text.contains("make_set");
    let mut rows: Vec<String> = output
        .tables
        .iter()
        .flat_map(|t| t.json_rows())
        .map(|row| {
            let row = match sets {
                true => row.into_iter().map(sorted_array).collect(),
                false => row,
            };
            Json::Array(row).to_string()
        })
        .collect();
    let ordered = ["sort ", "order ", "top ", "serialize", "row_number"]
        .iter()
        .any(|word| text.contains(word));
    if !ordered {
        rows.sort();
    }
    Ok(rows)
}

fn sorted_array(value: Json) -> Json {
    match value {
        Json::Array(mut items) => {
            items.sort_by_key(|item| item.to_string());
            Json::Array(items)
        }
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_answer_as_one_does() -> TestResult {
    let fixture = Fixture::new().await?;
    for day in 0..9 {
        fixture.segment(rows_of(day)).await?;
    }
    let spans: Vec<Row> = (0..30)
        .map(|i| {
            span(
                i,
                ["GET /", "POST /pay"][i as usize % 2],
                &format!("t{}", i % 5),
                10 + i * 3,
                "web",
            )
        })
        .collect();
    let meta = fixture.writer.write_rows("default", "spans", spans).await?;
    fixture.catalog.commit_segments(&[meta], &[]).await?;

    let nodes = cluster(&fixture).await?;

    let queries = [
        "default | count",
        "default | summarize count() by severity_text",
        "default | summarize n = count(), first = min(timestamp), last = max(timestamp) by tostring(resource['service.name'])",
        "default | where severity_text == 'ERROR' | summarize count() by bin(timestamp, 1h)",
        "default | where body has 'user3' | project timestamp, body",
        "default | where body contains 'took 1' | count",
        "default | summarize dcount(tostring(body)), make_set(severity_text) by tostring(resource['service.name'])",
        "default | summarize percentiles(toint(extract('took ([0-9]+)', 1, tostring(body))), 50, 90) by severity_text",
        "default | top 7 by timestamp desc | project timestamp, severity_text",
        "default | sort by timestamp asc | take 5 | project timestamp",
        "default | distinct severity_text",
        "default | extend route = tostring(attributes['http.route']) | where isnotempty(route) | summarize count() by route, severity_text",
        "default | where timestamp > datetime(2023-11-14T23:00:00Z) and timestamp < datetime(2023-11-15T04:00:00Z) | summarize count() by severity_text",
        "spans | summarize max(duration), count(), avg(totimespan(duration) / 1ms) by trace_id",
        "spans | join kind=inner (default | summarize c = count() by service = tostring(resource['service.name'])) on $left.span_name == $right.service | count",
        "default | summarize c = count() by sev = severity_text | join kind=leftouter (spans | summarize s = count() by sev = 'INFO') on sev | project sev, c, s",
        "default | take 3 | count",
        "default | summarize arg_max(timestamp, body) by severity_text",
        "default | make-series count() default = 0 on timestamp from datetime(2023-11-14T22:00:00Z) to datetime(2023-11-15T14:00:00Z) step 1h by severity_text",
        "default | where severity_text in ('WARN', 'ERROR') | summarize hourly = count() by bin(timestamp, 1h), severity_text | summarize max(hourly) by severity_text",
    ];
    let mut stayed = Vec::new();
    for text in queries {
        let alone = run(&fixture.engine, text).await?;
        for (index, node) in nodes.iter().enumerate() {
            let together = run(node, text)
                .await
                .map_err(|e| format!("node {index}: {text}: {e}"))?;
            assert_eq!(together, alone, "node {index} differs on: {text}");
        }
        let request = QueryRequest {
            text: text.to_string(),
            database: "default".into(),
            window: QueryWindow::default(),
            parameters: Default::default(),
        };
        let placements = nodes[0].physical_plans(&request).await?;
        for (_, placement) in placements {
            if !placement.is_distributed() {
                stayed.push(format!("{text}: {placement}"));
            }
        }
    }
    assert!(
        stayed.is_empty(),
        "queries that did not spread over the nodes: {stayed:#?}"
    );
    Ok(())
}

/// A node still listed but gone costs no query: the plan spread over it fails before any
/// row goes out (a distributed plan's first rows are held back until it ends, though the
/// final stage's partitions on the live nodes finish before the call to the gone one fails),
/// and the query runs again without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_node_that_is_gone_costs_no_query() -> TestResult {
    let fixture = Fixture::new().await?;
    for day in 0..9 {
        fixture.segment(rows_of(day)).await?;
    }
    let queries = [
        "default | summarize count() by severity_text",
        "default | summarize n = count() by tostring(resource['service.name']), severity_text",
        "default | where body has 'user3' | project timestamp, body",
    ];
    for text in queries {
        let alone = run(&fixture.engine, text).await?;
        // Each round a new cluster, whose nodes have not yet found the gone one out.
        for round in 0..3 {
            let nodes = cluster_with_gone(&fixture, 2, 1).await?;
            let together = run(&nodes[0], text)
                .await
                .map_err(|e| format!("round {round}: {text}: {e}"))?;
            assert_eq!(together, alone, "round {round}: {text}");
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_share_of_the_nodes_keeps_a_query_here() -> TestResult {
    let fixture = Fixture::new().await?;
    fixture.segment(rows_of(0)).await?;
    let store = fixture.writer.store().clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let workers = Arc::new(Workers::default());
    // One live node (itself) only: nothing to spread over.
    workers.set(&[format!("http://{}", listener.local_addr()?)]);
    let engine = node(&fixture, &store, listener, workers).await?;
    let request = QueryRequest {
        text: "default | count".into(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    };
    let plans = engine.physical_plans(&request).await?;
    let placement = plans[0].1.to_string();
    assert!(placement.contains("no other query node"), "{placement}");
    Ok(())
}

/// Progress reports of a distributed query count what the workers read while it runs, not
/// only once their tasks end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_counts_the_workers_reads_while_the_query_runs() -> TestResult {
    let fixture = Fixture::new().await?;
    for day in 0..9 {
        fixture.segment(rows_of(day)).await?;
    }
    let nodes = cluster(&fixture).await?;
    let request = QueryRequest {
        text: "default | project timestamp, body".into(),
        database: "default".into(),
        window: QueryWindow::default(),
        parameters: Default::default(),
    };
    let options = RunOptions {
        progress_every: Some(Duration::from_millis(10)),
        timeout: None,
        snapshots: false,
        face: "",
        fanout_nodes_percent: None,
        ..RunOptions::default()
    };
    let mut events = nodes[0].run(request, options);
    // Until the table starts, then a pause: the run waits for its reader with the plan
    // running, the workers read, and the reports after the pause must show it.
    loop {
        match events.next_event().await {
            Some(QueryEvent::TableStarted { .. }) => break,
            Some(QueryEvent::Failed(error)) => return Err(error.to_string().into()),
            None => return Err("the run ended before its table started".into()),
            Some(_) => {}
        }
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut reports = Vec::new();
    let mut rows_sent = 0;
    let mut while_running = None;
    while let Some(event) = events.next_event().await {
        match event {
            QueryEvent::Progress(progress) => reports.push(progress.rows_processed),
            QueryEvent::Rows(batch) => rows_sent += batch.num_rows(),
            // The workers' metrics are in once the table is read.
            QueryEvent::TableFinished { .. } => while_running = Some(reports.len()),
            QueryEvent::Failed(error) => return Err(error.to_string().into()),
            _ => {}
        }
    }
    assert_eq!(rows_sent, 9 * 40);
    let while_running = while_running.ok_or("the table did not finish")?;
    assert!(
        reports[..while_running].iter().any(|&rows| rows > 0),
        "no report while the plan ran counted what the workers read: {reports:?}"
    );
    assert!(
        reports.windows(2).all(|w| w[0] <= w[1]),
        "reports went down: {reports:?}"
    );
    assert_eq!(reports.last().copied(), Some(9 * 40));
    Ok(())
}
