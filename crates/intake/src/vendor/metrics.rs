//! Metric series and sketches to metric rows: `/api/v2/series` (protobuf `MetricPayload`),
//! `/api/intake/metrics/v3/series` (the columnar payload, decoded in [`super::series_v3`]) and
//! `/api/beta/sketches` (`SketchPayload`). One row per point; the mapping table is in the
//! README beside this file.

use std::sync::Arc;

use serde_json::{Map, Value as Json};
use trawl_common::{Row, Value};
use trawl_proto::prost::Message;
use trawl_proto::vendor::agentpayload::metric_payload::MetricType;
use trawl_proto::vendor::agentpayload::{MetricPayload, SketchPayload};

use crate::otlp::common::{Rejections, count_as_long, double_to_json};
use crate::vendor::logs::add_tag;
use crate::vendor::sketch;
use crate::{IntakeError, IntakeOutput};

/// `scope_name` of every vendor metric row.
pub const SCOPE_NAME: &str = "vx";

/// Cells a vendor metric row can have.
const METRIC_COLUMNS: usize = 21;

/// Decodes a `/api/v2/series` body. A JSON body (the `/api/v1/series` shape, which is not
/// served) is refused by name rather than as undecodable bytes.
pub fn decode_series_v2(body: &[u8]) -> Result<MetricPayload, IntakeError> {
    refuse_json(body, "a protobuf MetricPayload")?;
    MetricPayload::decode(body).map_err(|e| IntakeError::MalformedBody {
        expected: "a protobuf MetricPayload",
        found: format!("undecodable bytes ({e})"),
    })
}

/// Decodes a `/api/beta/sketches` body.
pub fn decode_sketches(body: &[u8]) -> Result<SketchPayload, IntakeError> {
    refuse_json(body, "a protobuf SketchPayload")?;
    SketchPayload::decode(body).map_err(|e| IntakeError::MalformedBody {
        expected: "a protobuf SketchPayload",
        found: format!("undecodable bytes ({e})"),
    })
}

/// A JSON document where protobuf is expected: refused with a message that says so.
pub(crate) fn refuse_json(body: &[u8], expected: &'static str) -> Result<(), IntakeError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{') | Some(b'[')) && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
        return Err(IntakeError::MalformedBody {
            expected,
            found: "a JSON body (JSON series are not served; send protobuf)".to_owned(),
        });
    }
    Ok(())
}

/// What a series' type makes of its points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Count,
    Rate,
}

impl Kind {
    /// The kind of a v2 type number; unspecified and unknown types are gauges.
    pub fn from_v2(number: i32) -> Kind {
        match MetricType::try_from(number) {
            Ok(MetricType::Count) => Kind::Count,
            Ok(MetricType::Rate) => Kind::Rate,
            Ok(MetricType::Gauge) | Ok(MetricType::Unspecified) | Err(_) => Kind::Gauge,
        }
    }
}

/// What every point row of one series shares, computed once per series.
pub struct SeriesCells {
    pub name: String,
    pub unit: String,
    /// Seconds between samples; 0 when not given.
    pub interval: i64,
    attributes: Option<Arc<str>>,
    resource: Option<Arc<str>>,
    scope_version: &'static str,
    /// See [`crate::series`].
    metric_hash: i64,
}

