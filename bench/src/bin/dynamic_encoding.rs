//! `dynamic-encoding`: measures candidate encodings of dynamic property bags
//! (`attributes`, `resource`) in Parquet segments, for `docs/decisions/002-dynamic-encoding.md`.
//!
//! It generates `--rows` log rows with the deterministic generator (5–15 attributes per
//! record including `http.route` / `http.status_code`, 17 resource attributes), writes them
//! as one Parquet file per candidate with the segment writer's settings (zstd level 1,
//! 32k-row row groups, page statistics, bloom filters on trace_id / span_id), then reports
//! bytes on disk and the median of 5 warm runs of each query in a DataFusion SessionContext.
//!
//! Candidates:
//! - `json`: bags as JSON text (Utf8), read with datafusion-functions-json (`json_get_str`);
//!   also timed as the KQL planner lowers `tostring(bag['k'])` today (`json_as_text`).
//! - `map`: bags as Arrow `Map<Utf8, Utf8>` (values as text), read with `bag['k']` (get_field).
//! - `shred`: `json` plus the hot keys in typed columns of their own
//!   (`attributes.http.route` Utf8, `attributes.http.status_code` Int64,
//!   `resource.service.name` Utf8), read directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use datafusion::arrow::array::{
    ArrayRef, Int64Builder, MapBuilder, RecordBatch, StringBuilder, TimestampNanosecondBuilder,
};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
use datafusion::parquet::schema::types::ColumnPath;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use serde_json::{Map as JsonMap, Value as Json};
use trawl_bench::generator::GenConfig;
use trawl_bench::proc::human_bytes;
use trawl_proto::otlp::common::v1::{AnyValue, KeyValue, any_value};

/// Rows per row group, as `trawl_storage::segment::CHUNK_ROWS`.
const CHUNK_ROWS: usize = 32 * 1024;

#[derive(Debug, Parser)]
#[command(
    name = "dynamic-encoding",
    about = "Bytes and query times of dynamic-bag encodings in Parquet"
)]
struct Args {
    /// Log rows to generate.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Generator seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Measured runs per query (after one warm-up run); the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Directory for the Parquet files (a fresh one under /tmp by default; removed unless
    /// --keep).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the Parquet files.
    #[arg(long)]
    keep: bool,
    /// The route to look for.
    #[arg(long, default_value = "/api/v1/cart/{id}")]
    route: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Candidate {
    Json,
    Map,
    Shred,
}

impl Candidate {
    const ALL: [Candidate; 3] = [Candidate::Json, Candidate::Map, Candidate::Shred];

    fn name(self) -> &'static str {
        match self {
            Candidate::Json => "json",
            Candidate::Map => "map",
            Candidate::Shred => "shred",
        }
    }
}

// ---------------------------------------------------------------------------------------
// Building the columns.

fn any_value_to_json(value: &AnyValue) -> Json {
    match &value.value {
        None => Json::Null,
        Some(any_value::Value::StringValue(s)) => Json::String(s.clone()),
        Some(any_value::Value::BoolValue(b)) => Json::Bool(*b),
        Some(any_value::Value::IntValue(i)) => Json::from(*i),
        Some(any_value::Value::DoubleValue(d)) => serde_json::Number::from_f64(*d).map_or(Json::Null, Json::Number),
        Some(any_value::Value::ArrayValue(a)) => Json::Array(a.values.iter().map(any_value_to_json).collect()),
        Some(any_value::Value::KvlistValue(l)) => Json::Object(bag_to_json(&l.values)),
        Some(_) => Json::Null,
    }
}

/// As `trawl-intake` maps OTLP attributes: a JSON object, keys in order.
fn bag_to_json(attributes: &[KeyValue]) -> JsonMap<String, Json> {
    let mut object = JsonMap::with_capacity(attributes.len());
    for a in attributes {
        object.insert(a.key.clone(), a.value.as_ref().map_or(Json::Null, any_value_to_json));
    }
    object
}

/// A value as map text: strings as they are, anything else as its JSON text.
fn any_value_text(value: Option<&AnyValue>, out: &mut String) {
    out.clear();
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => out.push_str(s),
        Some(any_value::Value::IntValue(i)) => out.push_str(&i.to_string()),
        Some(any_value::Value::BoolValue(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(any_value::Value::DoubleValue(d)) => out.push_str(&d.to_string()),
        Some(_) => out.push_str(&any_value_to_json(value.unwrap_or(&AnyValue::default())).to_string()),
        None => {}
    }
}

/// One generated log row, borrowed from its request.
struct Row<'a> {
    time: u64,
    observed: u64,
    severity_text: &'a str,
    severity_number: i32,
    body: &'a AnyValue,
    trace_id: &'a [u8],
    span_id: &'a [u8],
    attributes: &'a [KeyValue],
    resource: usize,
    scope: &'a str,
}

