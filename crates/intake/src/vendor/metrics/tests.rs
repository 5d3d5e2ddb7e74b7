use serde_json::json;
use trawl_proto::vendor::agentpayload::metric_payload::{MetricPoint, MetricSeries, Resource};
use trawl_proto::vendor::agentpayload::sketch_payload::Sketch;
use trawl_proto::vendor::agentpayload::sketch_payload::sketch::Dogsketch;
use trawl_proto::vendor::metrics::v3;

use super::*;
use crate::vendor::series_v3;

const INGEST: i64 = 42;
const SECOND: i64 = 1_000_000_000;

fn cell<'a>(row: &'a Row, column: &str) -> Option<&'a Value> {
    row.get(column)
}

fn json_cell(row: &Row, column: &str) -> Json {
    match row.get(column) {
        Some(Value::JsonText(text)) => serde_json::from_str(text).unwrap_or(Json::Null),
        Some(Value::Dynamic(json)) => json.clone(),
        _ => Json::Null,
    }
}

fn text(value: &str) -> Option<Value> {
    Some(Value::String(value.to_owned()))
}

fn series(kind: MetricType, interval: i64, points: &[(i64, f64)]) -> MetricSeries {
    MetricSeries {
        resources: vec![
            Resource {
                r#type: "host".into(),
                name: "web-1".into(),
            },
            Resource {
                r#type: "database_instance".into(),
                name: "db-7".into(),
            },
        ],
        metric: "app.requests".into(),
        tags: vec!["env:prod".into(), "team:a".into(), "team:b".into(), "canary".into()],
        points: points
            .iter()
            .map(|&(timestamp, value)| MetricPoint { value, timestamp })
            .collect(),
        r#type: kind as i32,
        unit: "request".into(),
        source_type_name: "".into(),
        interval,
        metadata: None,
    }
}

fn rows_of(series: Vec<MetricSeries>) -> Vec<Row> {
    series_v2_to_rows(&MetricPayload { series }, INGEST).rows
}

#[test]
fn gauge_rows_carry_tags_resources_and_scope() {
    let rows = rows_of(vec![series(
        MetricType::Gauge,
        10,
        &[(1_700_000_000, 3.5), (1_700_000_010, 4.0)],
    )]);
    assert_eq!(rows.len(), 2);
    let row = &rows[0];
    assert_eq!(cell(row, "timestamp"), Some(&Value::DateTime(1_700_000_000 * SECOND)));
    assert_eq!(cell(row, "start_time"), None, "gauges have no window");
    assert_eq!(cell(row, "ingest_time"), Some(&Value::DateTime(INGEST)));
    assert_eq!(cell(row, "metric_name"), text("app.requests").as_ref());
    assert_eq!(cell(row, "metric_type"), text("gauge").as_ref());
    assert_eq!(cell(row, "metric_unit"), text("request").as_ref());
    assert_eq!(cell(row, "value"), Some(&Value::Real(3.5)));
    assert_eq!(cell(row, "aggregation_temporality"), None);
    assert_eq!(
        json_cell(row, "attributes"),
        json!({"env": "prod", "team": ["a", "b"], "canary": ""})
    );
    assert_eq!(
        json_cell(row, "resource"),
        json!({"host.name": "web-1", "database_instance": "db-7"})
    );
    assert_eq!(cell(row, "scope_name"), text("vx").as_ref());
    assert_eq!(cell(row, "scope_version"), text("v2").as_ref());
    assert_eq!(cell(&rows[1], "value"), Some(&Value::Real(4.0)));
}

