//! Aggregates over OpenTelemetry metric rows, each given the whole row as a bag (`$raw`):
//!
//! - `otel_increase($raw)`: how much monotonic counters grew. DELTA points add up; CUMULATIVE
//!   points of one series add the differences between consecutive points, a point below the
//!   one before it (or with a new `start_time`) being a restart that counts in full. A series'
//!   first point counts in full when its `start_time` falls in the query window (the series
//!   began inside it), and not at all otherwise. A negative DELTA value is reported with an
//!   `OtelNegativeIncrement` warning (the counter was not monotonic: use `otel_delta`).
//! - `otel_delta($raw)`: the change of counts that may go down (up-down counters): DELTA points
//!   add up; CUMULATIVE series add last minus first per run of one `start_time`.
//! - `otel_rate($raw)`: per series, the increase divided by the seconds its points cover
//!   (`start_time` to the last `timestamp` for DELTA points, first to last `timestamp` for
//!   CUMULATIVE ones), summed over the series; null when no series covers any time.
//! - `otel_histogram_merge($raw)`: one histogram of every histogram point: DELTA points add
//!   bucket-wise, CUMULATIVE series contribute their last point minus their first (or the
//!   whole last point when the series began in the window, or restarted). Explicit-bucket
//!   histograms must share their bounds; exponential ones are brought to the coarsest scale.
//! - `otel_histogram_percentile($raw, p)`: the `p`th percentile of that merged histogram,
//!   interpolated linearly inside the bucket that holds it and clamped to `min`/`max`.
//!
//! Series are told apart by `metric_hash` (stored on metric rows), or, for rows without one,
//! by the metric name, resource and attributes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Map, Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::RowAgg;

/// Warnings raised while a query runs, by the key the planner gave the query's aggregates.
static WARNINGS: Mutex<BTreeMap<i64, Vec<(String, String)>>> = Mutex::new(BTreeMap::new());

static NEXT_KEY: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

/// A key for one query's runtime warnings.
pub fn new_warning_key() -> i64 {
    NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Records a warning for the query with `key` (once per kind).
pub fn warn(key: i64, kind: &str, message: String) {
    if let Ok(mut warnings) = WARNINGS.lock() {
        let list = warnings.entry(key).or_default();
        if !list.iter().any(|(k, _)| k == kind) {
            list.push((kind.to_owned(), message));
        }
    }
}

/// Takes the warnings recorded for the query with `key`: (kind, message).
pub fn take_warnings(key: i64) -> Vec<(String, String)> {
    WARNINGS
        .lock()
        .ok()
        .and_then(|mut warnings| warnings.remove(&key))
        .unwrap_or_default()
}

/// Which aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Increase,
    Delta,
    Rate,
    HistogramMerge,
    HistogramPercentile,
}

/// One metric point, as much of it as the aggregates read.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    timestamp: i64,
    start: Option<i64>,
    cumulative: bool,
    value: Sample,
}

#[derive(Debug, Clone, PartialEq)]
enum Sample {
    Number(f64),
    Histogram(Histogram),
}

