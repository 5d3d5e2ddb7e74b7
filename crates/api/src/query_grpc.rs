//! `QueryService.ExecuteQuery`: one query's result as a stream of frames, on the query port
//! next to HTTP (see `proto/trawl/query/v1/query.proto` and docs/api.md, "gRPC").
//!
//! Engine events become frames ([`Framer`]): progress whenever reported; per table a schema
//! frame, then row batches of at most 100 rows and under the message limit; the metadata
//! frame right after the `PrimaryResult` schema; an error frame on failure; done last. The
//! whole result is one iteration: its batches share one `result_iteration_id`, and the last
//! batch sent (an empty one when no table has rows) has `is_iteration_complete`.
//!
//! `grpc-timeout` sets the query's limit (the engine's default, 60 s, when absent; at most its
//! `max_timeout`). When the client goes away,
//! tonic drops the stream, which drops the engine's events and stops the scans.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use prost::Message;
use serde_json::{Value as Json, json};
use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};
use trawl_common::error::Location;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_engine::cells::{Cell, cell_value};
use trawl_engine::{
    PartialFailure, Progress, QueryEvent, QueryRequest, QueryWarning, RecordBatch, RunOptions, Visualization,
    resolve_window_now,
};
use trawl_proto::query as pb;
use trawl_proto::query::query_service_server::{QueryService, QueryServiceServer};

use crate::state::QueryState;

/// Rows per batch, at most.
pub const MAX_BATCH_ROWS: usize = 100;
/// Encoded rows per batch, at most: the 4 MiB message limit less room for the frame.
pub const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024 - 64 * 1024;
/// Pace of progress frames.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The service, to mount with [`routes`].
#[derive(Debug, Clone)]
pub struct QueryGrpc {
    state: QueryState,
}

/// The gRPC routes of the query port, to merge with its HTTP routes.
pub fn routes(state: QueryState) -> axum::Router {
    let service = QueryServiceServer::new(QueryGrpc { state })
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip);
    // gRPC-web too, for browsers (through the gateway).
    let service = tower::Layer::layer(&tonic_web::GrpcWebLayer::new(), service);
    tonic::service::Routes::new(service).into_axum_router()
}

type FrameStream = Pin<Box<dyn Stream<Item = Result<pb::ExecuteQueryResultFrame, Status>> + Send>>;

#[tonic::async_trait]
impl QueryService for QueryGrpc {
    type ExecuteQueryStream = FrameStream;

    async fn execute_query(&self, request: Request<pb::ExecuteQueryRequest>) -> Result<Response<FrameStream>, Status> {
        let timeout = match request.metadata().get("grpc-timeout") {
            Some(value) => Some(
                value
                    .to_str()
                    .ok()
                    .and_then(parse_grpc_timeout)
                    .ok_or_else(|| Status::invalid_argument("grpc-timeout is not a valid timeout"))?,
            ),
            None => None,
        };
        let user = metadata_text(&request, "x-svc-username");
        let client = metadata_text(&request, "x-svc-client-name");
        let request_id = uuid::Uuid::new_v4().to_string();
        // The gateway's signed caller (the signature check put it beside the request).
        let principal = request
            .extensions()
            .get::<trawl_auth::token::Identity>()
            .map(|identity| identity.username.clone())
            .unwrap_or_default();
        let body = request.into_inner();
        tracing::debug!(%request_id, user, client, "gRPC query");
        let mut framer = Framer::new(request_id.clone(), body.query.clone());
        let since = Some(body.since.as_str()).filter(|s| !s.is_empty());
        let until = Some(body.until.as_str()).filter(|s| !s.is_empty());
        let timezone = Some(body.timezone.as_str()).filter(|s| !s.is_empty());
        let window = match resolve_window_now(since, until, timezone) {
            Ok(window) => window,
            Err(error) => {
                let frames = framer.on_event(QueryEvent::Failed(error));
                return Ok(Response::new(Box::pin(futures::stream::iter(
                    frames.into_iter().map(Ok),
                ))));
            }
        };
        let events = self.state.engine.run(
            QueryRequest {
                text: body.query,
                database: self.state.database.clone(),
                window,
                parameters: Default::default(),
            },
            RunOptions {
                progress_every: Some(PROGRESS_EVERY),
                timeout,
                snapshots: true,
                face: "grpc",
                fanout_nodes_percent: None,
                principal,
                client_request_id: request_id.clone(),
            },
        );
        let frames = events
            .map(move |event| futures::stream::iter(framer.on_event(event).into_iter().map(Ok)))
            .flatten();
        Ok(Response::new(Box::pin(frames)))
    }
}

