//! Request bodies to OTLP export requests: protobuf through prost, OTLP/JSON through the reader
//! in [`crate::otlp::json`].

use prost::Message;
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::collector::metrics::v1::ExportMetricsServiceRequest;
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;

use crate::IntakeError;
use crate::otlp::json;

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadFormat {
    /// Binary protobuf (`application/x-protobuf`; also every gRPC message).
    Protobuf,
    /// OTLP/JSON (`application/json`).
    Json,
}

impl PayloadFormat {
    /// The format an OTLP/HTTP `Content-Type` announces (parameters such as `charset` ignored),
    /// or `None` for a type OTLP does not define.
    pub fn from_content_type(content_type: &str) -> Option<PayloadFormat> {
        let media_type = content_type.split(';').next().unwrap_or_default().trim();
        if media_type.eq_ignore_ascii_case("application/x-protobuf")
            || media_type.eq_ignore_ascii_case("application/protobuf")
        {
            Some(PayloadFormat::Protobuf)
        } else if media_type.eq_ignore_ascii_case("application/json") {
            Some(PayloadFormat::Json)
        } else {
            None
        }
    }
}

pub fn decode_logs(bytes: &[u8], format: PayloadFormat) -> Result<ExportLogsServiceRequest, IntakeError> {
    const SIGNAL: &str = "logs";
    match format {
        PayloadFormat::Protobuf => ExportLogsServiceRequest::decode(bytes)
            .map_err(|source| IntakeError::MalformedProtobuf { signal: SIGNAL, source }),
        PayloadFormat::Json => json::logs::request(parse_json(bytes, SIGNAL)?),
    }
}

pub fn decode_traces(bytes: &[u8], format: PayloadFormat) -> Result<ExportTraceServiceRequest, IntakeError> {
    const SIGNAL: &str = "traces";
    match format {
        PayloadFormat::Protobuf => ExportTraceServiceRequest::decode(bytes)
            .map_err(|source| IntakeError::MalformedProtobuf { signal: SIGNAL, source }),
        PayloadFormat::Json => json::traces::request(parse_json(bytes, SIGNAL)?),
    }
}

pub fn decode_metrics(bytes: &[u8], format: PayloadFormat) -> Result<ExportMetricsServiceRequest, IntakeError> {
    const SIGNAL: &str = "metrics";
    match format {
        PayloadFormat::Protobuf => ExportMetricsServiceRequest::decode(bytes)
            .map_err(|source| IntakeError::MalformedProtobuf { signal: SIGNAL, source }),
        PayloadFormat::Json => json::metrics::request(parse_json(bytes, SIGNAL)?),
    }
}

/// Parses JSON text; serde_json's nesting limit (128) keeps deep documents from exhausting the
/// stack.
fn parse_json(bytes: &[u8], signal: &'static str) -> Result<serde_json::Value, IntakeError> {
    serde_json::from_slice(bytes).map_err(|source| IntakeError::MalformedJson { signal, source })
}

#[cfg(test)]
mod tests;
