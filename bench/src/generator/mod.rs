//! Deterministic telemetry generator: OTLP log and trace export requests with realistic
//! content (see `/work/shared/bench-queries.md` and `bench/README.md`).
//!
//! - ~30 services on 200 hosts (each host runs one service; service volumes are skewed),
//!   17 resource attributes per host (`service.name`, `host.name`, `k8s.pod.name`, …).
//! - Log bodies from 360 templates (36 patterns × 10 entities) with variable parts (ids,
//!   latencies, users, addresses, peers, tables, queues).
//! - Log severities: ~2% ERROR, ~6% WARN, ~72% INFO, ~20% DEBUG; 5–15 attributes per record,
//!   `http.method` / `http.route` / `http.status_code` on ~90% of them (5xx mostly on errors).
//! - Traces of 1–30 spans (mean ~8) across services: server, client, database, messaging and
//!   internal spans, nested durations, ~1% of spans with status ERROR (plus an `exception`
//!   event).
//! - One rare token (`GenConfig::rare_token`) in `rare_bodies` (default 100) log bodies, and
//!   one needle trace (`GenConfig::needle_trace_id`) of 12 spans in the middle of the window,
//!   with 6 logs that carry its trace and span ids.
//! - Record `i` of `n` is stamped `start + i·window/n` plus jitter: requests arrive in time
//!   order, as from live exporters, and cover the window (default 24 h).
//!
//! Same configuration → same requests → same bytes (`prost` encoding is deterministic; no
//! hash maps are iterated). Nothing here reads the clock.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use trawl_proto::otlp::collector::logs::v1::ExportLogsServiceRequest;
use trawl_proto::otlp::collector::trace::v1::ExportTraceServiceRequest;
use trawl_proto::otlp::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use trawl_proto::otlp::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use trawl_proto::otlp::resource::v1::Resource;
use trawl_proto::otlp::trace::v1::span::{Event, SpanKind};
use trawl_proto::otlp::trace::v1::status::StatusCode;
use trawl_proto::otlp::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

use crate::prng::{Prng, mix64, pick_weighted};

/// 2026-01-01T00:00:00Z in nanoseconds.
pub const DEFAULT_START_NANOS: u64 = 1_767_225_600 * 1_000_000_000;
pub const HOUR_NANOS: u64 = 3_600 * 1_000_000_000;
pub const DAY_NANOS: u64 = 24 * HOUR_NANOS;
const MS: u64 = 1_000_000;

/// Spans in the needle trace, and logs that carry its ids.
pub const NEEDLE_SPANS: usize = 12;
pub const NEEDLE_LOGS: usize = 6;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenConfig {
    pub seed: u64,
    /// Start of the time window (Unix nanoseconds).
    pub start_nanos: u64,
    /// Length of the time window (nanoseconds).
    pub window_nanos: u64,
    /// Log records in all.
    pub logs: u64,
    /// Spans in all (whole traces: the last batch may go a few spans over).
    pub spans: u64,
    /// Records (or spans, at least) per export request.
    pub batch_size: usize,
    /// Log bodies that carry the rare token.
    pub rare_bodies: u64,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            seed: 42,
            start_nanos: DEFAULT_START_NANOS,
            window_nanos: DAY_NANOS,
            logs: 10_000_000,
            spans: 5_000_000,
            batch_size: 1_000,
            rare_bodies: 100,
        }
    }
}

impl GenConfig {
    /// The token that appears in about `rare_bodies` log bodies and nowhere else: consonants
    /// only, so it can never collide with the hex ids and words of other bodies.
    pub fn rare_token(&self) -> String {
        const LETTERS: &[u8] = b"bcdfghjklmnpqrstvwxz";
        let mut rng = Prng::derived(self.seed, 0x7a7e);
        let mut token = String::from("zq");
        for _ in 0..10 {
            token.push(char::from(rng.one_of(LETTERS)));
        }
        token
    }

    /// The needle trace id (16 bytes).
    pub fn needle_trace_id(&self) -> [u8; 16] {
        Prng::derived(self.seed, NEEDLE_PURPOSE).id::<16>()
    }

    pub fn needle_trace_id_hex(&self) -> String {
        hex::encode(self.needle_trace_id())
    }

    /// Start time of the needle trace: the middle of the window.
    pub fn needle_time_nanos(&self) -> u64 {
        self.start_nanos + self.window_nanos / 2
    }

