use std::collections::{BTreeSet, HashMap};

use prost::Message;

use super::*;

fn small(seed: u64) -> GenConfig {
    GenConfig {
        seed,
        logs: 20_000,
        spans: 10_000,
        batch_size: 1_000,
        rare_bodies: 20,
        ..GenConfig::default()
    }
}

fn log_bytes(config: &GenConfig) -> Vec<Vec<u8>> {
    config.log_batches().map(|r| r.encode_to_vec()).collect()
}

fn trace_bytes(config: &GenConfig) -> Vec<Vec<u8>> {
    config.trace_batches().map(|r| r.encode_to_vec()).collect()
}

fn string_attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|a| a.key == key).and_then(|a| match &a.value {
        Some(AnyValue {
            value: Some(any_value::Value::StringValue(s)),
        }) => Some(s.as_str()),
        _ => None,
    })
}

fn body_of(record: &LogRecord) -> &str {
    match &record.body {
        Some(AnyValue {
            value: Some(any_value::Value::StringValue(s)),
        }) => s,
        _ => "",
    }
}

#[test]
fn same_seed_same_bytes() {
    let config = small(7);
    assert_eq!(log_bytes(&config), log_bytes(&config));
    assert_eq!(trace_bytes(&config), trace_bytes(&config));
}

#[test]
fn other_seed_other_bytes() {
    assert_ne!(log_bytes(&small(7)), log_bytes(&small(8)));
    assert_ne!(trace_bytes(&small(7)), trace_bytes(&small(8)));
    assert_ne!(small(7).rare_token(), small(8).rare_token());
    assert_ne!(small(7).needle_trace_id(), small(8).needle_trace_id());
}

#[test]
fn log_batches_have_the_asked_sizes_and_content() {
    let config = small(1);
    let mut records = Vec::new();
    let mut sizes = Vec::new();
    let mut services = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for request in config.log_batches() {
        sizes.push(log_record_count(&request));
        for resource_logs in request.resource_logs {
            let resource = resource_logs.resource.unwrap_or_default();
            services.insert(
                string_attr(&resource.attributes, "service.name")
                    .unwrap_or("")
                    .to_string(),
            );
            hosts.insert(string_attr(&resource.attributes, "host.name").unwrap_or("").to_string());
            for scope_logs in resource_logs.scope_logs {
                records.extend(scope_logs.log_records);
            }
        }
    }
    assert!(sizes.iter().all(|n| *n == 1_000), "{sizes:?}");
    assert_eq!(records.len(), 20_000);
    assert_eq!(services.len(), 30);
    assert!(hosts.len() > 150, "{} hosts", hosts.len());

    let errors = records.iter().filter(|r| r.severity_text == "ERROR").count();
    assert!((250..=550).contains(&errors), "{errors} errors of 20000");
    for r in &records {
        assert!(
            (5..=15).contains(&r.attributes.len()) || r.trace_id == config.needle_trace_id(),
            "{:?}",
            r.attributes
        );
        assert!(r.time_unix_nano >= config.start_nanos && r.time_unix_nano < config.end_nanos());
    }
    let with_route = records
        .iter()
        .filter(|r| string_attr(&r.attributes, "http.route").is_some())
        .count();
    assert!(with_route > 17_000, "{with_route}");

    let token = config.rare_token();
    let rare = records.iter().filter(|r| body_of(r).contains(&token)).count();
    assert_eq!(rare, 20);

    let templates: BTreeSet<_> = records
        .iter()
        .map(|r| body_of(r).split(' ').next().unwrap_or(""))
        .collect();
    assert!(templates.len() > 20);
    assert!(config.log_batches().template_count() >= 300);

    let needle = config.needle_trace_id();
    let needle_logs = records.iter().filter(|r| r.trace_id == needle).count();
    assert_eq!(needle_logs, NEEDLE_LOGS);
}

#[test]
fn traces_are_whole_nested_and_include_the_needle() {
    let config = small(3);
    let mut spans = Vec::new();
    for request in config.trace_batches() {
        assert!(span_count(&request) >= 1_000 || spans.len() + span_count(&request) >= 10_000);
        for resource_spans in request.resource_spans {
            for scope_spans in resource_spans.scope_spans {
                spans.extend(scope_spans.spans);
            }
        }
    }
    assert!(spans.len() >= 10_000 && spans.len() < 10_030, "{}", spans.len());
    let mut traces: HashMap<Vec<u8>, Vec<&Span>> = HashMap::new();
    for span in &spans {
        traces.entry(span.trace_id.clone()).or_default().push(span);
    }
    let needle = traces.get(config.needle_trace_id().as_slice()).map_or(0, Vec::len);
    assert_eq!(needle, NEEDLE_SPANS);
    for trace in traces.values() {
        assert!((1..=30).contains(&trace.len()));
        let roots = trace.iter().filter(|s| s.parent_span_id.is_empty()).count();
        assert_eq!(roots, 1);
        let ids: BTreeSet<&[u8]> = trace.iter().map(|s| s.span_id.as_slice()).collect();
        for s in trace {
            assert!(s.parent_span_id.is_empty() || ids.contains(s.parent_span_id.as_slice()));
            assert!(s.end_time_unix_nano >= s.start_time_unix_nano);
        }
    }
    let errors = spans
        .iter()
        .filter(|s| s.status.as_ref().is_some_and(|st| st.code == StatusCode::Error as i32))
        .count();
    assert!((40..=200).contains(&errors), "{errors} error spans of {}", spans.len());
    let mean = spans.len() as f64 / traces.len() as f64;
    assert!((5.0..12.0).contains(&mean), "mean trace size {mean}");
}

#[test]
fn fingerprint_is_stable() {
    assert_eq!(fingerprint(b"abc", 0), fingerprint(b"abc", 0));
    assert_ne!(fingerprint(b"abc", 0), fingerprint(b"abd", 0));
}
