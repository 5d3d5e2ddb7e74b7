//! `POST /v2/rest/query` in progressive mode (`results_progressive_enabled`): frames stream
//! as the query runs instead of arriving in one array at the end.
//!
//! The answer's status line waits for the first row fragment of the first table (or the end
//! of the run): a query that fails before any row went out, in planning or while running,
//! is answered with its error status and the `{error: {code, message, @type, ...}}` body, as
//! in non-progressive mode (SPEC "Errors", v2 endpoint). The frames made while waiting are
//! held back; of the progress reports only the newest is kept, as each is cumulative. A
//! failure after rows went out can no longer change the status: it ends the stream as ADX
//! ends one that fails after its `200` (a "partial query failure"): the open table's
//! `TableCompletion` and the `DataSetCompletion` (`HasErrors: true`) carry `OneApiErrors`,
//! and `QueryCompletionInformation` has an `Error` row.

use super::*;

/// Progressive mode: frames stream as the query runs (see the module notes); each table gets
/// its header when it starts, `TableProgress` frames while it is read, and its rows in one
/// `DataReplace` fragment when complete (and a fragment per refined snapshot before that).
pub(super) async fn progressive_response(
    state: &QueryState,
    body: &AdxBody,
    request_id: String,
    started: std::time::Instant,
    keeper: Option<RunKeeper>,
    caller: Caller,
) -> Result<Response, TrawlError> {
    let request = request(state, body)?;
    let properties = body.properties()?;
    let options = RunOptions {
        progress_every: Some(crate::query_grpc::PROGRESS_EVERY),
        timeout: server_timeout(&properties)?,
        snapshots: true,
        face: "adx",
        fanout_nodes_percent: fanout_nodes_percent(&properties)?,
        principal: caller.principal,
        client_request_id: caller.client_request_id,
    };
    let mut events = state.engine.run(request, options);
    let run_id = keeper.as_ref().map(|k| k.run.id.clone());
    let mut streamer = ProgressiveFrames::new(request_id, started, keeper);
    let mut held = Vec::new();
    loop {
        let event = match events.next_event().await {
            Some(QueryEvent::Failed(error)) => return Err(error),
            Some(event) => event,
            None => return Err(TrawlError::internal("the query ended without an answer")),
        };
        let frames = streamer.frames_of(event).await;
        let rows_went_out = frames.iter().any(|frame| frame["FrameType"] == "TableFragment");
        hold(&mut held, frames);
        if rows_went_out || streamer.ended {
            break;
        }
    }
    let head = streamer.text(held);
    let rest = futures::stream::unfold((events, streamer), |(mut events, mut streamer)| async move {
        if streamer.ended {
            return None;
        }
        let event = events.next().await?;
        let frames = streamer.frames_of(event).await;
        let text = streamer.text(frames);
        Some((text, (events, streamer)))
    });
    let chunks = futures::stream::iter([head])
        .chain(rest)
        .filter(|text| std::future::ready(!text.is_empty()))
        .map(|text| Ok::<_, std::convert::Infallible>(Bytes::from(text)));
    let mut response = (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json; charset=utf-8")],
        axum::body::Body::from_stream(chunks),
    )
        .into_response();
    if let Some(id) = run_id {
        let (name, value) = crate::runs::id_header(&id);
        response.headers_mut().insert(name, value);
    }
    Ok(response)
}

/// Adds `frames` to those held back; a progress report replaces the one held before it.
fn hold(held: &mut Vec<Json>, frames: Vec<Json>) {
    for frame in frames {
        if frame["FrameType"] == "TableProgress" {
            held.retain(|earlier| earlier["FrameType"] != "TableProgress");
        }
        held.push(frame);
    }
}

/// Appends `batch`'s rows as v2 cells.
fn push_rows(rows: &mut Vec<Json>, types: &[KqlType], batch: &trawl_engine::RecordBatch) {
    for row in 0..batch.num_rows() {
        let cells = types
            .iter()
            .enumerate()
            .map(|(i, t)| trawl_engine::cells::cell(batch.column(i), row, *t))
            .collect();
        rows.push(Json::Array(cells));
    }
}

/// The table being read.
struct OpenTable {
    id: usize,
    /// Its rows so far, and their column types.
    rows: Vec<Json>,
    types: Vec<KqlType>,
    /// Rows of the last fragment sent (a refined snapshot), reported if the query fails.
    shown: usize,
}