impl SeriesCells {
    /// `tags` become attributes (`key:value`, repeated keys as arrays); the `host` resource
    /// becomes `resource['host.name']` and any other resource `resource[type] = name`.
    pub fn new<'a>(
        name: &str,
        unit: &str,
        interval: i64,
        tags: impl IntoIterator<Item = &'a str>,
        resources: impl IntoIterator<Item = (&'a str, &'a str)>,
        extra_attributes: impl IntoIterator<Item = (&'static str, Json)>,
        scope_version: &'static str,
    ) -> SeriesCells {
        let mut attributes = Map::new();
        for tag in tags {
            add_tag(tag, &mut attributes);
        }
        attributes.extend(extra_attributes.into_iter().map(|(k, v)| (k.to_owned(), v)));
        let mut resource = Map::new();
        for (kind, value) in resources {
            if value.is_empty() {
                continue;
            }
            let key = if kind == "host" { "host.name" } else { kind };
            resource.insert(key.to_owned(), Json::String(value.to_owned()));
        }
        fn pairs(bag: &Map<String, Json>) -> impl Iterator<Item = (&str, String)> {
            bag.iter().map(|(k, v)| (k.as_str(), v.to_string()))
        }
        let metric_hash = crate::series::SeriesSeed::new(pairs(&resource), SCOPE_NAME, scope_version, name)
            .metric_hash(pairs(&attributes));
        let text = |bag: Map<String, Json>| (!bag.is_empty()).then(|| Arc::from(Json::Object(bag).to_string()));
        SeriesCells {
            metric_hash,
            name: name.to_owned(),
            unit: unit.to_owned(),
            interval,
            attributes: text(attributes),
            resource: text(resource),
            scope_version,
        }
    }

    /// A row: times and metric metadata, `push_values`, then attributes, resource and scope.
    fn row(
        &self,
        timestamp_secs: i64,
        start_secs: Option<i64>,
        metric_type: &'static str,
        ingest_time_nanos: i64,
        push_values: impl FnOnce(&mut Row),
    ) -> Result<Row, String> {
        let nanos = |secs: i64| {
            secs.checked_mul(1_000_000_000)
                .ok_or_else(|| format!("timestamp {secs} s is out of range"))
        };
        let mut row = Row::with_capacity(METRIC_COLUMNS);
        row.push("timestamp", Value::DateTime(nanos(timestamp_secs)?));
        if let Some(start) = start_secs {
            row.push("start_time", Value::DateTime(nanos(start)?));
        }
        row.push("ingest_time", Value::DateTime(ingest_time_nanos));
        if !self.name.is_empty() {
            row.push("metric_name", Value::String(self.name.clone()));
        }
        row.push("metric_type", Value::String(metric_type.to_owned()));
        if !self.unit.is_empty() {
            row.push("metric_unit", Value::String(self.unit.clone()));
        }
        push_values(&mut row);
        if let Some(attributes) = &self.attributes {
            row.push("attributes", Value::JsonText(attributes.clone()));
        }
        row.push("metric_hash", Value::Long(self.metric_hash));
        if let Some(resource) = &self.resource {
            row.push("resource", Value::JsonText(resource.clone()));
        }
        row.push("scope_name", Value::String(SCOPE_NAME.to_owned()));
        row.push("scope_version", Value::String(self.scope_version.to_owned()));
        Ok(row)
    }

    /// The row of one point of a gauge, count or rate series (SPEC "Vendor-compatible intake
    /// mappings", metrics): COUNT is a non-monotonic DELTA sum, RATE a DELTA sum of the
    /// per-second value times the interval (a gauge of the per-second value without one),
    /// both marked `vx.metric_type = 'rate'`.
    pub fn point_row(
        &self,
        kind: Kind,
        timestamp_secs: i64,
        value: f64,
        ingest_time_nanos: i64,
    ) -> Result<Row, String> {
        let start = (self.interval > 0 && kind != Kind::Gauge).then(|| timestamp_secs.saturating_sub(self.interval));
        let (metric_type, value) = match kind {
            Kind::Gauge => ("gauge", value),
            Kind::Count => ("sum", value),
            Kind::Rate if self.interval > 0 => ("sum", value * self.interval as f64),
            Kind::Rate => ("gauge", value),
        };
        self.row(timestamp_secs, start, metric_type, ingest_time_nanos, |row| {
            row.push("value", Value::Real(value));
            if metric_type == "sum" {
                row.push("aggregation_temporality", Value::String("DELTA".to_owned()));
                row.push("is_monotonic", Value::Bool(false));
            }
        })
    }