#[test]
fn count_is_a_non_monotonic_delta_sum_with_a_window() {
    let rows = rows_of(vec![
        series(MetricType::Count, 10, &[(1_700_000_000, 7.0)]),
        series(MetricType::Count, 0, &[(1_700_000_000, 8.0)]),
    ]);
    let with = &rows[0];
    assert_eq!(cell(with, "metric_type"), text("sum").as_ref());
    assert_eq!(cell(with, "value"), Some(&Value::Real(7.0)));
    assert_eq!(cell(with, "aggregation_temporality"), text("DELTA").as_ref());
    assert_eq!(cell(with, "is_monotonic"), Some(&Value::Bool(false)));
    assert_eq!(cell(with, "start_time"), Some(&Value::DateTime(1_699_999_990 * SECOND)));
    assert_eq!(json_cell(with, "attributes").get("vx.metric_type"), None);
    let without = &rows[1];
    assert_eq!(cell(without, "metric_type"), text("sum").as_ref());
    assert_eq!(cell(without, "start_time"), None);
}

#[test]
fn rate_times_interval_is_a_delta_sum_and_without_one_a_gauge() {
    let rows = rows_of(vec![
        series(MetricType::Rate, 10, &[(1_700_000_000, 2.5)]),
        series(MetricType::Rate, 0, &[(1_700_000_000, 2.5)]),
    ]);
    let with = &rows[0];
    assert_eq!(cell(with, "metric_type"), text("sum").as_ref());
    assert_eq!(cell(with, "value"), Some(&Value::Real(25.0)));
    assert_eq!(cell(with, "aggregation_temporality"), text("DELTA").as_ref());
    assert_eq!(cell(with, "start_time"), Some(&Value::DateTime(1_699_999_990 * SECOND)));
    assert_eq!(json_cell(with, "attributes")["vx.metric_type"], json!("rate"));
    let without = &rows[1];
    assert_eq!(cell(without, "metric_type"), text("gauge").as_ref());
    assert_eq!(cell(without, "value"), Some(&Value::Real(2.5)));
    assert_eq!(cell(without, "aggregation_temporality"), None);
    assert_eq!(json_cell(without, "attributes")["vx.metric_type"], json!("rate"));
}

#[test]
fn unspecified_type_is_a_gauge_and_bad_times_are_counted() {
    let mut unspecified = series(MetricType::Unspecified, 0, &[(1_700_000_000, 1.0), (i64::MAX, 1.0)]);
    unspecified.source_type_name = "postgres".into();
    let output = series_v2_to_rows(
        &MetricPayload {
            series: vec![unspecified],
        },
        INGEST,
    );
    assert_eq!(output.rows.len(), 1);
    assert_eq!(cell(&output.rows[0], "metric_type"), text("gauge").as_ref());
    assert_eq!(
        json_cell(&output.rows[0], "attributes")["vx.source_type_name"],
        json!("postgres")
    );
    assert_eq!(output.rejected, 1);
    assert!(
        output.error_message.contains("series[0].points[1]"),
        "{}",
        output.error_message
    );
}

#[test]
fn json_bodies_are_refused_by_name() {
    let body = br#"{"series": [{"metric": "a", "points": [[1, 2]]}]}"#;
    let message = decode_series_v2(body).map(|_| ()).err().map(|e| e.to_string());
    assert!(message.is_some_and(|m| m.contains("JSON")));
    assert!(decode_series_v2(b"\xff\xff\xff").is_err());
    let payload = MetricPayload {
        series: vec![series(MetricType::Gauge, 0, &[(1, 1.0)])],
    };
    assert_eq!(decode_series_v2(&payload.encode_to_vec()).ok(), Some(payload));
}

fn agent_key(v: f64) -> i32 {
    // γ = 1 + 2/128, bias 1338, as the Agent keys values.
    let k = (v.abs().ln() / (2.0_f64 / 128.0).ln_1p()).round_ties_even() as i32 + 1338;
    if v < 0.0 { -k } else { k }
}