    pub fn end_nanos(&self) -> u64 {
        self.start_nanos + self.window_nanos
    }

    pub fn log_batches(&self) -> LogBatches {
        LogBatches::new(self.clone())
    }

    pub fn trace_batches(&self) -> TraceBatches {
        TraceBatches::new(self.clone())
    }
}

const WORLD_PURPOSE: u64 = 1;
const LOGS_PURPOSE: u64 = 2;
const TRACES_PURPOSE: u64 = 3;
const NEEDLE_PURPOSE: u64 = 4;

// ---------------------------------------------------------------------------------------
// The world: services, hosts, routes, templates.

mod vocabulary;
use vocabulary::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Var {
    Id,
    N,
    Ms,
    User,
    Ip,
    Route,
    Method,
    Status,
    Svc,
    Table,
    Queue,
    Bytes,
    Pct,
}

#[derive(Debug, Clone)]
enum Part {
    Lit(String),
    Var(Var),
}

/// A body template: literal text and variable slots.
#[derive(Debug, Clone)]
struct Template {
    parts: Vec<Part>,
}

impl Template {
    fn parse(pattern: &str, entity: &str) -> Template {
        let capitalized: String = entity
            .chars()
            .take(1)
            .flat_map(char::to_uppercase)
            .chain(entity.chars().skip(1))
            .collect();
        let text = pattern.replace("{e}", entity).replace("{E}", &capitalized);
        let mut parts = Vec::new();
        let mut rest = text.as_str();
        while let Some(open) = rest.find('{') {
            let Some(close) = rest[open..].find('}').map(|c| open + c) else {
                break;
            };
            let var = match &rest[open + 1..close] {
                "id" => Var::Id,
                "n" => Var::N,
                "ms" => Var::Ms,
                "user" => Var::User,
                "ip" => Var::Ip,
                "route" => Var::Route,
                "method" => Var::Method,
                "status" => Var::Status,
                "svc" => Var::Svc,
                "table" => Var::Table,
                "queue" => Var::Queue,
                "bytes" => Var::Bytes,
                "pct" => Var::Pct,
                other => panic!("unknown template variable {{{other}}} in {pattern:?}"),
            };
            if open > 0 {
                parts.push(Part::Lit(rest[..open].to_string()));
            }
            parts.push(Part::Var(var));
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        Template { parts }
    }
}

#[derive(Debug, Clone)]
struct Service {
    name: &'static str,
    namespace: &'static str,
    language: &'static str,
    version: String,
    /// Routes served, most popular first, with cumulative weights.
    routes: Vec<String>,
    route_weights: Vec<f64>,
    hosts: Vec<usize>,
    /// Relative log and trace volume.
    weight: f64,
}

#[derive(Debug, Clone)]
struct Host {
    service: usize,
    group: usize,
    resource: Resource,
}

/// Everything derived from the seed once: services, hosts, their resources, templates.
#[derive(Debug)]
struct World {
    services: Vec<Service>,
    hosts: Vec<Host>,
    /// Per host group: its hosts and cumulative volume weights.
    groups: Vec<(Vec<usize>, Vec<f64>)>,
    /// Templates per severity index (as in `SEVERITIES`).
    templates: [Vec<Template>; 4],
    /// Cumulative severity shares.
    severity_weights: Vec<f64>,
    /// Cumulative service weights (for trace roots).
    service_weights: Vec<f64>,
    scopes: Vec<InstrumentationScope>,
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn kv_str(key: &str, value: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.into()))
}

fn kv_int(key: &str, value: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(value))
}

fn cumulative(weights: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut total = 0.0;
    weights
        .into_iter()
        .map(|w| {
            total += w;
            total
        })
        .collect()
}

