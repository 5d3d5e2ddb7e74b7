//! `trawl-gen`: writes the deterministic benchmark data set as OTLP export requests.
//!
//! Output (with `--out DIR`): `logs.otlp` and `traces.otlp`, each a sequence of
//! length-delimited protobuf messages (`ExportLogsServiceRequest` / `ExportTraceServiceRequest`,
//! varint length then message, as `prost::Message::encode_length_delimited` writes them), and
//! `manifest.json` (seed, window, counts, needle trace id, rare token, fingerprints).
//! Without `--out` it only prints the manifest: same seed, same fingerprints.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use prost::Message;
use trawl_bench::generator::{self, GenConfig, HOUR_NANOS, fingerprint, log_record_count, span_count};

#[derive(Debug, Parser)]
#[command(
    name = "trawl-gen",
    about = "Write Trawl's deterministic benchmark data set as OTLP requests"
)]
struct Args {
    /// PRNG seed: same seed, same bytes.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Log records to generate.
    #[arg(long, default_value_t = 10_000_000)]
    logs: u64,
    /// Spans to generate (whole traces; may go a few over).
    #[arg(long, default_value_t = 5_000_000)]
    spans: u64,
    /// Records (spans, at least) per export request.
    #[arg(long, default_value_t = 1_000)]
    batch: usize,
    /// Start of the time window, RFC 3339.
    #[arg(long, default_value = "2026-01-01T00:00:00Z")]
    start: String,
    /// Length of the time window, hours.
    #[arg(long, default_value_t = 24)]
    hours: u64,
    /// Log bodies that carry the rare token.
    #[arg(long, default_value_t = 100)]
    rare_bodies: u64,
    /// Directory to write `logs.otlp`, `traces.otlp` and `manifest.json` to.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the first N log records and N spans as OTLP/JSON to stderr.
    #[arg(long, default_value_t = 0)]
    sample: usize,
    /// Also measure each request as OTLP/JSON (`json_bytes` in the manifest): the raw size
    /// stored bytes are compared with.
    #[arg(long)]
    json_bytes: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let start = chrono::DateTime::parse_from_rfc3339(&args.start).context("--start must be RFC 3339")?;
    let start_nanos = u64::try_from(start.timestamp_nanos_opt().context("--start is out of range")?)
        .context("--start must be after 1970")?;
    let config = GenConfig {
        seed: args.seed,
        start_nanos,
        window_nanos: args.hours.max(1) * HOUR_NANOS,
        logs: args.logs,
        spans: args.spans,
        batch_size: args.batch.max(1),
        rare_bodies: args.rare_bodies,
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let open = |name: &str| -> anyhow::Result<Option<BufWriter<std::fs::File>>> {
        match &args.out {
            Some(dir) => {
                let path = dir.join(name);
                let file = std::fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
                Ok(Some(BufWriter::with_capacity(1 << 20, file)))
            }
            None => Ok(None),
        }
    };

    let began = Instant::now();
    let mut logs_out = open("logs.otlp")?;
    let (mut log_requests, mut log_records, mut log_bytes, mut log_fp) = (0u64, 0u64, 0u64, 0u64);
    let (mut log_json, mut trace_json) = (0u64, 0u64);

    let mut buffer = Vec::with_capacity(1 << 20);
    let mut samples_left = args.sample;
    for request in config.log_batches() {
        if samples_left > 0 {
            for record in request
                .resource_logs
                .iter()
                .flat_map(|r| &r.scope_logs)
                .flat_map(|s| &s.log_records)
            {
                if samples_left == 0 {
                    break;
                }
                samples_left -= 1;
                eprintln!("{}", serde_json::to_string(record)?);
            }
        }
        log_requests += 1;
        log_records += log_record_count(&request) as u64;
        if args.json_bytes {
            log_json += json_len(&request)?;
        }
        buffer.clear();
        request.encode_length_delimited(&mut buffer)?;
        log_bytes += buffer.len() as u64;
        log_fp = fingerprint(&buffer, log_fp);
        if let Some(out) = logs_out.as_mut() {
            out.write_all(&buffer)?;
        }
    }
    if let Some(mut out) = logs_out.take() {
        out.flush()?;
    }
    let logs_seconds = began.elapsed().as_secs_f64();

    let began = Instant::now();
    let mut traces_out = open("traces.otlp")?;
    let (mut trace_requests, mut spans, mut trace_bytes, mut trace_fp) = (0u64, 0u64, 0u64, 0u64);
    let mut samples_left = args.sample;
    for request in config.trace_batches() {
        if samples_left > 0 {
            for span in request
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .flat_map(|s| &s.spans)
            {
                if samples_left == 0 {
                    break;
                }
                samples_left -= 1;
                eprintln!("{}", serde_json::to_string(span)?);
            }
        }
        trace_requests += 1;
        spans += span_count(&request) as u64;
        if args.json_bytes {
            trace_json += json_len(&request)?;
        }
        buffer.clear();
        request.encode_length_delimited(&mut buffer)?;
        trace_bytes += buffer.len() as u64;
        trace_fp = fingerprint(&buffer, trace_fp);
        if let Some(out) = traces_out.as_mut() {
            out.write_all(&buffer)?;
        }
    }
    if let Some(mut out) = traces_out.take() {
        out.flush()?;
    }
    let traces_seconds = began.elapsed().as_secs_f64();

    let to_rfc3339 = |nanos: u64| {
        chrono::DateTime::<chrono::Utc>::from_timestamp_nanos(nanos as i64)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let manifest = serde_json::json!({
        "generator": "trawl-gen",
        "seed": config.seed,
        "start": to_rfc3339(config.start_nanos),
        "end": to_rfc3339(config.end_nanos()),
        "batch": config.batch_size,
        "logs": { "file": "logs.otlp", "requests": log_requests, "records": log_records, "bytes": log_bytes,
                  "json_bytes": args.json_bytes.then_some(log_json),
                  "fingerprint": format!("{log_fp:016x}"), "seconds": round2(logs_seconds) },
        "traces": { "file": "traces.otlp", "requests": trace_requests, "spans": spans, "bytes": trace_bytes,
                    "json_bytes": args.json_bytes.then_some(trace_json),
                    "fingerprint": format!("{trace_fp:016x}"), "seconds": round2(traces_seconds) },
        "needle_trace_id": config.needle_trace_id_hex(),
        "needle_time": to_rfc3339(config.needle_time_nanos()),
        "needle_spans": generator::NEEDLE_SPANS,
        "needle_logs": generator::NEEDLE_LOGS,
        "rare_token": config.rare_token(),
        "rare_bodies": config.rare_bodies.min(config.logs),
        "format": "length-delimited protobuf (varint length + message)",
    });
    let text = serde_json::to_string_pretty(&manifest)?;
    if let Some(dir) = &args.out {
        std::fs::write(dir.join("manifest.json"), format!("{text}\n"))?;
    }
    println!("{text}");
    Ok(())
}

/// Bytes of `request` as OTLP/JSON (its serde form: camelCase names, hex ids, as OTLP/HTTP
/// JSON carries it), counted without keeping them.
fn json_len<T: serde::Serialize>(request: &T) -> anyhow::Result<u64> {
    struct Counter(u64);
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, request)?;
    Ok(counter.0)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
