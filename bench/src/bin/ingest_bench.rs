//! `ingest-bench`: OTLP/HTTP ingest throughput and peak memory of `trawl serve`.
//!
//! Starts `trawl serve` (the binary from `--trawl-bin` / `TRAWL_BIN`) on free loopback ports
//! with a fresh data directory under /tmp, or uses a running server (`--url`, and
//! `--server-pid` for its memory). It pre-generates export requests of `--batch` records with
//! the deterministic generator, posts them as `application/x-protobuf` from `--concurrency`
//! connections, and prints the sustained acknowledged records/s after a warm-up, request
//! latencies, CPU use, and the server's peak RSS (`VmHWM` of /proc/<pid>/status).
//!
//! A request is answered once its rows are durable, which takes up to the server's flush
//! interval; throughput is therefore about `concurrency × batch / latency`, and the
//! concurrency must cover the flush interval to keep the server busy.

use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Parser, ValueEnum};
use prost::Message;
use trawl_bench::generator::{GenConfig, log_record_count, span_count};
use trawl_bench::proc::{cpu_seconds, dir_bytes, human_bytes, status_bytes};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Signal {
    Logs,
    Traces,
}

#[derive(Debug, Parser)]
#[command(
    name = "ingest-bench",
    about = "OTLP/HTTP ingest throughput and peak RSS of trawl serve"
)]
struct Args {
    /// The `trawl` binary to start (a release build for real figures).
    #[arg(long, env = "TRAWL_BIN")]
    trawl_bin: Option<PathBuf>,
    /// Use a running server instead: its OTLP/HTTP base URL, e.g. http://127.0.0.1:4318.
    #[arg(long, conflicts_with = "trawl_bin")]
    url: Option<String>,
    /// With --url: the server's process id, to read its memory and CPU.
    #[arg(long, requires = "url")]
    server_pid: Option<u32>,
    /// With --url: the ingest token (a started server's comes from its bootstrap file).
    #[arg(long, env = "TRAWL_INGEST_TOKEN", requires = "url", hide_env_values = true)]
    token: Option<String>,
    /// What to send.
    #[arg(long, value_enum, default_value_t = Signal::Logs)]
    signal: Signal,
    /// Concurrent connections (requests in flight).
    #[arg(long, short = 'c', default_value_t = 8)]
    concurrency: usize,
    /// Seconds measured (after the warm-up).
    #[arg(long, default_value_t = 30)]
    duration: u64,
    /// Seconds of warm-up, not counted.
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    /// Post exactly this many records, streamed from the generator (unique data over the
    /// whole window), instead of cycling pre-generated requests for --duration seconds.
    #[arg(long)]
    count: Option<u64>,
    /// Records (spans) per request.
    #[arg(long, default_value_t = 1_000)]
    batch: usize,
    /// Distinct pre-generated requests, posted round-robin.
    #[arg(long, default_value_t = 200)]
    distinct: usize,
    /// Generator seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Passed to the started server as --flush-interval-ms.
    #[arg(long)]
    flush_interval_ms: Option<u64>,
    /// Passed to the started server as --merge-interval-secs (0: no background merges).
    #[arg(long)]
    merge_interval_secs: Option<u64>,
    /// Send at this steady rate (records per second, all connections together) instead of
    /// as fast as the server answers: for the acknowledgement latency at low load, and for
    /// segments and merges at a steady rate.
    #[arg(long)]
    rate: Option<u64>,
    /// More arguments for `trawl serve` (repeatable).
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Keep the server's data directory.
    #[arg(long)]
    keep_data: bool,
    /// Also print the result as one JSON line.
    #[arg(long)]
    json: bool,
}

/// A started `trawl serve`, stopped on drop.
struct Server {
    child: Child,
    data_dir: tempfile::TempDir,
    log_path: PathBuf,
    base_url: String,
    /// The operator port's base URL (`/metrics`).
    operator_url: String,
}