impl World {
    fn new(seed: u64) -> World {
        let mut rng = Prng::derived(seed, WORLD_PURPOSE);
        let mut services: Vec<Service> = SERVICES
            .iter()
            .enumerate()
            .map(|(rank, (name, namespace, language))| {
                // Routes: the first two patterns always, then a random selection.
                let resource_name = name.replace('-', "_");
                let mut patterns: Vec<usize> = (2..ROUTE_PATTERNS.len()).collect();
                for i in 0..patterns.len() {
                    let j = i + rng.index(patterns.len() - i);
                    patterns.swap(i, j);
                }
                let extra = rng.range(3, 6) as usize;
                let mut chosen = vec![0, 1];
                chosen.extend_from_slice(&patterns[..extra]);
                let routes: Vec<String> = chosen
                    .iter()
                    .map(|p| ROUTE_PATTERNS[*p].replace("{r}", &resource_name))
                    .collect();
                let route_weights = cumulative((0..routes.len()).map(|i| 1.0 / (i as f64 + 1.0)));
                Service {
                    name,
                    namespace,
                    language,
                    version: format!("{}.{}.{}", rng.range(1, 4), rng.range(0, 30), rng.range(0, 12)),
                    routes,
                    route_weights,
                    hosts: Vec::new(),
                    // Skewed volumes: a few chatty services, a long tail.
                    weight: 1.0 / (rank as f64 + 1.0).powf(0.8),
                }
            })
            .collect();

        let mut hosts = Vec::with_capacity(HOSTS);
        for h in 0..HOSTS {
            let service = if h < services.len() {
                h
            } else {
                rng.index(services.len())
            };
            let group = h % HOST_GROUPS;
            services[service].hosts.push(h);
            let s = &services[service];
            let region = REGIONS[group % REGIONS.len()];
            let zone = ["a", "b", "c"][rng.index(3)];
            let ip = [10, rng.range(0, 255), rng.range(0, 255), rng.range(1, 254)];
            let pod = format!("{}-{:010x}-{:05x}", s.name, rng.next_u64() >> 24, rng.next_u64() >> 44);
            let instance = format!(
                "{:032x}",
                (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())
            );
            let attributes = vec![
                kv_str("service.name", s.name),
                kv_str("service.namespace", s.namespace),
                kv_str("service.version", s.version.clone()),
                kv_str("service.instance.id", instance),
                kv_str(
                    "host.name",
                    format!("ip-{}-{}-{}-{}.{region}.compute.internal", ip[0], ip[1], ip[2], ip[3]),
                ),
                kv_str("host.arch", if rng.chance(0.3) { "arm64" } else { "amd64" }),
                kv_str("os.type", "linux"),
                kv_str("deployment.environment", "production"),
                kv_str("cloud.provider", "aws"),
                kv_str("cloud.region", region),
                kv_str("cloud.availability_zone", format!("{region}{zone}")),
                kv_str("k8s.namespace.name", s.namespace),
                kv_str("k8s.deployment.name", s.name),
                kv_str("k8s.pod.name", pod),
                kv_str("telemetry.sdk.name", "opentelemetry"),
                kv_str("telemetry.sdk.language", s.language),
                kv_int("process.pid", rng.range(1, 65_000) as i64),
            ];
            hosts.push(Host {
                service,
                group,
                resource: Resource {
                    attributes,
                    ..Default::default()
                },
            });
        }

        let groups = (0..HOST_GROUPS)
            .map(|g| {
                let members: Vec<usize> = (0..HOSTS).filter(|h| hosts[*h].group == g).collect();
                let weights = cumulative(members.iter().map(|h| {
                    let s = &services[hosts[*h].service];
                    s.weight / s.hosts.len() as f64
                }));
                (members, weights)
            })
            .collect();

        let templates = [
            &ERROR_PATTERNS[..],
            &WARN_PATTERNS[..],
            &INFO_PATTERNS[..],
            &DEBUG_PATTERNS[..],
        ]
        .map(|patterns| {
            patterns
                .iter()
                .flat_map(|p| ENTITIES.iter().map(move |e| Template::parse(p, e)))
                .collect::<Vec<_>>()
        });
        let scopes = services
            .iter()
            .map(|s| InstrumentationScope {
                name: format!("com.acme.{}", s.name.replace('-', ".")),
                version: s.version.clone(),
                ..Default::default()
            })
            .collect();
        let service_weights = cumulative(services.iter().map(|s| s.weight));
        World {
            services,
            hosts,
            groups,
            templates,
            severity_weights: cumulative(SEVERITIES.iter().map(|s| s.2)),
            service_weights,
            scopes,
        }
    }

    fn template_count(&self) -> usize {
        self.templates.iter().map(Vec::len).sum()
    }
}

// ---------------------------------------------------------------------------------------
// Logs.

/// Request-level facts a body can mention.
struct HttpFacts<'a> {
    method: &'a str,
    route: &'a str,
    status: i64,
}

