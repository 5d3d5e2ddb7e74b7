//! CPU per record of each stage a flush goes through, on one thread and without a server:
//! the OTLP/HTTP protobuf body mapped to columns (the intake), the columns made one Arrow
//! batch, and a segment's batches sorted and encoded (Parquet and the token index). Each
//! stage runs `--runs` times over the same requests and the fastest run counts, so a busy
//! machine (other processes, a noisy neighbour) shows less than in `ingest-bench`, whose
//! records/s also include HTTP, the flusher's queueing and the background merges.

use std::time::{Duration, Instant};

use clap::Parser;
use prost::Message;
use trawl_bench::generator::{GenConfig, log_record_count, span_count};
use trawl_storage::{RowsBatch, SegmentCodec, columns_to_batch, encode_parts};

/// The server's allocator (jemalloc with sampled heap profiles), for the same costs.
#[global_allocator]
static ALLOCATOR: trawl_heap::Allocator = trawl_heap::Allocator;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Signal {
    Logs,
    Traces,
}

#[derive(Parser, Debug)]
#[command(about = "CPU per record of each ingest stage (map, batch, encode), one thread")]
struct Args {
    #[arg(long, value_enum, default_value = "logs")]
    signal: Signal,
    /// Requests generated (each `--batch` records).
    #[arg(long, default_value_t = 64)]
    requests: usize,
    /// Records (spans) per request.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Requests per segment, as the flusher gathers them at full load (16 of 1,000 rows:
    /// `trawl_ingest::WORTH_ROWS`).
    #[arg(long, default_value_t = 16)]
    per_segment: usize,
    /// Codec of the segments written (`zstd`, `lz4`, `none`: `trawl serve --flush-compression`).
    #[arg(long, default_value = "zstd")]
    codec: SegmentCodec,
    /// Runs of each stage; the fastest counts.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Also print the figures as one JSON line (last).
    #[arg(long)]
    json: bool,
}

fn bodies(args: &Args) -> (Vec<Vec<u8>>, usize) {
    let mut config = GenConfig {
        seed: args.seed,
        batch_size: args.batch.max(1),
        ..GenConfig::default()
    };
    let records = (args.requests * args.batch) as u64;
    let mut total = 0;
    let bodies: Vec<Vec<u8>> = match args.signal {
        Signal::Logs => {
            config.logs = records;
            config
                .log_batches()
                .map(|r| {
                    total += log_record_count(&r);
                    r.encode_to_vec()
                })
                .collect()
        }
        Signal::Traces => {
            config.spans = records;
            config
                .trace_batches()
                .map(|r| {
                    total += span_count(&r);
                    r.encode_to_vec()
                })
                .collect()
        }
    };
    (bodies, total)
}

fn map(signal: Signal, body: &[u8]) -> anyhow::Result<trawl_intake::ColumnsOutput> {
    Ok(match signal {
        Signal::Logs => trawl_intake::otlp::logs_protobuf_to_columns(body, 0)?,
        Signal::Traces => trawl_intake::otlp::traces_protobuf_to_columns(body, 0)?,
    })
}

fn copy(part: &RowsBatch) -> RowsBatch {
    RowsBatch {
        batch: part.batch.clone(),
        columns: part.columns.clone(),
        min_time: part.min_time,
        max_time: part.max_time,
        sorted: part.sorted,
    }
}

/// The fastest of `runs` runs of `stage`, and the last run's output.
fn fastest<T>(runs: usize, mut stage: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<(Duration, T)> {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let out = stage()?;
        best = best.min(started.elapsed());
        last = Some(out);
    }
    let out = last.ok_or_else(|| anyhow::anyhow!("no run"))?;
    Ok((best, out))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (bodies, records) = bodies(&args);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let per_record = |d: Duration| d.as_secs_f64() * 1e6 / records.max(1) as f64;

    let (mapping, outputs) = fastest(args.runs, || {
        bodies
            .iter()
            .map(|body| map(args.signal, body))
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let (batching, batches) = fastest(args.runs, || {
        outputs
            .iter()
            .map(|output| Ok(columns_to_batch(output.columns.clone())?))
            .collect::<anyhow::Result<Vec<RowsBatch>>>()
    })?;
    let mut bytes = 0;
    let (encoding, ()) = fastest(args.runs, || {
        bytes = 0;
        for segment in batches.chunks(args.per_segment.max(1)) {
            let parts = segment.iter().map(copy).collect();
            bytes += runtime.block_on(encode_parts(parts, args.codec))?.bytes.len();
        }
        Ok(())
    })?;
    let total = mapping + batching + encoding;
    println!(
        "{records} {} in {} requests, {} per segment ({} codec); fastest of {} runs, one thread",
        match args.signal {
            Signal::Logs => "log records",
            Signal::Traces => "spans",
        },
        bodies.len(),
        args.per_segment,
        args.codec,
        args.runs
    );
    for (stage, time) in [
        ("map (protobuf to columns)", mapping),
        ("batch (columns to Arrow)", batching),
        ("encode (sort, Parquet, token index)", encoding),
        ("all", total),
    ] {
        println!(
            "  {stage:<38} {:>6.2} µs per record  {:>4.1}%",
            per_record(time),
            100.0 * time.as_secs_f64() / total.as_secs_f64().max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "  one core: {:.0} records/s; {:.1} bytes per record",
        records as f64 / total.as_secs_f64().max(f64::MIN_POSITIVE),
        bytes as f64 / records.max(1) as f64
    );
    if args.json {
        let line = serde_json::json!({
            "records": records,
            "runs": args.runs,
            "per_segment": args.per_segment,
            "codec": args.codec.name(),
            "map_us": per_record(mapping),
            "batch_us": per_record(batching),
            "encode_us": per_record(encoding),
            "total_us": per_record(total),
            "bytes_per_record": bytes as f64 / records.max(1) as f64,
        });
        println!("{line}");
    }
    Ok(())
}
