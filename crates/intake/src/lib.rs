//! Protocol mappings of the intake path: bytes in, rows and rejections out.
//!
//! Each supported protocol is a pure function pair: *decode* turns a request body into the
//! protocol's own messages (or an [`IntakeError`] saying what was expected and what was found),
//! and *map* turns those messages into neutral [`trawl_common::Row`]s, counting the items it
//! refuses in an [`IntakeOutput`] instead of failing the whole request.
//!
//! - [`otlp`]: OpenTelemetry logs, traces and metrics, protobuf or OTLP/JSON
//!   ([`otlp::decode_logs`], [`otlp::logs_to_rows`] and their trace and metric siblings). The
//!   mapping table and every choice the SPEC left open are in `src/otlp/README.md`. Logs and
//!   spans can also be written straight into columns ([`otlp::logs_to_columns`],
//!   [`otlp::traces_to_columns`]: the ingest path), through the same mapping.
//! - [`logpush`]: the log-push API (JSON envelope or Snappy protobuf) to log rows; its label
//!   mapping is in `src/logpush/README.md`.
//! - [`vendor`]: what the Datadog Agent sends (logs, series v2 and v3, sketches, traces) to
//!   rows; the mapping tables are in `src/vendor/README.md`.
//!
//! This crate knows nothing of HTTP, gRPC servers, storage or the clock: callers extract the body,
//! pass the ingest time in, and hand the rows to the write path. That keeps every mapping testable
//! with plain fixtures.

pub mod logpush;
pub mod otlp;
pub mod series;
pub mod vendor;

use trawl_common::{ErrorCode, Row, TrawlError};

/// Why a request body could not be decoded at all. Item-level problems (a span with a bad id)
/// are not errors: they are counted in [`IntakeOutput::rejected`].
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    /// The body is not a protobuf encoding of the expected export request.
    #[error("expected a protobuf otlp {signal} export request, found undecodable bytes: {source}")]
    MalformedProtobuf {
        signal: &'static str,
        #[source]
        source: prost::DecodeError,
    },
    /// The body is not well-formed JSON.
    #[error("expected an otlp/json {signal} export request, found malformed json: {source}")]
    MalformedJson {
        signal: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// The body is not Snappy block compressed.
    #[error("expected a snappy-compressed protobuf body, found bytes that do not decompress: {0}")]
    MalformedSnappy(String),
    /// The body is not what the route reads (a vendor payload that does not decode, a JSON
    /// body where protobuf is expected, a reference past the end of a dictionary).
    #[error("expected {expected}, found {found}")]
    MalformedBody { expected: &'static str, found: String },
    /// A stream's label text is not `{name="value", ...}`.
    #[error("{0}")]
    MalformedLabels(String),
    /// The body is JSON, but a field holds a value of the wrong shape.
    #[error("expected {expected} at `${path}`, found {found}")]
    UnexpectedJsonValue {
        /// Where the value sits, e.g. `.resourceSpans[0].scopeSpans[1].spans[2].traceId`.
        path: String,
        expected: &'static str,
        found: String,
    },
}

impl IntakeError {
    /// The user-facing code: every intake error is the sender's fault and permanent.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::BadRequest
    }

    /// Prefixes the JSON path of an [`IntakeError::UnexpectedJsonValue`] with an object field.
    pub(crate) fn within_field(self, field: &str) -> IntakeError {
        self.within(|path| {
            path.insert_str(0, field);
            path.insert(0, '.');
        })
    }

    /// Prefixes the JSON path of an [`IntakeError::UnexpectedJsonValue`] with an array index.
    pub(crate) fn within_index(self, index: usize) -> IntakeError {
        self.within(|path| path.insert_str(0, &format!("[{index}]")))
    }

    fn within(mut self, prefix: impl FnOnce(&mut String)) -> IntakeError {
        if let IntakeError::UnexpectedJsonValue { path, .. } = &mut self {
            prefix(path);
        }
        self
    }
}

impl From<IntakeError> for TrawlError {
    fn from(error: IntakeError) -> TrawlError {
        TrawlError::new(error.code(), error.to_string())
    }
}

/// [`IntakeOutput`] with the rows written into columns (OTLP logs and spans on the ingest path).
#[derive(Debug)]
pub struct ColumnsOutput {
    pub columns: trawl_common::columns::Columns,
    pub rejected: i64,
    pub error_message: String,
}

/// What a mapping produced from one request: the rows to store, and how many items (spans, log
/// records or metric data points) it refused, with a message for OTLP partial-success
/// responses (`rejected_spans` / `rejected_log_records` / `rejected_data_points`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IntakeOutput {
    pub rows: Vec<Row>,
    /// Number of items refused; 0 when everything was mapped.
    pub rejected: i64,
    /// Empty when nothing was refused; otherwise the count and the first reason.
    pub error_message: String,
}