fn render(rng: &mut Prng, world: &World, template: &Template, http: &HttpFacts<'_>, out: &mut String) {
    for part in &template.parts {
        match part {
            Part::Lit(text) => out.push_str(text),
            Part::Var(var) => {
                let _ = match var {
                    Var::Id => write!(out, "{:08x}", rng.next_u64() as u32),
                    Var::N => write!(out, "{}", rng.range(1, 500)),
                    Var::Ms => write!(out, "{}", rng.log_normal(3.5, 1.2) as u64 + 1),
                    Var::User => write!(out, "user-{}", rng.below(50_000)),
                    Var::Ip => write!(out, "10.{}.{}.{}", rng.below(256), rng.below(256), rng.range(1, 254)),
                    Var::Route => {
                        out.push_str(http.route);
                        Ok(())
                    }
                    Var::Method => {
                        out.push_str(http.method);
                        Ok(())
                    }
                    Var::Status => write!(out, "{}", http.status),
                    Var::Svc => {
                        out.push_str(world.services[rng.index(world.services.len())].name);
                        Ok(())
                    }
                    Var::Table => {
                        let table = rng.one_of(&TABLES);
                        out.push_str(table);
                        Ok(())
                    }
                    Var::Queue => {
                        let queue = rng.one_of(&QUEUES);
                        out.push_str(queue);
                        Ok(())
                    }
                    Var::Bytes => write!(out, "{}", rng.range(1_000, 50_000_000)),
                    Var::Pct => write!(out, "{}", rng.range(80, 99)),
                };
            }
        }
    }
}

fn status_for(rng: &mut Prng, severity: usize) -> i64 {
    match severity {
        // ERROR
        0 => {
            if rng.chance(0.8) {
                rng.one_of(&[500, 500, 500, 502, 503, 504])
            } else {
                rng.one_of(&[400, 409, 422])
            }
        }
        // WARN
        1 => rng.one_of(&[200, 200, 404, 429, 409, 401]),
        _ => {
            let x = rng.unit();
            if x < 0.90 {
                200
            } else if x < 0.94 {
                201
            } else if x < 0.96 {
                204
            } else if x < 0.98 {
                304
            } else {
                rng.one_of(&[400, 404])
            }
        }
    }
}

fn method_for(rng: &mut Prng, route: &str) -> &'static str {
    if route.ends_with("/batch") || route.ends_with("/sync") {
        "POST"
    } else if route.contains("{id}") {
        rng.one_of(&["GET", "GET", "GET", "PUT", "DELETE"])
    } else {
        rng.one_of(&["GET", "GET", "POST"])
    }
}

/// Optional log attributes beyond the base ones (in emission order).
const OPTIONAL_LOG_KEYS: usize = 19;

fn optional_log_attribute(rng: &mut Prng, world: &World, service: usize, key: usize, route: &str) -> KeyValue {
    let s = &world.services[service];
    match key {
        0 => kv_str(
            "http.target",
            route.replace("{id}", &format!("{:08x}", rng.next_u64() as u32)),
        ),
        1 => kv_str("http.user_agent", rng.one_of(&USER_AGENTS)),
        2 => kv_str(
            "net.peer.ip",
            format!("10.{}.{}.{}", rng.below(256), rng.below(256), rng.range(1, 254)),
        ),
        3 => kv_int("net.peer.port", rng.range(30_000, 60_000) as i64),
        4 => kv_str("user.id", format!("user-{}", rng.below(50_000))),
        5 => kv_str("tenant.id", format!("tenant-{}", rng.below(200))),
        6 => kv_str("request.id", format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())),
        7 => kv_str(
            "code.function",
            format!(
                "handle{}",
                rng.pick(&["Get", "List", "Create", "Update", "Delete", "Sync"])
            ),
        ),
        8 => kv_str("code.namespace", format!("com.acme.{}", s.name.replace('-', "."))),
        9 => kv_int("code.lineno", rng.range(10, 2_000) as i64),
        10 => kv_str("thread.name", format!("worker-{}", rng.below(64))),
        11 => kv_int("thread.id", rng.range(1, 512) as i64),
        12 => kv_str("session.id", format!("{:016x}", rng.next_u64())),
        13 => kv_str(
            "db.system",
            rng.one_of(&["postgresql", "postgresql", "redis", "mongodb"]),
        ),
        14 => kv_str(
            "db.operation",
            rng.one_of(&["SELECT", "SELECT", "SELECT", "INSERT", "UPDATE", "DELETE"]),
        ),
        15 => kv_str("messaging.system", "kafka"),
        16 => kv("feature_flag.checkout_v2", any_value::Value::BoolValue(rng.chance(0.3))),
        17 => kv_int("retry.count", rng.below(4) as i64),
        _ => kv(
            "duration_ms",
            any_value::Value::DoubleValue((rng.log_normal(3.0, 1.0) * 100.0).round() / 100.0),
        ),
    }
}

