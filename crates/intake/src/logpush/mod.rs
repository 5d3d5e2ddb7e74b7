//! The log-push API (`POST /lgx/api/v1/push`, Loki's push API under another path): streams
//! of log lines with labels, as JSON or Snappy-compressed protobuf, to log rows. The mapping
//! and the choices the SPEC left open are in `README.md` beside this file.
//!
//! [`decode_json`] and [`decode_protobuf`] turn a body into [`Stream`]s; [`streams_to_rows`]
//! maps them.

use serde_json::{Map, Value as Json};
use trawl_common::{Row, Value};
use trawl_proto::logproto;

use crate::{IntakeError, IntakeOutput};

/// One stream: its labels and entries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stream {
    pub labels: Vec<(String, String)>,
    pub entries: Vec<Entry>,
}

/// One log line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    /// Nanoseconds since the Unix epoch; 0 when the sender gave none.
    pub timestamp: i64,
    pub line: String,
    pub metadata: Vec<(String, String)>,
}

fn malformed(path: String, expected: &'static str, found: &Json) -> IntakeError {
    let found = match found {
        Json::Null => "null".to_string(),
        Json::String(s) => format!("the string {s:?}"),
        other => other.to_string().chars().take(60).collect(),
    };
    IntakeError::UnexpectedJsonValue { path, expected, found }
}

/// The JSON envelope: `{"streams": [{"stream": {labels}, "values": [["<ns>", "<line>"(, {metadata})], ...]}]}`.
/// Keys it does not know are ignored.
pub fn decode_json(body: &[u8]) -> Result<Vec<Stream>, IntakeError> {
    let json: Json = serde_json::from_slice(body).map_err(|source| IntakeError::MalformedJson {
        signal: "log push",
        source,
    })?;
    let Some(streams) = json.get("streams").and_then(|s| s.as_array()) else {
        return Err(malformed(
            ".streams".into(),
            "an array of streams (the log-push envelope)",
            json.get("streams").unwrap_or(&Json::Null),
        ));
    };
    let mut out = Vec::with_capacity(streams.len());
    for (i, stream) in streams.iter().enumerate() {
        let path = |rest: &str| format!(".streams[{i}]{rest}");
        let labels = match stream.get("stream").or_else(|| stream.get("labels")) {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::Object(labels)) => labels
                .iter()
                .map(|(k, v)| match v {
                    Json::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(malformed(path(&format!(".stream.{k}")), "a string label value", other)),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(malformed(path(".stream"), "an object of labels", other)),
        };
        let values = match stream.get("values") {
            Some(Json::Array(values)) => values,
            other => {
                return Err(malformed(
                    path(".values"),
                    "an array of [timestamp, line] pairs",
                    other.unwrap_or(&Json::Null),
                ));
            }
        };
        let mut entries = Vec::with_capacity(values.len());
        for (j, value) in values.iter().enumerate() {
            let at = |k: usize| path(&format!(".values[{j}][{k}]"));
            let Some(parts) = value.as_array().filter(|p| p.len() == 2 || p.len() == 3) else {
                return Err(malformed(
                    path(&format!(".values[{j}]")),
                    "[timestamp, line] or [timestamp, line, {metadata}]",
                    value,
                ));
            };
            let timestamp = match &parts[0] {
                Json::String(text) => text
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| malformed(at(0), "decimal nanoseconds as a string", &parts[0]))?,
                other => return Err(malformed(at(0), "decimal nanoseconds as a string", other)),
            };
            let line = match &parts[1] {
                Json::String(line) => line.clone(),
                other => return Err(malformed(at(1), "the log line as a string", other)),
            };
            let metadata = match parts.get(2) {
                None | Some(Json::Null) => Vec::new(),
                Some(Json::Object(map)) => map
                    .iter()
                    .map(|(k, v)| {
                        let text = match v {
                            Json::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (k.clone(), text)
                    })
                    .collect(),
                Some(other) => return Err(malformed(at(2), "an object of structured metadata", other)),
            };
            entries.push(Entry {
                timestamp,
                line,
                metadata,
            });
        }
        out.push(Stream { labels, entries });
    }
    Ok(out)
}

/// The protobuf body: Snappy block compression (no framing) around `logproto.PushRequest`.
pub fn decode_protobuf(body: &[u8]) -> Result<Vec<Stream>, IntakeError> {
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| IntakeError::MalformedSnappy(e.to_string()))?;
    let request = <logproto::PushRequest as prost::Message>::decode(raw.as_slice()).map_err(|source| {
        IntakeError::MalformedProtobuf {
            signal: "log push",
            source,
        }
    })?;
    request
        .streams
        .into_iter()
        .map(|stream| {
            let labels = parse_labels(&stream.labels).map_err(IntakeError::MalformedLabels)?;
            let entries = stream
                .entries
                .into_iter()
                .map(|entry| Entry {
                    timestamp: entry.timestamp.map_or(0, |t| {
                        t.seconds
                            .saturating_mul(1_000_000_000)
                            .saturating_add(i64::from(t.nanos))
                    }),
                    line: entry.line,
                    metadata: entry
                        .structured_metadata
                        .into_iter()
                        .map(|pair| (pair.name, pair.value))
                        .collect(),
                })
                .collect();
            Ok(Stream { labels, entries })
        })
        .collect()
}

