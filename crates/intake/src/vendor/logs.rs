//! `/api/v2/logs`: a JSON array of log entries (or one entry) to log rows.

use serde_json::{Map, Value as Json};
use trawl_common::{Row, Value};

use crate::{IntakeError, IntakeOutput};

/// Keys whose values a JSON `message` expands into, first found wins.
const BODY_KEYS: &[&str] = &["message", "msg", "log"];
const SEVERITY_KEYS: &[&str] = &["status", "severity", "level", "syslog.severity"];
const TIMESTAMP_KEYS: &[&str] = &[
    "timestamp",
    "date",
    "_timestamp",
    "Timestamp",
    "eventTime",
    "published_date",
];
const TRACE_KEYS: &[&str] = &[
    "vx.trace_id",
    "dd.trace_id",
    "contextMap.vx.trace_id",
    "contextMap.dd.trace_id",
];
const SPAN_KEYS: &[&str] = &[
    "vx.span_id",
    "dd.span_id",
    "contextMap.vx.span_id",
    "contextMap.dd.span_id",
];

/// Decodes the body: an array of entries, or one entry object.
pub fn decode(body: &[u8]) -> Result<Vec<Map<String, Json>>, IntakeError> {
    let json: Json = serde_json::from_slice(body).map_err(|source| IntakeError::MalformedJson {
        signal: "vendor logs",
        source,
    })?;
    let items = match json {
        Json::Array(items) => items,
        Json::Object(object) => vec![Json::Object(object)],
        other => {
            return Err(IntakeError::UnexpectedJsonValue {
                path: String::new(),
                expected: "an array of log objects",
                found: other.to_string().chars().take(60).collect(),
            });
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Json::Object(object) => Ok(object),
            other => Err(IntakeError::UnexpectedJsonValue {
                path: format!("[{i}]"),
                expected: "a log object",
                found: other.to_string().chars().take(60).collect(),
            }),
        })
        .collect()
}

/// The severity (text, number 1-24) of a status value, if it is a recognised severity:
/// names, or syslog numbers 0-7 (as numbers or digit strings).
pub fn severity(value: &Json) -> Option<(String, i64)> {
    let text = match value {
        Json::String(s) => s.trim().to_ascii_lowercase(),
        Json::Number(n) => n.to_string(),
        _ => return None,
    };
    let number = match text.as_str() {
        "trace" => 1,
        "debug" | "7" => 5,
        "info" | "ok" | "6" | "information" => 9,
        "notice" | "5" => 10,
        "warn" | "warning" | "4" => 13,
        "error" | "err" | "3" => 17,
        "critical" | "crit" | "2" => 21,
        "alert" | "1" => 22,
        "emergency" | "emerg" | "0" => 23,
        _ => return None,
    };
    Some((text, number))
}

/// Nanoseconds of a timestamp: epoch milliseconds (number or digits) or RFC 3339.
pub fn timestamp_nanos(value: &Json) -> Option<i64> {
    match value {
        Json::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .and_then(|ms| ms.checked_mul(1_000_000)),
        Json::String(s) => match s.trim().parse::<i64>() {
            Ok(ms) => ms.checked_mul(1_000_000),
            Err(_) => chrono::DateTime::parse_from_rfc3339(s.trim())
                .ok()
                .and_then(|t| t.timestamp_nanos_opt()),
        },
        _ => None,
    }
}

/// Flattens nested objects to dotted keys.
fn flatten_into(prefix: &str, value: Json, out: &mut Map<String, Json>) {
    match value {
        Json::Object(object) => {
            for (key, inner) in object {
                let key = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten_into(&key, inner, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other);
        }
    }
}

/// `key:value,key2:value2` tags to attributes; repeated keys become arrays; a tag without a
/// value keeps an empty string.
pub fn parse_tags(text: &str, attributes: &mut Map<String, Json>) {
    for tag in text.split(',') {
        add_tag(tag, attributes);
    }
}

/// One `key:value` tag (split at the first `:`) into attributes; a repeated key becomes an
/// array; a tag without a value keeps an empty string.
pub fn add_tag(tag: &str, attributes: &mut Map<String, Json>) {
    let tag = tag.trim();
    if tag.is_empty() {
        return;
    }
    let (key, value) = tag.split_once(':').unwrap_or((tag, ""));
    let value = Json::String(value.to_string());
    match attributes.get_mut(key) {
        Some(Json::Array(values)) => values.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Json::Array(vec![first, value]);
        }
        None => {
            attributes.insert(key.to_string(), value);
        }
    }
}

fn first_of(attributes: &mut Map<String, Json>, keys: &[&str], accept: impl Fn(&Json) -> bool) -> Option<Json> {
    let key = keys.iter().find(|k| attributes.get(**k).is_some_and(&accept))?;
    attributes.remove(*key)
}