/// Per candidate: build time (arrays), write time (Parquet), writer.
struct Output {
    candidate: Candidate,
    path: PathBuf,
    writer: Option<ArrowWriter<std::fs::File>>,
    schema: Option<SchemaRef>,
    build: Duration,
    write: Duration,
}

fn writer_properties(rows: u64) -> anyhow::Result<WriterProperties> {
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_max_row_group_row_count(Some(CHUNK_ROWS))
        .set_statistics_enabled(EnabledStatistics::Page);
    for column in ["trace_id", "span_id"] {
        let path = ColumnPath::from(column);
        properties = properties
            .set_column_bloom_filter_enabled(path.clone(), true)
            .set_column_bloom_filter_fpp(path.clone(), 0.01)
            .set_column_bloom_filter_max_ndv(path, rows.clamp(1, CHUNK_ROWS as u64));
    }
    Ok(properties.build())
}

fn string_column(rows: &[&Row<'_>], f: impl Fn(&Row<'_>) -> Option<String>) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(rows.len(), rows.len() * 24);
    for r in rows {
        b.append_option(f(r));
    }
    Arc::new(b.finish())
}

fn json_bag_column<'a>(rows: &[&Row<'a>], bag: impl Fn(&Row<'a>) -> Option<String>) -> ArrayRef {
    let mut b = StringBuilder::with_capacity(rows.len(), rows.len() * 256);
    for r in rows {
        b.append_option(bag(r));
    }
    Arc::new(b.finish())
}

fn map_bag_column<'a>(rows: &[&Row<'a>], bag: impl Fn(&Row<'a>) -> &'a [KeyValue]) -> anyhow::Result<ArrayRef> {
    let mut b = MapBuilder::new(None, StringBuilder::new(), StringBuilder::new());
    let mut text = String::new();
    for r in rows {
        for kv in bag(r) {
            b.keys().append_value(&kv.key);
            any_value_text(kv.value.as_ref(), &mut text);
            b.values().append_value(&text);
        }
        b.append(true)?;
    }
    Ok(Arc::new(b.finish()))
}

fn attribute<'a>(row: &Row<'a>, key: &str) -> Option<&'a any_value::Value> {
    row.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// Builds one chunk of `rows` (time-sorted) for `candidate`.
