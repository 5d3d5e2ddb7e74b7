//! `/api/intake/metrics/v3/series` (and `/v3/sketches`, `/v3beta/…`): the columnar series
//! payload to metric rows, mapped as v2 series are (`scope_version = 'v3'`); its sketch series
//! become exponential histograms as `/api/beta/sketches` ones do, and its histogram series (the
//! Agent's OpenTelemetry histograms, types 6 and 7) become `histogram` and
//! `exponential_histogram` rows laid out as OTLP's are.
//!
//! Layout: string dictionaries are runs of `varint length + bytes`, referenced from 1 (0 is the
//! empty value). A tag set is its length then delta-coded indexes into the tag strings; a
//! negative running index includes another (earlier) tag set. Resource sets are pairs of
//! delta-coded type and name indexes. The per-series reference columns are delta-coded over
//! the whole column, as are the timestamps (seconds); values sit in the column the series'
//! value type names. A reference past the end of its dictionary, or a column that ends early,
//! refuses the whole payload: the columns cannot be realigned after it. Per-series columns
//! other than `types` and `nameRefs` may be left out whole (an encoder that has nothing but
//! zeros for them, or predates them, such as one without `sourceTypeNameRefs`): they read as
//! zeros, that is the empty entry of their dictionary, or no interval.
//!
//! Histogram points: an explicit-bucket point has its sum, min and max (when `pointFlags` bits
//! 1 and 2 say so) and `numBins − 1` bounds in its value column, `numBins` bucket counts in
//! `sketchBinCnts` and its count in `valsUint64`. An exponential point has scale, positive
//! and negative offsets first in `valsSint64`, then sum, min, max and zero threshold in its
//! value column, two `numBins` entries (positive, negative) and their counts, and count and
//! zero count in `valsUint64`. The zero threshold has no column and is not kept.

use trawl_proto::prost::Message;
use trawl_proto::prost::encoding::decode_varint;
use trawl_proto::vendor::metrics::v3::{MetricData, Payload};

use crate::otlp::common::Rejections;
use crate::vendor::metrics::{
    HistogramBuckets, HistogramPoint, Kind, SeriesCells, SketchPoint, rate_marker, refuse_json, source_type,
};
use crate::vendor::sketch::Side;
use crate::{IntakeError, IntakeOutput};

const TYPE_COUNT: u64 = 1;
const TYPE_RATE: u64 = 2;
const TYPE_GAUGE: u64 = 3;
const TYPE_SKETCH: u64 = 4;
const TYPE_EXPLICIT_HISTOGRAM: u64 = 6;
const TYPE_EXPONENTIAL_HISTOGRAM: u64 = 7;
const VALUE_ZERO: u64 = 0x00;
const VALUE_SINT64: u64 = 0x10;
const VALUE_FLOAT32: u64 = 0x20;
const VALUE_FLOAT64: u64 = 0x30;
const FLAG_HAS_UNIT: u64 = 0x200;
/// `pointFlags` bits of a histogram point.
const POINT_HAS_MIN: u64 = 0x1;
const POINT_HAS_MAX: u64 = 0x2;
/// The scales OpenTelemetry allows an exponential histogram.
const SCALES: std::ops::RangeInclusive<i64> = -10..=20;
/// Most tags one tag set may hold once the sets it includes are expanded.
const MAX_TAGS_PER_SET: usize = 10_000;

/// Decodes a v3 body.
pub fn decode(body: &[u8]) -> Result<Payload, IntakeError> {
    refuse_json(body, "a protobuf v3 series payload")?;
    Payload::decode(body).map_err(|e| IntakeError::MalformedBody {
        expected: "a protobuf v3 series payload",
        found: format!("undecodable bytes ({e})"),
    })
}

fn broken(found: String) -> IntakeError {
    IntakeError::MalformedBody {
        expected: "a consistent v3 series payload",
        found,
    }
}

/// `[""]` followed by the dictionary's strings.
fn strings(mut raw: &[u8], column: &str) -> Result<Vec<String>, IntakeError> {
    let mut out = vec![String::new()];
    while !raw.is_empty() {
        let length = decode_varint(&mut raw).map_err(|e| broken(format!("{column}: {e}")))?;
        let length = usize::try_from(length)
            .ok()
            .filter(|l| *l <= raw.len())
            .ok_or_else(|| broken(format!("{column}: an entry of {length} bytes past the end")))?;
        let (text, rest) = raw.split_at(length);
        out.push(String::from_utf8_lossy(text).into_owned());
        raw = rest;
    }
    Ok(out)
}