/// Builds the text of progressive v2 frames from engine events.
struct ProgressiveFrames {
    request_id: String,
    started: std::time::Instant,
    next_id: usize,
    table: Option<OpenTable>,
    /// The name and columns of the table being read, when the run is kept.
    kept_header: Option<(String, Vec<(String, KqlType)>)>,
    /// Keeps the run for export, when asked.
    keeper: Option<RunKeeper>,
    row_counts: Vec<usize>,
    warnings: Vec<QueryWarning>,
    first: bool,
    /// The last frame was made: `Finished` or `Failed` came.
    ended: bool,
    /// The latest progress report (cumulative).
    progress: Option<Box<trawl_engine::Progress>>,
}

impl ProgressiveFrames {
    fn new(request_id: String, started: std::time::Instant, keeper: Option<RunKeeper>) -> ProgressiveFrames {
        ProgressiveFrames {
            request_id,
            started,
            next_id: 1,
            table: None,
            kept_header: None,
            keeper,
            row_counts: Vec::new(),
            warnings: Vec::new(),
            first: true,
            ended: false,
            progress: None,
        }
    }

    /// Frames as text: `[` before the first, `,` between, `]` after the last.
    fn text(&mut self, frames: Vec<Json>) -> String {
        let mut text = String::new();
        for frame in frames {
            text.push_str(if self.first { "[" } else { ",\n" });
            self.first = false;
            text.push_str(&frame.to_string());
        }
        if self.ended && !text.is_empty() {
            text.push_str("]\n");
        }
        text
    }

    /// The frames `event` makes. The run is kept before the last frames are made, so a
    /// client that saw the query end can export it at once.
    async fn frames_of(&mut self, event: QueryEvent) -> Vec<Json> {
        if matches!(event, QueryEvent::Finished)
            && let Some(keeper) = self.keeper.take()
            && let Some(warning) = keeper.keep().await
        {
            self.warnings.push(warning);
        }
        self.on_event(event)
    }

    fn on_event(&mut self, event: QueryEvent) -> Vec<Json> {
        let mut frames = Vec::new();
        if self.ended {
            return frames;
        }
        match event {
            QueryEvent::Planned {
                warnings,
                visualization,
            } => {
                self.warnings = warnings;
                frames.push(
                    json!({"FrameType": "DataSetHeader", "IsProgressive": true, "Version": "v2.0", "IsFragmented": true}),
                );
                frames.push(query_properties(visualization.as_ref()));
            }
            QueryEvent::TableStarted { name, columns } => {
                let id = self.next_id;
                self.next_id += 1;
                let named: Vec<(&str, KqlType)> = columns.iter().map(|(n, t)| (n.as_str(), *t)).collect();
                frames.push(json!({
                    "FrameType": "TableHeader",
                    "TableId": id,
                    "TableKind": "PrimaryResult",
                    "TableName": name,
                    "Columns": v2_columns(&named),
                }));
                if self.keeper.is_some() {
                    self.kept_header = Some((name.clone(), columns.clone()));
                }
                self.table = Some(OpenTable {
                    id,
                    rows: Vec::new(),
                    types: columns.into_iter().map(|(_, t)| t).collect(),
                    shown: 0,
                });
            }
            QueryEvent::Rows(batch) => {
                if let Some(table) = &mut self.table {
                    push_rows(&mut table.rows, &table.types, &batch);
                }
            }
            QueryEvent::Snapshot(batches) => {
                // A refined snapshot: a fragment replacing what the table showed so far (the
                // final rows replace it in turn).
                if let Some(table) = &mut self.table {
                    let mut rows = Vec::new();
                    for batch in &batches {
                        push_rows(&mut rows, &table.types, batch);
                    }
                    table.shown = rows.len();
                    frames.push(json!({
                        "FrameType": "TableFragment",
                        "TableFragmentType": "DataReplace",
                        "TableId": table.id,
                        "Rows": rows,
                    }));
                }
            }
            QueryEvent::Progress(progress) => {
                if let Some(table) = &self.table {
                    // Beside ADX's percentage, what the scans read so far (Trawl's own keys;
                    // clients skip keys they do not know).
                    frames.push(json!({
                        "FrameType": "TableProgress",
                        "TableId": table.id,
                        "TableProgress": progress.percent(),
                        "RowsScanned": progress.rows_processed,
                        "BytesScanned": progress.chunk_scanned_compressed_size,
                        "MemoryBytes": progress.memory_reserved_bytes,
                        "ElapsedSeconds": progress.query_time_nanos as f64 / 1e9,
                    }));
                }
                self.progress = Some(progress);
            }
            QueryEvent::TableFinished { .. } => {
                if let Some(OpenTable { id, rows, .. }) = self.table.take() {
                    let count = rows.len();
                    self.row_counts.push(count);
                    if let (Some(keeper), Some((name, columns))) = (&mut self.keeper, self.kept_header.take()) {
                        keeper.add(&name, &columns, rows.clone());
                    }
                    frames.push(json!({
                        "FrameType": "TableFragment",
                        "TableFragmentType": "DataReplace",
                        "TableId": id,
                        "Rows": rows,
                    }));
                    frames.push(json!({"FrameType": "TableCompletion", "TableId": id, "RowCount": count}));
                }
            }
            QueryEvent::Warning(warning) => self.warnings.push(warning),
            QueryEvent::PartialFailure(failure) => self.warnings.push(failure.warning()),
            QueryEvent::Finished => {
                frames.push(self.completion_information(None));
                frames.push(json!({"FrameType": "DataSetCompletion", "HasErrors": false, "Cancelled": false}));
                self.ended = true;
            }
            QueryEvent::Failed(error) => {
                let body = AdxError(error.clone()).body();
                if let Some(table) = self.table.take() {
                    frames.push(json!({
                        "FrameType": "TableCompletion",
                        "TableId": table.id,
                        "RowCount": table.shown,
                        "OneApiErrors": [body.clone()],
                    }));
                }
                frames.push(self.completion_information(Some(&error)));
                frames.push(json!({
                    "FrameType": "DataSetCompletion",
                    "HasErrors": true,
                    "Cancelled": false,
                    "OneApiErrors": [body],
                }));
                self.ended = true;
            }
        }
        frames
    }