fn metadata_text<T>(request: &Request<T>, key: &str) -> String {
    request
        .metadata()
        .get(key)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// A `grpc-timeout` value: up to 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
pub fn parse_grpc_timeout(text: &str) -> Option<Duration> {
    let unit = text.chars().last()?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: u64 = digits.parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(value * 3600),
        'M' => Duration::from_secs(value * 60),
        'S' => Duration::from_secs(value),
        'm' => Duration::from_millis(value),
        'u' => Duration::from_micros(value),
        'n' => Duration::from_nanos(value),
        _ => return None,
    })
}

/// Turns a query's events into frames.
pub struct Framer {
    request_id: String,
    query: String,
    iteration_id: String,
    /// Columns of the table being sent.
    columns: Vec<(String, KqlType)>,
    table: String,
    /// Rows gathered for the next batch, and their encoded size.
    building: Vec<pb::ValueRow>,
    building_bytes: usize,
    /// The last full batch, held back until it is known whether it is the last.
    pending: Option<pb::RowBatch>,
    /// The warnings so far, each with the result table (from 0) that was running when it
    /// came, if one was: what its `operator_id` is found from.
    warnings: Vec<(QueryWarning, Option<usize>)>,
    /// Result tables started so far.
    tables_started: usize,
    /// The query's operators, read from its text when a warning needs them.
    operators: std::cell::OnceCell<trawl_planner::WarningOperators>,
    partial_failures: Vec<PartialFailure>,
    visualization: Option<Visualization>,
    /// Warnings (or partial failures) found while running, sent in a second metadata frame
    /// at the end.
    late_warnings: bool,
    ended: bool,
}

impl Framer {
    pub fn new(request_id: String, query: String) -> Framer {
        Framer {
            request_id,
            query,
            iteration_id: uuid::Uuid::new_v4().to_string(),
            columns: Vec::new(),
            table: String::new(),
            building: Vec::new(),
            building_bytes: 0,
            pending: None,
            warnings: Vec::new(),
            tables_started: 0,
            operators: std::cell::OnceCell::new(),
            partial_failures: Vec::new(),
            visualization: None,
            late_warnings: false,
            ended: false,
        }
    }

    fn frame(&self, payload: pb::execute_query_result_frame::Payload) -> pb::ExecuteQueryResultFrame {
        pb::ExecuteQueryResultFrame {
            request_id: self.request_id.clone(),
            payload: Some(payload),
        }
    }