fn tagsets(packed: &[i64], tags: &[String]) -> Result<Vec<Vec<String>>, IntakeError> {
    let mut sets: Vec<Vec<String>> = vec![Vec::new()];
    let mut rest = packed;
    while let Some((&size, tail)) = rest.split_first() {
        let size = usize::try_from(size)
            .ok()
            .filter(|s| *s <= tail.len())
            .ok_or_else(|| broken(format!("dictTagsets: a set of {size} entries past the end")))?;
        let mut set = Vec::with_capacity(size);
        let mut index = 0_i64;
        for delta in &tail[..size] {
            index = index.wrapping_add(*delta);
            if index < 0 {
                let other = sets
                    .get(index.unsigned_abs() as usize)
                    .ok_or_else(|| broken(format!("dictTagsets: no tag set {}", -index)))?;
                // Sets that include earlier sets twice double at each step: bound them.
                if set.len() + other.len() > MAX_TAGS_PER_SET {
                    return Err(broken(format!(
                        "dictTagsets: a set of more than {MAX_TAGS_PER_SET} tags"
                    )));
                }
                set.extend(other.iter().cloned());
            } else {
                let tag = tags
                    .get(index as usize)
                    .ok_or_else(|| broken(format!("dictTagsets: no tag string {index}")))?;
                set.push(tag.clone());
            }
        }
        sets.push(set);
        rest = &tail[size..];
    }
    Ok(sets)
}

fn resource_sets(data: &MetricData, strings: &[String]) -> Result<Vec<Vec<(String, String)>>, IntakeError> {
    let mut sets = vec![Vec::new()];
    let mut start = 0_usize;
    for &size in &data.dict_resource_len {
        let end = usize::try_from(size)
            .ok()
            .and_then(|s| start.checked_add(s))
            .filter(|e| *e <= data.dict_resource_type.len() && *e <= data.dict_resource_name.len())
            .ok_or_else(|| broken(format!("dictResourceLen: a set of {size} pairs past the end")))?;
        let (mut kind, mut name) = (0_i64, 0_i64);
        let mut set = Vec::with_capacity(end - start);
        for i in start..end {
            kind = kind.wrapping_add(data.dict_resource_type[i]);
            name = name.wrapping_add(data.dict_resource_name[i]);
            let lookup = |index: i64| {
                usize::try_from(index)
                    .ok()
                    .and_then(|i| strings.get(i))
                    .cloned()
                    .ok_or_else(|| broken(format!("dictResource: no resource string {index}")))
            };
            set.push((lookup(kind)?, lookup(name)?));
        }
        sets.push(set);
        start = end;
    }
    Ok(sets)
}

/// A running index into a delta-coded column.
struct Cursor<'a, T> {
    column: &'a [T],
    name: &'static str,
    next: usize,
    /// The column was left out of the payload: every entry reads as zero.
    absent: bool,
}

impl<'a, T: Copy + Default> Cursor<'a, T> {
    fn new(column: &'a [T], name: &'static str) -> Cursor<'a, T> {
        Cursor {
            column,
            name,
            next: 0,
            absent: false,
        }
    }

    /// A per-series column an encoder may leave out when every entry is zero (columns added
    /// after the first version of the payload, such as `sourceTypeNameRefs`, and references
    /// that are all "the empty entry"): empty reads as zeros; otherwise it must be whole.
    fn optional(column: &'a [T], name: &'static str) -> Cursor<'a, T> {
        Cursor {
            absent: column.is_empty(),
            ..Cursor::new(column, name)
        }
    }

    fn take(&mut self) -> Result<T, IntakeError> {
        if self.absent {
            return Ok(T::default());
        }
        let value = self
            .column
            .get(self.next)
            .copied()
            .ok_or_else(|| broken(format!("{} ends after {} entries", self.name, self.next)))?;
        self.next += 1;
        Ok(value)
    }

    fn take_slice(&mut self, count: usize) -> Result<&'a [T], IntakeError> {
        let end = self.next.saturating_add(count);
        let slice = self
            .column
            .get(self.next..end)
            .ok_or_else(|| broken(format!("{} ends after {} entries", self.name, self.column.len())))?;
        self.next = end;
        Ok(slice)
    }
}

