//! Metric data points to metric rows (SPEC "Metric rows"): one row per data point, for gauges,
//! sums, histograms, exponential histograms and summaries.

use serde_json::{Map, Value as Json};
use trawl_common::{Row, Value};
use trawl_proto::otlp::collector::metrics::v1::ExportMetricsServiceRequest;
use trawl_proto::otlp::common::v1::KeyValue;
use trawl_proto::otlp::metrics::v1::exponential_histogram_data_point::Buckets;
use trawl_proto::otlp::metrics::v1::{
    AggregationTemporality, ExponentialHistogramDataPoint, HistogramDataPoint, Metric, NumberDataPoint,
    SummaryDataPoint, metric, number_data_point,
};
use trawl_proto::otlp::resource::v1::Resource;

use crate::IntakeOutput;
use crate::otlp::common::{
    Rejections, SharedCells, any_value_text, count_as_long, double_to_json, push_attributes, push_flags,
    push_non_empty, timestamp_nanos,
};
use crate::series::SeriesSeed;

/// Cells a metric row can have besides the resource and scope ones.
const METRIC_COLUMNS: usize = 20;

/// Maps every data point of `request` to a row. A data point is rejected, not stored, when a
/// time is past the year 2262, a count exceeds `i64::MAX`, or a histogram has bucket counts
/// whose number is not one more than its explicit bounds. A metric without data yields no row
/// and no rejection.
pub fn metrics_to_rows(request: &ExportMetricsServiceRequest, ingest_time_nanos: i64) -> IntakeOutput {
    let point_count = request
        .resource_metrics
        .iter()
        .flat_map(|resource_metrics| &resource_metrics.scope_metrics)
        .flat_map(|scope_metrics| &scope_metrics.metrics)
        .map(data_point_count)
        .sum();
    let mut output = Collector {
        rows: Vec::with_capacity(point_count),
        rejections: Rejections::new("data point", "data points"),
    };
    for (resource_index, resource_metrics) in request.resource_metrics.iter().enumerate() {
        let resource_cells = SharedCells::for_resource(resource_metrics.resource.as_ref());
        for (scope_index, scope_metrics) in resource_metrics.scope_metrics.iter().enumerate() {
            let shared = resource_cells.with_scope(scope_metrics.scope.as_ref());
            for (metric_index, metric) in scope_metrics.metrics.iter().enumerate() {
                let Some(data) = &metric.data else {
                    continue;
                };
                let context = MetricContext {
                    metric,
                    shared: &shared,
                    ingest_time_nanos,
                    series: SeriesSeed::new(
                        key_values(resource_attributes(resource_metrics.resource.as_ref())),
                        scope_metrics.scope.as_ref().map_or("", |s| s.name.as_str()),
                        scope_metrics.scope.as_ref().map_or("", |s| s.version.as_str()),
                        &metric.name,
                    ),
                };
                let location = |point_index: usize| {
                    move || {
                        format!(
                            "resource_metrics[{resource_index}].scope_metrics[{scope_index}]\
                             .metrics[{metric_index}].{}.data_points[{point_index}]",
                            metric_type(data)
                        )
                    }
                };
                match data {
                    metric::Data::Gauge(gauge) => {
                        for (index, point) in gauge.data_points.iter().enumerate() {
                            output.take(number_row(&context, point, None), location(index));
                        }
                    }
                    metric::Data::Sum(sum) => {
                        let sum_fields = SumFields {
                            aggregation_temporality: sum.aggregation_temporality,
                            is_monotonic: sum.is_monotonic,
                        };
                        for (index, point) in sum.data_points.iter().enumerate() {
                            let row = number_row(&context, point, Some(&sum_fields));
                            output.take(row, location(index));
                        }
                    }
                    metric::Data::Histogram(histogram) => {
                        let temporality = histogram.aggregation_temporality;
                        for (index, point) in histogram.data_points.iter().enumerate() {
                            let row = histogram_row(&context, point, temporality);
                            output.take(row, location(index));
                        }
                    }
                    metric::Data::ExponentialHistogram(histogram) => {
                        let temporality = histogram.aggregation_temporality;
                        for (index, point) in histogram.data_points.iter().enumerate() {
                            let row = exponential_histogram_row(&context, point, temporality);
                            output.take(row, location(index));
                        }
                    }
                    metric::Data::Summary(summary) => {
                        for (index, point) in summary.data_points.iter().enumerate() {
                            output.take(summary_row(&context, point), location(index));
                        }
                    }
                }
            }
        }
    }
    output.rejections.into_output(output.rows)
}