    /// The frames `event` makes; none once the stream has ended.
    pub fn on_event(&mut self, event: QueryEvent) -> Vec<pb::ExecuteQueryResultFrame> {
        use pb::execute_query_result_frame::Payload;
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        match event {
            QueryEvent::Progress(progress) => out.push(self.frame(Payload::Progress(progress_message(&progress)))),
            QueryEvent::Planned {
                warnings,
                visualization,
            } => {
                self.warnings = warnings.into_iter().map(|warning| (warning, None)).collect();
                self.visualization = visualization;
            }
            QueryEvent::TableStarted { name, columns } => {
                self.seal(&mut out);
                let first = self.table.is_empty();
                out.push(
                    self.frame(Payload::Schema(pb::TableSchema {
                        name: name.clone(),
                        columns: columns
                            .iter()
                            .map(|(name, kql_type)| pb::Column {
                                name: name.clone(),
                                r#type: column_type(*kql_type) as i32,
                                nullable: *kql_type != KqlType::String,
                            })
                            .collect(),
                    })),
                );
                self.table = name;
                self.columns = columns;
                self.tables_started += 1;
                if first {
                    out.push(self.frame(Payload::Metadata(self.metadata())));
                }
            }
            QueryEvent::Rows(batch) => {
                if let Err(error) = self.add_rows(&batch, &mut out) {
                    self.fail(error, &mut out);
                }
            }
            QueryEvent::Snapshot(batches) => {
                // A refined snapshot is an iteration of its own, complete at its last batch;
                // the rows after it (a later snapshot, or the final rows) start another.
                for batch in &batches {
                    if let Err(error) = self.add_rows(batch, &mut out) {
                        self.fail(error, &mut out);
                        return out;
                    }
                }
                self.complete_iteration(&mut out);
                self.iteration_id = uuid::Uuid::new_v4().to_string();
            }
            QueryEvent::TableFinished { .. } => {}
            QueryEvent::Warning(warning) => {
                let running = self.tables_started.checked_sub(1);
                self.warnings.push((warning, running));
                self.late_warnings = true;
            }
            QueryEvent::PartialFailure(failure) => {
                self.partial_failures.push(failure);
                self.late_warnings = true;
            }
            QueryEvent::Finished => {
                self.complete_iteration(&mut out);
                if self.late_warnings {
                    out.push(self.frame(Payload::Metadata(self.metadata())));
                }
                out.push(self.frame(Payload::Done(pb::Completion {})));
                self.ended = true;
            }
            QueryEvent::Failed(error) => self.fail(error, &mut out),
        }
        out
    }

    /// Sends the batch held back, or an empty one, flagged as the last of the iteration.
    fn complete_iteration(&mut self, out: &mut Vec<pb::ExecuteQueryResultFrame>) {
        self.seal(out);
        let last = self.pending.take().unwrap_or_else(|| pb::RowBatch {
            table_name: if self.table.is_empty() {
                "PrimaryResult".to_string()
            } else {
                self.table.clone()
            },
            result_iteration_id: self.iteration_id.clone(),
            rows: Vec::new(),
            is_iteration_complete: false,
        });
        out.push(self.frame(pb::execute_query_result_frame::Payload::Batch(pb::RowBatch {
            is_iteration_complete: true,
            ..last
        })));
    }

    fn fail(&mut self, error: TrawlError, out: &mut Vec<pb::ExecuteQueryResultFrame>) {
        use pb::execute_query_result_frame::Payload;
        self.seal(out);
        if let Some(batch) = self.pending.take() {
            out.push(self.frame(Payload::Batch(batch)));
        }
        // The log line the support ticket id (the call's request id) finds.
        if error.code.http_status() >= 500 {
            tracing::warn!(request_id = %self.request_id, code = error.code.as_str(), message = %error.message, "a gRPC query failed");
        } else {
            tracing::info!(request_id = %self.request_id, code = error.code.as_str(), message = %error.message, "a gRPC query failed");
        }
        out.push(self.frame(Payload::Error(error_message(&error, &self.query, &self.request_id))));
        out.push(self.frame(Payload::Done(pb::Completion {})));
        self.ended = true;
    }

