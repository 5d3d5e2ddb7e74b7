//! `segment-layout`: how a segment file's columns are stored (bytes compressed and not, pages,
//! rows per page, codec), and with `--reencode` the same for the file written again by this
//! build's segment writer, side by side. Used to measure a change of the layout (page sizes,
//! encodings) on real segments before loading a whole data set with it.
//!
//! ```sh
//! segment-layout --file /tmp/trawl-bench-data/trawl/segments/default/default/…/x.parquet --reencode
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Parser;
use datafusion::arrow::array::RecordBatchReader;
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use trawl_storage::SegmentEncoder;

#[derive(Parser, Debug)]
#[command(about = "Bytes and pages per column of a segment file, as it is and written again")]
struct Args {
    /// The segment file (`.parquet`).
    #[arg(long)]
    file: PathBuf,
    /// Also write the file's rows again with this build's segment writer and compare.
    #[arg(long)]
    reencode: bool,
    /// Rows per batch handed to the writer when re-encoding (a merge hands it batches of 8,192).
    #[arg(long, default_value_t = 8192)]
    batch_rows: usize,
}

/// One column's totals over a file's row groups.
#[derive(Default, Debug, Clone)]
struct Column {
    compressed: u64,
    uncompressed: u64,
    pages: u64,
    rows: u64,
    /// Bytes of its page index (column index and offset index).
    index: u64,
    codec: String,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let bytes = Bytes::from(std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?);
    let before = layout(&bytes)?;
    let after = if args.reencode {
        let started = Instant::now();
        let encoded = reencode(&bytes, args.batch_rows)?;
        eprintln!(
            "written again in {:.1} s: {} -> {} bytes",
            started.elapsed().as_secs_f64(),
            bytes.len(),
            encoded.len()
        );
        Some((layout(&encoded)?, encoded.len() as u64))
    } else {
        None
    };
    let total = |columns: &BTreeMap<String, Column>| columns.values().map(|c| c.compressed).sum::<u64>();
    let index = |columns: &BTreeMap<String, Column>| columns.values().map(|c| c.index).sum::<u64>();
    println!(
        "file: {} bytes, columns {} bytes, page index {} bytes",
        bytes.len(),
        total(&before),
        index(&before)
    );
    if let Some((columns, len)) = &after {
        println!(
            "again: {len} bytes ({:+.2} %), columns {} bytes, page index {} bytes",
            change(bytes.len() as u64, *len),
            total(columns),
            index(columns)
        );
    }
    println!("| column | codec | MB | MB raw | pages | rows/page | again MB | change | again pages | rows/page |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut names: Vec<&String> = before.keys().collect();
    names.sort_by_key(|name| std::cmp::Reverse(before[*name].compressed));
    for name in names {
        let c = &before[name];
        let mut line = format!(
            "| {name} | {} | {:.3} | {:.3} | {} | {:.0} |",
            c.codec,
            c.compressed as f64 / 1e6,
            c.uncompressed as f64 / 1e6,
            c.pages,
            c.rows as f64 / c.pages.max(1) as f64
        );
        if let Some(a) = after.as_ref().and_then(|(columns, _)| columns.get(name)) {
            line.push_str(&format!(
                " {:.3} | {:+.2} % | {} | {:.0} |",
                a.compressed as f64 / 1e6,
                change(c.compressed, a.compressed),
                a.pages,
                a.rows as f64 / a.pages.max(1) as f64
            ));
        }
        println!("{line}");
    }
    Ok(())
}

fn change(before: u64, after: u64) -> f64 {
    100.0 * (after as f64 - before as f64) / (before as f64).max(1.0)
}

fn footer(bytes: &Bytes) -> Result<ParquetMetaData> {
    ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Optional)
        .parse_and_finish(bytes)
        .context("reading the footer")
}

/// Per column (by path): bytes, pages and codec over all row groups.
fn layout(bytes: &Bytes) -> Result<BTreeMap<String, Column>> {
    let footer = footer(bytes)?;
    let mut columns: BTreeMap<String, Column> = BTreeMap::new();
    for (g, group) in footer.row_groups().iter().enumerate() {
        for (c, chunk) in group.columns().iter().enumerate() {
            let column = columns.entry(chunk.column_path().string()).or_default();
            column.compressed += chunk.compressed_size().max(0) as u64;
            column.uncompressed += chunk.uncompressed_size().max(0) as u64;
            column.rows += group.num_rows().max(0) as u64;
            column.codec = format!("{:?}", chunk.compression());
            let lengths = [chunk.column_index_length(), chunk.offset_index_length()];
            column.index += lengths.iter().flatten().map(|&l| l.max(0) as u64).sum::<u64>();
            let pages = footer
                .offset_index()
                .and_then(|index| index.get(g))
                .and_then(|group| group.get(c))
                .map_or(0, |index| index.page_locations().len());
            column.pages += pages as u64;
        }
    }
    Ok(columns)
}

/// The rows of `bytes` written again by the segment writer, `batch_rows` at a time.
fn reencode(bytes: &Bytes, batch_rows: usize) -> Result<Bytes> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())?.with_batch_size(batch_rows);
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let reader = builder.build()?;
    let mut encoder = SegmentEncoder::new(reader.schema(), rows)?;
    for batch in reader {
        encoder.write(&batch?)?;
    }
    Ok(encoder.finish()?)
}
