//! `token-index`: the size and false-positive rate of the token index (the per-block term
//! filters of `trawl_storage::tokens`) in the segment files under a directory.
//!
//! ```sh
//! token-index --dir /tmp/trawl-bench-data/trawl/segments
//! ```
//!
//! For every `.parquet` file found (recursively): the segment's bytes and the bytes of its
//! index, by column; then, per column, the share of blocks that pass a lookup of a term that
//! is in none of them (random terms of 12 consonants), which is the index's false-positive
//! rate on this data. Files without an index are counted apart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Parser;
use datafusion::parquet::file::metadata::ParquetMetaDataReader;
use trawl_bench::prng::Prng;
use trawl_storage::tokens::{TokenIndex, location};

#[derive(Parser, Debug)]
#[command(about = "Size and false-positive rate of the token index of segment files")]
struct Args {
    /// Directory searched for segment files (`*.parquet`), recursively.
    #[arg(long)]
    dir: PathBuf,
    /// Absent terms looked up per column and block.
    #[arg(long, default_value_t = 64)]
    probes: usize,
    /// Print one JSON line with the totals too.
    #[arg(long)]
    json: bool,
}

#[derive(Default)]
struct ColumnTotals {
    bytes: u64,
    blocks: u64,
    lookups: u64,
    passed: u64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut files = Vec::new();
    find_segments(&args.dir, &mut files)?;
    files.sort();
    let mut rng = Prng::new(0x7e57_1d3c);
    let consonants = b"bcdfghjklmnpqrstvwxz";
    let probes: Vec<String> = (0..args.probes)
        .map(|_| {
            (0..12)
                .map(|_| consonants[rng.below(consonants.len() as u64) as usize] as char)
                .collect()
        })
        .collect();
    let (mut segment_bytes, mut index_bytes, mut rows, mut without) = (0u64, 0u64, 0u64, 0usize);
    let mut columns: BTreeMap<String, ColumnTotals> = BTreeMap::new();
    for file in &files {
        let bytes = Bytes::from(std::fs::read(file).with_context(|| format!("reading {}", file.display()))?);
        let footer = ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .with_context(|| format!("the footer of {}", file.display()))?;
        segment_bytes += bytes.len() as u64;
        rows += footer.file_metadata().num_rows().max(0) as u64;
        let Some((offset, length)) = location(&footer, bytes.len() as u64) else {
            without += 1;
            continue;
        };
        let slice = bytes
            .get(offset as usize..(offset + length) as usize)
            .context("index outside the file")?;
        let index = TokenIndex::parse(slice).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        index_bytes += length;
        for (name, bytes, _) in index.columns() {
            let totals = columns.entry(name.clone()).or_default();
            totals.bytes += bytes as u64;
            for block in 0..index.blocks() {
                totals.blocks += 1;
                for probe in &probes {
                    totals.lookups += 1;
                    totals.passed += u64::from(index.may_hold_term(&name, block, probe));
                }
            }
        }
    }
    let share = |part: u64, whole: u64| if whole == 0 { 0.0 } else { part as f64 / whole as f64 };
    println!(
        "{} segment files ({} without an index), {rows} rows, {:.1} MiB; index {:.2} MiB = {:.2} % of the segments, {:.2} bytes per row",
        files.len(),
        without,
        segment_bytes as f64 / 1048576.0,
        index_bytes as f64 / 1048576.0,
        100.0 * share(index_bytes, segment_bytes),
        share(index_bytes, rows),
    );
    println!("| column | index MiB | bytes per row | blocks | false positives |");
    println!("|---|---:|---:|---:|---:|");
    for (name, totals) in &columns {
        println!(
            "| {name} | {:.2} | {:.2} | {} | {:.3} % |",
            totals.bytes as f64 / 1048576.0,
            share(totals.bytes, rows),
            totals.blocks,
            100.0 * share(totals.passed, totals.lookups),
        );
    }
    if args.json {
        let per_column: serde_json::Map<String, serde_json::Value> = columns
            .iter()
            .map(|(name, t)| {
                (
                    name.clone(),
                    serde_json::json!({"bytes": t.bytes, "blocks": t.blocks, "false_positive_rate": share(t.passed, t.lookups)}),
                )
            })
            .collect();
        let (lookups, passed) = columns.values().fold((0, 0), |(l, p), t| (l + t.lookups, p + t.passed));
        println!(
            "{}",
            serde_json::json!({
                "segments": files.len(), "without_index": without, "rows": rows,
                "segment_bytes": segment_bytes, "index_bytes": index_bytes,
                "index_share": share(index_bytes, segment_bytes),
                "false_positive_rate": share(passed, lookups), "columns": per_column,
            })
        );
    }
    Ok(())
}

fn find_segments(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            find_segments(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            out.push(path);
        }
    }
    Ok(())
}
