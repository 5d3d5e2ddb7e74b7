//! t-digest sketches (the merging variant, scale function k1, compression 100): the
//! aggregates `tdigest(x [, weight])`, `tdigest_merge(sketch)` (alias `merge_tdigest`) and
//! `percentilew(x, weight, p)`, and the scalars `percentile_tdigest(sketch, p [, type])`,
//! `percentiles_array_tdigest(sketch, p, ...)`, `rank_tdigest(sketch, value)` and
//! `tdigest_merge(sketch, ...)` / `merge_tdigest(sketch, ...)`.
//!
//! Percentiles follow Kusto's nearest-rank definition (the smallest value with at least p % of
//! the weight at or below it) wherever the digest still knows the values exactly: a centroid
//! that only ever absorbed copies of one value is *exact*; between centroids that summarize
//! different values the rank is interpolated linearly (the values of such a centroid are
//! assumed spread evenly around its mean). Small inputs thus give exact answers; on large
//! inputs the rank error stays well under 1 %.
//!
//! # Encoding of a sketch (a dynamic value)
//!
//! `[[1, compression, total_weight, min, max, "type"], [[mean, weight], [mean, weight, 1], ...]]`
//! where `type` is the KQL type of the values (`long`, `real`, `datetime` or `timespan`;
//! datetimes and timespans as nanoseconds) and the centroids ascend by mean; a
//! third element `1` marks a centroid summarizing different values (no third element: every
//! value it holds equals its mean).

use std::f64::consts::PI;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::Value;

use crate::json;
use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter};

/// Default compression (δ).
pub const COMPRESSION: f64 = 100.0;

/// The KQL type of the values in a digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Long,
    Real,
    DateTime,
    Timespan,
}

impl ValueKind {
    fn name(self) -> &'static str {
        match self {
            ValueKind::Long => "long",
            ValueKind::Real => "real",
            ValueKind::DateTime => "datetime",
            ValueKind::Timespan => "timespan",
        }
    }

    fn from_name(name: &str) -> ValueKind {
        match name {
            "long" | "int" => ValueKind::Long,
            "datetime" => ValueKind::DateTime,
            "timespan" => ValueKind::Timespan,
            _ => ValueKind::Real,
        }
    }

    fn code(self) -> u8 {
        match self {
            ValueKind::Long => 0,
            ValueKind::Real => 1,
            ValueKind::DateTime => 2,
            ValueKind::Timespan => 3,
        }
    }

    fn from_code(code: u8) -> ValueKind {
        match code {
            0 => ValueKind::Long,
            2 => ValueKind::DateTime,
            3 => ValueKind::Timespan,
            _ => ValueKind::Real,
        }
    }

    /// Whether values of this kind are whole numbers (results are rounded).
    fn integral(self) -> bool {
        self != ValueKind::Real
    }
}