impl Server {
    fn start(bin: &Path, args: &Args) -> anyhow::Result<Server> {
        let data_dir = tempfile::Builder::new()
            .prefix("trawl-ingest-bench-")
            .tempdir_in("/tmp")?;
        let ports = free_ports(6)?;
        let addr = |port: u16| format!("127.0.0.1:{port}");
        let log_path = data_dir.path().join("server.log");
        let log = std::fs::File::create(&log_path)?;
        let mut command = Command::new(bin);
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir.path().join("data"))
            .args(["--otlp-http-bind", &addr(ports[0])])
            .args(["--otlp-grpc-bind", &addr(ports[1])])
            .args(["--query-bind", &addr(ports[2])])
            .args(["--operator-bind", &addr(ports[3])])
            .args(["--gateway-bind", &addr(ports[4])])
            .args(["--meta-bind", &addr(ports[5])]);
        if let Some(ms) = args.flush_interval_ms {
            command.args(["--flush-interval-ms", &ms.to_string()]);
        }
        if let Some(secs) = args.merge_interval_secs {
            command.args(["--merge-interval-secs", &secs.to_string()]);
        }
        // The pre-generated requests are cycled: with deduplication on, every copy after the
        // first would be acknowledged without being stored, and the figures would measure
        // the dedup path. (`--server-arg=--ingest-dedup-window-secs=600` measures that.)
        command.args(["--ingest-dedup-window-secs", "0"]);
        command.args(&args.server_args);
        if std::env::var_os("RUST_LOG").is_none() {
            command.env("RUST_LOG", "warn");
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        Ok(Server {
            child,
            data_dir,
            log_path,
            base_url: format!("http://{}", addr(ports[0])),
            operator_url: format!("http://{}", addr(ports[3])),
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Live segments and the small ones among them, as the janitor's last merge pass counted
    /// them (`None` before the first pass).
    async fn segments(&self, client: &reqwest::Client) -> Option<(u64, u64)> {
        let text = client
            .get(format!("{}/metrics", self.operator_url))
            .send()
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        let gauge = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok())
        };
        let (live, small) = (
            gauge("trawl_storage_segments_live")?,
            gauge("trawl_storage_segments_small")?,
        );
        Some((live as u64, small as u64))
    }

    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log_path) {
            let len = file.metadata().map_or(0, |m| m.len());
            let _ = file.seek(SeekFrom::Start(len.saturating_sub(4000)));
            let _ = file.read_to_string(&mut text);
        }
        text
    }

    async fn wait_ready(&mut self, client: &reqwest::Client) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = format!("{}/health/ready", self.base_url);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the server exited ({status}) before it was ready:\n{}", self.log_tail());
            }
            if let Ok(response) = client.get(&url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server was not ready after 60 s:\n{}", self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM, then wait for a clean stop (buffers flushed); SIGKILL after 30 s.
    fn stop(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(Some(status));
        }
        let _ = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill()?;
        self.child.wait()?;
        Ok(None)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `n` distinct free loopback ports (bound then released; a small race we accept).
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    Ok(listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()?)
}

/// One encoded request and the records it holds.
#[derive(Clone)]
struct Payload {
    body: Bytes,
    records: u64,
}

fn gen_config(args: &Args, records: u64) -> GenConfig {
    let mut config = GenConfig {
        seed: args.seed,
        batch_size: args.batch.max(1),
        ..GenConfig::default()
    };
    match args.signal {
        Signal::Logs => config.logs = records,
        Signal::Traces => config.spans = records,
    }
    config
}

/// Encoded requests from the generator, in order.
fn payloads(args: &Args, records: u64) -> Box<dyn Iterator<Item = Payload> + Send> {
    let config = gen_config(args, records);
    match args.signal {
        Signal::Logs => Box::new(config.log_batches().map(|r| Payload {
            records: log_record_count(&r) as u64,
            body: Bytes::from(r.encode_to_vec()),
        })),
        Signal::Traces => Box::new(config.trace_batches().map(|r| Payload {
            records: span_count(&r) as u64,
            body: Bytes::from(r.encode_to_vec()),
        })),
    }
}

/// Where workers take their next request from.
enum Source {
    /// Pre-generated requests, posted round-robin until `stop`.
    Cycle { payloads: Vec<Payload>, next: AtomicUsize },
    /// Generated on a thread as they are needed, `count` records in all.
    Stream(tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Payload>>),
}

impl Source {
    async fn next(&self, stop: &AtomicBool) -> Option<Payload> {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        match self {
            Source::Cycle { payloads, next } => {
                let i = next.fetch_add(1, Ordering::Relaxed);
                Some(payloads[i % payloads.len()].clone())
            }
            Source::Stream(receiver) => receiver.lock().await.recv().await,
        }
    }
}

