//! OTLP (OpenTelemetry protocol) intake: decode export requests from protobuf or OTLP/JSON, and
//! map logs, spans and metric data points to the stored rows of the SPEC section "Stored
//! telemetry rows (OTLP conversion)".
//!
//! - [`decode_logs`], [`decode_traces`], [`decode_metrics`]: body bytes to export request.
//! - [`logs_to_rows`], [`traces_to_rows`], [`metrics_to_rows`]: export request to rows, with
//!   invalid items counted as rejected rather than failing the request.
//!
//! The mapping table and the choices the SPEC left open are in `README.md` beside this file.

pub(crate) mod base64;
pub(crate) mod common;
mod decode;
mod json;
mod logs;
mod metrics;
mod sink;
mod traces;
mod wire;

#[cfg(test)]
mod arbitrary;
#[cfg(test)]
mod fixtures;

pub use decode::{PayloadFormat, decode_logs, decode_metrics, decode_traces};
pub use logs::{logs_protobuf_to_columns, logs_to_columns, logs_to_rows};
pub use metrics::metrics_to_rows;
pub use traces::{traces_protobuf_to_columns, traces_to_columns, traces_to_rows};