/// A log record to place in a request: the record and its host.
struct PlacedLog {
    host: usize,
    record: LogRecord,
}

/// Export requests of `batch_size` log records each, `logs` records in all.
#[derive(Debug)]
pub struct LogBatches {
    config: GenConfig,
    world: Arc<World>,
    rng: Prng,
    next: u64,
    rare_token: String,
    rare_stride: u64,
    /// Needle spans: (host, span), and the index of the first needle log.
    needle: Vec<(usize, Span)>,
    needle_at: u64,
}

impl LogBatches {
    pub fn new(config: GenConfig) -> LogBatches {
        let world = Arc::new(World::new(config.seed));
        let needle = needle_trace(&config, &world);
        LogBatches {
            rng: Prng::derived(config.seed, LOGS_PURPOSE),
            rare_token: config.rare_token(),
            rare_stride: config
                .logs
                .checked_div(config.rare_bodies)
                .map_or(u64::MAX, |s| s.max(1)),
            needle_at: config.logs / 2,
            needle,
            world,
            next: 0,
            config,
        }
    }

    /// Body templates in use.
    pub fn template_count(&self) -> usize {
        self.world.template_count()
    }

    fn time_of(&mut self, index: u64) -> u64 {
        let step = (self.config.window_nanos / self.config.logs.max(1)).max(1);
        let base =
            (u128::from(index) * u128::from(self.config.window_nanos) / u128::from(self.config.logs.max(1))) as u64;
        self.config.start_nanos + base + self.rng.below(step)
    }

    fn record(&mut self, index: u64, group: usize) -> PlacedLog {
        // The needle trace's logs.
        if index >= self.needle_at && index < self.needle_at + NEEDLE_LOGS as u64 {
            let k = (index - self.needle_at) as usize;
            if let Some((host, span)) = self.needle.get(k) {
                let (host, span) = (*host, span.clone());
                return self.needle_log(host, &span, k);
            }
        }
        let world = Arc::clone(&self.world);
        let rng = &mut self.rng;
        let (members, weights) = &world.groups[group];
        let host = members[pick_weighted(rng, weights)];
        let service = world.hosts[host].service;
        let s = &world.services[service];
        let severity = pick_weighted(rng, &world.severity_weights);
        let (severity_text, severity_number, _) = SEVERITIES[severity];

        let is_http = rng.chance(0.9);
        let route = &s.routes[pick_weighted(rng, &s.route_weights)];
        let method = method_for(rng, route);
        let status = status_for(rng, severity);
        let mut attributes = Vec::with_capacity(16);
        if is_http {
            attributes.push(kv_str("http.method", method));
            attributes.push(kv_str("http.route", route.clone()));
            attributes.push(kv_int("http.status_code", status));
        } else {
            attributes.push(kv_str(
                "job.name",
                format!("{}-{}", s.name, rng.pick(&["sync", "cleanup", "rollup", "export"])),
            ));
            attributes.push(kv_str("job.run_id", format!("{:012x}", rng.next_u64() >> 16)));
            attributes.push(kv_str("code.function", "run"));
        }
        let extra = rng.range(2, 12) as usize;
        let mut keys: [usize; OPTIONAL_LOG_KEYS] = std::array::from_fn(|i| i);
        for i in 0..extra {
            let j = i + rng.index(OPTIONAL_LOG_KEYS - i);
            keys.swap(i, j);
        }
        let mut chosen = keys[..extra].to_vec();
        chosen.sort_unstable();
        for key in chosen {
            attributes.push(optional_log_attribute(rng, &world, service, key, route));
        }

        let template = &world.templates[severity][rng.index(world.templates[severity].len())];
        let mut body = String::with_capacity(96);
        render(rng, &world, template, &HttpFacts { method, route, status }, &mut body);
        if index % self.rare_stride == self.rare_stride / 2 && index / self.rare_stride < self.config.rare_bodies {
            let _ = write!(body, " (ref {})", self.rare_token);
        }

        let rng = &mut self.rng;
        let (trace_id, span_id, flags) = if rng.chance(0.6) {
            (rng.id::<16>().to_vec(), rng.id::<8>().to_vec(), 1)
        } else {
            (Vec::new(), Vec::new(), 0)
        };
        let time = self.time_of(index);
        let observed = time + self.rng.below(2_000 * MS);
        PlacedLog {
            host,
            record: LogRecord {
                time_unix_nano: time,
                observed_time_unix_nano: observed,
                severity_number,
                severity_text: severity_text.to_string(),
                body: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(body)),
                }),
                attributes,
                flags,
                trace_id,
                span_id,
                ..Default::default()
            },
        }
    }

    fn needle_log(&mut self, host: usize, span: &Span, k: usize) -> PlacedLog {
        let route = span
            .attributes
            .iter()
            .find(|a| a.key == "http.route")
            .and_then(|a| match &a.value {
                Some(AnyValue {
                    value: Some(any_value::Value::StringValue(r)),
                }) => Some(r.clone()),
                _ => None,
            });
        let failed = span.status.as_ref().is_some_and(|s| s.code == StatusCode::Error as i32);
        let (severity_text, severity_number) = if failed { ("ERROR", 17) } else { ("INFO", 9) };
        let mut attributes = Vec::new();
        if let Some(route) = route {
            attributes.push(kv_str("http.method", "POST"));
            attributes.push(kv_str("http.route", route));
            attributes.push(kv_int("http.status_code", if failed { 500 } else { 200 }));
        }
        attributes.push(kv_str(
            "request.id",
            format!("{:032x}", u128::from_be_bytes(self.needle_trace_bytes())),
        ));
        attributes.push(kv_str("code.function", "handleCreate"));
        let body = format!(
            "{} step {} of {}: {}",
            span.name,
            k + 1,
            NEEDLE_LOGS,
            if failed { "failed" } else { "ok" }
        );
        PlacedLog {
            host,
            record: LogRecord {
                time_unix_nano: span.start_time_unix_nano + MS,
                observed_time_unix_nano: span.start_time_unix_nano + 2 * MS,
                severity_number,
                severity_text: severity_text.to_string(),
                body: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(body)),
                }),
                attributes,
                flags: 1,
                trace_id: span.trace_id.clone(),
                span_id: span.span_id.clone(),
                ..Default::default()
            },
        }
    }

    fn needle_trace_bytes(&self) -> [u8; 16] {
        self.config.needle_trace_id()
    }
}

