//! Traces: spans of generated requests, batched into export requests.

use super::*;

/// One span being built: its host and the span.
type PlacedSpan = (usize, Span);

struct TraceBuilder<'a> {
    world: &'a World,
    rng: &'a mut Prng,
    trace_id: Vec<u8>,
    spans: Vec<PlacedSpan>,
    error_rate: f64,
}

impl TraceBuilder<'_> {
    fn host_of(&mut self, service: usize) -> usize {
        let hosts = &self.world.services[service].hosts;
        hosts[self.rng.index(hosts.len())]
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        service: usize,
        parent: Option<usize>,
        name: String,
        kind: SpanKind,
        start: u64,
        duration: u64,
        mut attributes: Vec<KeyValue>,
    ) -> usize {
        let host = self.host_of(service);
        let failed = self.rng.chance(self.error_rate);
        let mut events = Vec::new();
        let status = if failed {
            for a in &mut attributes {
                if a.key == "http.status_code" {
                    a.value = Some(AnyValue {
                        value: Some(any_value::Value::IntValue(self.rng.one_of(&[500, 502, 503, 504]))),
                    });
                }
            }
            let (exception, message) = self.rng.one_of(&[
                ("java.net.SocketTimeoutException", "Read timed out"),
                ("io.grpc.StatusRuntimeException", "UNAVAILABLE: upstream connect error"),
                ("PSQLException", "deadlock detected"),
                ("ValueError", "invalid literal for int() with base 10"),
            ]);
            events.push(Event {
                time_unix_nano: start + duration / 2,
                name: "exception".into(),
                attributes: vec![
                    kv_str("exception.type", exception),
                    kv_str("exception.message", message),
                ],
                ..Default::default()
            });
            Some(Status {
                code: StatusCode::Error as i32,
                message: message.to_string(),
            })
        } else {
            None
        };
        let parent_span_id = parent.map(|p| self.spans[p].1.span_id.clone()).unwrap_or_default();
        self.spans.push((
            host,
            Span {
                trace_id: self.trace_id.clone(),
                span_id: self.rng.id::<8>().to_vec(),
                parent_span_id,
                flags: 0x101,
                name,
                kind: kind as i32,
                start_time_unix_nano: start,
                end_time_unix_nano: start + duration.max(1_000),
                attributes,
                events,
                status,
                ..Default::default()
            },
        ));
        self.spans.len() - 1
    }

    fn server_span(&mut self, service: usize, parent: Option<usize>, start: u64, duration: u64) -> usize {
        let world = self.world;
        let s = &world.services[service];
        let route = s.routes[pick_weighted(self.rng, &s.route_weights)].clone();
        let method = method_for(self.rng, &route);
        let status = if self.rng.chance(0.03) {
            self.rng.one_of(&[400, 401, 404, 409])
        } else {
            200
        };
        let mut attributes = vec![
            kv_str("http.method", method),
            kv_str("http.route", route.clone()),
            kv_int("http.status_code", status),
            kv_str("url.scheme", "https"),
            kv_str("server.address", format!("{}.acme.internal", s.name)),
            kv_int("server.port", 8080),
        ];
        if parent.is_none() {
            attributes.push(kv_str("user_agent.original", self.rng.one_of(&USER_AGENTS)));
            attributes.push(kv_str(
                "client.address",
                format!(
                    "10.{}.{}.{}",
                    self.rng.below(256),
                    self.rng.below(256),
                    self.rng.range(1, 254)
                ),
            ));
        }
        self.push(
            service,
            parent,
            format!("{method} {route}"),
            SpanKind::Server,
            start,
            duration,
            attributes,
        )
    }

    /// A child of span `parent`, possibly with its own server child (counted in `budget`).
    fn child(&mut self, parent: usize, budget: &mut usize) {
        let world = self.world;
        let (p_start, p_end) = (
            self.spans[parent].1.start_time_unix_nano,
            self.spans[parent].1.end_time_unix_nano,
        );
        let p_service = world.hosts[self.spans[parent].0].service;
        let p_duration = p_end.saturating_sub(p_start).max(1_000);
        let start = p_start + (p_duration as f64 * self.rng.unit() * 0.6) as u64;
        let duration = ((p_end.saturating_sub(start)) as f64 * (0.1 + 0.8 * self.rng.unit())) as u64;
        let x = self.rng.unit();
        *budget -= 1;
        if x < 0.4 {
            // A call to another service: client span here, server span there.
            let callee = pick_weighted(self.rng, &world.service_weights);
            let c = &world.services[callee];
            let route = c.routes[pick_weighted(self.rng, &c.route_weights)].clone();
            let method = method_for(self.rng, &route);
            let attributes = vec![
                kv_str("http.method", method),
                kv_str("http.route", route.clone()),
                kv_int("http.status_code", 200),
                kv_str("server.address", format!("{}.acme.internal", c.name)),
                kv_int("server.port", 8080),
            ];
            let client = self.push(
                p_service,
                Some(parent),
                format!("{method} {route}"),
                SpanKind::Client,
                start,
                duration,
                attributes,
            );
            if *budget > 0 {
                *budget -= 1;
                let offset = duration / 20;
                self.server_span(
                    callee,
                    Some(client),
                    start + offset,
                    duration.saturating_sub(2 * offset),
                );
            }
        } else if x < 0.7 {
            let table = self.rng.one_of(&TABLES);
            let op = self.rng.one_of(&["SELECT", "SELECT", "SELECT", "INSERT", "UPDATE"]);
            let attributes = vec![
                kv_str("db.system", "postgresql"),
                kv_str("db.name", world.services[p_service].name.replace('-', "_")),
                kv_str("db.operation", op),
                kv_str("db.sql.table", table),
                kv_str("db.statement", format!("{op} ... FROM {table} WHERE id = $1")),
                kv_str("server.address", "pg-main.acme.internal"),
            ];
            self.push(
                p_service,
                Some(parent),
                format!("{op} {table}"),
                SpanKind::Client,
                start,
                duration,
                attributes,
            );
        } else if x < 0.8 {
            let queue = self.rng.one_of(&QUEUES);
            let attributes = vec![
                kv_str("messaging.system", "kafka"),
                kv_str("messaging.destination.name", queue),
                kv_str("messaging.operation", "publish"),
            ];
            self.push(
                p_service,
                Some(parent),
                format!("{queue} publish"),
                SpanKind::Producer,
                start,
                duration,
                attributes,
            );
        } else {
            let entity = self.rng.one_of(&ENTITIES);
            let op = self.rng.one_of(&["load", "validate", "render", "compute", "serialize"]);
            let attributes = vec![
                kv_str("code.function", format!("{op}_{entity}")),
                kv_int("thread.id", self.rng.range(1, 512) as i64),
            ];
            self.push(
                p_service,
                Some(parent),
                format!("{entity}.{op}"),
                SpanKind::Internal,
                start,
                duration,
                attributes,
            );
        }
    }

    /// A whole trace of `n` spans rooted in `service` at `start`.
    fn build(mut self, service: usize, n: usize, start: u64) -> Vec<PlacedSpan> {
        let duration = (self.rng.log_normal(4.0, 1.0) * MS as f64) as u64 + MS;
        let root = self.server_span(service, None, start, duration);
        let _ = root;
        let mut budget = n - 1;
        while budget > 0 {
            let parent = self.rng.index(self.spans.len());
            self.child(parent, &mut budget);
        }
        self.spans
    }
}