/// A numeric view of a value for a digest (`None` for null, NaN and non-numbers).
pub fn numeric(v: Val<'_>) -> Option<(f64, ValueKind)> {
    let (x, kind) = match v {
        Val::Long(n) => (n as f64, ValueKind::Long),
        Val::Real(r) => (r, ValueKind::Real),
        Val::Bool(b) => (f64::from(u8::from(b)), ValueKind::Long),
        Val::DateTime(t) => (t as f64, ValueKind::DateTime),
        Val::Timespan(t) => (t as f64, ValueKind::Timespan),
        Val::Str(text) => match serde_json::from_str::<Value>(text).ok()? {
            Value::Number(n) if n.is_i64() => (n.as_f64()?, ValueKind::Long),
            Value::Number(n) => (n.as_f64()?, ValueKind::Real),
            _ => return None,
        },
        Val::Null => return None,
    };
    (!x.is_nan()).then_some((x, kind))
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Centroid {
    mean: f64,
    weight: f64,
    /// Every value absorbed equals `mean`.
    exact: bool,
}

/// A merging t-digest.
#[derive(Debug, Clone, PartialEq)]
pub struct TDigest {
    compression: f64,
    /// Compressed centroids, ascending by mean.
    centroids: Vec<Centroid>,
    /// Not yet compressed.
    buffer: Vec<Centroid>,
    total: f64,
    min: f64,
    max: f64,
    kind: ValueKind,
}

/// One step of the rank ↔ value mapping: at `x` the rank (weight at or below) jumps from `lo`
/// to `hi`; between steps it is linear.
#[derive(Debug, Clone, Copy)]
struct Step {
    x: f64,
    lo: f64,
    hi: f64,
}

impl TDigest {
    pub fn new(compression: f64, kind: ValueKind) -> TDigest {
        TDigest {
            compression: compression.clamp(10.0, 10_000.0),
            centroids: Vec::new(),
            buffer: Vec::new(),
            total: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            kind,
        }
    }

    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    pub fn total_weight(&self) -> f64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total <= 0.0
    }

    fn push(&mut self, c: Centroid) {
        self.total += c.weight;
        self.min = self.min.min(c.mean);
        self.max = self.max.max(c.mean);
        self.buffer.push(c);
        if self.buffer.len() >= (self.compression as usize) * 8 {
            self.compress();
        }
    }

    /// Adds `x` with `weight` (ignored unless finite and positive; NaN values are ignored).
    pub fn add(&mut self, x: f64, weight: f64) {
        if x.is_nan() || !(weight.is_finite() && weight > 0.0) {
            return;
        }
        self.push(Centroid {
            mean: x,
            weight,
            exact: true,
        });
    }

    /// Merges `other` into this digest.
    pub fn merge(&mut self, other: &TDigest) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            self.kind = other.kind;
        } else if self.kind != other.kind {
            self.kind = ValueKind::Real;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        for c in other.centroids.iter().chain(&other.buffer) {
            self.push(*c);
        }
    }

    fn k(&self, q: f64) -> f64 {
        self.compression / (2.0 * PI) * (2.0 * q.clamp(0.0, 1.0) - 1.0).asin()
    }

    fn k_inverse(&self, k: f64) -> f64 {
        let k = k.min(self.compression / 4.0);
        ((2.0 * PI * k / self.compression).sin() + 1.0) / 2.0
    }

    /// Merges the buffer into the centroids.
    pub fn compress(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        let mut all = std::mem::take(&mut self.centroids);
        all.append(&mut self.buffer);
        all.sort_by(|a, b| a.mean.total_cmp(&b.mean));
        let total = self.total;
        let mut out: Vec<Centroid> = Vec::with_capacity((self.compression as usize) * 2);
        let mut items = all.into_iter();
        let Some(mut current) = items.next() else { return };
        let mut before = 0.0;
        let mut limit = total * self.k_inverse(self.k(0.0) + 1.0);
        for next in items {
            let same = current.exact && next.exact && current.mean == next.mean;
            let weight = current.weight + next.weight;
            if same || before + weight <= limit {
                current.mean += (next.mean - current.mean) * next.weight / weight;
                current.weight = weight;
                current.exact = same;
            } else {
                before += current.weight;
                out.push(current);
                limit = total * self.k_inverse(self.k(before / total) + 1.0);
                current = next;
            }
        }
        out.push(current);
        self.centroids = out;
    }

    fn compressed(&self) -> TDigest {
        let mut copy = self.clone();
        copy.compress();
        copy
    }

    /// The steps of the rank mapping (the digest must be compressed).
    fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::with_capacity(self.centroids.len() + 2);
        if let Some(first) = self.centroids.first()
            && !first.exact
            && self.min < first.mean
        {
            steps.push(Step {
                x: self.min,
                lo: 0.0,
                hi: first.weight.min(1.0),
            });
        }
        let mut before = 0.0;
        for c in &self.centroids {
            if c.exact {
                steps.push(Step {
                    x: c.mean,
                    lo: before,
                    hi: before + c.weight,
                });
            } else {
                let middle = (before + (c.weight + 1.0) / 2.0).min(before + c.weight);
                steps.push(Step {
                    x: c.mean,
                    lo: middle,
                    hi: middle,
                });
            }
            before += c.weight;
        }
        if let Some(last) = self.centroids.last()
            && !last.exact
            && self.max > last.mean
        {
            steps.push(Step {
                x: self.max,
                lo: self.total,
                hi: self.total,
            });
        }
        steps
    }

    /// The weight at or below `x` (the digest must be compressed).
    fn rank_compressed(&self, x: f64) -> Option<f64> {
        let steps = self.steps();
        let first = steps.first()?;
        if x < first.x {
            return Some(0.0);
        }
        let j = steps.partition_point(|s| s.x <= x).saturating_sub(1);
        let here = steps[j];
        let Some(next) = steps.get(j + 1) else {
            return Some(here.hi);
        };
        let dx = next.x - here.x;
        Some(if dx > 0.0 {
            here.hi + (next.lo - here.hi) * (x - here.x) / dx
        } else {
            here.hi
        })
    }

    /// The weight at or below `x`, `None` for an empty digest.
    pub fn rank(&self, x: f64) -> Option<f64> {
        if self.buffer.is_empty() {
            self.rank_compressed(x)
        } else {
            self.compressed().rank_compressed(x)
        }
    }

    fn quantile_compressed(&self, q: f64) -> Option<f64> {
        if self.centroids.is_empty() || q.is_nan() {
            return None;
        }
        if q <= 0.0 {
            return Some(self.min);
        }
        let target = q * self.total * (1.0 - 1e-12);
        if target >= self.total {
            return Some(self.max);
        }
        let steps = self.steps();
        for (j, step) in steps.iter().enumerate() {
            if step.hi >= target {
                if j > 0 && target < step.lo {
                    let previous = steps[j - 1];
                    let span = step.lo - previous.hi;
                    if span > 0.0 {
                        return Some(previous.x + (target - previous.hi) / span * (step.x - previous.x));
                    }
                }
                return Some(step.x);
            }
        }
        Some(self.max)
    }

    /// The value at quantile `q` (0..=1) by nearest rank, `None` for an empty digest.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.buffer.is_empty() {
            self.quantile_compressed(q)
        } else {
            self.compressed().quantile_compressed(q)
        }
    }

    /// The sketch as a dynamic value (see the module docs).
    pub fn to_json(&self) -> Value {
        let digest = self.compressed();
        let centroids: Vec<Value> = digest
            .centroids
            .iter()
            .map(|c| {
                let mut entry = vec![number(c.mean), number(c.weight)];
                if !c.exact {
                    entry.push(Value::from(1));
                }
                Value::Array(entry)
            })
            .collect();
        let (min, max) = if digest.is_empty() {
            (Value::Null, Value::Null)
        } else {
            (number(digest.min), number(digest.max))
        };
        serde_json::json!([
            [
                1,
                number(digest.compression),
                number(digest.total),
                min,
                max,
                digest.kind.name()
            ],
            centroids
        ])
    }

    /// A digest from its dynamic value (`None` when it is not one).
    pub fn from_json(value: &Value) -> Option<TDigest> {
        let Value::Array(parts) = value else { return None };
        let [Value::Array(header), Value::Array(centroids)] = parts.as_slice() else {
            return None;
        };
        if header.first()?.as_i64()? != 1 {
            return None;
        }
        let compression = json::as_real(header.get(1)?)?;
        let kind = ValueKind::from_name(header.get(5).and_then(Value::as_str).unwrap_or("real"));
        let mut digest = TDigest::new(compression, kind);
        for entry in centroids {
            let Value::Array(entry) = entry else { return None };
            let mean = json::as_real(entry.first()?)?;
            let weight = json::as_real(entry.get(1)?)?;
            if mean.is_nan() || !(weight.is_finite() && weight > 0.0) {
                return None;
            }
            let exact = entry.get(2).and_then(Value::as_i64) != Some(1);
            digest.centroids.push(Centroid { mean, weight, exact });
            digest.total += weight;
        }
        digest.centroids.sort_by(|a, b| a.mean.total_cmp(&b.mean));
        let first = digest.centroids.first().map(|c| c.mean);
        let last = digest.centroids.last().map(|c| c.mean);
        digest.min = header.get(3).and_then(json::as_real).or(first).unwrap_or(f64::INFINITY);
        digest.max = header
            .get(4)
            .and_then(json::as_real)
            .or(last)
            .unwrap_or(f64::NEG_INFINITY);
        if let (Some(first), Some(last)) = (first, last) {
            digest.min = digest.min.min(first);
            digest.max = digest.max.max(last);
        }
        Some(digest)
    }

    /// A digest from the JSON text of a dynamic value.
    pub fn from_text(text: &str) -> Option<TDigest> {
        TDigest::from_json(&serde_json::from_str(text).ok()?)
    }

    fn write(&self, w: &mut StateWriter) {
        w.f64(self.compression)
            .f64(self.total)
            .f64(self.min)
            .f64(self.max)
            .u8(self.kind.code());
        let count = self.centroids.len() + self.buffer.len();
        w.u64(count as u64);
        for c in self.centroids.iter().chain(&self.buffer) {
            w.f64(c.mean).f64(c.weight).u8(u8::from(c.exact));
        }
    }

    fn read(r: &mut StateReader<'_>) -> Result<TDigest> {
        let compression = r.f64()?;
        let total = r.f64()?;
        let min = r.f64()?;
        let max = r.f64()?;
        let kind = ValueKind::from_code(r.u8()?);
        let mut digest = TDigest::new(compression, kind);
        let count = r.u64()?;
        for _ in 0..count {
            let mean = r.f64()?;
            let weight = r.f64()?;
            let exact = r.u8()? != 0;
            digest.buffer.push(Centroid { mean, weight, exact });
        }
        digest.total = total;
        digest.min = min;
        digest.max = max;
        // Kept as they came until the buffer is full, as `push` does: a digest of few values
        // merged from partial states then compresses once, over every value, and gives the
        // same answer however the values were split (one node or many, any partitioning).
        if digest.buffer.len() >= (digest.compression as usize) * 8 {
            digest.compress();
        }
        Ok(digest)
    }

    fn heap_size(&self) -> usize {
        (self.centroids.capacity() + self.buffer.capacity()) * std::mem::size_of::<Centroid>()
    }
}