#[test]
fn sketches_become_exponential_histograms_with_exact_summary() {
    let values = [0.0, 0.0, 1.0, 1.0, 1.0, 10.0, 100.0, -5.0];
    let mut keys: Vec<i32> = values
        .iter()
        .map(|v| if *v == 0.0 { 0 } else { agent_key(*v) })
        .collect();
    keys.dedup();
    let counts = vec![2, 3, 1, 1, 1];
    let payload = SketchPayload {
        sketches: vec![Sketch {
            metric: "request.latency".into(),
            host: "web-1".into(),
            tags: vec!["env:prod".into()],
            dogsketches: vec![Dogsketch {
                ts: 1_700_000_000,
                cnt: 8,
                min: -5.0,
                max: 100.0,
                avg: 13.5,
                sum: 108.0,
                k: keys,
                n: counts,
            }],
            metadata: None,
        }],
    };
    let output = sketches_to_rows(&payload, INGEST);
    assert_eq!(output.rejected, 0);
    let row = &output.rows[0];
    assert_eq!(cell(row, "metric_type"), text("exponential_histogram").as_ref());
    assert_eq!(cell(row, "count"), Some(&Value::Long(8)));
    assert_eq!(cell(row, "sum"), Some(&Value::Real(108.0)));
    assert_eq!(cell(row, "min"), Some(&Value::Real(-5.0)));
    assert_eq!(cell(row, "max"), Some(&Value::Real(100.0)));
    assert_eq!(cell(row, "scale"), Some(&Value::Long(5)));
    assert_eq!(cell(row, "zero_count"), Some(&Value::Long(2)));
    assert_eq!(cell(row, "aggregation_temporality"), text("DELTA").as_ref());
    assert_eq!(cell(row, "scope_version"), text("beta").as_ref());
    assert_eq!(json_cell(row, "resource"), json!({"host.name": "web-1"}));
    let positive = json_cell(row, "positive");
    // 1.0 sits on a bucket boundary: bucket -1 at scale 5 holds (2^(-1/32), 1].
    assert_eq!(positive["offset"], json!(-1));
    let counts: Vec<u64> = serde_json::from_value(positive["bucket_counts"].clone()).unwrap_or_default();
    assert_eq!(counts.iter().sum::<u64>(), 5);
    assert_eq!(counts.first(), Some(&3));
    // 100 = 2^6.64: bucket 212 holds (2^(212/32), 2^(213/32)] = (98.7, 100.9].
    assert_eq!(counts.len(), 212 + 1 + 1);
    assert_eq!(counts[(106 + 1) as usize], 1, "10 = 2^3.32 sits in bucket 106");
    let negative = json_cell(row, "negative");
    assert_eq!(negative["offset"], json!(74), "5 = 2^2.32 sits in bucket 74");
    assert_eq!(negative["bucket_counts"], json!([1]));
}

#[test]
fn sketches_with_mismatched_bins_are_rejected() {
    let payload = SketchPayload {
        sketches: vec![Sketch {
            metric: "m".into(),
            dogsketches: vec![Dogsketch {
                ts: 1,
                cnt: 1,
                k: vec![1, 2],
                n: vec![1],
                ..Dogsketch::default()
            }],
            ..Sketch::default()
        }],
    };
    let output = sketches_to_rows(&payload, INGEST);
    assert!(output.rows.is_empty());
    assert_eq!(output.rejected, 1);
}

/// `varint length + bytes` for each string.
fn dict(strings: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in strings {
        trawl_proto::prost::encoding::encode_varint(s.len() as u64, &mut out);
        out.extend_from_slice(s.as_bytes());
    }
    out
}