pub(super) fn needle_trace(config: &GenConfig, world: &World) -> Vec<PlacedSpan> {
    let mut rng = Prng::derived(config.seed, NEEDLE_PURPOSE);
    let trace_id = rng.id::<16>().to_vec();
    debug_assert_eq!(trace_id, config.needle_trace_id().to_vec());
    let builder = TraceBuilder {
        world,
        rng: &mut rng,
        trace_id,
        spans: Vec::new(),
        error_rate: 0.0,
    };
    // Rooted in checkout; its 8th span fails, so the trace has an error to find.
    let mut spans = builder.build(2, NEEDLE_SPANS, config.needle_time_nanos());
    if let Some((_, span)) = spans.get_mut(NEEDLE_SPANS / 2) {
        span.status = Some(Status {
            code: StatusCode::Error as i32,
            message: "deadlock detected".into(),
        });
    }
    spans
}

/// Export requests of at least `batch_size` spans (whole traces), about `spans` in all.
#[derive(Debug)]
pub struct TraceBatches {
    config: GenConfig,
    world: Arc<World>,
    rng: Prng,
    emitted: u64,
    needle_done: bool,
}

impl TraceBatches {
    pub fn new(config: GenConfig) -> TraceBatches {
        TraceBatches {
            world: Arc::new(World::new(config.seed)),
            rng: Prng::derived(config.seed, TRACES_PURPOSE),
            emitted: 0,
            needle_done: false,
            config,
        }
    }

    fn trace(&mut self) -> Vec<PlacedSpan> {
        if !self.needle_done && self.emitted >= self.config.spans / 2 {
            self.needle_done = true;
            return needle_trace(&self.config, &self.world);
        }
        let world = Arc::clone(&self.world);
        let total = self.config.spans.max(1);
        let base = (u128::from(self.emitted) * u128::from(self.config.window_nanos) / u128::from(total)) as u64;
        let start = self.config.start_nanos + base + self.rng.below(10 * MS);
        // 1–30 spans, skewed towards small traces (mean ~8).
        let n = 1 + (self.rng.below(30) * self.rng.below(30) / 29) as usize;
        let service = pick_weighted(&mut self.rng, &world.service_weights);
        let trace_id = self.rng.id::<16>().to_vec();
        let builder = TraceBuilder {
            world: &world,
            rng: &mut self.rng,
            trace_id,
            spans: Vec::with_capacity(n),
            error_rate: 0.01,
        };
        builder.build(service, n, start)
    }
}

impl Iterator for TraceBatches {
    type Item = ExportTraceServiceRequest;

    fn next(&mut self) -> Option<ExportTraceServiceRequest> {
        if self.emitted >= self.config.spans {
            return None;
        }
        let mut by_host: BTreeMap<usize, Vec<Span>> = BTreeMap::new();
        let mut in_batch = 0usize;
        while in_batch < self.config.batch_size.max(1) && self.emitted < self.config.spans {
            let spans = self.trace();
            in_batch += spans.len();
            self.emitted += spans.len() as u64;
            for (host, span) in spans {
                by_host.entry(host).or_default().push(span);
            }
        }
        let world = &self.world;
        let resource_spans = by_host
            .into_iter()
            .map(|(host, spans)| {
                let h = &world.hosts[host];
                ResourceSpans {
                    resource: Some(h.resource.clone()),
                    scope_spans: vec![ScopeSpans {
                        scope: Some(world.scopes[h.service].clone()),
                        spans,
                        ..Default::default()
                    }],
                    ..Default::default()
                }
            })
            .collect();
        Some(ExportTraceServiceRequest { resource_spans })
    }
}
