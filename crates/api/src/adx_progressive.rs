//! `POST /v2/rest/query` in progressive mode (`results_progressive_enabled`): frames stream
//! as the query runs instead of arriving in one array at the end.

use super::*;

/// Progressive mode: frames stream as the query runs. The response starts once planning
/// succeeded (a query that cannot be planned gets an error status, as ADX answers); each
/// table then gets its header at once, `TableProgress` frames while it is read, and its
/// rows in one `DataReplace` fragment when complete.
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
    let head = loop {
        match events.next_event().await {
            Some(QueryEvent::Failed(error)) => return Err(error),
            Some(event @ QueryEvent::Planned { .. }) => break streamer.on_event(event),
            Some(_) => continue,
            None => return Err(TrawlError::internal("the query ended without an answer")),
        }
    };
    // The run is kept before the last frames go out, so a client that saw the query end can
    // export it at once.
    let rest = futures::stream::unfold((events, streamer), |(mut events, mut streamer)| async move {
        let event = events.next().await?;
        if matches!(event, QueryEvent::Finished)
            && let Some(keeper) = streamer.keeper.take()
            && let Some(warning) = keeper.keep().await
        {
            streamer.warnings.push(warning);
        }
        let text = streamer.on_event(event);
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

/// Builds the text of progressive v2 frames from engine events.
struct ProgressiveFrames {
    request_id: String,
    started: std::time::Instant,
    next_id: usize,
    /// The table being read: its id, rows so far and column types.
    table: Option<(usize, Vec<Json>, Vec<KqlType>)>,
    /// The name and columns of the table being read, when the run is kept.
    kept_header: Option<(String, Vec<(String, KqlType)>)>,
    /// Keeps the run for export, when asked.
    keeper: Option<RunKeeper>,
    row_counts: Vec<usize>,
    warnings: Vec<QueryWarning>,
    first: bool,
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
        text
    }

    fn on_event(&mut self, event: QueryEvent) -> String {
        let mut frames = Vec::new();
        let mut end = false;
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
                self.table = Some((id, Vec::new(), columns.into_iter().map(|(_, t)| t).collect()));
            }
            QueryEvent::Rows(batch) => {
                if let Some((_, rows, types)) = &mut self.table {
                    push_rows(rows, types, &batch);
                }
            }
            QueryEvent::Snapshot(batches) => {
                // A refined snapshot: a fragment replacing what the table showed so far (the
                // final rows replace it in turn).
                if let Some((id, _, types)) = &self.table {
                    let mut rows = Vec::new();
                    for batch in &batches {
                        push_rows(&mut rows, types, batch);
                    }
                    frames.push(json!({
                        "FrameType": "TableFragment",
                        "TableFragmentType": "DataReplace",
                        "TableId": id,
                        "Rows": rows,
                    }));
                }
            }
            QueryEvent::Progress(progress) => {
                if let Some((id, _, _)) = &self.table {
                    // Beside ADX's percentage, what the scans read so far (Trawl's own keys;
                    // clients skip keys they do not know).
                    frames.push(json!({
                        "FrameType": "TableProgress",
                        "TableId": id,
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
                if let Some((id, rows, _)) = self.table.take() {
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
                frames.push(completion_information(
                    self.next_id,
                    &self.warnings,
                    &self.row_counts,
                    &self.request_id,
                    self.started.elapsed(),
                    self.progress.as_deref(),
                ));
                frames.push(json!({"FrameType": "DataSetCompletion", "HasErrors": false, "Cancelled": false}));
                end = true;
            }
            QueryEvent::Failed(error) => {
                let body = AdxError(error).body();
                frames.push(json!({
                    "FrameType": "DataSetCompletion",
                    "HasErrors": true,
                    "Cancelled": false,
                    "OneApiErrors": [body],
                }));
                end = true;
            }
        }
        let mut text = self.text(frames);
        if end {
            text.push_str("]\n");
        }
        text
    }
}