/// A delta-coded reference into a dictionary of `len` entries.
struct Reference {
    value: i64,
    name: &'static str,
}

impl Reference {
    fn new(name: &'static str) -> Reference {
        Reference { value: 0, name }
    }

    fn advance(&mut self, delta: i64, len: usize) -> Result<usize, IntakeError> {
        self.value = self.value.wrapping_add(delta);
        usize::try_from(self.value)
            .ok()
            .filter(|v| *v < len)
            .ok_or_else(|| broken(format!("{} refers to entry {} of {len}", self.name, self.value)))
    }
}

/// What a series' metric type makes of its points.
#[derive(Clone, Copy)]
enum SeriesKind {
    Point(Kind),
    Sketch,
    Explicit,
    Exponential,
}

/// The value columns; a series' value type names the one its values sit in.
struct Values<'a> {
    sint64: Cursor<'a, i64>,
    float32: Cursor<'a, f32>,
    float64: Cursor<'a, f64>,
}

impl Values<'_> {
    /// The next value of a (checked) value type; the zero type stores nothing.
    fn take(&mut self, value_type: u64) -> Result<f64, IntakeError> {
        Ok(match value_type {
            VALUE_SINT64 => self.sint64.take()? as f64,
            VALUE_FLOAT32 => f64::from(self.float32.take()?),
            VALUE_FLOAT64 => self.float64.take()?,
            _ => 0.0,
        })
    }

    /// A histogram point's sum, then its min and max when its flags say it has them.
    fn summary(&mut self, value_type: u64, flags: u64) -> Result<(f64, Option<f64>, Option<f64>), IntakeError> {
        let sum = self.take(value_type)?;
        let min = if flags & POINT_HAS_MIN != 0 {
            Some(self.take(value_type)?)
        } else {
            None
        };
        let max = if flags & POINT_HAS_MAX != 0 {
            Some(self.take(value_type)?)
        } else {
            None
        };
        Ok((sum, min, max))
    }
}

/// The Agent writes `pointFlags` for histogram points only; a payload whose column has one
/// entry for every point (and not only the histogram ones) is read that way instead.
fn point_flags_on_every_point(data: &MetricData) -> bool {
    let mut all = 0_u64;
    let mut histogram = 0_u64;
    for (&packed_type, &points) in data.types.iter().zip(&data.num_points) {
        all = all.saturating_add(points);
        if matches!(packed_type & 0xF, TYPE_EXPLICIT_HISTOGRAM | TYPE_EXPONENTIAL_HISTOGRAM) {
            histogram = histogram.saturating_add(points);
        }
    }
    let flags = data.point_flags.len() as u64;
    flags != histogram && flags == all
}

/// An exponential histogram's scale and bucket offsets, checked.
fn exponential_header(scale: i64, positive: i64, negative: i64) -> Result<(i32, i64, i64), String> {
    if !SCALES.contains(&scale) {
        return Err(format!(
            "exponential histogram scale {scale} is outside {}..={}",
            SCALES.start(),
            SCALES.end()
        ));
    }
    let offset = |value: i64| {
        i32::try_from(value)
            .map(i64::from)
            .map_err(|_| format!("exponential histogram bucket offset {value} is out of range"))
    };
    Ok((scale as i32, offset(positive)?, offset(negative)?))
}