/// A decimal or hex id as a u64 / u128.
fn decimal_id(value: &Json) -> Option<u128> {
    match value {
        Json::String(s) => s.trim().parse::<u128>().ok(),
        Json::Number(n) => n.as_u64().map(u128::from),
        _ => None,
    }
}

/// Log rows of `entries`.
pub fn to_rows(entries: Vec<Map<String, Json>>, ingest_time_nanos: i64) -> IntakeOutput {
    let mut rows = Vec::with_capacity(entries.len());
    for entry in entries {
        let mut attributes = Map::new();
        let mut resource = Map::new();
        let mut body = None;
        let mut fields = entry;
        // The entry's own `status`, when not a recognised severity, still names the severity
        // (number unset); one from a JSON message counts only when recognised.
        let unknown_status = match fields.get("status") {
            Some(Json::String(text)) if severity(&Json::String(text.clone())).is_none() => {
                let text = text.clone();
                fields.remove("status");
                Some(text)
            }
            _ => None,
        };
        // A JSON message expands into the entry's fields (the entry's own fields win).
        if let Some(Json::String(message)) = fields.get("message")
            && let Ok(Json::Object(expanded)) = serde_json::from_str::<Json>(message)
        {
            fields.remove("message");
            for (key, value) in expanded {
                fields.entry(key).or_insert(value);
            }
        }
        let tags = fields.remove("ddtags").or_else(|| fields.remove("vxtags"));
        let source = fields.remove("ddsource").or_else(|| fields.remove("vxsource"));
        if let Some(Json::String(host)) = fields.remove("hostname") {
            resource.insert("host.name".into(), Json::String(host));
        }
        if let Some(Json::String(service)) = fields.remove("service") {
            resource.insert("service.name".into(), Json::String(service));
        }
        let mut flat = Map::new();
        for (key, value) in fields {
            flatten_into(&key, value, &mut flat);
        }
        if let Some(value) = first_of(&mut flat, BODY_KEYS, |_| true) {
            body = Some(value);
        }
        let severity = first_of(&mut flat, SEVERITY_KEYS, |v| severity(v).is_some()).and_then(|v| severity(&v));
        let timestamp =
            first_of(&mut flat, TIMESTAMP_KEYS, |v| timestamp_nanos(v).is_some()).and_then(|v| timestamp_nanos(&v));
        let trace = first_of(&mut flat, TRACE_KEYS, |v| decimal_id(v).is_some()).and_then(|v| decimal_id(&v));
        let span = first_of(&mut flat, SPAN_KEYS, |v| decimal_id(v).is_some()).and_then(|v| decimal_id(&v));
        let high_bits = flat
            .get("_dd.p.tid")
            .or_else(|| flat.get("_vx.p.tid"))
            .and_then(|v| v.as_str())
            .and_then(|hex| u64::from_str_radix(hex, 16).ok());
        attributes.extend(flat);
        if let Some(Json::String(tags)) = &tags {
            parse_tags(tags, &mut attributes);
        }
        for (tag, key) in [("env", "deployment.environment.name"), ("version", "service.version")] {
            if let Some(Json::String(value)) = attributes.get(tag) {
                resource.insert(key.into(), Json::String(value.clone()));
            }
        }
        if let Some(source) = source {
            attributes.insert("vxsource".into(), source);
        }
        let mut row = Row::with_capacity(12);
        row.push("timestamp", Value::DateTime(timestamp.unwrap_or(ingest_time_nanos)));
        row.push("observed_time", Value::DateTime(ingest_time_nanos));
        row.push("ingest_time", Value::DateTime(ingest_time_nanos));
        if let Some(trace) = trace {
            let full = if trace > u128::from(u64::MAX) {
                trace
            } else {
                (u128::from(high_bits.unwrap_or(0)) << 64) | trace
            };
            row.push("trace_id", Value::String(format!("{full:032x}")));
            attributes.insert(
                "vx.trace_id".into(),
                Json::String((trace & u128::from(u64::MAX)).to_string()),
            );
        }
        if let Some(span) = span {
            row.push("span_id", Value::String(format!("{:016x}", span as u64)));
            attributes.insert("vx.span_id".into(), Json::String(span.to_string()));
        }
        match (severity, unknown_status) {
            (Some((text, number)), _) => {
                row.push("severity_text", Value::String(text));
                row.push("severity_number", Value::Long(number));
            }
            (None, Some(text)) => row.push("severity_text", Value::String(text)),
            (None, None) => {}
        }
        if let Some(body) = body {
            row.push("body", Value::Dynamic(body));
        }
        if !attributes.is_empty() {
            row.push("attributes", Value::Dynamic(Json::Object(attributes)));
        }
        if !resource.is_empty() {
            row.push("resource", Value::Dynamic(Json::Object(resource)));
        }
        rows.push(row);
    }
    IntakeOutput {
        rows,
        rejected: 0,
        error_message: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rows(body: Json) -> Result<Vec<Row>, IntakeError> {
        Ok(to_rows(decode(body.to_string().as_bytes())?, 7).rows)
    }

    fn get<'a>(row: &'a Row, column: &str) -> Option<&'a Value> {
        row.get(column)
    }

    #[test]
    fn fields_tags_and_resource() -> Result<(), IntakeError> {
        let rows = rows(json!([{
            "message": "disk full",
            "status": "warn",
            "timestamp": 1_700_000_000_123_i64,
            "hostname": "h1",
            "service": "api",
            "ddsource": "python",
            "ddtags": "env:prod,version:1.2,team:a,team:b,solo",
            "http": {"method": "GET", "status_code": 500}
        }]))?;
        let row = &rows[0];
        assert_eq!(get(row, "timestamp"), Some(&Value::DateTime(1_700_000_000_123_000_000)));
        assert_eq!(get(row, "body"), Some(&Value::Dynamic(json!("disk full"))));
        assert_eq!(get(row, "severity_text"), Some(&Value::String("warn".into())));
        assert_eq!(get(row, "severity_number"), Some(&Value::Long(13)));
        assert_eq!(
            get(row, "resource"),
            Some(&Value::Dynamic(json!({
                "host.name": "h1", "service.name": "api",
                "deployment.environment.name": "prod", "service.version": "1.2"
            })))
        );
        assert_eq!(
            get(row, "attributes"),
            Some(&Value::Dynamic(json!({
                "http.method": "GET", "http.status_code": 500,
                "env": "prod", "version": "1.2", "team": ["a", "b"], "solo": "", "vxsource": "python"
            })))
        );
        Ok(())
    }

    #[test]
    fn json_messages_expand_with_reserved_keys() -> Result<(), IntakeError> {
        let message = json!({"msg": "boom", "level": "error", "status": 500, "date": "2024-05-01T10:00:00Z", "dd.trace_id": "12", "dd.span_id": "34", "_dd.p.tid": "00000000000000ff", "user": "u"});
        let rows = rows(json!([{"message": message.to_string()}]))?;
        let row = &rows[0];
        assert_eq!(get(row, "body"), Some(&Value::Dynamic(json!("boom"))));
        // A numeric HTTP status is not a severity: `level` is, and `status` stays.
        assert_eq!(get(row, "severity_number"), Some(&Value::Long(17)));
        assert_eq!(get(row, "timestamp"), Some(&Value::DateTime(1_714_557_600_000_000_000)));
        assert_eq!(
            get(row, "trace_id"),
            Some(&Value::String(format!("{:016x}{:016x}", 0xff, 12)))
        );
        assert_eq!(get(row, "span_id"), Some(&Value::String(format!("{:016x}", 34))));
        let Some(Value::Dynamic(Json::Object(attributes))) = get(row, "attributes") else {
            return Err(IntakeError::MalformedLabels("no attributes".into()));
        };
        assert_eq!(attributes.get("status"), Some(&json!(500)));
        assert_eq!(attributes.get("vx.trace_id"), Some(&json!("12")));
        assert_eq!(attributes.get("vx.span_id"), Some(&json!("34")));
        assert_eq!(attributes.get("user"), Some(&json!("u")));
        Ok(())
    }

    #[test]
    fn an_unknown_status_keeps_its_text() -> Result<(), IntakeError> {
        let rows = rows(json!([{"message": "m", "status": "chatty"}]))?;
        assert_eq!(get(&rows[0], "severity_text"), Some(&Value::String("chatty".into())));
        assert_eq!(get(&rows[0], "severity_number"), None);
        assert_eq!(
            get(&rows[0], "timestamp"),
            Some(&Value::DateTime(7)),
            "no timestamp: observed time"
        );
        Ok(())
    }

    #[test]
    fn severities_and_timestamps() {
        assert_eq!(severity(&json!("OK")), Some(("ok".into(), 9)));
        assert_eq!(severity(&json!(3)), Some(("3".into(), 17)));
        assert_eq!(severity(&json!("chatty")), None);
        assert_eq!(severity(&json!(500)), None);
        assert_eq!(
            timestamp_nanos(&json!("1700000000000")),
            Some(1_700_000_000_000_000_000)
        );
        assert_eq!(timestamp_nanos(&json!("nonsense")), None);
    }

    #[test]
    fn malformed_bodies() {
        assert!(decode(b"[1]").is_err());
        assert!(decode(b"\"x\"").is_err());
        assert!(decode(b"{").is_err());
    }
}