    /// The row of one sketch: an exponential histogram at scale 5 with exact count, sum, min
    /// and max.
    pub fn sketch_row(&self, point: &SketchPoint, ingest_time_nanos: i64) -> Result<Row, String> {
        let count = point.count;
        if count < 0 {
            return Err(format!("sketch count {count} is negative"));
        }
        let buckets = sketch::rebin(&point.keys, &point.counts)?;
        self.row(
            point.timestamp_secs,
            None,
            "exponential_histogram",
            ingest_time_nanos,
            |row| {
                row.push("count", Value::Long(count));
                row.push("sum", Value::Real(point.sum));
                row.push("min", Value::Real(point.min));
                row.push("max", Value::Real(point.max));
                row.push("scale", Value::Long(i64::from(sketch::SCALE)));
                row.push("zero_count", Value::Long(buckets.zero_count));
                for (column, side) in [("positive", &buckets.positive), ("negative", &buckets.negative)] {
                    if let Some(side) = side {
                        row.push(column, Value::Dynamic(side.to_json()));
                    }
                }
                row.push("aggregation_temporality", Value::String("DELTA".to_owned()));
            },
        )
    }

    /// The row of one histogram point: `histogram` (explicit bounds) or
    /// `exponential_histogram`, laid out as OTLP's are; the Agent sends deltas.
    pub fn histogram_row(&self, point: &HistogramPoint, ingest_time_nanos: i64) -> Result<Row, String> {
        let metric_type = match point.buckets {
            HistogramBuckets::Explicit { .. } => "histogram",
            HistogramBuckets::Exponential { .. } => "exponential_histogram",
        };
        let count = count_as_long(point.count, "count")?;
        let zero_count = match &point.buckets {
            HistogramBuckets::Exponential { zero_count, .. } => Some(count_as_long(*zero_count, "zero count")?),
            HistogramBuckets::Explicit { .. } => None,
        };
        self.row(point.timestamp_secs, None, metric_type, ingest_time_nanos, |row| {
            row.push("count", count);
            row.push("sum", Value::Real(point.sum));
            if let Some(min) = point.min {
                row.push("min", Value::Real(min));
            }
            if let Some(max) = point.max {
                row.push("max", Value::Real(max));
            }
            match &point.buckets {
                HistogramBuckets::Explicit { bounds, counts } => {
                    if !counts.is_empty() {
                        let counts = counts.iter().map(|c| Json::from(*c)).collect();
                        row.push("bucket_counts", Value::Dynamic(Json::Array(counts)));
                    }
                    if !bounds.is_empty() {
                        let bounds = bounds.iter().map(|b| double_to_json(*b)).collect();
                        row.push("explicit_bounds", Value::Dynamic(Json::Array(bounds)));
                    }
                }
                HistogramBuckets::Exponential {
                    scale,
                    positive,
                    negative,
                    ..
                } => {
                    row.push("scale", Value::Long(i64::from(*scale)));
                    if let Some(zero_count) = zero_count {
                        row.push("zero_count", zero_count);
                    }
                    row.push("positive", Value::Dynamic(positive.to_json()));
                    row.push("negative", Value::Dynamic(negative.to_json()));
                }
            }
            row.push("aggregation_temporality", Value::String("DELTA".to_owned()));
        })
    }
}

/// A histogram point of a v3 series (the Agent's OpenTelemetry histograms): `min` and `max`
/// only when the point carries them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistogramPoint {
    pub timestamp_secs: i64,
    pub count: u64,
    pub sum: f64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub buckets: HistogramBuckets,
}

/// The buckets of a [`HistogramPoint`].
#[derive(Debug, Clone, PartialEq)]
pub enum HistogramBuckets {
    /// `counts` has one entry more than `bounds`, or both are empty (a summary-only point).
    Explicit { bounds: Vec<f64>, counts: Vec<u64> },
    Exponential {
        scale: i32,
        zero_count: u64,
        positive: sketch::Side,
        negative: sketch::Side,
    },
}