/// Rows of a v3 payload. Structural damage refuses the payload; a point whose time is out of
/// range is only counted.
pub fn to_rows(payload: &Payload, ingest_time_nanos: i64) -> Result<IntakeOutput, IntakeError> {
    let empty = MetricData::default();
    let data = payload.metric_data.as_ref().unwrap_or(&empty);
    let names = strings(&data.dict_name_str, "dictNameStr")?;
    let tag_strings = strings(&data.dict_tag_str, "dictTagStr")?;
    let tag_sets = tagsets(&data.dict_tagsets, &tag_strings)?;
    let resource_strings = strings(&data.dict_resource_str, "dictResourceStr")?;
    let resources = resource_sets(data, &resource_strings)?;
    let source_types = strings(&data.dict_source_type_name, "dictSourceTypeName")?;
    let units = strings(&data.dict_unit_str, "dictUnitStr")?;
    let (meta_tags, meta_resources) = match &payload.metadata {
        Some(metadata) => (metadata.tags.as_slice(), metadata.resources.as_slice()),
        None => (&[][..], &[][..]),
    };
    let meta_resources: Vec<(&str, &str)> = meta_resources
        .chunks(2)
        .filter_map(|pair| match pair {
            [kind, name] => Some((kind.as_str(), name.as_str())),
            _ => None,
        })
        .collect();

    let mut name_ref = Reference::new("nameRefs");
    let mut tagset_ref = Reference::new("tagsetRefs");
    let mut resources_ref = Reference::new("resourcesRefs");
    let mut source_ref = Reference::new("sourceTypeNameRefs");
    let mut unit_ref = Reference::new("unitRefs");
    let mut name_refs = Cursor::new(&data.name_refs, "nameRefs");
    let mut tagset_refs = Cursor::optional(&data.tagset_refs, "tagsetRefs");
    let mut resources_refs = Cursor::optional(&data.resources_refs, "resourcesRefs");
    let mut source_refs = Cursor::optional(&data.source_type_name_refs, "sourceTypeNameRefs");
    let mut unit_refs = Cursor::optional(&data.unit_refs, "unitRefs");
    let mut intervals = Cursor::optional(&data.intervals, "intervals");
    let mut num_points = Cursor::new(&data.num_points, "numPoints");
    let mut timestamps = Cursor::new(&data.timestamps, "timestamps");
    let mut values = Values {
        sint64: Cursor::new(&data.vals_sint64, "valsSint64"),
        float32: Cursor::new(&data.vals_float32, "valsFloat32"),
        float64: Cursor::new(&data.vals_float64, "valsFloat64"),
    };
    let mut uint64s = Cursor::new(&data.vals_uint64, "valsUint64");
    let mut bin_counts = Cursor::new(&data.sketch_num_bins, "sketchNumBins");
    let mut bin_keys = Cursor::new(&data.sketch_bin_keys, "sketchBinKeys");
    let mut bin_cnts = Cursor::new(&data.sketch_bin_cnts, "sketchBinCnts");
    let flags_on_every_point = point_flags_on_every_point(data);
    let mut point_flags = Cursor::new(&data.point_flags, "pointFlags");
    let mut timestamp = 0_i64;

    let mut rows = Vec::with_capacity(data.timestamps.len());
    let mut rejections = Rejections::new("point", "points");
    for (series_index, &packed_type) in data.types.iter().enumerate() {
        let value_type = packed_type & 0xF0;
        if !matches!(value_type, VALUE_ZERO | VALUE_SINT64 | VALUE_FLOAT32 | VALUE_FLOAT64) {
            return Err(broken(format!(
                "types[{series_index}] has unknown value type {value_type:#x}"
            )));
        }
        let series_kind = match packed_type & 0xF {
            TYPE_COUNT => SeriesKind::Point(Kind::Count),
            TYPE_RATE => SeriesKind::Point(Kind::Rate),
            TYPE_GAUGE => SeriesKind::Point(Kind::Gauge),
            TYPE_SKETCH => SeriesKind::Sketch,
            TYPE_EXPLICIT_HISTOGRAM => SeriesKind::Explicit,
            TYPE_EXPONENTIAL_HISTOGRAM => SeriesKind::Exponential,
            other => return Err(broken(format!("types[{series_index}] has unknown metric type {other}"))),
        };
        let name = &names[name_ref.advance(name_refs.take()?, names.len())?];
        let tags = &tag_sets[tagset_ref.advance(tagset_refs.take()?, tag_sets.len())?];
        let resource_set = &resources[resources_ref.advance(resources_refs.take()?, resources.len())?];
        let source = &source_types[source_ref.advance(source_refs.take()?, source_types.len())?];
        let unit = if packed_type & FLAG_HAS_UNIT != 0 {
            units[unit_ref.advance(unit_refs.take()?, units.len())?].as_str()
        } else {
            ""
        };
        let interval = i64::try_from(intervals.take()?).unwrap_or(i64::MAX);
        let points = num_points.take()?;
        let all_tags = tags.iter().map(String::as_str).chain(
            meta_tags
                .iter()
                .map(String::as_str)
                .filter(|t| !tags.iter().any(|own| own == t)),
        );
        let all_resources = resource_set
            .iter()
            .map(|(k, n)| (k.as_str(), n.as_str()))
            .chain(meta_resources.iter().copied());
        let marker = match series_kind {
            SeriesKind::Point(kind) => rate_marker(kind),
            _ => None,
        };
        let cells = SeriesCells::new(
            name,
            unit,
            interval,
            all_tags,
            all_resources,
            marker.into_iter().chain(source_type(source)),
            "v3",
        );
        for point_index in 0..points {
            timestamp = timestamp.wrapping_add(timestamps.take()?);
            let histogram = matches!(series_kind, SeriesKind::Explicit | SeriesKind::Exponential);
            let flags = if histogram || flags_on_every_point {
                point_flags.take()?
            } else {
                0
            };
            let row = match series_kind {
                SeriesKind::Point(kind) => {
                    let value = values.take(value_type)?;
                    cells.point_row(kind, timestamp, value, ingest_time_nanos)
                }
                SeriesKind::Sketch => {
                    let (sum, min, max) = (
                        values.take(value_type)?,
                        values.take(value_type)?,
                        values.take(value_type)?,
                    );
                    let count = values.sint64.take()?;
                    let bins = usize::try_from(bin_counts.take()?).unwrap_or(usize::MAX);
                    let mut keys = bin_keys.take_slice(bins)?.to_vec();
                    for i in 1..keys.len() {
                        keys[i] = keys[i].wrapping_add(keys[i - 1]);
                    }
                    let counts = bin_cnts.take_slice(bins)?.to_vec();
                    let point = SketchPoint {
                        timestamp_secs: timestamp,
                        count,
                        sum,
                        min,
                        max,
                        keys,
                        counts,
                    };
                    cells.sketch_row(&point, ingest_time_nanos)
                }
                SeriesKind::Explicit => {
                    let (sum, min, max) = values.summary(value_type, flags)?;
                    let buckets = usize::try_from(bin_counts.take()?).unwrap_or(usize::MAX);
                    // Taken first: the column's length bounds the number of bounds read.
                    let counts = bin_cnts.take_slice(buckets)?.to_vec();
                    let mut bounds = Vec::with_capacity(counts.len().saturating_sub(1));
                    for _ in 1..counts.len() {
                        bounds.push(values.take(value_type)?);
                    }
                    let point = HistogramPoint {
                        timestamp_secs: timestamp,
                        count: uint64s.take()?,
                        sum,
                        min,
                        max,
                        buckets: HistogramBuckets::Explicit { bounds, counts },
                    };
                    cells.histogram_row(&point, ingest_time_nanos)
                }
                SeriesKind::Exponential => {
                    // The integer header comes first in valsSint64, before any values there.
                    let scale = values.sint64.take()?;
                    let positive_offset = values.sint64.take()?;
                    let negative_offset = values.sint64.take()?;
                    let (sum, min, max) = values.summary(value_type, flags)?;
                    let _zero_threshold = values.take(value_type)?;
                    let positive_bins = usize::try_from(bin_counts.take()?).unwrap_or(usize::MAX);
                    let negative_bins = usize::try_from(bin_counts.take()?).unwrap_or(usize::MAX);
                    let positive = bin_cnts.take_slice(positive_bins)?.to_vec();
                    let negative = bin_cnts.take_slice(negative_bins)?.to_vec();
                    let count = uint64s.take()?;
                    let zero_count = uint64s.take()?;
                    match exponential_header(scale, positive_offset, negative_offset) {
                        Ok((scale, positive_offset, negative_offset)) => {
                            let point = HistogramPoint {
                                timestamp_secs: timestamp,
                                count,
                                sum,
                                min,
                                max,
                                buckets: HistogramBuckets::Exponential {
                                    scale,
                                    zero_count,
                                    positive: Side {
                                        offset: positive_offset,
                                        bucket_counts: positive,
                                    },
                                    negative: Side {
                                        offset: negative_offset,
                                        bucket_counts: negative,
                                    },
                                },
                            };
                            cells.histogram_row(&point, ingest_time_nanos)
                        }
                        Err(reason) => Err(reason),
                    }
                }
            };
            match row {
                Ok(row) => rows.push(row),
                Err(reason) => rejections.reject(|| format!("series[{series_index}].points[{point_index}]"), reason),
            }
        }
    }
    Ok(rejections.into_output(rows))
}
