use serde_json::json;
use trawl_common::Value;
use trawl_proto::otlp::metrics::v1::summary_data_point::ValueAtQuantile;
use trawl_proto::otlp::metrics::v1::{
    Exemplar, ExponentialHistogram, Gauge, Histogram, ResourceMetrics, ScopeMetrics, Sum, Summary,
};

use super::*;
use crate::otlp::fixtures::{INGEST_NANOS, any_double, any_string, cell, columns, key_value, resource, scope};

const START: u64 = 1_700_000_000_000_000_000;
const TIME: u64 = 1_700_000_060_000_000_000;

fn metric(name: &str, data: metric::Data) -> Metric {
    Metric {
        name: name.into(),
        description: "what it measures".into(),
        unit: "ms".into(),
        metadata: Vec::new(),
        data: Some(data),
    }
}

fn request(metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    let mut instrumentation_scope = scope("meter", "1.2");
    instrumentation_scope.attributes = vec![key_value("meter.kind", any_string("runtime"))];
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource(vec![key_value("host.name", any_string("web-1"))])),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(instrumentation_scope),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// The rows of `metrics`, without their `metric_hash` cell (checked to be there; see
/// `points_of_one_series_share_a_metric_hash`).
fn rows_of(metrics: Vec<Metric>) -> Vec<Row> {
    let mut rows = hashed_rows_of(metrics);
    for row in &mut rows {
        let before = row.cells.len();
        row.cells
            .retain(|(name, value)| !(*name == "metric_hash" && matches!(value, Value::Long(_))));
        assert_eq!(row.cells.len() + 1, before, "one metric_hash cell per row");
    }
    rows
}

fn hashed_rows_of(metrics: Vec<Metric>) -> Vec<Row> {
    let output = metrics_to_rows(&request(metrics), INGEST_NANOS);
    assert_eq!((output.rejected, output.error_message.as_str()), (0, ""));
    output.rows
}

#[test]
fn points_of_one_series_share_a_metric_hash() {
    let point = |cpu: &str, time: u64| NumberDataPoint {
        attributes: vec![key_value("cpu", any_string(cpu))],
        time_unix_nano: time,
        value: Some(number_data_point::Value::AsInt(1)),
        ..Default::default()
    };
    let gauge = |name: &str| {
        metric(
            name,
            metric::Data::Gauge(Gauge {
                data_points: vec![point("0", TIME), point("0", TIME + 1), point("1", TIME)],
            }),
        )
    };
    let rows = hashed_rows_of(vec![gauge("a"), gauge("b")]);
    let hashes: Vec<&Value> = rows.iter().map(|row| cell(row, "metric_hash")).collect();
    assert_eq!(hashes[0], hashes[1], "same series, later point");
    assert_ne!(hashes[0], hashes[2], "other attributes");
    assert_ne!(hashes[0], hashes[3], "other metric");
}

fn number_point(value: Option<number_data_point::Value>) -> NumberDataPoint {
    NumberDataPoint {
        attributes: vec![key_value("cpu", any_string("0"))],
        start_time_unix_nano: START,
        time_unix_nano: TIME,
        exemplars: vec![Exemplar {
            time_unix_nano: TIME,
            ..Default::default()
        }],
        flags: 0,
        value,
    }
}

fn shared_cells() -> Vec<(&'static str, Value)> {
    vec![
        ("resource", Value::Dynamic(json!({"host.name": "web-1"}))),
        ("scope_name", Value::String("meter".into())),
        ("scope_version", Value::String("1.2".into())),
        ("scope", Value::Dynamic(json!({"meter.kind": "runtime"}))),
    ]
}

/// The cells every point of `metric("latency", ..)` starts with.
fn leading_cells(metric_type: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("timestamp", Value::DateTime(TIME as i64)),
        ("start_time", Value::DateTime(START as i64)),
        ("ingest_time", Value::DateTime(INGEST_NANOS)),
        ("metric_name", Value::String("latency".into())),
        ("metric_type", Value::String(metric_type.into())),
        ("metric_description", Value::String("what it measures".into())),
        ("metric_unit", Value::String("ms".into())),
    ]
}

