//! `QueryService.ExecuteQuery` through a tonic client, on the port the HTTP routes share.

use std::sync::Arc;
use std::time::Duration;

use trawl_api::QueryState;
use trawl_api::state::Readiness;
use trawl_catalog::{Catalog, SqlCatalog};
use trawl_common::{Row, Value};
use trawl_engine::{Engine, EngineConfig};
use trawl_proto::query::execute_query_result_frame::Payload;
use trawl_proto::query::query_service_client::QueryServiceClient;
use trawl_proto::query::{ColumnType, ExecuteQueryRequest, ExecuteQueryResultFrame, value};
use trawl_storage::{SegmentStore, SegmentWriter};

use crate::TestResult;

const T0: i64 = 1_700_000_000_000_000_000;
const HOLDER_ROWS: usize = 40_000;

struct Server {
    _dir: tempfile::TempDir,
    address: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A query port over `rows` log rows (one segment), with `slots` query slots.
async fn server(rows: usize, slots: usize) -> Result<Server, Box<dyn std::error::Error>> {
    let config = EngineConfig {
        max_concurrent_queries: slots,
        ..EngineConfig::default()
    };
    server_with(rows, config).await
}

/// A query port over `rows` log rows (one segment), its engine configured so.
async fn server_with(rows: usize, config: EngineConfig) -> Result<Server, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let catalog: Arc<dyn Catalog> = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    let rows: Vec<Row> = (0..rows as i64)
        .map(|i| {
            let mut row = Row::default();
            row.push("timestamp", Value::DateTime(T0 + i * 1_000_000));
            row.push(
                "severity_text",
                Value::String(if i % 2 == 0 { "ERROR" } else { "INFO" }.into()),
            );
            row.push("body", Value::Dynamic(serde_json::json!({"n": i, "tags": ["a", "b"]})));
            // Wide enough that an unread result outgrows the transport's windows and buffers
            // (2 MiB client window, 400 KiB server buffer).
            row.push("note", Value::String(format!("{i:0>100}")));
            row
        })
        .collect();
    let meta = SegmentWriter::new(store.clone())
        .write_rows("default", "default", rows)
        .await?;
    catalog.commit_segments(&[meta], &[]).await?;
    let state = QueryState {
        engine: Engine::new(catalog, &store, config)?,
        database: "default".into(),
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
        signatures: None,
        objects: None,
        restore_window: std::time::Duration::from_secs(3600),
        runs: None,
    };
    let router = trawl_api::query_http::router(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(Server {
        _dir: dir,
        address,
        task,
    })
}

async fn client(server: &Server) -> Result<QueryServiceClient<tonic::transport::Channel>, Box<dyn std::error::Error>> {
    Ok(QueryServiceClient::connect(format!("http://{}", server.address)).await?)
}

fn query(text: &str) -> ExecuteQueryRequest {
    ExecuteQueryRequest {
        query: text.to_string(),
        ..Default::default()
    }
}

async fn frames(
    client: &mut QueryServiceClient<tonic::transport::Channel>,
    text: &str,
) -> Result<Vec<Payload>, Box<dyn std::error::Error>> {
    let mut all = Vec::new();
    for ExecuteQueryResultFrame { payload, .. } in whole_frames(client, text).await? {
        all.push(payload.ok_or("a frame without payload")?);
    }
    Ok(all)
}

/// Every frame of `text`'s stream, with its request id.
async fn whole_frames(
    client: &mut QueryServiceClient<tonic::transport::Channel>,
    text: &str,
) -> Result<Vec<ExecuteQueryResultFrame>, Box<dyn std::error::Error>> {
    let mut stream = client.execute_query(query(text)).await?.into_inner();
    let mut all = Vec::new();
    while let Some(frame) = stream.message().await? {
        all.push(frame);
    }
    Ok(all)
}

#[tokio::test]
async fn a_large_result_streams_in_ordered_batches_of_one_iteration() -> TestResult {
    let server = server(1_234, 4).await?;
    let mut client = client(&server).await?;
    let all = frames(
        &mut client,
        "default | project timestamp, severity_text, body | order by timestamp asc",
    )
    .await?;
    let kinds: Vec<&str> = all
        .iter()
        .filter(|p| !matches!(p, Payload::Progress(_)))
        .map(|p| match p {
            Payload::Schema(_) => "schema",
            Payload::Metadata(_) => "metadata",
            Payload::Batch(_) => "batch",
            Payload::Done(_) => "done",
            Payload::Error(_) => "error",
            Payload::Progress(_) => "progress",
        })
        .collect();
    assert_eq!(kinds[..2], ["schema", "metadata"]);
    assert_eq!(kinds.last(), Some(&"done"));
    assert!(kinds[2..kinds.len() - 1].iter().all(|k| *k == "batch"), "{kinds:?}");
    let Payload::Schema(schema) = &all
        .iter()
        .find(|p| matches!(p, Payload::Schema(_)))
        .ok_or("no schema")?
    else {
        return Err("no schema".into());
    };
    assert_eq!(schema.name, "PrimaryResult");
    let types: Vec<i32> = schema.columns.iter().map(|c| c.r#type).collect();
    assert_eq!(
        types,
        [
            ColumnType::Datetime as i32,
            ColumnType::String as i32,
            ColumnType::Dynamic as i32
        ]
    );
    let batches: Vec<_> = all
        .iter()
        .filter_map(|p| match p {
            Payload::Batch(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(batches.len(), 13);
    assert!(
        batches
            .iter()
            .all(|b| b.rows.len() <= 100 && b.table_name == "PrimaryResult")
    );
    assert!(
        batches
            .iter()
            .all(|b| b.result_iteration_id == batches[0].result_iteration_id)
    );
    let complete: Vec<bool> = batches.iter().map(|b| b.is_iteration_complete).collect();
    assert_eq!(complete.iter().filter(|c| **c).count(), 1);
    assert_eq!(complete.last(), Some(&true));
    let rows: Vec<_> = batches.iter().flat_map(|b| b.rows.iter()).collect();
    assert_eq!(rows.len(), 1_234);
    // Datetimes are 100 ns ticks since the Unix epoch; bags keep their keys.
    let first = &rows[0].values;
    assert_eq!(first[0].kind, Some(value::Kind::DatetimeTicks(T0 / 100)));
    assert_eq!(first[1].kind, Some(value::Kind::StringValue("ERROR".into())));
    let Some(value::Kind::BagValue(bag)) = &first[2].kind else {
        return Err(format!("body should be a bag: {:?}", first[2]).into());
    };
    let keys: Vec<&str> = bag.properties.iter().map(|p| p.key.as_str()).collect();
    assert!(all.len() > 13, "progress frames come too");
    assert_eq!(keys, ["n", "tags"]);
    // Progress is cumulative: the last report has every row.
    let last_progress = all
        .iter()
        .rev()
        .find_map(|p| match p {
            Payload::Progress(p) => Some(p),
            _ => None,
        })
        .ok_or("no progress")?;
    assert_eq!(last_progress.rows_processed, 1_234);
    assert_eq!(last_progress.chunks_total, 1);
    assert_eq!(last_progress.chunks_scanned, 1);
    assert!(last_progress.planning_progress.is_none());
    Ok(())
}

#[tokio::test]
async fn errors_come_as_an_error_frame_then_done() -> TestResult {
    let server = server(10, 4).await?;
    let mut client = client(&server).await?;
    let all = frames(&mut client, "default | where nope == 1").await?;
    let tail: Vec<_> = all.iter().filter(|p| !matches!(p, Payload::Progress(_))).collect();
    let [Payload::Error(error), Payload::Done(_)] = tail.as_slice() else {
        return Err(format!("expected error then done: {tail:?}").into());
    };
    assert_eq!(error.code, "UnknownColumn");
    let location = error.location.as_ref().ok_or("no location")?;
    assert_eq!((location.start_line, location.start_column), (1, 17));
    assert!(error.message.contains("^^^^"), "{}", error.message);
    let details: serde_json::Value = serde_json::from_str(&error.details)?;
    assert_eq!(details["code"], "UnknownColumn");
    Ok(())
}

#[tokio::test]
async fn an_empty_result_still_completes_its_iteration() -> TestResult {
    let server = server(10, 4).await?;
    let mut client = client(&server).await?;
    let all = frames(&mut client, "default | where severity_text == 'none'").await?;
    let batches: Vec<_> = all
        .iter()
        .filter_map(|p| match p {
            Payload::Batch(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(batches.len(), 1);
    assert!(batches[0].rows.is_empty() && batches[0].is_iteration_complete);
    Ok(())
}

#[tokio::test]
async fn a_client_that_goes_away_frees_its_query_slot() -> TestResult {
    // Enough rows that an unread result fills the transport's buffers and the engine's
    // event queue, so the query holds its slot.
    let server = server(HOLDER_ROWS, 1).await?;
    let mut client = client(&server).await?;
    let mut stream = client.execute_query(query("default")).await?.into_inner();
    let first = stream.message().await?;
    assert!(first.is_some());
    // The query holds the only slot while its client reads nothing; hanging up frees it.
    drop(stream);
    let done = tokio::time::timeout(Duration::from_secs(20), frames(&mut client, "default | count")).await??;
    assert!(matches!(done.last(), Some(Payload::Done(_))));
    Ok(())
}

#[tokio::test]
async fn grpc_timeout_is_honoured() -> TestResult {
    // Enough rows that an unread result fills the transport's buffers and the engine's
    // event queue, so the query holds its slot.
    let server = server(HOLDER_ROWS, 1).await?;
    let mut client = client(&server).await?;
    // A query that holds the only slot, so the next one waits past its deadline.
    let mut holder = client.execute_query(query("default")).await?.into_inner();
    assert!(holder.message().await?.is_some());
    let mut request = tonic::Request::new(query("default | count"));
    // Long enough that a loaded machine still answers with the stream's headers before the
    // client's own deadline on them: past the headers, the deadline is the server's.
    request.metadata_mut().insert("grpc-timeout", "1S".parse()?);
    let mut stream = client.execute_query(request).await?.into_inner();
    let mut codes = Vec::new();
    let mut waited = None;
    while let Some(frame) = stream.message().await? {
        match frame.payload {
            Some(Payload::Error(error)) => codes.push(error.code),
            Some(Payload::Progress(progress)) => waited = progress.queue_wait_nanos.or(waited),
            _ => {}
        }
    }
    assert_eq!(codes, ["Timeout"]);
    assert!(waited.is_some(), "a queued query reports queue_wait_nanos");
    drop(holder);
    Ok(())
}

#[tokio::test]
async fn newest_rows_arrive_as_refined_snapshots_then_the_final_iteration() -> TestResult {
    let server = server(1_234, 4).await?;
    let mut client = client(&server).await?;
    let all = frames(&mut client, "default | top 300 by timestamp desc | project timestamp").await?;
    let batches: Vec<_> = all
        .iter()
        .filter_map(|p| match p {
            Payload::Batch(b) => Some(b),
            _ => None,
        })
        .collect();
    // Iterations in order, each with its rows and one completion flag on its last batch.
    let mut iterations: Vec<(String, Vec<i64>, usize)> = Vec::new();
    for batch in &batches {
        if iterations.last().map(|i| &i.0) != Some(&batch.result_iteration_id) {
            iterations.push((batch.result_iteration_id.clone(), Vec::new(), 0));
        }
        if let Some(iteration) = iterations.last_mut() {
            for row in &batch.rows {
                if let Some(value::Kind::DatetimeTicks(ticks)) = row.values[0].kind {
                    iteration.1.push(ticks);
                }
            }
            iteration.2 += usize::from(batch.is_iteration_complete);
        }
    }
    assert!(
        iterations.len() >= 2,
        "snapshots come before the final rows: {}",
        iterations.len()
    );
    let newest: Vec<i64> = (0..300).map(|i| (T0 + (1_233 - i) * 1_000_000) / 100).collect();
    let (last, snapshots) = iterations.split_last().ok_or("no iteration")?;
    assert_eq!(last.1, newest, "the final iteration holds the 300 newest rows");
    for (id, rows, complete) in iterations.iter() {
        assert_eq!(*complete, 1, "iteration {id} is completed once");
        assert!(!rows.is_empty());
    }
    for (_, rows, _) in snapshots {
        assert!(rows.len() < 300);
        assert_eq!(
            rows.as_slice(),
            &newest[..rows.len()],
            "a snapshot is the newest rows so far"
        );
    }
    let ids: std::collections::HashSet<&String> = iterations.iter().map(|i| &i.0).collect();
    assert_eq!(ids.len(), iterations.len(), "every iteration has its own id");
    Ok(())
}

/// Log lines, as the server writes them, for a test to read.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut lines) = self.0.lock() {
            lines.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        self.0
            .lock()
            .map(|lines| String::from_utf8_lossy(&lines).into_owned())
            .unwrap_or_default()
    }
}

#[tokio::test]
async fn an_error_frame_names_the_request_id_its_failure_was_logged_under() -> TestResult {
    // The test's runtime has one thread: the server's tasks log to this subscriber too.
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let server = server(10, 4).await?;
    let mut client = client(&server).await?;
    let all = whole_frames(&mut client, "default | where nope == 1").await?;
    let (request_id, error) = all
        .iter()
        .find_map(|frame| match &frame.payload {
            Some(Payload::Error(error)) => Some((&frame.request_id, error)),
            _ => None,
        })
        .ok_or("no error frame")?;
    assert!(!error.support_ticket_id.is_empty());
    assert_eq!(&error.support_ticket_id, request_id, "the ticket is the call's request id");
    uuid::Uuid::parse_str(&error.support_ticket_id)?;
    assert!(all.iter().all(|frame| &frame.request_id == request_id));
    let logged = log.text();
    let line = logged
        .lines()
        .find(|line| line.contains("a gRPC query failed"))
        .ok_or_else(|| format!("no log line of the failure in:\n{logged}"))?;
    assert!(line.contains(&format!("request_id={request_id}")), "{line}");
    assert!(line.contains("UnknownColumn"), "{line}");
    Ok(())
}

/// The warnings of the last metadata frame (it holds all of them): (kind, operator_id,
/// branch_index).
fn warnings(all: &[Payload]) -> Vec<(String, u32, Option<u32>)> {
    all.iter()
        .rev()
        .find_map(|p| match p {
            Payload::Metadata(metadata) => Some(metadata),
            _ => None,
        })
        .map(|metadata| {
            metadata
                .warnings
                .iter()
                .map(|w| (w.kind.clone(), w.operator_id, w.branch_index))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn warnings_name_their_operator_and_fork_branch() -> TestResult {
    let config = EngineConfig {
        max_result_rows: 5,
        ..EngineConfig::default()
    };
    let server = server_with(50, config).await?;
    let mut client = client(&server).await?;
    // Operators as syntax_sexp lists them: the source `default` 1, `take` 2.
    let all = frames(&mut client, "default | take 10").await?;
    assert_eq!(warnings(&all), [("ResultTruncated".to_string(), 2, None)]);

    // Source 1, where 2, fork 3: a warning from a branch carries the branch (from 1).
    let all = frames(
        &mut client,
        "default | where severity_text == 'ERROR' | fork (take 10) sampled = (summarize hint.sample = 0.5 n = count())",
    )
    .await?;
    let mut found = warnings(&all);
    found.sort();
    assert_eq!(
        found,
        [
            ("ResultTruncated".to_string(), 3, Some(1)),
            ("SummarizeSample".to_string(), 3, Some(2)),
        ]
    );
    let schemas: Vec<&str> = all
        .iter()
        .filter_map(|p| match p {
            Payload::Schema(schema) => Some(schema.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(schemas, ["GenericResult_1", "sampled"]);
    Ok(())
}