    fn completion_information(&self, failure: Option<&TrawlError>) -> Json {
        completion_information(
            self.next_id,
            &self.warnings,
            &self.row_counts,
            &self.request_id,
            self.started.elapsed(),
            self.progress.as_deref(),
            failure,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_types(frames: &[Json]) -> Vec<&str> {
        frames.iter().filter_map(|f| f["FrameType"].as_str()).collect()
    }

    fn started(streamer: &mut ProgressiveFrames) -> Vec<Json> {
        let mut frames = streamer.on_event(QueryEvent::Planned {
            warnings: Vec::new(),
            visualization: None,
        });
        frames.extend(streamer.on_event(QueryEvent::TableStarted {
            name: "PrimaryResult".into(),
            columns: vec![("n".into(), KqlType::Long)],
        }));
        frames
    }

    #[test]
    fn held_frames_keep_only_the_newest_progress() {
        let mut held = Vec::new();
        hold(&mut held, vec![json!({"FrameType": "DataSetHeader"})]);
        hold(&mut held, vec![json!({"FrameType": "TableProgress", "TableProgress": 10})]);
        hold(&mut held, vec![json!({"FrameType": "TableProgress", "TableProgress": 60})]);
        assert_eq!(frame_types(&held), ["DataSetHeader", "TableProgress"]);
        assert_eq!(held[1]["TableProgress"], 60);
    }

    #[test]
    fn a_failure_after_rows_went_out_ends_the_open_table_with_the_error() {
        let mut streamer = ProgressiveFrames::new("request".into(), std::time::Instant::now(), None);
        started(&mut streamer);
        let schema = std::sync::Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
            datafusion::arrow::datatypes::Field::new("n", datafusion::arrow::datatypes::DataType::Int64, true),
        ]));
        let column: datafusion::arrow::array::ArrayRef =
            std::sync::Arc::new(datafusion::arrow::array::Int64Array::from(vec![1, 2]));
        let Ok(batch) = trawl_engine::RecordBatch::try_new(schema, vec![column]) else {
            panic!("a batch of one column");
        };
        let snapshot = streamer.on_event(QueryEvent::Snapshot(vec![batch]));
        assert_eq!(frame_types(&snapshot), ["TableFragment"]);
        let failure = TrawlError::new(ErrorCode::Timeout, "the query ran longer than its 1.0 s limit");
        let end = streamer.on_event(QueryEvent::Failed(failure));
        assert_eq!(
            frame_types(&end),
            ["TableCompletion", "DataTable", "DataSetCompletion"]
        );
        assert_eq!(end[0]["RowCount"], 2);
        assert_eq!(end[0]["OneApiErrors"][0]["error"]["code"], "RequestTimeout");
        let status = &end[1]["Rows"][0];
        assert_eq!(status[5], 2, "an Error row: {status}");
        assert_eq!(status[6], "Error");
        assert_eq!(end[2]["HasErrors"], true);
        assert_eq!(end[2]["Cancelled"], false);
        assert_eq!(end[2]["OneApiErrors"][0]["error"]["@type"], "Kusto.Data.Exceptions.QueryTimeoutException");
        assert!(streamer.ended);
        assert!(streamer.on_event(QueryEvent::Finished).is_empty(), "nothing follows the end");
        assert!(streamer.text(end).ends_with("]\n"));
    }
}