#[derive(Default)]
struct Counters {
    records: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
    retries: AtomicU64,
    errors: AtomicU64,
}

/// Latency samples (µs) of requests that finished inside the measured window.
struct Measured {
    from: Instant,
    until: std::sync::Mutex<Option<Instant>>,
}

/// Spaces requests evenly: request `k` of all connections goes out `k × batch / rate` seconds
/// after the start (late ones at once).
struct Pacer {
    start: tokio::time::Instant,
    seconds_per_request: f64,
    issued: AtomicUsize,
}

impl Pacer {
    async fn wait(&self) {
        let k = self.issued.fetch_add(1, Ordering::Relaxed);
        let at = self.start + Duration::from_secs_f64(k as f64 * self.seconds_per_request);
        tokio::time::sleep_until(at).await;
    }
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    client: reqwest::Client,
    url: String,
    token: Option<String>,
    source: Arc<Source>,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    measured: Arc<Measured>,
    pacer: Option<Arc<Pacer>>,
) -> Vec<u32> {
    let mut latencies = Vec::new();
    while let Some(payload) = source.next(&stop).await {
        if let Some(pacer) = &pacer {
            pacer.wait().await;
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        let mut attempts = 0u32;
        loop {
            let began = Instant::now();
            let mut request = client
                .post(&url)
                .header("content-type", "application/x-protobuf")
                .body(payload.body.clone());
            if let Some(token) = &token {
                request = request.bearer_auth(token);
            }
            let result = request.send().await;
            let ok = match result {
                Ok(response) => {
                    let status = response.status();
                    let _ = response.bytes().await;
                    if status.is_success() {
                        true
                    } else if status.as_u16() == 503 || status.as_u16() == 429 {
                        counters.retries.fetch_add(1, Ordering::Relaxed);
                        false
                    } else {
                        counters.errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!("request refused: HTTP {status}");
                        break;
                    }
                }
                Err(error) => {
                    counters.errors.fetch_add(1, Ordering::Relaxed);
                    if attempts == 0 {
                        eprintln!("request failed: {error}");
                    }
                    false
                }
            };
            if ok {
                let now = Instant::now();
                counters.records.fetch_add(payload.records, Ordering::Relaxed);
                counters.requests.fetch_add(1, Ordering::Relaxed);
                counters.bytes.fetch_add(payload.body.len() as u64, Ordering::Relaxed);
                let until = *measured.until.lock().unwrap_or_else(|e| e.into_inner());
                if now >= measured.from && until.is_none_or(|u| now <= u) {
                    latencies.push(now.duration_since(began).as_micros().min(u128::from(u32::MAX)) as u32);
                }
                break;
            }
            attempts += 1;
            if stop.load(Ordering::Relaxed) && attempts > 20 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50 * u64::from(attempts.min(10)))).await;
        }
    }
    latencies
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    f64::from(sorted[rank.min(sorted.len() - 1)]) / 1000.0
}

