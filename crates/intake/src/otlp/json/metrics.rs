//! OTLP/JSON reader for `ExportMetricsServiceRequest`.

use serde_json::Value;
use trawl_proto::otlp::collector::metrics::v1::ExportMetricsServiceRequest;
use trawl_proto::otlp::metrics::v1::exponential_histogram_data_point::Buckets;
use trawl_proto::otlp::metrics::v1::summary_data_point::ValueAtQuantile;
use trawl_proto::otlp::metrics::v1::{
    AggregationTemporality, Exemplar, ExponentialHistogram, ExponentialHistogramDataPoint, Gauge, Histogram,
    HistogramDataPoint, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum, Summary, SummaryDataPoint,
    exemplar, metric, number_data_point,
};

use super::{
    InField, JsonResult, array, boolean, double, enumeration, hex_bytes, int32, int64, key_values, object, optional,
    resource, scope, string, uint32, uint64,
};

pub(crate) fn request(value: Value) -> JsonResult<ExportMetricsServiceRequest> {
    let mut request = ExportMetricsServiceRequest::default();
    for (field, value) in object(value)? {
        if let "resourceMetrics" | "resource_metrics" = field.as_str() {
            request.resource_metrics = array(value, resource_metrics).in_field(&field)?;
        }
    }
    Ok(request)
}

fn resource_metrics(value: Value) -> JsonResult<ResourceMetrics> {
    let mut out = ResourceMetrics::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "resource" => out.resource = optional(value, resource).in_field(&field)?,
            "scopeMetrics" | "scope_metrics" => out.scope_metrics = array(value, scope_metrics).in_field(&field)?,
            "schemaUrl" | "schema_url" => out.schema_url = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(out)
}

fn scope_metrics(value: Value) -> JsonResult<ScopeMetrics> {
    let mut out = ScopeMetrics::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "scope" => out.scope = optional(value, scope).in_field(&field)?,
            "metrics" => out.metrics = array(value, metric).in_field(&field)?,
            "schemaUrl" | "schema_url" => out.schema_url = string(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(out)
}

/// A metric; when several data kinds are present the last one wins, as for a protobuf oneof.
fn metric(value: Value) -> JsonResult<Metric> {
    let mut metric = Metric::default();
    for (field, value) in object(value)? {
        if value.is_null() {
            continue;
        }
        match field.as_str() {
            "name" => metric.name = string(value).in_field(&field)?,
            "description" => metric.description = string(value).in_field(&field)?,
            "unit" => metric.unit = string(value).in_field(&field)?,
            "metadata" => metric.metadata = key_values(value).in_field(&field)?,
            "gauge" => metric.data = Some(metric::Data::Gauge(gauge(value).in_field(&field)?)),
            "sum" => metric.data = Some(metric::Data::Sum(sum(value).in_field(&field)?)),
            "histogram" => metric.data = Some(metric::Data::Histogram(histogram(value).in_field(&field)?)),
            "exponentialHistogram" | "exponential_histogram" => {
                let data = exponential_histogram(value).in_field(&field)?;
                metric.data = Some(metric::Data::ExponentialHistogram(data));
            }
            "summary" => metric.data = Some(metric::Data::Summary(summary(value).in_field(&field)?)),
            _ => {}
        }
    }
    Ok(metric)
}

fn temporality_from_name(name: &str) -> Option<i32> {
    AggregationTemporality::from_str_name(name).map(|temporality| temporality as i32)
}

fn gauge(value: Value) -> JsonResult<Gauge> {
    let mut gauge = Gauge::default();
    for (field, value) in object(value)? {
        if let "dataPoints" | "data_points" = field.as_str() {
            gauge.data_points = array(value, number_data_point).in_field(&field)?;
        }
    }
    Ok(gauge)
}

fn sum(value: Value) -> JsonResult<Sum> {
    let mut sum = Sum::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "dataPoints" | "data_points" => sum.data_points = array(value, number_data_point).in_field(&field)?,
            "aggregationTemporality" | "aggregation_temporality" => {
                sum.aggregation_temporality = enumeration(value, temporality_from_name).in_field(&field)?
            }
            "isMonotonic" | "is_monotonic" => sum.is_monotonic = boolean(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(sum)
}

fn histogram(value: Value) -> JsonResult<Histogram> {
    let mut histogram = Histogram::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "dataPoints" | "data_points" => {
                histogram.data_points = array(value, histogram_data_point).in_field(&field)?
            }
            "aggregationTemporality" | "aggregation_temporality" => {
                histogram.aggregation_temporality = enumeration(value, temporality_from_name).in_field(&field)?
            }
            _ => {}
        }
    }
    Ok(histogram)
}