/// A number as JSON: whole numbers without a fraction.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.2e18 {
        Value::from(x as i64)
    } else {
        json::real(x)
    }
}

fn arg<'a>(row: &[Val<'a>], i: usize) -> Val<'a> {
    row.get(i).copied().unwrap_or(Val::Null)
}

fn truncate(text: &str) -> String {
    text.chars().take(40).collect()
}

/// What a [`DigestAgg`] computes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum DigestKind {
    /// `tdigest(x [, weight])`: the sketch.
    Sketch,
    /// `tdigest_merge(sketch)`: the merged sketch.
    Merge,
    /// `percentilew(x, weight, p)`: one weighted percentile, as the type of `x`.
    PercentileW,
}

#[derive(Debug)]
struct DigestAgg {
    kind: DigestKind,
    digest: Option<TDigest>,
    /// The percent of `percentilew`.
    percent: Option<f64>,
    target: DataType,
}

impl DigestAgg {
    fn digest(&mut self, kind: ValueKind) -> &mut TDigest {
        self.digest.get_or_insert_with(|| TDigest::new(COMPRESSION, kind))
    }
}

impl RowAgg for DigestAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        match self.kind {
            DigestKind::Sketch | DigestKind::PercentileW => {
                if self.kind == DigestKind::PercentileW && self.percent.is_none() {
                    self.percent = arg(row, 2).real();
                }
                let Some((x, kind)) = numeric(arg(row, 0)) else {
                    if self.digest.is_none() && self.kind == DigestKind::Sketch {
                        self.digest(ValueKind::Long);
                    }
                    return Ok(());
                };
                let weight = match row.get(1) {
                    None => 1.0,
                    Some(w) => match w.real() {
                        Some(w) => w,
                        None => return Ok(()),
                    },
                };
                let digest = self.digest(kind);
                if digest.is_empty() {
                    digest.kind = kind;
                }
                digest.add(x, weight);
            }
            DigestKind::Merge => {
                let Some(text) = arg(row, 0).str() else { return Ok(()) };
                let Some(other) = TDigest::from_text(text) else {
                    return exec_err!("not a tdigest sketch: {}", truncate(text));
                };
                match &mut self.digest {
                    Some(digest) => digest.merge(&other),
                    None => self.digest = Some(other),
                }
            }
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        match &self.digest {
            None => {
                w.u8(0);
            }
            Some(digest) => {
                w.u8(1);
                digest.write(&mut w);
            }
        }
        match self.percent {
            None => w.u8(0),
            Some(p) => w.u8(1).f64(p),
        };
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        if r.u8()? == 1 {
            let other = TDigest::read(&mut r)?;
            match &mut self.digest {
                Some(digest) => digest.merge(&other),
                None => self.digest = Some(other),
            }
        }
        if r.u8()? == 1 {
            let p = r.f64()?;
            self.percent.get_or_insert(p);
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let Some(digest) = &self.digest else {
            return Ok(Out::Null);
        };
        match self.kind {
            DigestKind::Sketch | DigestKind::Merge => Ok(Out::Str(digest.to_json().to_string())),
            DigestKind::PercentileW => {
                let Some(percent) = self.percent else {
                    return Ok(Out::Null);
                };
                if !(0.0..=100.0).contains(&percent) {
                    return exec_err!("the percentile must be between 0 and 100, found {percent}");
                }
                Ok(match digest.quantile(percent / 100.0) {
                    None => Out::Null,
                    Some(x) => typed_out(x, &self.target),
                })
            }
        }
    }