impl Iterator for LogBatches {
    type Item = ExportLogsServiceRequest;

    fn next(&mut self) -> Option<ExportLogsServiceRequest> {
        if self.next >= self.config.logs {
            return None;
        }
        let end = (self.next + self.config.batch_size.max(1) as u64).min(self.config.logs);
        // One collector per request: its hosts are one group of the fleet.
        let group = self.rng.index(HOST_GROUPS);
        let mut by_host: BTreeMap<usize, Vec<LogRecord>> = BTreeMap::new();
        for index in self.next..end {
            let placed = self.record(index, group);
            by_host.entry(placed.host).or_default().push(placed.record);
        }
        self.next = end;
        let world = &self.world;
        let resource_logs = by_host
            .into_iter()
            .map(|(host, log_records)| {
                let h = &world.hosts[host];
                ResourceLogs {
                    resource: Some(h.resource.clone()),
                    scope_logs: vec![ScopeLogs {
                        scope: Some(world.scopes[h.service].clone()),
                        log_records,
                        ..Default::default()
                    }],
                    ..Default::default()
                }
            })
            .collect();
        Some(ExportLogsServiceRequest { resource_logs })
    }
}

/// Log records in a request.
pub fn log_record_count(request: &ExportLogsServiceRequest) -> usize {
    request
        .resource_logs
        .iter()
        .flat_map(|r| &r.scope_logs)
        .map(|s| s.log_records.len())
        .sum()
}

/// Spans in a request.
pub fn span_count(request: &ExportTraceServiceRequest) -> usize {
    request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

mod traces;
pub use traces::TraceBatches;
use traces::needle_trace;

/// A stable fingerprint of a byte stream (for determinism checks and manifests).
pub fn fingerprint(bytes: &[u8], previous: u64) -> u64 {
    let mut h = previous ^ bytes.len() as u64;
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = mix64(h ^ u64::from_le_bytes(word));
    }
    h
}

#[cfg(test)]
mod tests;