    fn metadata(&self) -> pb::ResultMetadata {
        pb::ResultMetadata {
            partial_failures: self
                .partial_failures
                .iter()
                .map(|failure| pb::PartialFailure {
                    segment_ids: failure.segment_ids.clone(),
                    message: failure.message.clone(),
                })
                .collect(),
            visualization: self.visualization.as_ref().map(|v| pb::VisualizationMetadata {
                visualization_type: Some(v.visualization_type.clone()),
                properties: v
                    .properties
                    .iter()
                    .map(|(key, value)| {
                        let text = match value {
                            Json::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (key.clone(), text)
                    })
                    .collect(),
            }),
            warnings: self
                .warnings
                .iter()
                .map(|(w, table)| {
                    let operator = self
                        .operators
                        .get_or_init(|| trawl_planner::WarningOperators::of(&self.query))
                        .operator_of(w, *table);
                    pb::QueryWarning {
                        operator_id: operator.operator_id,
                        branch_index: operator.branch_index,
                        kind: w.kind.clone(),
                        location: w.location.map(location_message),
                        message: w.message.clone(),
                        details: json!({"kind": w.kind, "message": w.message}).to_string(),
                    }
                })
                .collect(),
        }
    }

    fn add_rows(&mut self, batch: &RecordBatch, out: &mut Vec<pb::ExecuteQueryResultFrame>) -> Result<(), TrawlError> {
        for row in 0..batch.num_rows() {
            let values = self
                .columns
                .iter()
                .enumerate()
                .map(|(index, (_, kql_type))| value_message(cell_value(batch.column(index), row, *kql_type)))
                .collect();
            let row = pb::ValueRow { values };
            let bytes = row.encoded_len() + 8;
            if bytes > MAX_BATCH_BYTES {
                return Err(TrawlError::new(
                    ErrorCode::PayloadTooLarge,
                    format!(
                        "a row of {} is {bytes} bytes, more than a gRPC message may hold; project fewer or shorter columns",
                        self.table
                    ),
                ));
            }
            if self.building_bytes + bytes > MAX_BATCH_BYTES {
                self.seal(out);
            }
            self.building.push(row);
            self.building_bytes += bytes;
            if self.building.len() == MAX_BATCH_ROWS {
                self.seal(out);
            }
        }
        Ok(())
    }

    /// Turns the rows gathered into the pending batch, sending the one pending before.
    fn seal(&mut self, out: &mut Vec<pb::ExecuteQueryResultFrame>) {
        if self.building.is_empty() {
            return;
        }
        let batch = pb::RowBatch {
            table_name: self.table.clone(),
            result_iteration_id: self.iteration_id.clone(),
            rows: std::mem::take(&mut self.building),
            is_iteration_complete: false,
        };
        self.building_bytes = 0;
        if let Some(previous) = self.pending.replace(batch) {
            out.push(self.frame(pb::execute_query_result_frame::Payload::Batch(previous)));
        }
    }
}

pub fn column_type(kql_type: KqlType) -> pb::ColumnType {
    match kql_type {
        KqlType::Bool => pb::ColumnType::Bool,
        KqlType::Int => pb::ColumnType::Int32,
        KqlType::Long => pb::ColumnType::Int64,
        KqlType::Real => pb::ColumnType::Double,
        KqlType::Decimal => pb::ColumnType::Decimal,
        KqlType::String => pb::ColumnType::String,
        KqlType::DateTime => pb::ColumnType::Datetime,
        KqlType::Timespan => pb::ColumnType::Timespan,
        KqlType::Guid => pb::ColumnType::Guid,
        KqlType::Dynamic => pb::ColumnType::Dynamic,
    }
}

/// 100-nanosecond ticks of `nanos`, rounded down.
fn ticks(nanos: i64) -> i64 {
    nanos.div_euclid(100)
}

pub fn value_message(cell: Cell) -> pb::Value {
    use pb::value::Kind;
    let kind = match cell {
        Cell::Null => Kind::NullValue(pb::NullValue::NullValue as i32),
        Cell::Bool(b) => Kind::BoolValue(b),
        Cell::Int(n) => Kind::IntValue(n),
        Cell::Long(n) => Kind::LongValue(n),
        Cell::Real(x) => Kind::RealValue(x),
        Cell::String(s) => Kind::StringValue(s),
        Cell::DateTime(nanos) => Kind::DatetimeTicks(ticks(nanos)),
        Cell::Timespan(nanos) => Kind::TimespanTicks(ticks(nanos)),
        Cell::Guid(s) => Kind::GuidValue(s),
        Cell::Decimal(s) => Kind::DecimalValue(s),
        Cell::Dynamic(json) => return json_message(json),
    };
    pb::Value { kind: Some(kind) }
}

/// A dynamic value: numbers that are whole and fit are longs, others reals.
pub fn json_message(json: Json) -> pb::Value {
    use pb::value::Kind;
    let kind = match json {
        Json::Null => Kind::NullValue(pb::NullValue::NullValue as i32),
        Json::Bool(b) => Kind::BoolValue(b),
        Json::Number(n) => match n.as_i64() {
            Some(n) => Kind::LongValue(n),
            None => Kind::RealValue(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Kind::StringValue(s),
        Json::Array(items) => Kind::ArrayValue(pb::ValueArray {
            values: items.into_iter().map(json_message).collect(),
        }),
        Json::Object(bag) => Kind::BagValue(pb::PropertyBag {
            properties: bag
                .into_iter()
                .map(|(key, value)| pb::Property {
                    key,
                    value: Some(json_message(value)),
                })
                .collect(),
        }),
    };
    pb::Value { kind: Some(kind) }
}

fn location_message(location: Location) -> pb::Location {
    pb::Location {
        start_byte: location.start_byte,
        end_byte: location.end_byte,
        start_line: location.start_line,
        start_column: location.start_column,
        end_line: location.end_line,
        end_column: location.end_column,
    }
}

/// The Error frame of `error` in `query`; `support_ticket_id` is the request id the failure
/// was logged under.
pub fn error_message(error: &TrawlError, query: &str, support_ticket_id: &str) -> pb::Error {
    pb::Error {
        code: error.code.as_str().to_string(),
        title: error.code.title().to_string(),
        support_ticket_id: support_ticket_id.to_string(),
        message: error.annotated(query),
        location: error.location.map(location_message),
        details: json!({
            "code": error.code.as_str(),
            "message": error.message,
            "location": error.location,
        })
        .to_string(),
    }
}

/// The Progress frame of a report. Three fields are structurally zero in Trawl (see
/// `docs/api.md`, "Progress counters"): no chunk is skipped by hash (segments are not
/// hash-sharded), a chunk that fails to decode fails the query instead of being counted, and
/// no operator can tell which chunk a row that failed the filters came from.
pub fn progress_message(p: &Progress) -> pb::Progress {
    // Time bins travel in 100 ns ticks, bins of numbers in the numbers' own units.
    let bin_units = |bins: &trawl_engine::BinProgress, value: i64| if bins.time { ticks(value) } else { value };
    pb::Progress {
        rows_processed: p.rows_processed,
        chunks_total: p.chunks_total,
        chunks_scanned: p.chunks_scanned,
        chunks_skipped_range: p.chunks_skipped_range,
        chunks_skipped_bloom: p.chunks_skipped_bloom,
        chunks_skipped_shar: 0,
        predicate_checks: p.predicate_checks,
        short_circuit_completion: p.short_circuit_completion,
        chunk_scanned_raw_body_size: p.chunk_scanned_raw_body_size,
        chunk_skipped_raw_body_size: p.chunk_skipped_raw_body_size,
        chunk_skipped_compressed_size: p.chunk_skipped_compressed_size,
        chunk_scan_time_nanos: p.chunk_scan_time_nanos,
        query_time_nanos: p.query_time_nanos,
        chunk_scanned_compressed_size: p.chunk_scanned_compressed_size,
        bin_progress: p.bins.as_ref().map(|bins| pb::BinProgress {
            first_bin_start: bin_units(bins, bins.first_bin_start),
            bin_span: u64::try_from(bin_units(bins, bins.bin_span)).unwrap_or(0),
            completion_percentages: bins.completion.clone(),
        }),
        queue_wait_nanos: p.queue_wait_nanos,
        planning_progress: p.planning.map(|planning| pb::PlanningProgress {
            segments_done: planning.segments_done,
            segments_total: planning.segments_total,
        }),
        bloom_filter_bytes: p.bloom_filter_bytes,
        merge_time_nanos: p.merge_time_nanos,
        chunks_empty_scan: 0,
        chunks_errored: 0,
        chunks_skipped_required_fields: p.chunks_skipped_required_fields,
        memory_reserved_bytes: p.memory_reserved_bytes,
        memory_peak_bytes: p.memory_peak_bytes,
        operator_diagnostics: p
            .operators
            .iter()
            .map(|o| pb::OperatorDiagnostics {
                kind: o.kind.clone(),
                operator_id: o.operator_id,
                values: o
                    .values
                    .iter()
                    .map(|(key, value)| pb::KeyValue {
                        key: key.clone(),
                        value: value.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}