fn metric_type(data: &metric::Data) -> &'static str {
    match data {
        metric::Data::Gauge(_) => "gauge",
        metric::Data::Sum(_) => "sum",
        metric::Data::Histogram(_) => "histogram",
        metric::Data::ExponentialHistogram(_) => "exponential_histogram",
        metric::Data::Summary(_) => "summary",
    }
}

fn data_point_count(metric: &Metric) -> usize {
    match &metric.data {
        None => 0,
        Some(metric::Data::Gauge(gauge)) => gauge.data_points.len(),
        Some(metric::Data::Sum(sum)) => sum.data_points.len(),
        Some(metric::Data::Histogram(histogram)) => histogram.data_points.len(),
        Some(metric::Data::ExponentialHistogram(histogram)) => histogram.data_points.len(),
        Some(metric::Data::Summary(summary)) => summary.data_points.len(),
    }
}

struct Collector {
    rows: Vec<Row>,
    rejections: Rejections,
}

impl Collector {
    fn take(&mut self, row: Result<Row, String>, location: impl FnOnce() -> String) {
        match row {
            Ok(row) => self.rows.push(row),
            Err(reason) => self.rejections.reject(location, reason),
        }
    }
}

/// What every data point row of one metric shares.
struct MetricContext<'a> {
    metric: &'a Metric,
    shared: &'a SharedCells,
    ingest_time_nanos: i64,
    /// The series identity so far (resource, scope, metric name); see [`crate::series`].
    series: SeriesSeed,
}

fn resource_attributes(resource: Option<&Resource>) -> &[KeyValue] {
    resource.map_or(&[], |r| r.attributes.as_slice())
}

/// Attribute keys with their values as JSON text, for [`SeriesSeed`].
fn key_values(attributes: &[KeyValue]) -> impl Iterator<Item = (&str, String)> {
    attributes.iter().map(|kv| {
        let value = kv
            .value
            .as_ref()
            .map(|v| any_value_text(v).to_string())
            .unwrap_or_default();
        (kv.key.as_str(), value)
    })
}

/// The fields every data point kind has.
struct PointHeader<'a> {
    start_time_unix_nano: u64,
    time_unix_nano: u64,
    attributes: &'a [KeyValue],
    flags: u32,
}

struct SumFields {
    aggregation_temporality: i32,
    is_monotonic: bool,
}

impl MetricContext<'_> {
    /// Builds a row: times and metric metadata, then `push_values`, then attributes, flags and
    /// the resource and scope cells.
    fn row(
        &self,
        header: PointHeader<'_>,
        push_values: impl FnOnce(&mut Row) -> Result<(), String>,
    ) -> Result<Row, String> {
        let time = timestamp_nanos(header.time_unix_nano, "time_unix_nano")?;
        let start = timestamp_nanos(header.start_time_unix_nano, "start_time_unix_nano")?;
        let mut row = Row::with_capacity(METRIC_COLUMNS + self.shared.len());
        let timestamp = if time != 0 { time } else { self.ingest_time_nanos };
        row.push("timestamp", Value::DateTime(timestamp));
        if start != 0 {
            row.push("start_time", Value::DateTime(start));
        }
        row.push("ingest_time", Value::DateTime(self.ingest_time_nanos));
        push_non_empty(&mut row, "metric_name", &self.metric.name);
        if let Some(data) = &self.metric.data {
            row.push("metric_type", Value::String(metric_type(data).to_owned()));
        }
        push_non_empty(&mut row, "metric_description", &self.metric.description);
        push_non_empty(&mut row, "metric_unit", &self.metric.unit);
        push_values(&mut row)?;
        push_attributes(&mut row, "attributes", header.attributes);
        row.push(
            "metric_hash",
            Value::Long(self.series.metric_hash(key_values(header.attributes))),
        );
        push_flags(&mut row, "no_recorded_value", header.flags);
        self.shared.append_to(&mut row);
        debug_assert!(row.cells.len() <= METRIC_COLUMNS + self.shared.len());
        Ok(row)
    }
}

/// `CUMULATIVE` or `DELTA`; nothing for UNSPECIFIED or unknown values.
fn push_temporality(row: &mut Row, temporality: i32) {
    let name = match AggregationTemporality::try_from(temporality) {
        Ok(AggregationTemporality::Cumulative) => "CUMULATIVE",
        Ok(AggregationTemporality::Delta) => "DELTA",
        Ok(AggregationTemporality::Unspecified) | Err(_) => return,
    };
    row.push("aggregation_temporality", Value::String(name.to_owned()));
}

fn push_optional_real(row: &mut Row, column: &'static str, value: Option<f64>) {
    if let Some(value) = value {
        row.push(column, Value::Real(value));
    }
}