    fn size(&self) -> usize {
        self.digest.as_ref().map_or(0, TDigest::heap_size)
    }
}

/// A value of a digest as `target` (rounded for whole-number types).
fn typed_out(x: f64, target: &DataType) -> Out {
    match target {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => Out::Long(x.round() as i64),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => Out::Long(x.round() as i64),
        DataType::Timestamp(_, _) => Out::DateTime(x.round() as i64),
        DataType::Duration(TimeUnit::Nanosecond) => Out::Timespan(x.round() as i64),
        DataType::Boolean => Out::Bool(x >= 0.5),
        _ => Out::Real(x),
    }
}

/// `tdigest(x [, weight])`.
pub fn make_tdigest(target: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(DigestAgg {
        kind: DigestKind::Sketch,
        digest: None,
        percent: None,
        target: target.clone(),
    }))
}

/// `tdigest_merge(sketch)` / `merge_tdigest(sketch)`.
pub fn make_tdigest_merge(target: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(DigestAgg {
        kind: DigestKind::Merge,
        digest: None,
        percent: None,
        target: target.clone(),
    }))
}

/// `percentilew(x, weight, p)`.
pub fn make_percentilew(target: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(DigestAgg {
        kind: DigestKind::PercentileW,
        digest: None,
        percent: None,
        target: target.clone(),
    }))
}