/// Three series sharing delta-coded columns: a count (1 point, sint64 values), a rate with a
/// unit (2 points, float64) and a gauge (2 points, float32) on another resource set, plus a
/// sketch; payload metadata adds a tag and a resource to each.
fn v3_payload() -> v3::Payload {
    let data = v3::MetricData {
        dict_name_str: dict(&["foo", "bar", "baz", "lat"]),
        dict_tag_str: dict(&["env:prod", "team:a", "team:b"]),
        // set 1: [env:prod, team:a]; set 2: [team:b] + set 1 (negative index).
        dict_tagsets: vec![2, 1, 1, 2, 3, -4],
        dict_resource_str: dict(&["host", "web-1", "web-2"]),
        dict_resource_len: vec![1, 1],
        dict_resource_type: vec![1, 1],
        dict_resource_name: vec![2, 3],
        dict_source_type_name: dict(&["postgres"]),
        dict_unit_str: dict(&["second"]),
        types: vec![0x11, 0x32 | 0x200, 0x23, 0x34],
        name_refs: vec![1, 1, 1, 1],
        tagset_refs: vec![1, 0, 1, -1],
        resources_refs: vec![1, 0, 1, -1],
        intervals: vec![10, 10, 0, 0],
        num_points: vec![1, 2, 2, 1],
        source_type_name_refs: vec![1, -1, 0, 0],
        origin_info_refs: vec![0, 0, 0, 0],
        unit_refs: vec![1],
        timestamps: vec![1_700_000_000, 0, 10, -10, 10, -5],
        // count value 5; sketch: sum 3, min 1, max 2 in float64, count 2 here.
        vals_sint64: vec![5, 2],
        vals_float32: vec![1.5, 2.5],
        vals_float64: vec![0.5, 0.25, 3.0, 1.0, 2.0],
        sketch_num_bins: vec![2],
        sketch_bin_keys: vec![agent_key(1.0), agent_key(2.0) - agent_key(1.0)],
        sketch_bin_cnts: vec![1, 1],
        ..v3::MetricData::default()
    };
    v3::Payload {
        metadata: Some(v3::Metadata {
            tags: vec!["region:eu".into(), "env:prod".into()],
            resources: vec!["cluster".into(), "c1".into()],
        }),
        metric_data: Some(data),
    }
}

#[test]
fn v3_series_map_as_v2_ones_do() -> Result<(), IntakeError> {
    let output = series_v3::to_rows(&v3_payload(), INGEST)?;
    assert_eq!(output.rejected, 0, "{}", output.error_message);
    let rows = output.rows;
    assert_eq!(rows.len(), 6);
    let names: Vec<_> = rows.iter().map(|r| cell(r, "metric_name").cloned()).collect();
    assert_eq!(
        names,
        vec![
            text("foo"),
            text("bar"),
            text("bar"),
            text("baz"),
            text("baz"),
            text("lat")
        ]
    );

    let count = &rows[0];
    assert_eq!(cell(count, "metric_type"), text("sum").as_ref());
    assert_eq!(cell(count, "value"), Some(&Value::Real(5.0)));
    assert_eq!(cell(count, "timestamp"), Some(&Value::DateTime(1_700_000_000 * SECOND)));
    assert_eq!(
        cell(count, "start_time"),
        Some(&Value::DateTime(1_699_999_990 * SECOND))
    );
    assert_eq!(cell(count, "scope_version"), text("v3").as_ref());
    assert_eq!(
        json_cell(count, "attributes"),
        json!({"env": "prod", "team": "a", "region": "eu", "vx.source_type_name": "postgres"})
    );
    assert_eq!(
        json_cell(count, "resource"),
        json!({"host.name": "web-1", "cluster": "c1"})
    );

    let rate = &rows[1];
    assert_eq!(cell(rate, "metric_type"), text("sum").as_ref());
    assert_eq!(cell(rate, "value"), Some(&Value::Real(5.0)), "0.5 per second over 10 s");
    assert_eq!(cell(rate, "metric_unit"), text("second").as_ref());
    assert_eq!(json_cell(rate, "attributes")["vx.metric_type"], json!("rate"));
    assert_eq!(json_cell(rate, "attributes").get("vx.source_type_name"), None);
    assert_eq!(
        cell(&rows[2], "timestamp"),
        Some(&Value::DateTime(1_700_000_010 * SECOND))
    );
    assert_eq!(cell(&rows[2], "value"), Some(&Value::Real(2.5)));

    let gauge = &rows[3];
    assert_eq!(cell(gauge, "metric_type"), text("gauge").as_ref());
    assert_eq!(cell(gauge, "value"), Some(&Value::Real(1.5)));
    assert_eq!(cell(gauge, "timestamp"), Some(&Value::DateTime(1_700_000_000 * SECOND)));
    assert_eq!(
        json_cell(gauge, "attributes"),
        json!({"team": ["b", "a"], "env": "prod", "region": "eu"})
    );
    assert_eq!(
        json_cell(gauge, "resource"),
        json!({"host.name": "web-2", "cluster": "c1"})
    );
    assert_eq!(cell(&rows[4], "value"), Some(&Value::Real(2.5)));

    let sketch = &rows[5];
    assert_eq!(cell(sketch, "metric_type"), text("exponential_histogram").as_ref());
    assert_eq!(cell(sketch, "count"), Some(&Value::Long(2)));
    assert_eq!(cell(sketch, "sum"), Some(&Value::Real(3.0)));
    assert_eq!(cell(sketch, "min"), Some(&Value::Real(1.0)));
    assert_eq!(cell(sketch, "max"), Some(&Value::Real(2.0)));
    assert_eq!(
        cell(sketch, "timestamp"),
        Some(&Value::DateTime(1_700_000_005 * SECOND))
    );
    assert_eq!(json_cell(sketch, "positive")["offset"], json!(-1));
    let counts: Vec<u64> =
        serde_json::from_value(json_cell(sketch, "positive")["bucket_counts"].clone()).unwrap_or_default();
    assert_eq!((counts.first(), counts.iter().sum::<u64>()), (Some(&1), 2));
    assert_eq!(cell(sketch, "scope_version"), text("v3").as_ref());
    Ok(())
}