fn expected_row(metric_type: &str, values: Vec<(&'static str, Value)>) -> Vec<(&'static str, Value)> {
    let mut cells = leading_cells(metric_type);
    cells.extend(values);
    cells.push(("attributes", Value::Dynamic(json!({"cpu": "0"}))));
    cells.extend(shared_cells());
    cells
}

#[test]
fn a_gauge_point_maps_to_every_column() {
    let gauge = Gauge {
        data_points: vec![number_point(Some(number_data_point::Value::AsDouble(0.75)))],
    };
    let rows = rows_of(vec![metric("latency", metric::Data::Gauge(gauge))]);
    assert_eq!(rows[0].cells, expected_row("gauge", vec![("value", Value::Real(0.75))]));
}

#[test]
fn a_sum_point_carries_temporality_and_monotonicity() {
    let sum = Sum {
        data_points: vec![number_point(Some(number_data_point::Value::AsInt(42)))],
        aggregation_temporality: AggregationTemporality::Cumulative as i32,
        is_monotonic: true,
    };
    let rows = rows_of(vec![metric("latency", metric::Data::Sum(sum))]);
    assert_eq!(
        rows[0].cells,
        expected_row(
            "sum",
            vec![
                ("value", Value::Long(42)),
                ("aggregation_temporality", Value::String("CUMULATIVE".into())),
                ("is_monotonic", Value::Bool(true)),
            ]
        )
    );
}

#[test]
fn sum_temporality_names_and_a_false_monotonic_flag() {
    let temporality_of = |aggregation_temporality: i32| {
        let sum = Sum {
            data_points: vec![number_point(None)],
            aggregation_temporality,
            is_monotonic: false,
        };
        let rows = rows_of(vec![metric("latency", metric::Data::Sum(sum))]);
        assert_eq!(cell(&rows[0], "is_monotonic"), &Value::Bool(false));
        assert_eq!(rows[0].get("value"), None);
        rows[0].get("aggregation_temporality").cloned()
    };
    assert_eq!(temporality_of(1), Some(Value::String("DELTA".into())));
    assert_eq!(temporality_of(2), Some(Value::String("CUMULATIVE".into())));
    assert_eq!(temporality_of(0), None);
    assert_eq!(temporality_of(9), None);
}

#[test]
fn a_histogram_point_maps_counts_bounds_and_optional_statistics() {
    let point = HistogramDataPoint {
        attributes: vec![key_value("cpu", any_string("0"))],
        start_time_unix_nano: START,
        time_unix_nano: TIME,
        count: 6,
        sum: Some(123.5),
        bucket_counts: vec![1, 2, 3],
        explicit_bounds: vec![10.0, f64::INFINITY],
        exemplars: Vec::new(),
        flags: 0,
        min: Some(0.5),
        max: None,
    };
    let histogram = Histogram {
        data_points: vec![point],
        aggregation_temporality: 1,
    };
    let rows = rows_of(vec![metric("latency", metric::Data::Histogram(histogram))]);
    assert_eq!(
        rows[0].cells,
        expected_row(
            "histogram",
            vec![
                ("count", Value::Long(6)),
                ("sum", Value::Real(123.5)),
                ("min", Value::Real(0.5)),
                ("bucket_counts", Value::Dynamic(json!([1, 2, 3]))),
                ("explicit_bounds", Value::Dynamic(json!([10.0, "Infinity"]))),
                ("aggregation_temporality", Value::String("DELTA".into())),
            ]
        )
    );
}

#[test]
fn an_empty_histogram_point_keeps_its_zero_count_only() {
    let point = HistogramDataPoint {
        time_unix_nano: TIME,
        ..Default::default()
    };
    let histogram = Histogram {
        data_points: vec![point],
        aggregation_temporality: 0,
    };
    let rows = rows_of(vec![metric("latency", metric::Data::Histogram(histogram))]);
    assert_eq!(
        columns(&rows[0]),
        [
            "timestamp",
            "ingest_time",
            "metric_name",
            "metric_type",
            "metric_description",
            "metric_unit",
            "count",
            "resource",
            "scope_name",
            "scope_version",
            "scope",
        ]
    );
    assert_eq!(cell(&rows[0], "count"), &Value::Long(0));
}

#[test]
fn an_exponential_histogram_point_maps_scale_zero_count_and_buckets() {
    let point = ExponentialHistogramDataPoint {
        attributes: vec![key_value("cpu", any_string("0"))],
        start_time_unix_nano: START,
        time_unix_nano: TIME,
        count: 7,
        sum: Some(20.0),
        scale: -2,
        zero_count: 1,
        positive: Some(Buckets {
            offset: 3,
            bucket_counts: vec![2, 3],
        }),
        negative: Some(Buckets {
            offset: -1,
            bucket_counts: vec![1],
        }),
        flags: 0,
        exemplars: Vec::new(),
        min: Some(-4.0),
        max: Some(9.0),
        zero_threshold: 0.001,
    };
    let histogram = ExponentialHistogram {
        data_points: vec![point],
        aggregation_temporality: 2,
    };
    let rows = rows_of(vec![metric("latency", metric::Data::ExponentialHistogram(histogram))]);
    assert_eq!(
        rows[0].cells,
        expected_row(
            "exponential_histogram",
            vec![
                ("count", Value::Long(7)),
                ("sum", Value::Real(20.0)),
                ("min", Value::Real(-4.0)),
                ("max", Value::Real(9.0)),
                ("scale", Value::Long(-2)),
                ("zero_count", Value::Long(1)),
                (
                    "positive",
                    Value::Dynamic(json!({"offset": 3, "bucket_counts": [2, 3]}))
                ),
                ("negative", Value::Dynamic(json!({"offset": -1, "bucket_counts": [1]}))),
                ("aggregation_temporality", Value::String("CUMULATIVE".into())),
            ]
        )
    );
}

#[test]
fn a_summary_point_maps_count_sum_and_quantiles() {
    let point = SummaryDataPoint {
        attributes: vec![key_value("cpu", any_string("0"))],
        start_time_unix_nano: START,
        time_unix_nano: TIME,
        count: 3,
        sum: 9.0,
        quantile_values: vec![
            ValueAtQuantile {
                quantile: 0.5,
                value: 2.0,
            },
            ValueAtQuantile {
                quantile: 0.99,
                value: f64::NAN,
            },
        ],
        flags: 0,
    };
    let summary = Summary {
        data_points: vec![point],
    };
    let rows = rows_of(vec![metric("latency", metric::Data::Summary(summary))]);
    assert_eq!(
        rows[0].cells,
        expected_row(
            "summary",
            vec![
                ("count", Value::Long(3)),
                ("sum", Value::Real(9.0)),
                (
                    "quantile_values",
                    Value::Dynamic(json!([
                        {"quantile": 0.5, "value": 2.0},
                        {"quantile": 0.99, "value": "NaN"},
                    ]))
                ),
            ]
        )
    );
}

#[test]
fn point_flags_give_no_recorded_value_and_remaining_bits() {
    let flags_of = |flags: u32| {
        let point = NumberDataPoint {
            flags,
            ..number_point(None)
        };
        let rows = rows_of(vec![metric(
            "latency",
            metric::Data::Gauge(Gauge {
                data_points: vec![point],
            }),
        )]);
        (rows[0].get("no_recorded_value").cloned(), rows[0].get("flags").cloned())
    };
    assert_eq!(flags_of(0), (None, None));
    assert_eq!(flags_of(1), (Some(Value::Bool(true)), None));
    assert_eq!(flags_of(6), (None, Some(Value::Long(6))));
}

#[test]
fn missing_metadata_and_times_are_omitted_or_fall_back() {
    let point = NumberDataPoint {
        value: Some(number_data_point::Value::AsDouble(1.0)),
        ..Default::default()
    };
    let bare = Metric {
        data: Some(metric::Data::Gauge(Gauge {
            data_points: vec![point],
        })),
        ..Default::default()
    };
    let mut request = request(vec![bare]);
    request.resource_metrics[0].resource = None;
    request.resource_metrics[0].scope_metrics[0].scope = None;
    let output = metrics_to_rows(&request, INGEST_NANOS);
    let hash = cell(&output.rows[0], "metric_hash").clone();
    assert_eq!(
        output.rows[0].cells,
        vec![
            ("timestamp", Value::DateTime(INGEST_NANOS)),
            ("ingest_time", Value::DateTime(INGEST_NANOS)),
            ("metric_type", Value::String("gauge".into())),
            ("value", Value::Real(1.0)),
            ("metric_hash", hash),
        ]
    );
}

#[test]
fn every_point_of_every_metric_is_a_row_and_metrics_without_data_are_skipped() {
    let gauge = Gauge {
        data_points: vec![
            number_point(Some(number_data_point::Value::AsInt(1))),
            number_point(Some(number_data_point::Value::AsInt(2))),
        ],
    };
    let sum = Sum {
        data_points: vec![number_point(None)],
        aggregation_temporality: 1,
        is_monotonic: true,
    };
    let no_data = Metric {
        name: "empty".into(),
        ..Default::default()
    };
    let rows = rows_of(vec![
        metric("a", metric::Data::Gauge(gauge)),
        no_data,
        metric("b", metric::Data::Sum(sum)),
    ]);
    let names: Vec<_> = rows.iter().map(|row| cell(row, "metric_name").clone()).collect();
    let text = |name: &str| Value::String(name.into());
    assert_eq!(names, [text("a"), text("a"), text("b")]);
}

#[test]
fn invalid_points_are_rejected_and_the_rest_stored() {
    let mismatched = HistogramDataPoint {
        bucket_counts: vec![1, 2],
        explicit_bounds: vec![1.0, 2.0],
        ..Default::default()
    };
    let too_large = HistogramDataPoint {
        count: u64::MAX,
        ..Default::default()
    };
    let fine = HistogramDataPoint {
        count: 1,
        ..Default::default()
    };
    let histogram = Histogram {
        data_points: vec![fine, mismatched, too_large],
        aggregation_temporality: 1,
    };
    let late = NumberDataPoint {
        time_unix_nano: u64::MAX,
        ..Default::default()
    };
    let mut late_gauge = metric(
        "g",
        metric::Data::Gauge(Gauge {
            data_points: vec![late],
        }),
    );
    late_gauge.metadata = vec![key_value("ignored", any_double(1.0))];
    let output = metrics_to_rows(
        &request(vec![metric("h", metric::Data::Histogram(histogram)), late_gauge]),
        INGEST_NANOS,
    );
    assert_eq!(output.rows.len(), 1);
    assert_eq!(output.rejected, 3);
    assert_eq!(
        output.error_message,
        "rejected 3 data points; first: resource_metrics[0].scope_metrics[0].metrics[0].histogram\
         .data_points[1]: expected one more bucket_counts entry than explicit_bounds (2), found 2"
    );
}

#[test]
fn exemplars_metadata_and_schema_urls_are_not_stored() {
    let gauge = Gauge {
        data_points: vec![number_point(None)],
    };
    let mut with_metadata = metric("latency", metric::Data::Gauge(gauge));
    with_metadata.metadata = vec![key_value("meta", any_string("x"))];
    let rows = rows_of(vec![with_metadata]);
    let stored = columns(&rows[0]);
    assert!(
        !stored
            .iter()
            .any(|column| ["exemplars", "metadata", "schema_url"].contains(column))
    );
}