fn sketch_arg(v: Val<'_>) -> Result<Option<TDigest>> {
    let Some(text) = v.str() else { return Ok(None) };
    match TDigest::from_text(text) {
        Some(digest) => Ok(Some(digest)),
        None => exec_err!("not a tdigest sketch: {}", truncate(text)),
    }
}

/// A digest value as a real, rounded for whole-number kinds.
fn value_of(digest: &TDigest, x: f64) -> f64 {
    if digest.kind().integral() { x.round() } else { x }
}

/// `percentile_tdigest(sketch, p [, typeof(T)])`: the p-th percentile (a real; rounded when
/// the digest holds whole numbers). The type argument is accepted and ignored.
pub fn percentile_tdigest(args: &[Val]) -> Result<Out> {
    let Some(digest) = sketch_arg(arg(args, 0))? else {
        return Ok(Out::Null);
    };
    let Some(percent) = arg(args, 1).real() else {
        return Ok(Out::Null);
    };
    if !(0.0..=100.0).contains(&percent) {
        return exec_err!("the percentile must be between 0 and 100, found {percent}");
    }
    Ok(digest
        .quantile(percent / 100.0)
        .map_or(Out::Null, |x| Out::Real(value_of(&digest, x))))
}

fn json_value(digest: &TDigest, x: f64) -> Value {
    match digest.kind() {
        ValueKind::Real => json::real(x),
        _ => Value::from(x.round() as i64),
    }
}