#[test]
fn v3_structural_damage_refuses_the_payload() {
    let damaged = |change: fn(&mut v3::MetricData)| {
        let mut payload = v3_payload();
        if let Some(data) = payload.metric_data.as_mut() {
            change(data);
        }
        series_v3::to_rows(&payload, INGEST)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert!(damaged(|_| {}).is_ok());
    type Damage = fn(&mut v3::MetricData);
    let cases: [(Damage, &str); 6] = [
        (|d| d.name_refs[0] = 9, "nameRefs"),
        (|d| d.timestamps.truncate(3), "timestamps"),
        (|d| d.vals_float64.truncate(1), "valsFloat64"),
        (|d| d.dict_tagsets = vec![5, 1], "dictTagsets"),
        (|d| d.dict_name_str = vec![40, b'a'], "dictNameStr"),
        (|d| d.types[0] = 0x19, "metric type"),
    ];
    for (change, expected) in cases {
        let error = damaged(change).err().unwrap_or_default();
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

#[test]
fn v3_columns_left_out_read_as_the_empty_entry() -> Result<(), IntakeError> {
    // An encoder without source types (or one that predates them) sends no
    // `sourceTypeNameRefs` at all; the same for tag sets, resources, units and intervals that
    // are all zero.
    let mut payload = v3_payload();
    if let Some(data) = payload.metric_data.as_mut() {
        data.source_type_name_refs.clear();
        data.tagset_refs.clear();
        data.resources_refs.clear();
        data.unit_refs.clear();
        data.intervals.clear();
    }
    let output = series_v3::to_rows(&payload, INGEST)?;
    assert_eq!(output.rejected, 0, "{}", output.error_message);
    assert_eq!(output.rows.len(), 6);
    let count = &output.rows[0];
    assert_eq!(json_cell(count, "attributes"), json!({"region": "eu", "env": "prod"}));
    assert_eq!(json_cell(count, "resource"), json!({"cluster": "c1"}));
    assert_eq!(cell(count, "start_time"), None, "no interval, no window start");
    assert_eq!(cell(&output.rows[1], "metric_unit"), None);

    // A column that is there but ends early still refuses the payload.
    let mut short = v3_payload();
    if let Some(data) = short.metric_data.as_mut() {
        data.source_type_name_refs.truncate(1);
    }
    let error = series_v3::to_rows(&short, INGEST)
        .map(|_| ())
        .err()
        .map(|e| e.to_string());
    assert!(error.unwrap_or_default().contains("sourceTypeNameRefs ends"));
    Ok(())
}

#[test]
fn v3_tag_sets_that_double_at_each_step_are_refused() {
    // Set 1 is one tag; each later set includes the one before twice (-1 then 0 more: the
    // running index stays on the previous set), so set 40 would hold 2^39 tags.
    let mut packed = vec![1, 1];
    for set in 2..=40_i64 {
        packed.extend([2, -(set - 1), 0]);
    }
    let mut payload = v3_payload();
    if let Some(data) = payload.metric_data.as_mut() {
        data.dict_tagsets = packed;
    }
    let error = series_v3::to_rows(&payload, INGEST)
        .map(|_| ())
        .err()
        .map(|e| e.to_string());
    assert!(error.unwrap_or_default().contains("a set of more than"));
}

/// One histogram series named "h" with the given columns filled in.
fn v3_histogram(types: Vec<u64>, num_points: Vec<u64>, fill: impl FnOnce(&mut v3::MetricData)) -> Vec<Row> {
    let mut data = v3::MetricData {
        dict_name_str: dict(&["h"]),
        name_refs: std::iter::once(1)
            .chain(std::iter::repeat_n(0, types.len() - 1))
            .collect(),
        types,
        num_points,
        ..v3::MetricData::default()
    };
    fill(&mut data);
    let payload = v3::Payload {
        metadata: None,
        metric_data: Some(data),
    };
    match series_v3::to_rows(&payload, INGEST) {
        Ok(output) => {
            assert_eq!(output.rejected, 0, "{}", output.error_message);
            output.rows
        }
        Err(e) => panic!("refused: {e}"),
    }
}

#[test]
fn v3_explicit_histograms_map_as_otlp_ones() {
    // The Agent's own example: sum 30 and bound 10 as sint64, counts [2, 3], count 5.
    let rows = v3_histogram(vec![0x16], vec![1], |d| {
        d.timestamps = vec![1000];
        d.vals_sint64 = vec![30, 10];
        d.sketch_num_bins = vec![2];
        d.sketch_bin_cnts = vec![2, 3];
        d.point_flags = vec![0];
        d.vals_uint64 = vec![5];
    });
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(cell(row, "metric_type"), text("histogram").as_ref());
    assert_eq!(cell(row, "timestamp"), Some(&Value::DateTime(1000 * SECOND)));
    assert_eq!(cell(row, "count"), Some(&Value::Long(5)));
    assert_eq!(cell(row, "sum"), Some(&Value::Real(30.0)));
    assert_eq!(cell(row, "min"), None);
    assert_eq!(cell(row, "max"), None);
    assert_eq!(cell(row, "bucket_counts"), Some(&Value::Dynamic(json!([2, 3]))));
    assert_eq!(cell(row, "explicit_bounds"), Some(&Value::Dynamic(json!([10.0]))));
    assert_eq!(cell(row, "aggregation_temporality"), text("DELTA").as_ref());
}

#[test]
fn v3_histogram_min_and_max_follow_the_point_flags() {
    // float32 values; the points carry min, max, then both; the last point's count is past
    // i64::MAX and is rejected alone.
    let output = {
        let data = v3::MetricData {
            dict_name_str: dict(&["h"]),
            types: vec![0x126],
            name_refs: vec![1],
            num_points: vec![4],
            timestamps: vec![1000, 10, 10, 10],
            vals_float32: vec![1.5, 0.5, 1.0, 2.0, 2.5, 3.0, 0.0, -1.0, 1.0, 7.0],
            sketch_num_bins: vec![3, 0, 1, 0],
            sketch_bin_cnts: vec![1, 2, 0, 4],
            point_flags: vec![1, 2, 3, 0],
            vals_uint64: vec![3, 1, 4, u64::MAX],
            ..v3::MetricData::default()
        };
        let payload = v3::Payload {
            metadata: None,
            metric_data: Some(data),
        };
        series_v3::to_rows(&payload, INGEST).map_err(|e| e.to_string())
    };
    let output = output.unwrap_or_else(|e| panic!("refused: {e}"));
    assert_eq!(output.rejected, 1);
    assert!(output.error_message.contains("points[3]"), "{}", output.error_message);
    let rows = output.rows;
    assert_eq!(rows.len(), 3);
    assert_eq!(cell(&rows[0], "min"), Some(&Value::Real(0.5)));
    assert_eq!(cell(&rows[0], "max"), None);
    assert_eq!(
        cell(&rows[0], "explicit_bounds"),
        Some(&Value::Dynamic(json!([1.0, 2.0])))
    );
    assert_eq!(cell(&rows[0], "bucket_counts"), Some(&Value::Dynamic(json!([1, 2, 0]))));
    // A summary-only point: no buckets at all.
    assert_eq!(cell(&rows[1], "min"), None);
    assert_eq!(cell(&rows[1], "max"), Some(&Value::Real(3.0)));
    assert_eq!(cell(&rows[1], "bucket_counts"), None);
    assert_eq!(cell(&rows[1], "explicit_bounds"), None);
    assert_eq!(cell(&rows[2], "min"), Some(&Value::Real(-1.0)));
    assert_eq!(cell(&rows[2], "max"), Some(&Value::Real(1.0)));
    assert_eq!(cell(&rows[2], "bucket_counts"), Some(&Value::Dynamic(json!([4]))));
    assert_eq!(cell(&rows[2], "timestamp"), Some(&Value::DateTime(1020 * SECOND)));
}

#[test]
fn v3_exponential_histograms_map_as_otlp_ones() {
    // The Agent's own example: scale 0, offsets 0 and -1 ahead of sum 18 and zero threshold 0,
    // positive [2, 0, 3] and negative [4], count 10 and zero count 1.
    let rows = v3_histogram(vec![0x17, 0x37], vec![1, 1], |d| {
        d.timestamps = vec![1000, 10];
        d.vals_sint64 = vec![0, 0, -1, 18, 0, -3, i64::from(i32::MAX), 0];
        d.vals_float64 = vec![12.5, 0.25, 7.0, 1e-9];
        d.sketch_num_bins = vec![3, 1, 1, 0];
        d.sketch_bin_cnts = vec![2, 0, 3, 4, 4];
        d.point_flags = vec![0, 3];
        d.vals_uint64 = vec![10, 1, 4, 0];
    });
    assert_eq!(rows.len(), 2);
    let first = &rows[0];
    assert_eq!(cell(first, "metric_type"), text("exponential_histogram").as_ref());
    assert_eq!(cell(first, "count"), Some(&Value::Long(10)));
    assert_eq!(cell(first, "zero_count"), Some(&Value::Long(1)));
    assert_eq!(cell(first, "sum"), Some(&Value::Real(18.0)));
    assert_eq!(cell(first, "scale"), Some(&Value::Long(0)));
    assert_eq!(
        cell(first, "positive"),
        Some(&Value::Dynamic(json!({"offset": 0, "bucket_counts": [2, 0, 3]})))
    );
    assert_eq!(
        cell(first, "negative"),
        Some(&Value::Dynamic(json!({"offset": -1, "bucket_counts": [4]})))
    );
    let second = &rows[1];
    assert_eq!(cell(second, "scale"), Some(&Value::Long(-3)));
    assert_eq!(
        (cell(second, "min"), cell(second, "max")),
        (Some(&Value::Real(0.25)), Some(&Value::Real(7.0)))
    );
    assert_eq!(
        cell(second, "positive"),
        Some(&Value::Dynamic(json!({"offset": i32::MAX, "bucket_counts": [4]})))
    );
}

#[test]
fn v3_histograms_with_zero_values_and_gauges_beside_them() {
    // Zero value type: nothing in the value columns but the exponential header; a gauge
    // series after the histograms reads its own value.
    let rows = v3_histogram(vec![0x06, 0x07, 0x13], vec![1, 1, 1], |d| {
        d.dict_name_str = dict(&["e", "x", "g"]);
        d.name_refs = vec![1, 1, 1];
        d.timestamps = vec![1000, 0, 0];
        d.vals_sint64 = vec![1, 2, 3, 42];
        d.sketch_num_bins = vec![1, 0, 0];
        d.sketch_bin_cnts = vec![1];
        d.point_flags = vec![1, 2];
        d.vals_uint64 = vec![1, 1, 1];
    });
    assert_eq!(rows.len(), 3);
    assert_eq!(cell(&rows[0], "min"), Some(&Value::Real(0.0)));
    assert_eq!(cell(&rows[0], "bucket_counts"), Some(&Value::Dynamic(json!([1]))));
    assert_eq!(cell(&rows[1], "scale"), Some(&Value::Long(1)));
    assert_eq!(cell(&rows[1], "max"), Some(&Value::Real(0.0)));
    assert_eq!(
        cell(&rows[1], "positive"),
        Some(&Value::Dynamic(json!({"offset": 2, "bucket_counts": []})))
    );
    assert_eq!(cell(&rows[2], "metric_name"), text("g").as_ref());
    assert_eq!(cell(&rows[2], "value"), Some(&Value::Real(42.0)));
}

#[test]
fn v3_histogram_damage_is_refused_or_rejected() {
    let refuse = |fill: fn(&mut v3::MetricData)| {
        let mut data = v3::MetricData {
            dict_name_str: dict(&["h"]),
            types: vec![0x16],
            name_refs: vec![1],
            num_points: vec![1],
            timestamps: vec![1000],
            vals_sint64: vec![30, 10],
            sketch_num_bins: vec![2],
            sketch_bin_cnts: vec![2, 3],
            point_flags: vec![0],
            vals_uint64: vec![5],
            ..v3::MetricData::default()
        };
        fill(&mut data);
        series_v3::to_rows(
            &v3::Payload {
                metadata: None,
                metric_data: Some(data),
            },
            INGEST,
        )
    };
    // Columns that end early refuse the payload: more bins than counts, a missing count, a
    // missing flag, a bound missing from the values.
    for fill in [
        (|d: &mut v3::MetricData| d.sketch_num_bins = vec![u64::MAX]) as fn(&mut v3::MetricData),
        |d| d.vals_uint64.clear(),
        |d| d.point_flags.clear(),
        |d| d.vals_sint64 = vec![30],
        |d| d.types = vec![0x15],
    ] {
        assert!(refuse(fill).is_err());
    }
    // A scale outside OpenTelemetry's range rejects the point alone.
    let mut data = v3::MetricData {
        dict_name_str: dict(&["h"]),
        types: vec![0x17],
        name_refs: vec![1],
        num_points: vec![1],
        timestamps: vec![1000],
        vals_sint64: vec![99, 0, 0, 1, 0],
        sketch_num_bins: vec![0, 0],
        point_flags: vec![0],
        vals_uint64: vec![1, 0],
        ..v3::MetricData::default()
    };
    let output = series_v3::to_rows(
        &v3::Payload {
            metadata: None,
            metric_data: Some(data.clone()),
        },
        INGEST,
    );
    assert!(matches!(&output, Ok(o) if o.rejected == 1 && o.error_message.contains("scale 99")));
    data.vals_sint64[0] = 20;
    let output = series_v3::to_rows(
        &v3::Payload {
            metadata: None,
            metric_data: Some(data),
        },
        INGEST,
    );
    assert!(matches!(&output, Ok(o) if o.rejected == 0 && o.rows.len() == 1));
}