/// A histogram: explicit buckets, or exponential ones at a scale.
#[derive(Debug, Clone, PartialEq, Default)]
struct Histogram {
    count: f64,
    sum: f64,
    min: Option<f64>,
    max: Option<f64>,
    /// Explicit bounds; empty for an exponential histogram.
    bounds: Vec<f64>,
    /// Explicit bucket counts (one more than the bounds).
    counts: Vec<f64>,
    exponential: Option<Exponential>,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Exponential {
    scale: i32,
    zero_count: f64,
    /// Bucket index → count, for positive and negative values.
    positive: BTreeMap<i64, f64>,
    negative: BTreeMap<i64, f64>,
}

fn number(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn time(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::String(text) => crate::datetime::parse_datetime(text),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

fn counts(value: Option<&Value>) -> Vec<f64> {
    match value {
        Some(Value::Array(items)) => items.iter().map(|i| number(Some(i)).unwrap_or(0.0)).collect(),
        _ => Vec::new(),
    }
}

fn buckets(value: Option<&Value>) -> BTreeMap<i64, f64> {
    let mut out = BTreeMap::new();
    if let Some(Value::Object(bag)) = value {
        let offset = number(bag.get("offset")).unwrap_or(0.0) as i64;
        for (i, count) in counts(bag.get("bucket_counts")).into_iter().enumerate() {
            if count != 0.0 {
                out.insert(offset + i as i64, count);
            }
        }
    }
    out
}

/// The series key of a row: `metric_hash`, or a hash of what identifies the series.
fn series_of(row: &Map<String, Value>) -> i64 {
    if let Some(hash) = row.get("metric_hash").and_then(Value::as_i64) {
        return hash;
    }
    let identity = json!([
        row.get("metric_name"),
        row.get("resource"),
        row.get("scope_name"),
        row.get("attributes")
    ]);
    twox_hash::XxHash64::oneshot(0, identity.to_string().as_bytes()) as i64
}

/// A histogram from the columns of a metric row (or a merged histogram's bag): explicit
/// buckets, or exponential ones.
fn histogram_of(bag: &Map<String, Value>, exponential: bool) -> Histogram {
    let mut h = Histogram {
        count: number(bag.get("count")).unwrap_or(0.0),
        sum: number(bag.get("sum")).unwrap_or(0.0),
        min: number(bag.get("min")),
        max: number(bag.get("max")),
        ..Histogram::default()
    };
    if exponential {
        h.exponential = Some(Exponential {
            scale: number(bag.get("scale")).unwrap_or(0.0) as i32,
            zero_count: number(bag.get("zero_count")).unwrap_or(0.0),
            positive: buckets(bag.get("positive")),
            negative: buckets(bag.get("negative")),
        });
    } else {
        h.bounds = counts(bag.get("explicit_bounds"));
        h.counts = counts(bag.get("bucket_counts"));
    }
    h
}

/// The point of a metric row (None for rows that are not sums, gauges or histograms).
fn point_of(row: &Map<String, Value>, histogram: bool) -> Option<Point> {
    let timestamp = time(row.get("timestamp"))?;
    let start = time(row.get("start_time"));
    let cumulative = row.get("aggregation_temporality").and_then(Value::as_str) == Some("CUMULATIVE");
    let value = if histogram {
        match row.get("metric_type").and_then(Value::as_str) {
            Some("histogram") => Sample::Histogram(histogram_of(row, false)),
            Some("exponential_histogram") => Sample::Histogram(histogram_of(row, true)),
            _ => return None,
        }
    } else {
        Sample::Number(number(row.get("value"))?)
    };
    Some(Point {
        timestamp,
        start,
        cumulative,
        value,
    })
}

impl Exponential {
    /// Brings the buckets to a coarser `scale` (each step merges pairs of buckets).
    fn downscale(&mut self, scale: i32) {
        let shift = self.scale - scale;
        if shift <= 0 {
            return;
        }
        let merge = |map: &BTreeMap<i64, f64>| {
            let mut out = BTreeMap::new();
            for (index, count) in map {
                *out.entry(index >> shift).or_insert(0.0) += count;
            }
            out
        };
        self.positive = merge(&self.positive);
        self.negative = merge(&self.negative);
        self.scale = scale;
    }
}

impl Histogram {
    /// Adds (`sign` 1) or removes (`sign` -1) `other`'s counts.
    fn add(&mut self, other: &Histogram, sign: f64) -> Result<()> {
        self.count += sign * other.count;
        self.sum += sign * other.sum;
        if sign > 0.0 {
            self.min = match (self.min, other.min) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.max = match (self.max, other.max) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        match (&mut self.exponential, &other.exponential) {
            (Some(mine), Some(theirs)) => {
                let mut theirs = theirs.clone();
                let scale = mine.scale.min(theirs.scale);
                mine.downscale(scale);
                theirs.downscale(scale);
                mine.zero_count += sign * theirs.zero_count;
                for (index, count) in theirs.positive {
                    *mine.positive.entry(index).or_insert(0.0) += sign * count;
                }
                for (index, count) in theirs.negative {
                    *mine.negative.entry(index).or_insert(0.0) += sign * count;
                }
            }
            (None, None) if self.counts.is_empty() && self.bounds.is_empty() => {
                self.bounds = other.bounds.clone();
                self.counts = other.counts.iter().map(|c| sign * c).collect();
            }
            (None, None) => {
                if self.bounds != other.bounds {
                    return exec_err!(
                        "histograms with different bucket bounds cannot be merged ({:?} and {:?})",
                        self.bounds,
                        other.bounds
                    );
                }
                for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
                    *mine += sign * theirs;
                }
            }
            _ => return exec_err!("explicit-bucket and exponential histograms cannot be merged"),
        }
        Ok(())
    }

    /// An empty histogram shaped like `like`.
    fn empty_like(like: &Histogram) -> Histogram {
        Histogram {
            bounds: like.bounds.clone(),
            counts: vec![0.0; like.counts.len()],
            exponential: like.exponential.as_ref().map(|e| Exponential {
                scale: e.scale,
                ..Exponential::default()
            }),
            ..Histogram::default()
        }
    }

    /// The buckets in value order: (lower, upper, count).
    fn ranges(&self) -> Vec<(f64, f64, f64)> {
        let mut out = Vec::new();
        match &self.exponential {
            Some(e) => {
                let base = 2f64.powf(2f64.powi(-e.scale));
                for (index, count) in e.negative.iter().rev() {
                    out.push((-base.powi(*index as i32 + 1), -base.powi(*index as i32), *count));
                }
                if e.zero_count != 0.0 {
                    out.push((0.0, 0.0, e.zero_count));
                }
                for (index, count) in &e.positive {
                    out.push((base.powi(*index as i32), base.powi(*index as i32 + 1), *count));
                }
            }
            None => {
                for (i, count) in self.counts.iter().enumerate() {
                    let lower = if i == 0 { f64::NEG_INFINITY } else { self.bounds[i - 1] };
                    let upper = self.bounds.get(i).copied().unwrap_or(f64::INFINITY);
                    out.push((lower, upper, *count));
                }
            }
        }
        out
    }

    /// The `p`th percentile (0–100), interpolated inside its bucket.
    fn percentile(&self, p: f64) -> Option<f64> {
        let ranges = self.ranges();
        let total: f64 = ranges.iter().map(|r| r.2.max(0.0)).sum();
        if total <= 0.0 {
            return None;
        }
        let rank = (p / 100.0).clamp(0.0, 1.0) * total;
        let mut seen = 0.0;
        for (lower, upper, count) in &ranges {
            let count = count.max(0.0);
            if count == 0.0 {
                continue;
            }
            if seen + count >= rank {
                let lower = if lower.is_finite() {
                    *lower
                } else {
                    self.min.unwrap_or(*upper)
                };
                let upper = if upper.is_finite() {
                    *upper
                } else {
                    self.max.unwrap_or(lower)
                };
                let fraction = ((rank - seen) / count).clamp(0.0, 1.0);
                let value = lower + (upper - lower) * fraction;
                let value = self.min.map_or(value, |m| value.max(m));
                return Some(self.max.map_or(value, |m| value.min(m)));
            }
            seen += count;
        }
        self.max
    }

    fn to_json(&self) -> Value {
        let mut bag = Map::new();
        bag.insert("count".into(), json!(self.count));
        bag.insert("sum".into(), json!(self.sum));
        if let Some(min) = self.min {
            bag.insert("min".into(), json!(min));
        }
        if let Some(max) = self.max {
            bag.insert("max".into(), json!(max));
        }
        match &self.exponential {
            Some(e) => {
                let side = |map: &BTreeMap<i64, f64>| {
                    let Some((first, _)) = map.first_key_value() else {
                        return json!({"offset": 0, "bucket_counts": []});
                    };
                    let last = map.last_key_value().map_or(*first, |(k, _)| *k);
                    let counts: Vec<f64> = (*first..=last).map(|i| map.get(&i).copied().unwrap_or(0.0)).collect();
                    json!({"offset": first, "bucket_counts": counts})
                };
                bag.insert("scale".into(), json!(e.scale));
                bag.insert("zero_count".into(), json!(e.zero_count));
                bag.insert("positive".into(), side(&e.positive));
                bag.insert("negative".into(), side(&e.negative));
            }
            None => {
                bag.insert("explicit_bounds".into(), json!(self.bounds));
                bag.insert("bucket_counts".into(), json!(self.counts));
            }
        }
        Value::Object(bag)
    }
}

/// The state: points by series, as compact JSON for merging.
#[derive(Debug)]
struct OtelAgg {
    kind: Kind,
    series: BTreeMap<i64, Vec<Point>>,
    /// Query window start (ns), for series that began inside it.
    window_start: Option<i64>,
    /// Where warnings go.
    warning_key: Option<i64>,
    percentile: Option<f64>,
}

impl OtelAgg {
    fn histogram(&self) -> bool {
        matches!(self.kind, Kind::HistogramMerge | Kind::HistogramPercentile)
    }

    /// Whether a cumulative series' first point counts in full: it began in the window.
    fn began_in_window(&self, point: &Point) -> bool {
        match (point.start, self.window_start) {
            (Some(start), Some(window)) => start >= window,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// The increase (or change) of one series of number points, and the seconds it covers.
    fn series_change(&self, points: &[Point], monotonic: bool) -> (f64, Option<f64>) {
        let mut total = 0.0;
        let mut first_time: Option<i64> = None;
        let mut last_time: Option<i64> = None;
        let mut previous: Option<&Point> = None;
        for point in points {
            let Sample::Number(value) = point.value else { continue };
            if !point.cumulative {
                total += value;
                if monotonic && value < 0.0 {
                    self.report(format!(
                        "a DELTA counter point has a negative value ({value}): otel_increase expects monotonic \
                         counters; use otel_delta for counts that may go down"
                    ));
                }
                let begin = point.start.unwrap_or(point.timestamp);
                first_time = Some(first_time.map_or(begin, |t| t.min(begin)));
            } else {
                match previous {
                    Some(before) if before.start == point.start => {
                        let Sample::Number(earlier) = before.value else {
                            continue;
                        };
                        if monotonic && value < earlier {
                            total += value;
                        } else {
                            total += value - earlier;
                        }
                    }
                    Some(_) => total += value,
                    None if self.began_in_window(point) => total += value,
                    None => {}
                }
                let begin = match previous {
                    None if self.began_in_window(point) => point.start.unwrap_or(point.timestamp),
                    _ => point.timestamp,
                };
                first_time = Some(first_time.map_or(begin, |t| t.min(begin)));
                previous = Some(point);
            }
            last_time = Some(last_time.map_or(point.timestamp, |t| t.max(point.timestamp)));
        }
        let seconds = match (first_time, last_time) {
            (Some(first), Some(last)) if last > first => Some((last - first) as f64 / 1e9),
            _ => None,
        };
        (total, seconds)
    }

    /// The merged histogram of one series.
    fn series_histogram(&self, points: &[Point]) -> Result<Option<Histogram>> {
        let mut merged: Option<Histogram> = None;
        let mut previous: Option<&Histogram> = None;
        let mut previous_start = None;
        for point in points {
            let Sample::Histogram(h) = &point.value else { continue };
            let target = merged.get_or_insert_with(|| Histogram::empty_like(h));
            if !point.cumulative {
                target.add(h, 1.0)?;
                continue;
            }
            match previous {
                Some(before) if previous_start == point.start && h.count >= before.count => {
                    target.add(h, 1.0)?;
                    target.add(before, -1.0)?;
                }
                Some(_) => target.add(h, 1.0)?,
                None if self.began_in_window(point) => target.add(h, 1.0)?,
                None => {}
            }
            previous = Some(h);
            previous_start = point.start;
        }
        Ok(merged)
    }

    fn report(&self, message: String) {
        if let Some(key) = self.warning_key {
            warn(key, "OtelNegativeIncrement", message);
        }
    }
}

fn point_to_json(point: &Point) -> Value {
    let value = match &point.value {
        Sample::Number(n) => json!(n),
        Sample::Histogram(h) => h.to_json(),
    };
    json!([point.timestamp, point.start, point.cumulative, value])
}

fn point_from_json(value: &Value, histogram: bool) -> Option<Point> {
    let items = value.as_array()?;
    let timestamp = items.first()?.as_i64()?;
    let start = items.get(1).and_then(Value::as_i64);
    let cumulative = items.get(2)?.as_bool()?;
    let sample = if histogram {
        let bag = items.get(3)?.as_object()?;
        Sample::Histogram(histogram_of(bag, bag.contains_key("scale")))
    } else {
        Sample::Number(items.get(3)?.as_f64()?)
    };
    Some(Point {
        timestamp,
        start,
        cumulative,
        value: sample,
    })
}

impl RowAgg for OtelAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        let Some(Val::Str(text)) = row.first() else {
            return Ok(());
        };
        let (extra_start, extra_key) = match self.kind {
            Kind::HistogramPercentile => {
                if self.percentile.is_none() {
                    self.percentile = row.get(1).and_then(|v| v.real());
                }
                (2, 3)
            }
            _ => (1, 2),
        };
        if let Some(Val::DateTime(start) | Val::Long(start)) = row.get(extra_start) {
            self.window_start = Some(*start);
        }
        if let Some(Val::Long(key)) = row.get(extra_key) {
            self.warning_key = Some(*key);
        }
        // Rows that are not metric points of the right kind are left out.
        let Ok(Value::Object(bag)) = serde_json::from_str::<Value>(text) else {
            return Ok(());
        };
        if let Some(point) = point_of(&bag, self.histogram()) {
            self.series.entry(series_of(&bag)).or_default().push(point);
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let series: Map<String, Value> = self
            .series
            .iter()
            .map(|(key, points)| {
                (
                    key.to_string(),
                    Value::Array(points.iter().map(point_to_json).collect()),
                )
            })
            .collect();
        json!({
            "series": series,
            "window_start": self.window_start,
            "warning_key": self.warning_key,
            "percentile": self.percentile,
        })
        .to_string()
        .into_bytes()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let Ok(Value::Object(state)) = serde_json::from_slice::<Value>(state) else {
            return exec_err!("a corrupt otel aggregate state");
        };
        let histogram = self.histogram();
        if let Some(Value::Object(series)) = state.get("series") {
            for (key, points) in series {
                let Ok(key) = key.parse::<i64>() else { continue };
                let entry = self.series.entry(key).or_default();
                for point in points.as_array().into_iter().flatten() {
                    if let Some(point) = point_from_json(point, histogram) {
                        entry.push(point);
                    }
                }
            }
        }
        self.window_start = self.window_start.or(state.get("window_start").and_then(Value::as_i64));
        self.warning_key = self.warning_key.or(state.get("warning_key").and_then(Value::as_i64));
        self.percentile = self.percentile.or(state.get("percentile").and_then(Value::as_f64));
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let sorted = |points: &Vec<Point>| {
            let mut points = points.clone();
            points.sort_by_key(|p| (p.timestamp, p.start));
            points.dedup();
            points
        };
        match self.kind {
            Kind::Increase | Kind::Delta => {
                if self.series.is_empty() {
                    return Ok(Out::Null);
                }
                let total: f64 = self
                    .series
                    .values()
                    .map(|points| self.series_change(&sorted(points), self.kind == Kind::Increase).0)
                    .sum();
                Ok(Out::Real(total))
            }
            Kind::Rate => {
                let mut rate = None;
                for points in self.series.values() {
                    if let (change, Some(seconds)) = self.series_change(&sorted(points), true) {
                        rate = Some(rate.unwrap_or(0.0) + change / seconds);
                    }
                }
                Ok(rate.map_or(Out::Null, Out::Real))
            }
            Kind::HistogramMerge | Kind::HistogramPercentile => {
                let mut merged: Option<Histogram> = None;
                for points in self.series.values() {
                    if let Some(h) = self.series_histogram(&sorted(points))? {
                        match &mut merged {
                            Some(total) => total.add(&h, 1.0)?,
                            None => merged = Some(h),
                        }
                    }
                }
                let Some(merged) = merged else {
                    return Ok(Out::Null);
                };
                if self.kind == Kind::HistogramMerge {
                    return Ok(Out::Str(merged.to_json().to_string()));
                }
                let Some(p) = self.percentile else {
                    return Ok(Out::Null);
                };
                Ok(merged.percentile(p).map_or(Out::Null, Out::Real))
            }
        }
    }

    fn size(&self) -> usize {
        self.series.values().map(|p| p.len() * 96).sum()
    }
}

fn make(kind: Kind) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(OtelAgg {
        kind,
        series: BTreeMap::new(),
        window_start: None,
        warning_key: None,
        percentile: None,
    }))
}

/// `otel_increase($raw)`.
pub fn make_increase(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    make(Kind::Increase)
}

/// `otel_delta($raw)`.
pub fn make_delta(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    make(Kind::Delta)
}

/// `otel_rate($raw)`.
pub fn make_rate(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    make(Kind::Rate)
}

/// `otel_histogram_merge($raw)`.
pub fn make_histogram_merge(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    make(Kind::HistogramMerge)
}

/// `otel_histogram_percentile($raw, p)`.
pub fn make_histogram_percentile(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    make(Kind::HistogramPercentile)
}