fn exponential_histogram(value: Value) -> JsonResult<ExponentialHistogram> {
    let mut histogram = ExponentialHistogram::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "dataPoints" | "data_points" => {
                histogram.data_points = array(value, exponential_histogram_data_point).in_field(&field)?
            }
            "aggregationTemporality" | "aggregation_temporality" => {
                histogram.aggregation_temporality = enumeration(value, temporality_from_name).in_field(&field)?
            }
            _ => {}
        }
    }
    Ok(histogram)
}

fn summary(value: Value) -> JsonResult<Summary> {
    let mut summary = Summary::default();
    for (field, value) in object(value)? {
        if let "dataPoints" | "data_points" = field.as_str() {
            summary.data_points = array(value, summary_data_point).in_field(&field)?;
        }
    }
    Ok(summary)
}

fn number_data_point(value: Value) -> JsonResult<NumberDataPoint> {
    let mut point = NumberDataPoint::default();
    for (field, value) in object(value)? {
        if value.is_null() {
            continue;
        }
        match field.as_str() {
            "attributes" => point.attributes = key_values(value).in_field(&field)?,
            "startTimeUnixNano" | "start_time_unix_nano" => {
                point.start_time_unix_nano = uint64(value).in_field(&field)?
            }
            "timeUnixNano" | "time_unix_nano" => point.time_unix_nano = uint64(value).in_field(&field)?,
            "asDouble" | "as_double" => {
                point.value = Some(number_data_point::Value::AsDouble(double(value).in_field(&field)?))
            }
            "asInt" | "as_int" => point.value = Some(number_data_point::Value::AsInt(int64(value).in_field(&field)?)),
            "exemplars" => point.exemplars = array(value, exemplar).in_field(&field)?,
            "flags" => point.flags = uint32(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(point)
}

fn histogram_data_point(value: Value) -> JsonResult<HistogramDataPoint> {
    let mut point = HistogramDataPoint::default();
    for (field, value) in object(value)? {
        if value.is_null() {
            continue;
        }
        match field.as_str() {
            "attributes" => point.attributes = key_values(value).in_field(&field)?,
            "startTimeUnixNano" | "start_time_unix_nano" => {
                point.start_time_unix_nano = uint64(value).in_field(&field)?
            }
            "timeUnixNano" | "time_unix_nano" => point.time_unix_nano = uint64(value).in_field(&field)?,
            "count" => point.count = uint64(value).in_field(&field)?,
            "sum" => point.sum = Some(double(value).in_field(&field)?),
            "bucketCounts" | "bucket_counts" => point.bucket_counts = array(value, uint64).in_field(&field)?,
            "explicitBounds" | "explicit_bounds" => point.explicit_bounds = array(value, double).in_field(&field)?,
            "exemplars" => point.exemplars = array(value, exemplar).in_field(&field)?,
            "flags" => point.flags = uint32(value).in_field(&field)?,
            "min" => point.min = Some(double(value).in_field(&field)?),
            "max" => point.max = Some(double(value).in_field(&field)?),
            _ => {}
        }
    }
    Ok(point)
}

fn exponential_histogram_data_point(value: Value) -> JsonResult<ExponentialHistogramDataPoint> {
    let mut point = ExponentialHistogramDataPoint::default();
    for (field, value) in object(value)? {
        if value.is_null() {
            continue;
        }
        match field.as_str() {
            "attributes" => point.attributes = key_values(value).in_field(&field)?,
            "startTimeUnixNano" | "start_time_unix_nano" => {
                point.start_time_unix_nano = uint64(value).in_field(&field)?
            }
            "timeUnixNano" | "time_unix_nano" => point.time_unix_nano = uint64(value).in_field(&field)?,
            "count" => point.count = uint64(value).in_field(&field)?,
            "sum" => point.sum = Some(double(value).in_field(&field)?),
            "scale" => point.scale = int32(value).in_field(&field)?,
            "zeroCount" | "zero_count" => point.zero_count = uint64(value).in_field(&field)?,
            "positive" => point.positive = Some(buckets(value).in_field(&field)?),
            "negative" => point.negative = Some(buckets(value).in_field(&field)?),
            "flags" => point.flags = uint32(value).in_field(&field)?,
            "exemplars" => point.exemplars = array(value, exemplar).in_field(&field)?,
            "min" => point.min = Some(double(value).in_field(&field)?),
            "max" => point.max = Some(double(value).in_field(&field)?),
            "zeroThreshold" | "zero_threshold" => point.zero_threshold = double(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(point)
}

fn buckets(value: Value) -> JsonResult<Buckets> {
    let mut buckets = Buckets::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "offset" => buckets.offset = int32(value).in_field(&field)?,
            "bucketCounts" | "bucket_counts" => buckets.bucket_counts = array(value, uint64).in_field(&field)?,
            _ => {}
        }
    }
    Ok(buckets)
}

fn summary_data_point(value: Value) -> JsonResult<SummaryDataPoint> {
    let mut point = SummaryDataPoint::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "attributes" => point.attributes = key_values(value).in_field(&field)?,
            "startTimeUnixNano" | "start_time_unix_nano" => {
                point.start_time_unix_nano = uint64(value).in_field(&field)?
            }
            "timeUnixNano" | "time_unix_nano" => point.time_unix_nano = uint64(value).in_field(&field)?,
            "count" => point.count = uint64(value).in_field(&field)?,
            "sum" => point.sum = double(value).in_field(&field)?,
            "quantileValues" | "quantile_values" => {
                point.quantile_values = array(value, value_at_quantile).in_field(&field)?
            }
            "flags" => point.flags = uint32(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(point)
}

fn value_at_quantile(value: Value) -> JsonResult<ValueAtQuantile> {
    let mut quantile = ValueAtQuantile::default();
    for (field, value) in object(value)? {
        match field.as_str() {
            "quantile" => quantile.quantile = double(value).in_field(&field)?,
            "value" => quantile.value = double(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(quantile)
}

fn exemplar(value: Value) -> JsonResult<Exemplar> {
    let mut exemplar = Exemplar::default();
    for (field, value) in object(value)? {
        if value.is_null() {
            continue;
        }
        match field.as_str() {
            "filteredAttributes" | "filtered_attributes" => {
                exemplar.filtered_attributes = key_values(value).in_field(&field)?
            }
            "timeUnixNano" | "time_unix_nano" => exemplar.time_unix_nano = uint64(value).in_field(&field)?,
            "asDouble" | "as_double" => {
                exemplar.value = Some(exemplar::Value::AsDouble(double(value).in_field(&field)?))
            }
            "asInt" | "as_int" => exemplar.value = Some(exemplar::Value::AsInt(int64(value).in_field(&field)?)),
            "spanId" | "span_id" => exemplar.span_id = hex_bytes(value).in_field(&field)?,
            "traceId" | "trace_id" => exemplar.trace_id = hex_bytes(value).in_field(&field)?,
            _ => {}
        }
    }
    Ok(exemplar)
}