impl Default for HistogramBuckets {
    fn default() -> Self {
        HistogramBuckets::Explicit {
            bounds: Vec::new(),
            counts: Vec::new(),
        }
    }
}

/// One sketch point, from a v2 `Dogsketch` or a v3 sketch series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SketchPoint {
    pub timestamp_secs: i64,
    pub count: i64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    /// Bin keys (already delta-decoded) and their counts.
    pub keys: Vec<i32>,
    pub counts: Vec<u64>,
}

/// Rows of a v2 series payload (`scope_version = 'v2'`).
pub fn series_v2_to_rows(payload: &MetricPayload, ingest_time_nanos: i64) -> IntakeOutput {
    let mut rows = Vec::with_capacity(payload.series.iter().map(|s| s.points.len()).sum());
    let mut rejections = Rejections::new("point", "points");
    for (series_index, series) in payload.series.iter().enumerate() {
        let kind = Kind::from_v2(series.r#type);
        let cells = SeriesCells::new(
            &series.metric,
            &series.unit,
            series.interval,
            series.tags.iter().map(String::as_str),
            series.resources.iter().map(|r| (r.r#type.as_str(), r.name.as_str())),
            rate_marker(kind)
                .into_iter()
                .chain(source_type(&series.source_type_name)),
            "v2",
        );
        for (point_index, point) in series.points.iter().enumerate() {
            match cells.point_row(kind, point.timestamp, point.value, ingest_time_nanos) {
                Ok(row) => rows.push(row),
                Err(reason) => rejections.reject(|| format!("series[{series_index}].points[{point_index}]"), reason),
            }
        }
    }
    rejections.into_output(rows)
}

/// `vx.metric_type = 'rate'` for rate series.
pub(crate) fn rate_marker(kind: Kind) -> Option<(&'static str, Json)> {
    (kind == Kind::Rate).then(|| ("vx.metric_type", Json::String("rate".to_owned())))
}

/// `vx.source_type_name` (the check that produced the series), when given.
pub(crate) fn source_type(name: &str) -> Option<(&'static str, Json)> {
    (!name.is_empty()).then(|| ("vx.source_type_name", Json::String(name.to_owned())))
}

/// Rows of a sketch payload (`scope_version = 'beta'`), one per `Dogsketch`.
pub fn sketches_to_rows(payload: &SketchPayload, ingest_time_nanos: i64) -> IntakeOutput {
    let mut rows = Vec::with_capacity(payload.sketches.iter().map(|s| s.dogsketches.len()).sum());
    let mut rejections = Rejections::new("sketch", "sketches");
    for (sketch_index, sketch) in payload.sketches.iter().enumerate() {
        let cells = SeriesCells::new(
            &sketch.metric,
            "",
            0,
            sketch.tags.iter().map(String::as_str),
            [("host", sketch.host.as_str())],
            [],
            "beta",
        );
        for (point_index, dogsketch) in sketch.dogsketches.iter().enumerate() {
            let location = || format!("sketches[{sketch_index}].dogsketches[{point_index}]");
            if dogsketch.k.len() != dogsketch.n.len() {
                let reason = format!(
                    "expected as many bin counts as keys ({}), found {}",
                    dogsketch.k.len(),
                    dogsketch.n.len()
                );
                rejections.reject(location, reason);
                continue;
            }
            let point = SketchPoint {
                timestamp_secs: dogsketch.ts,
                count: dogsketch.cnt,
                sum: dogsketch.sum,
                min: dogsketch.min,
                max: dogsketch.max,
                keys: dogsketch.k.clone(),
                counts: dogsketch.n.iter().map(|&n| u64::from(n)).collect(),
            };
            match cells.sketch_row(&point, ingest_time_nanos) {
                Ok(row) => rows.push(row),
                Err(reason) => rejections.reject(location, reason),
            }
        }
    }
    rejections.into_output(rows)
}

#[cfg(test)]
mod tests;