/// A gauge point, or a sum point when `sum` is given.
fn number_row(context: &MetricContext<'_>, point: &NumberDataPoint, sum: Option<&SumFields>) -> Result<Row, String> {
    let header = PointHeader {
        start_time_unix_nano: point.start_time_unix_nano,
        time_unix_nano: point.time_unix_nano,
        attributes: &point.attributes,
        flags: point.flags,
    };
    context.row(header, |row| {
        match point.value {
            Some(number_data_point::Value::AsInt(value)) => row.push("value", Value::Long(value)),
            Some(number_data_point::Value::AsDouble(value)) => row.push("value", Value::Real(value)),
            None => {}
        }
        if let Some(sum) = sum {
            push_temporality(row, sum.aggregation_temporality);
            row.push("is_monotonic", Value::Bool(sum.is_monotonic));
        }
        Ok(())
    })
}

fn histogram_row(context: &MetricContext<'_>, point: &HistogramDataPoint, temporality: i32) -> Result<Row, String> {
    let bucket_count = point.bucket_counts.len();
    let bound_count = point.explicit_bounds.len();
    if bucket_count != 0 && bucket_count != bound_count + 1 {
        return Err(format!(
            "expected one more bucket_counts entry than explicit_bounds ({bound_count}), found \
             {bucket_count}"
        ));
    }
    let header = PointHeader {
        start_time_unix_nano: point.start_time_unix_nano,
        time_unix_nano: point.time_unix_nano,
        attributes: &point.attributes,
        flags: point.flags,
    };
    context.row(header, |row| {
        row.push("count", count_as_long(point.count, "count")?);
        push_optional_real(row, "sum", point.sum);
        push_optional_real(row, "min", point.min);
        push_optional_real(row, "max", point.max);
        if bucket_count != 0 {
            let counts = point.bucket_counts.iter().map(|count| Json::from(*count)).collect();
            row.push("bucket_counts", Value::Dynamic(Json::Array(counts)));
        }
        if bound_count != 0 {
            let bounds = point
                .explicit_bounds
                .iter()
                .map(|bound| double_to_json(*bound))
                .collect();
            row.push("explicit_bounds", Value::Dynamic(Json::Array(bounds)));
        }
        push_temporality(row, temporality);
        Ok(())
    })
}

fn exponential_histogram_row(
    context: &MetricContext<'_>,
    point: &ExponentialHistogramDataPoint,
    temporality: i32,
) -> Result<Row, String> {
    let header = PointHeader {
        start_time_unix_nano: point.start_time_unix_nano,
        time_unix_nano: point.time_unix_nano,
        attributes: &point.attributes,
        flags: point.flags,
    };
    context.row(header, |row| {
        row.push("count", count_as_long(point.count, "count")?);
        push_optional_real(row, "sum", point.sum);
        push_optional_real(row, "min", point.min);
        push_optional_real(row, "max", point.max);
        row.push("scale", Value::Long(i64::from(point.scale)));
        row.push("zero_count", count_as_long(point.zero_count, "zero_count")?);
        if let Some(positive) = &point.positive {
            row.push("positive", Value::Dynamic(buckets_json(positive)));
        }
        if let Some(negative) = &point.negative {
            row.push("negative", Value::Dynamic(buckets_json(negative)));
        }
        push_temporality(row, temporality);
        Ok(())
    })
}

/// `{offset, bucket_counts}`.
fn buckets_json(buckets: &Buckets) -> Json {
    let counts = buckets.bucket_counts.iter().map(|count| Json::from(*count)).collect();
    let mut bag = Map::with_capacity(2);
    bag.insert("offset".to_owned(), Json::from(buckets.offset));
    bag.insert("bucket_counts".to_owned(), Json::Array(counts));
    Json::Object(bag)
}

fn summary_row(context: &MetricContext<'_>, point: &SummaryDataPoint) -> Result<Row, String> {
    let header = PointHeader {
        start_time_unix_nano: point.start_time_unix_nano,
        time_unix_nano: point.time_unix_nano,
        attributes: &point.attributes,
        flags: point.flags,
    };
    context.row(header, |row| {
        row.push("count", count_as_long(point.count, "count")?);
        row.push("sum", Value::Real(point.sum));
        if !point.quantile_values.is_empty() {
            let quantiles = point
                .quantile_values
                .iter()
                .map(|quantile| {
                    let mut bag = Map::with_capacity(2);
                    bag.insert("quantile".to_owned(), double_to_json(quantile.quantile));
                    bag.insert("value".to_owned(), double_to_json(quantile.value));
                    Json::Object(bag)
                })
                .collect();
            row.push("quantile_values", Value::Dynamic(Json::Array(quantiles)));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests;