fn build_batch(
    candidate: Candidate,
    rows: &[&Row<'_>],
    resources: &[(String, &[KeyValue], Option<String>)],
) -> anyhow::Result<RecordBatch> {
    let mut columns: Vec<(&str, ArrayRef)> = Vec::new();
    let mut ts = TimestampNanosecondBuilder::with_capacity(rows.len()).with_timezone("UTC");
    let mut observed = TimestampNanosecondBuilder::with_capacity(rows.len()).with_timezone("UTC");
    let mut severity_number = Int64Builder::with_capacity(rows.len());
    for r in rows {
        ts.append_value(r.time as i64);
        observed.append_value(r.observed as i64);
        severity_number.append_value(i64::from(r.severity_number));
    }
    columns.push(("timestamp", Arc::new(ts.finish())));
    columns.push(("observed_time", Arc::new(observed.finish())));
    columns.push((
        "trace_id",
        string_column(rows, |r| (!r.trace_id.is_empty()).then(|| hex::encode(r.trace_id))),
    ));
    columns.push((
        "span_id",
        string_column(rows, |r| (!r.span_id.is_empty()).then(|| hex::encode(r.span_id))),
    ));
    columns.push(("severity_number", Arc::new(severity_number.finish())));
    columns.push((
        "severity_text",
        string_column(rows, |r| Some(r.severity_text.to_string())),
    ));
    // Bodies are dynamic too, stored as JSON text by the project; the same in every candidate.
    columns.push((
        "body",
        string_column(rows, |r| Some(any_value_to_json(r.body).to_string())),
    ));
    match candidate {
        Candidate::Json | Candidate::Shred => {
            columns.push((
                "attributes",
                json_bag_column(rows, |r| {
                    (!r.attributes.is_empty()).then(|| Json::Object(bag_to_json(r.attributes)).to_string())
                }),
            ));
            columns.push((
                "resource",
                json_bag_column(rows, |r| Some(resources[r.resource].0.clone())),
            ));
        }
        Candidate::Map => {
            columns.push(("attributes", map_bag_column(rows, |r| r.attributes)?));
            columns.push(("resource", map_bag_column(rows, |r| resources[r.resource].1)?));
        }
    }
    columns.push(("scope_name", string_column(rows, |r| Some(r.scope.to_string()))));
    if candidate == Candidate::Shred {
        columns.push((
            "attributes.http.route",
            string_column(rows, |r| match attribute(r, "http.route") {
                Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                _ => None,
            }),
        ));
        let mut status = Int64Builder::with_capacity(rows.len());
        for r in rows {
            status.append_option(match attribute(r, "http.status_code") {
                Some(any_value::Value::IntValue(i)) => Some(*i),
                _ => None,
            });
        }
        columns.push(("attributes.http.status_code", Arc::new(status.finish())));
        columns.push((
            "resource.service.name",
            string_column(rows, |r| resources[r.resource].2.clone()),
        ));
    }
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// Bytes per top-level column, from the Parquet footer (compressed, uncompressed).
fn column_bytes(path: &Path) -> anyhow::Result<Vec<(String, i64, i64)>> {
    let reader = SerializedFileReader::new(std::fs::File::open(path)?)?;
    let mut out: Vec<(String, i64, i64)> = Vec::new();
    for rg in reader.metadata().row_groups() {
        for column in rg.columns() {
            let parts = column.column_path().parts();
            // The top-level column: a flat column named with dots is one part; a map's leaves
            // are `attributes` / `key_value` / `key` and so on.
            let name = parts[0].clone();
            match out.iter_mut().find(|(n, ..)| *n == name) {
                Some(entry) => {
                    entry.1 += column.compressed_size();
                    entry.2 += column.uncompressed_size();
                }
                None => out.push((name, column.compressed_size(), column.uncompressed_size())),
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Queries.

struct Query {
    id: &'static str,
    what: &'static str,
    /// Whether every variant must give the same answer.
    same_answer: bool,
    /// (label, candidate, SQL)
    variants: Vec<(&'static str, Candidate, String)>,
}

fn queries(route: &str) -> Vec<Query> {
    let route = route.replace('\'', "''");
    vec![
        Query {
            id: "route",
            what: "where attributes['http.route'] == R | count",
            same_answer: true,
            variants: vec![
                ("json, json_get_str", Candidate::Json, format!("SELECT count(*) AS n FROM json WHERE json_get_str(attributes, 'http.route') = '{route}'")),
                ("json, json_as_text (planner's tostring)", Candidate::Json, format!("SELECT count(*) AS n FROM json WHERE coalesce(json_as_text(attributes, 'http.route'), '') = '{route}'")),
                ("map, bag['k']", Candidate::Map, format!("SELECT count(*) AS n FROM map WHERE attributes['http.route'] = '{route}'")),
                ("shred, column", Candidate::Shred, format!("SELECT count(*) AS n FROM shred WHERE \"attributes.http.route\" = '{route}'")),
            ],
        },
        Query {
            id: "q9",
            what: "where toint(attributes['http.status_code']) >= 500 | summarize count() by route | top 10",
            same_answer: true,
            variants: vec![
                ("json, json_get_*", Candidate::Json, "SELECT json_get_str(attributes, 'http.route') AS route, count(*) AS n FROM json WHERE json_get_int(attributes, 'http.status_code') >= 500 GROUP BY route ORDER BY n DESC, route LIMIT 10".into()),
                ("map, bag['k']", Candidate::Map, "SELECT attributes['http.route'] AS route, count(*) AS n FROM map WHERE CAST(attributes['http.status_code'] AS BIGINT) >= 500 GROUP BY route ORDER BY n DESC, route LIMIT 10".into()),
                ("shred, columns", Candidate::Shred, "SELECT \"attributes.http.route\" AS route, count(*) AS n FROM shred WHERE \"attributes.http.status_code\" >= 500 GROUP BY route ORDER BY n DESC, route LIMIT 10".into()),
            ],
        },
        Query {
            id: "q4",
            what: "where severity_text == 'ERROR' | summarize count() by tostring(resource['service.name']) | top 10",
            same_answer: true,
            variants: vec![
                ("json, json_get_str", Candidate::Json, "SELECT json_get_str(resource, 'service.name') AS service, count(*) AS n FROM json WHERE severity_text = 'ERROR' GROUP BY service ORDER BY n DESC, service LIMIT 10".into()),
                ("map, bag['k']", Candidate::Map, "SELECT resource['service.name'] AS service, count(*) AS n FROM map WHERE severity_text = 'ERROR' GROUP BY service ORDER BY n DESC, service LIMIT 10".into()),
                ("shred, column", Candidate::Shred, "SELECT \"resource.service.name\" AS service, count(*) AS n FROM shred WHERE severity_text = 'ERROR' GROUP BY service ORDER BY n DESC, service LIMIT 10".into()),
            ],
        },
        Query {
            id: "bag",
            what: "whole attribute bags decoded (json: total length; map: total entries), as for display",
            same_answer: false,
            variants: vec![
                ("json", Candidate::Json, "SELECT sum(length(attributes)) AS n FROM json".into()),
                ("map", Candidate::Map, "SELECT sum(cardinality(attributes)) AS n FROM map".into()),
            ],
        },
    ]
}

async fn run(ctx: &SessionContext, sql: &str) -> anyhow::Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
                .map(str::trim)
        })
        .unwrap_or("unknown CPU")
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    format!("{model}, {cores} cores, {} RAM", human_bytes(mem_kb * 1024))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut temp = None;
    let dir = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            dir.clone()
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("trawl-dynamic-encoding-")
                .tempdir_in("/tmp")?;
            let path = t.path().to_path_buf();
            temp = Some(t);
            path
        }
    };
    println!("machine: {}", machine());
    println!("rows: {}, seed {}, files in {}", args.rows, args.seed, dir.display());

    // Generate.
    let began = Instant::now();
    let config = GenConfig {
        seed: args.seed,
        logs: args.rows,
        ..GenConfig::default()
    };
    let requests: Vec<_> = config.log_batches().collect();
    println!(
        "generated {} requests in {:.1} s",
        requests.len(),
        began.elapsed().as_secs_f64()
    );

    // Flatten: rows borrow from the requests; resources once each.
    let mut resources: Vec<(String, &[KeyValue], Option<String>)> = Vec::new();
    let mut rows: Vec<Row<'_>> = Vec::with_capacity(args.rows as usize);
    for request in &requests {
        for resource_logs in &request.resource_logs {
            let attributes: &[KeyValue] = resource_logs.resource.as_ref().map_or(&[], |r| &r.attributes);
            let service = attributes
                .iter()
                .find(|a| a.key == "service.name")
                .and_then(|a| match &a.value {
                    Some(AnyValue {
                        value: Some(any_value::Value::StringValue(s)),
                    }) => Some(s.clone()),
                    _ => None,
                });
            resources.push((Json::Object(bag_to_json(attributes)).to_string(), attributes, service));
            let resource = resources.len() - 1;
            for scope_logs in &resource_logs.scope_logs {
                let scope = scope_logs.scope.as_ref().map_or("", |s| s.name.as_str());
                for r in &scope_logs.log_records {
                    rows.push(Row {
                        time: r.time_unix_nano,
                        observed: r.observed_time_unix_nano,
                        severity_text: &r.severity_text,
                        severity_number: r.severity_number,
                        body: r.body.as_ref().context("a record without a body")?,
                        trace_id: &r.trace_id,
                        span_id: &r.span_id,
                        attributes: &r.attributes,
                        resource,
                        scope,
                    });
                }
            }
        }
    }
    rows.sort_by_key(|r| r.time);
    let attribute_keys: usize = rows.iter().map(|r| r.attributes.len()).sum();
    println!(
        "{} rows, {:.1} attributes per row on average, {} distinct resources",
        rows.len(),
        attribute_keys as f64 / rows.len().max(1) as f64,
        resources.len()
    );

    // Write one file per candidate, chunk by chunk.
    let properties = writer_properties(args.rows)?;
    let mut outputs: Vec<Output> = Candidate::ALL
        .iter()
        .map(|c| Output {
            candidate: *c,
            path: dir.join(format!("{}.parquet", c.name())),
            writer: None,
            schema: None,
            build: Duration::ZERO,
            write: Duration::ZERO,
        })
        .collect();
    for chunk in rows.chunks(CHUNK_ROWS) {
        let refs: Vec<&Row<'_>> = chunk.iter().collect();
        for out in &mut outputs {
            let t = Instant::now();
            let batch = build_batch(out.candidate, &refs, &resources)?;
            out.build += t.elapsed();
            let t = Instant::now();
            if out.writer.is_none() {
                let file = std::fs::File::create(&out.path)?;
                out.schema = Some(batch.schema());
                out.writer = Some(ArrowWriter::try_new(file, batch.schema(), Some(properties.clone()))?);
            }
            if let Some(writer) = out.writer.as_mut() {
                writer.write(&batch)?;
            }
            out.write += t.elapsed();
        }
    }
    for out in &mut outputs {
        let t = Instant::now();
        if let Some(writer) = out.writer.take() {
            writer.close()?;
        }
        out.write += t.elapsed();
    }
    drop(rows);
    drop(requests);

    // Sizes.
    println!();
    println!("## Bytes on disk (zstd 1, {CHUNK_ROWS}-row row groups)");
    println!();
    println!(
        "| candidate | file | attributes | resource | shredded columns | other columns | build arrays | encode Parquet |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut sizes = Vec::new();
    for out in &outputs {
        let file = std::fs::metadata(&out.path)?.len();
        let columns = column_bytes(&out.path)?;
        let get = |name: &str| columns.iter().find(|(n, ..)| n == name).map_or(0, |c| c.1);
        let shredded: i64 = columns.iter().filter(|(n, ..)| n.contains('.')).map(|c| c.1).sum();
        let other: i64 = columns
            .iter()
            .filter(|(n, ..)| n != "attributes" && n != "resource" && !n.contains('.'))
            .map(|c| c.1)
            .sum();
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} s | {:.2} s |",
            out.candidate.name(),
            human_bytes(file),
            human_bytes(get("attributes") as u64),
            human_bytes(get("resource") as u64),
            if shredded > 0 {
                human_bytes(shredded as u64)
            } else {
                "–".into()
            },
            human_bytes(other as u64),
            out.build.as_secs_f64(),
            out.write.as_secs_f64()
        );
        sizes.push((out.candidate, file, columns));
    }
    println!();
    println!("Uncompressed (Parquet page bytes) of the bags:");
    for (candidate, _, columns) in &sizes {
        let get = |name: &str| columns.iter().find(|(n, ..)| n == name).map_or(0, |c| c.2);
        println!(
            "- {}: attributes {}, resource {}",
            candidate.name(),
            human_bytes(get("attributes") as u64),
            human_bytes(get("resource") as u64)
        );
    }

    // Queries.
    let mut ctx = SessionContext::new();
    datafusion_functions_json::register_all(&mut ctx)?;
    for out in &outputs {
        let path = out.path.to_str().context("a non-UTF-8 path")?;
        ctx.register_parquet(out.candidate.name(), path, ParquetReadOptions::default())
            .await?;
    }
    println!();
    println!(
        "## Query times (DataFusion {}, {} partitions, median of {} warm runs)",
        datafusion::DATAFUSION_VERSION,
        ctx.copied_config().target_partitions(),
        args.runs
    );
    println!();
    println!("| query | variant | median | min | max | result |");
    println!("|---|---|---:|---:|---:|---|");
    for query in queries(&args.route) {
        let mut reference: Option<String> = None;
        for (label, _, sql) in &query.variants {
            let first = run(&ctx, sql).await.with_context(|| format!("query failed: {sql}"))?;
            let text = pretty_format_batches(&first)?.to_string();
            // The same answer from every candidate (column names aside).
            let body: String = text.lines().skip(3).collect::<Vec<_>>().join("\n");
            match &reference {
                None => reference = Some(body.clone()),
                Some(r) if *r != body && query.same_answer => {
                    bail!("{} {label} disagrees:\n{text}\nexpected\n{r}", query.id)
                }
                Some(_) => {}
            }
            let mut times = Vec::new();
            for _ in 0..args.runs.max(1) {
                let t = Instant::now();
                run(&ctx, sql).await?;
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            let min = times.iter().copied().fold(f64::INFINITY, f64::min);
            let max = times.iter().copied().fold(0.0, f64::max);
            let summary = first
                .first()
                .filter(|b| b.num_rows() > 0)
                .map(|b| {
                    let rows: usize = first.iter().map(RecordBatch::num_rows).sum();
                    let cell =
                        datafusion::arrow::util::display::array_value_to_string(b.column(b.num_columns() - 1), 0)
                            .unwrap_or_default();
                    if rows == 1 {
                        format!("n = {cell}")
                    } else {
                        format!("{rows} rows, top n = {cell}")
                    }
                })
                .unwrap_or_default();
            println!(
                "| {} | {label} | {:.1} ms | {min:.1} | {max:.1} | {summary} |",
                query.id,
                median(times)
            );
        }
    }
    println!();
    for query in queries(&args.route) {
        println!("- {}: `{}`", query.id, query.what);
    }
    if let Some(t) = temp.as_mut()
        && args.keep
    {
        t.disable_cleanup(true);
    }
    if args.keep || args.dir.is_some() {
        println!("\nfiles kept in {}", dir.display());
    }
    Ok(())
}