/// Prometheus label text, `{a="x", b="y \"quoted\""}`, as pairs.
pub fn parse_labels(text: &str) -> Result<Vec<(String, String)>, String> {
    let text = text.trim();
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(|| format!("labels must be written {{name=\"value\", ...}}, found {text:?}"))?;
    let mut labels = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(labels);
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == ':' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if name.is_empty() || chars.next() != Some('=') {
            return Err(format!("expected name=\"value\" in labels {text:?}"));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('"') {
            return Err(format!("expected a quoted value for label {name:?}"));
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some(other) => value.push(other),
                    None => return Err(format!("unterminated value of label {name:?}")),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => return Err(format!("unterminated value of label {name:?}")),
            }
        }
        labels.push((name, value));
    }
}

/// Labels that become resource attributes, and their names there.
const RESOURCE_LABELS: &[(&str, &str)] = &[
    ("service_name", "service.name"),
    ("service", "service.name"),
    ("service_namespace", "service.namespace"),
    ("service_instance_id", "service.instance.id"),
    ("namespace", "k8s.namespace.name"),
    ("pod", "k8s.pod.name"),
    ("container", "k8s.container.name"),
    ("node_name", "k8s.node.name"),
    ("k8s_namespace_name", "k8s.namespace.name"),
    ("k8s_pod_name", "k8s.pod.name"),
    ("k8s_container_name", "k8s.container.name"),
    ("k8s_cluster_name", "k8s.cluster.name"),
    ("k8s_deployment_name", "k8s.deployment.name"),
    ("k8s_replicaset_name", "k8s.replicaset.name"),
    ("k8s_statefulset_name", "k8s.statefulset.name"),
    ("k8s_daemonset_name", "k8s.daemonset.name"),
    ("k8s_cronjob_name", "k8s.cronjob.name"),
    ("k8s_job_name", "k8s.job.name"),
    ("k8s_node_name", "k8s.node.name"),
    ("container_name", "container.name"),
    ("cloud_availability_zone", "cloud.availability_zone"),
    ("cloud_region", "cloud.region"),
    ("deployment_environment_name", "deployment.environment.name"),
    ("filename", "log.file.path"),
];

/// Structured-metadata keys whose underscores become dots when the dotted key starts so.
const DOTTED_PREFIXES: &[&str] = &[
    "service.",
    "k8s.",
    "host.",
    "container.",
    "cloud.",
    "deployment.",
    "process.",
    "os.",
    "log.",
    "http.",
    "net.",
    "telemetry.",
];