fn thousands(x: f64) -> String {
    let n = x.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(120))
        .build()?;

    // The requests first, so that generating them does not compete with the server.
    let began = Instant::now();
    let source = match args.count {
        Some(count) => {
            let (sender, receiver) = tokio::sync::mpsc::channel(4 * args.concurrency);
            let iterator = payloads(&args, count);
            std::thread::spawn(move || {
                for payload in iterator {
                    if sender.blocking_send(payload).is_err() {
                        return;
                    }
                }
            });
            Source::Stream(tokio::sync::Mutex::new(receiver))
        }
        None => {
            let payloads: Vec<Payload> = payloads(&args, (args.distinct.max(1) * args.batch.max(1)) as u64).collect();
            let bytes: usize = payloads.iter().map(|p| p.body.len()).sum();
            eprintln!(
                "generated {} requests ({} records, {} of protobuf) in {:.1} s",
                payloads.len(),
                payloads.iter().map(|p| p.records).sum::<u64>(),
                human_bytes(bytes as u64),
                began.elapsed().as_secs_f64()
            );
            Source::Cycle {
                payloads,
                next: AtomicUsize::new(0),
            }
        }
    };
    let source = Arc::new(source);

    let mut server = None;
    let (base_url, pid, token) = match (&args.url, &args.trawl_bin) {
        (Some(url), _) => (
            url.trim_end_matches('/').to_string(),
            args.server_pid,
            args.token.clone(),
        ),
        (None, Some(bin)) => {
            let mut started = Server::start(bin, &args)?;
            started.wait_ready(&client).await?;
            let (url, pid) = (started.base_url.clone(), Some(started.pid()));
            let bootstrap = std::fs::read(started.data_dir.path().join("data").join("bootstrap.json"))
                .context("the started server wrote no bootstrap file")?;
            let bootstrap: serde_json::Value = serde_json::from_slice(&bootstrap)?;
            let token = bootstrap["ingest_token"].as_str().map(str::to_string);
            eprintln!(
                "started {} (pid {}), data in {}",
                bin.display(),
                started.pid(),
                started.data_dir.path().display()
            );
            server = Some(started);
            (url, pid, token)
        }
        (None, None) => bail!("give --trawl-bin (or TRAWL_BIN) to start a server, or --url to use a running one"),
    };
    let path = match args.signal {
        Signal::Logs => "/v1/logs",
        Signal::Traces => "/v1/traces",
    };
    let url = format!("{base_url}{path}");

    let counters = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let measured = Arc::new(Measured {
        from: start + Duration::from_secs(args.warmup),
        until: std::sync::Mutex::new(None),
    });
    let workers_left = Arc::new(AtomicUsize::new(args.concurrency));
    let pacer = args.rate.filter(|rate| *rate > 0).map(|rate| {
        Arc::new(Pacer {
            start: tokio::time::Instant::now(),
            seconds_per_request: args.batch as f64 / rate as f64,
            issued: AtomicUsize::new(0),
        })
    });
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency {
        let token = token.clone();
        let pacer = pacer.clone();
        let (client, url, source, counters, stop, measured, left) = (
            client.clone(),
            url.clone(),
            Arc::clone(&source),
            Arc::clone(&counters),
            Arc::clone(&stop),
            Arc::clone(&measured),
            Arc::clone(&workers_left),
        );
        workers.spawn(async move {
            let latencies = worker(client, url, token, source, counters, stop, measured, pacer).await;
            left.fetch_sub(1, Ordering::Relaxed);
            latencies
        });
    }

    // Sample every 100 ms: the window's start and end, peak RSS; a timeline point per second.
    let rss_now = || pid.and_then(|p| status_bytes(p, "VmRSS"));
    let snapshot = |now: Instant| {
        (
            now,
            counters.records.load(Ordering::Relaxed),
            counters.requests.load(Ordering::Relaxed),
            pid.and_then(cpu_seconds),
            cpu_seconds(std::process::id()),
        )
    };
    let mut timeline = Vec::new();
    let mut last = 0u64;
    let mut window_start = None;
    let mut max_rss = 0u64;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks = 0u64;
    let window_end = loop {
        tick.tick().await;
        ticks += 1;
        let now = Instant::now();
        let records = counters.records.load(Ordering::Relaxed);
        if ticks.is_multiple_of(10) {
            timeline.push(records - last);
            last = records;
        }
        max_rss = max_rss.max(rss_now().unwrap_or(0));
        if window_start.is_none() && now >= measured.from {
            window_start = Some(snapshot(now));
        }
        if let Some(s) = server.as_mut()
            && let Some(status) = s.child.try_wait()?
        {
            bail!("the server exited during the run ({status}):\n{}", s.log_tail());
        }
        let finished = match args.count {
            Some(_) => workers_left.load(Ordering::Relaxed) == 0,
            None => window_start.is_some_and(|(t, ..)| now.duration_since(t).as_secs() >= args.duration),
        };
        if finished {
            *measured.until.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
            break Some(snapshot(now));
        }
    };
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    while let Some(result) = workers.join_next().await {
        latencies.extend(result?);
    }
    latencies.sort_unstable();
    let peak_rss = pid
        .and_then(|p| status_bytes(p, "VmHWM"))
        .unwrap_or(max_rss)
        .max(max_rss);

    let (Some((t0, r0, q0, s0, b0)), Some((t1, r1, q1, s1, b1))) = (window_start, window_end) else {
        bail!("the run ended before the warm-up did; lower --warmup or raise --count");
    };
    let seconds = t1.duration_since(t0).as_secs_f64().max(1e-9);
    let rate = (r1 - r0) as f64 / seconds;
    let requests_rate = (q1 - q0) as f64 / seconds;
    let server_cores = s0.zip(s1).map(|(a, b)| (b - a) / seconds);
    let bench_cores = b0.zip(b1).map(|(a, b)| (b - a) / seconds);
    let total_records = counters.records.load(Ordering::Relaxed);
    let total_bytes = counters.bytes.load(Ordering::Relaxed);

    let mut stopped_cleanly = None;
    let mut on_disk = None;
    let mut segments = None;
    if let Some(s) = server.as_mut() {
        segments = s.segments(&client).await;
        stopped_cleanly = Some(matches!(s.stop()?, Some(status) if status.success()));
        on_disk = Some(dir_bytes(&s.data_dir.path().join("data")));
    }

    let signal = match args.signal {
        Signal::Logs => "log records",
        Signal::Traces => "spans",
    };
    println!("trawl ingest benchmark (OTLP/HTTP protobuf, {signal})");
    println!(
        "  load:        {} per request, {} connections, warm-up {} s, measured {:.1} s{}",
        args.batch,
        args.concurrency,
        args.warmup,
        seconds,
        match args.count {
            Some(count) => format!(", {count} records streamed from the generator"),
            None => format!(", {} distinct requests cycled", args.distinct),
        }
    );
    if let Some(ms) = args.flush_interval_ms {
        println!("  server:      --flush-interval-ms {ms}");
    }
    if let Some(rate) = args.rate {
        println!("  paced:       {} records/s offered", thousands(rate as f64));
    }
    println!(
        "  sustained:   {} {signal}/s ({requests_rate:.1} requests/s)",
        thousands(rate)
    );
    println!(
        "  latency:     p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({} requests)",
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 100.0),
        latencies.len()
    );
    println!(
        "  total:       {} {signal} acknowledged, {} of protobuf; {} retries (503/429), {} errors",
        thousands(total_records as f64),
        human_bytes(total_bytes),
        counters.retries.load(Ordering::Relaxed),
        counters.errors.load(Ordering::Relaxed)
    );
    if let Some(cores) = server_cores {
        println!(
            "  CPU:         server {cores:.2} cores, this client {:.2} cores ({} cores in the machine)",
            bench_cores.unwrap_or(f64::NAN),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
    if pid.is_some() {
        println!("  peak RSS:    {} (server VmHWM)", human_bytes(peak_rss));
    }
    if let Some(bytes) = on_disk {
        println!(
            "  on disk:     {} after shutdown ({:.1} bytes per record){}",
            human_bytes(bytes),
            bytes as f64 / total_records.max(1) as f64,
            if stopped_cleanly == Some(true) {
                ""
            } else {
                "; the server did not stop cleanly"
            }
        );
    }
    if let Some((live, small)) = segments.filter(|(live, _)| *live > 0) {
        println!("  segments:    {live} live, {small} of them small (at the janitor's last merge pass)");
    }
    let shown: Vec<String> = timeline
        .iter()
        .map(|n| format!("{}k", (*n as f64 / 1000.0).round()))
        .collect();
    println!("  timeline:    {} (records acknowledged per second)", shown.join(" "));
    if pid.is_some() {
        let met = rate >= 300_000.0 && peak_rss < (1 << 30);
        println!(
            "  target:      >= 300,000 records/s with RSS < 1 GiB: {}",
            if met { "met" } else { "NOT met" }
        );
    }
    if args.json {
        let line = serde_json::json!({
            "signal": match args.signal { Signal::Logs => "logs", Signal::Traces => "traces" },
            "batch": args.batch, "concurrency": args.concurrency, "flush_interval_ms": args.flush_interval_ms,
            "seconds": seconds, "records_per_second": rate, "requests_per_second": requests_rate,
            "p50_ms": percentile(&latencies, 50.0), "p99_ms": percentile(&latencies, 99.0),
            "peak_rss_bytes": pid.map(|_| peak_rss), "server_cores": server_cores, "client_cores": bench_cores,
            "records_total": total_records, "retries": counters.retries.load(Ordering::Relaxed),
            "errors": counters.errors.load(Ordering::Relaxed), "bytes_on_disk": on_disk,
            "rate_offered": args.rate, "segments_live": segments.map(|s| s.0), "segments_small": segments.map(|s| s.1),
        });
        println!("{line}");
    }
    if let Some(mut s) = server.take()
        && args.keep_data
    {
        s.data_dir.disable_cleanup(true);
        eprintln!("kept the data directory {}", s.data_dir.path().display());
    }
    Ok(())
}