/// `percentiles_array_tdigest(sketch, p1, p2, ...)` or `(sketch, dynamic([p1, ...]))`: the
/// percentiles as a dynamic array. Arguments that are not numbers (a type) are ignored.
pub fn percentiles_array_tdigest(args: &[Val]) -> Result<Out> {
    let Some(digest) = sketch_arg(arg(args, 0))? else {
        return Ok(Out::Null);
    };
    let mut percents = Vec::new();
    for v in args.iter().skip(1) {
        match v {
            Val::Str(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Array(items)) => percents.extend(items.iter().filter_map(json::as_real)),
                Ok(Value::Number(n)) => percents.extend(n.as_f64()),
                _ => {}
            },
            other => percents.extend(other.real()),
        }
    }
    let mut out = Vec::with_capacity(percents.len());
    for percent in percents {
        if !(0.0..=100.0).contains(&percent) {
            return exec_err!("the percentile must be between 0 and 100, found {percent}");
        }
        out.push(
            digest
                .quantile(percent / 100.0)
                .map_or(Value::Null, |x| json_value(&digest, x)),
        );
    }
    Ok(json::out(Value::Array(out)))
}

/// `rank_tdigest(sketch, value)`: the (estimated) weight of the values at or below `value`.
pub fn rank_tdigest(args: &[Val]) -> Result<Out> {
    let Some(digest) = sketch_arg(arg(args, 0))? else {
        return Ok(Out::Null);
    };
    let Some((x, _)) = numeric(arg(args, 1)) else {
        return Ok(Out::Null);
    };
    Ok(digest.rank(x).map_or(Out::Null, |r| Out::Long(r.round() as i64)))
}

/// `percentrank_tdigest(sketch, value)`: the percentage of the weight at or below `value`.
pub fn percentrank_tdigest(args: &[Val]) -> Result<Out> {
    let Some(digest) = sketch_arg(arg(args, 0))? else {
        return Ok(Out::Null);
    };
    let Some((x, _)) = numeric(arg(args, 1)) else {
        return Ok(Out::Null);
    };
    let total = digest.total_weight();
    Ok(match digest.rank(x) {
        Some(rank) if total > 0.0 => Out::Real(100.0 * rank / total),
        _ => Out::Null,
    })
}

/// `tdigest_merge(sketch, ...)` / `merge_tdigest(sketch, ...)` (scalar): the sketches
/// merged; nulls are skipped.
pub fn tdigest_merge_scalar(args: &[Val]) -> Result<Out> {
    let mut merged: Option<TDigest> = None;
    for v in args {
        let Some(digest) = sketch_arg(*v)? else { continue };
        match &mut merged {
            Some(m) => m.merge(&digest),
            None => merged = Some(digest),
        }
    }
    Ok(merged.map_or(Out::Null, |m| Out::Str(m.to_json().to_string())))
}

#[cfg(test)]
#[path = "tdigest_tests.rs"]
mod tests;