/// A structured-metadata key as a record attribute key (SPEC rule 4).
pub fn metadata_key(key: &str) -> String {
    let dotted = key.replace('_', ".");
    if DOTTED_PREFIXES.iter().any(|prefix| dotted.starts_with(prefix)) {
        dotted
    } else {
        key.to_string()
    }
}

/// The severity number (1-24) of a level name, as OpenTelemetry's ranges have it.
pub fn severity_number(level: &str) -> Option<i64> {
    Some(match level.trim().to_ascii_lowercase().as_str() {
        "trace" => 1,
        "debug" | "dbug" => 5,
        "info" | "information" | "notice" => 9,
        "warn" | "warning" => 13,
        "error" | "err" | "eror" => 17,
        "fatal" | "critical" | "crit" | "panic" | "alert" | "emergency" | "emerg" => 21,
        _ => return None,
    })
}

/// Resource attributes, record attributes and the severity of a stream's labels.
fn split_labels(labels: &[(String, String)]) -> (Map<String, Json>, Map<String, Json>, Option<String>) {
    let mut resource = Map::new();
    let mut attributes = Map::new();
    let mut level = None;
    let mut job = None;
    for (name, value) in labels {
        match name.as_str() {
            "exporter" => {}
            "level" => level = Some(value.clone()),
            "job" => job = Some(value.clone()),
            _ => match RESOURCE_LABELS.iter().find(|(label, _)| label == name) {
                // `service_name` wins over `service` when both are there.
                Some((_, key)) if !(name == "service" && labels.iter().any(|(n, _)| n == "service_name")) => {
                    resource.insert((*key).to_string(), Json::String(value.clone()));
                }
                Some(_) => {}
                None => {
                    attributes.insert(name.clone(), Json::String(value.clone()));
                }
            },
        }
    }
    if let Some(job) = job {
        if !resource.contains_key("service.name") {
            match job.split_once('/') {
                Some((namespace, service)) if !namespace.is_empty() && !service.is_empty() => {
                    resource.insert("service.name".into(), Json::String(service.to_string()));
                    resource
                        .entry("service.namespace")
                        .or_insert_with(|| Json::String(namespace.to_string()));
                }
                _ => {
                    resource.insert("service.name".into(), Json::String(job.clone()));
                }
            }
        }
        // The job itself stays visible as a record attribute.
        attributes.insert("job".into(), Json::String(job));
    }
    (resource, attributes, level)
}

/// Log rows of `streams`: one per entry.
pub fn streams_to_rows(streams: &[Stream], ingest_time_nanos: i64) -> IntakeOutput {
    let mut rows = Vec::with_capacity(streams.iter().map(|s| s.entries.len()).sum());
    for stream in streams {
        let (resource, labels_as_attributes, level) = split_labels(&stream.labels);
        let resource = (!resource.is_empty()).then(|| Value::Dynamic(Json::Object(resource)));
        for entry in &stream.entries {
            let mut row = Row::with_capacity(8);
            let timestamp = if entry.timestamp != 0 {
                entry.timestamp
            } else {
                ingest_time_nanos
            };
            row.push("timestamp", Value::DateTime(timestamp));
            row.push("observed_time", Value::DateTime(ingest_time_nanos));
            row.push("ingest_time", Value::DateTime(ingest_time_nanos));
            if let Some(level) = &level {
                if let Some(number) = severity_number(level) {
                    row.push("severity_number", Value::Long(number));
                }
                row.push("severity_text", Value::String(level.clone()));
            }
            row.push("body", Value::Dynamic(Json::String(entry.line.clone())));
            let mut attributes = labels_as_attributes.clone();
            for (key, value) in &entry.metadata {
                attributes.insert(metadata_key(key), Json::String(value.clone()));
            }
            if !attributes.is_empty() {
                row.push("attributes", Value::Dynamic(Json::Object(attributes)));
            }
            if let Some(resource) = &resource {
                row.push("resource", resource.clone());
            }
            rows.push(row);
        }
    }
    IntakeOutput {
        rows,
        rejected: 0,
        error_message: String::new(),
    }
}

#[cfg(test)]
mod tests;
