//! OTLP/JSON reader for `ExportLogsServiceRequest`.

use serde_json::Value;
use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};

use super::{
    InField, JsonResult, any_value, array, enumeration, hex_bytes, key_values, object, optional, resource, scope,
    string, uint32, uint64,
};

pub(crate) fn request(value: Value) -> JsonResult<ExportLogsServiceRequest> {
    let mut request = ExportLogsServiceRequest::default();
    for (field, value) in object(value)? {
        if let "resourceLogs" | "resource_logs" = field.as_str() {
            request.resource_logs = array(value, resource_logs).in_field(&field)?;
        }
    }
    Ok(request)
}

fn resource_logs(value: Value) -> JsonResult<ResourceLogs> {
    let mut out = ResourceLogs::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "resource" => out.resource = optional(value, resource).in_field(&field)?,
            "scopeLogs" | "scope_logs" => out.scope_logs = array(value, scope_logs).in_field(&field)?,
            "schemaUrl" | "schema_url" => out.schema_url = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(out)
}

fn scope_logs(value: Value) -> JsonResult<ScopeLogs> {
    let mut out = ScopeLogs::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "scope" => out.scope = optional(value, scope).in_field(&field)?,
            "logRecords" | "log_records" => out.log_records = array(value, log_record).in_field(&field)?,
            "schemaUrl" | "schema_url" => out.schema_url = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(out)
}

fn severity_from_name(name: &str) -> Option<i32> {
    SeverityNumber::from_str_name(name).map(|severity| severity as i32)
}

fn log_record(value: Value) -> JsonResult<LogRecord> {
    let mut record = LogRecord::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "timeUnixNano" | "time_unix_nano" => record.time_unix_nano = uint64(value).in_field(&field)?,
            "observedTimeUnixNano" | "observed_time_unix_nano" => {
                record.observed_time_unix_nano = uint64(value).in_field(&field)?
            }
            "severityNumber" | "severity_number" => {
                record.severity_number = enumeration(value, severity_from_name).in_field(&field)?
            }
            "severityText" | "severity_text" => record.severity_text = string(value).in_field(&field)?,
            "body" => record.body = optional(value, any_value).in_field(&field)?,
            "attributes" => record.attributes = key_values(value).in_field(&field)?,
            "droppedAttributesCount" | "dropped_attributes_count" => {
                record.dropped_attributes_count = uint32(value).in_field(&field)?
            }
            "flags" => record.flags = uint32(value).in_field(&field)?,
            "traceId" | "trace_id" => record.trace_id = hex_bytes(value).in_field(&field)?,
            "spanId" | "span_id" => record.span_id = hex_bytes(value).in_field(&field)?,
            "eventName" | "event_name" => record.event_name = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(record)
}
