use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, StringViewArray};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Accumulator;

use super::*;
use crate::udaf::testing::{accumulator, run, run_split};

fn longs(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from_iter(values))
}

fn reals(values: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from_iter(values))
}

fn text(value: &ScalarValue) -> String {
    match value {
        ScalarValue::Utf8View(Some(s)) => s.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

fn percentile(sketch: &str, p: f64) -> f64 {
    match percentile_tdigest(&[Val::Str(sketch), Val::Real(p)]) {
        Ok(Out::Real(x)) => x,
        other => panic!("{other:?}"),
    }
}

fn rank(sketch: &str, x: i64) -> i64 {
    match rank_tdigest(&[Val::Str(sketch), Val::Long(x)]) {
        Ok(Out::Long(r)) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn small_inputs_are_exact_nearest_rank() {
    let sketch = text(&run("tdigest", &[longs((1..=10).map(Some).chain([None]))]));
    assert!(sketch.starts_with("[[1,100,10,1,10,\"long\"],[[1,1],[2,1]"), "{sketch}");
    assert_eq!(percentile(&sketch, 50.0), 5.0);
    assert_eq!(percentile(&sketch, 0.0), 1.0);
    assert_eq!(percentile(&sketch, 100.0), 10.0);
    assert_eq!(percentile(&sketch, 7.0), 1.0);
    assert_eq!(percentile(&sketch, 91.0), 10.0);
    assert_eq!(rank(&sketch, 4), 4);
    assert_eq!(rank(&sketch, 0), 0);
    // The percentage rank: 4 of the 10 values are at or below 4.
    match percentrank_tdigest(&[Val::Str(&sketch), Val::Long(4)]) {
        Ok(Out::Real(p)) => assert_eq!(p, 40.0),
        other => panic!("{other:?}"),
    }
    // Documented: tdigest(V, W) over (1.0, 1), (2.0, 2) has P50 = 2.
    let weighted = text(&run(
        "tdigest",
        &[reals([Some(1.0), Some(2.0)]), longs([Some(1), Some(2)])],
    ));
    assert_eq!(percentile(&weighted, 50.0), 2.0);
}

#[test]
fn empty_group_is_null() {
    let mut acc = accumulator("tdigest", &[longs([])]);
    assert_eq!(acc.evaluate().ok(), Some(ScalarValue::Utf8View(None)));
}

#[test]
fn large_inputs_within_one_percent() {
    let n = 100_000i64;
    // A scrambled order, values 1..=n.
    let values = longs((0..n).map(|i| Some((i * 7919) % n + 1)));
    let whole = text(&run_split("tdigest", std::slice::from_ref(&values)));
    let digest = TDigest::from_text(&whole).unwrap_or_else(|| panic!("bad sketch"));
    assert!(digest.centroids.len() < 200, "{} centroids", digest.centroids.len());
    for p in [1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9] {
        let got = percentile(&whole, p);
        let expected = p / 100.0 * n as f64;
        assert!((got - expected).abs() <= 0.01 * n as f64, "p{p}: {got} vs {expected}");
    }
    assert_eq!(percentile(&whole, 100.0), n as f64);
    assert_eq!(percentile(&whole, 0.0), 1.0);
    let r = rank(&whole, 68_500);
    assert!((r - 68_500).abs() < 200, "{r}");
    // Skewed data: exponential-ish.
    let skewed = reals(
        (0..n)
            .map(|i| Some(((i * 7919) % n) as f64 / n as f64))
            .map(|u| u.map(|u| -(1.0 - u).ln())),
    );
    let sketch = text(&run_split("tdigest", &[skewed]));
    for p in [50.0, 90.0, 99.0] {
        let got = percentile(&sketch, p);
        let expected = -(1.0 - p / 100.0f64).ln();
        assert!((got - expected).abs() / expected < 0.02, "p{p}: {got} vs {expected}");
    }
}

#[test]
fn rank_of_documented_example() {
    let values = longs((1..=1000).map(Some));
    let mut acc = accumulator("tdigest", std::slice::from_ref(&values));
    acc.update_batch(std::slice::from_ref(&values))
        .unwrap_or_else(|e| panic!("{e}"));
    let whole = acc.evaluate().map(|v| text(&v)).unwrap_or_default();
    assert_eq!(rank(&whole, 685), 685);
    assert_eq!(percentile(&whole, 68.5), 685.0);
    let merged = text(&run_split("tdigest", &[values]));
    assert_eq!(rank(&merged, 685), 685);
}

#[test]
fn merges() {
    let a = text(&run("tdigest", &[longs((1..=10).map(Some))]));
    let b = text(&run("tdigest", &[longs((11..=20).map(Some))]));
    let Ok(Out::Str(merged)) = tdigest_merge_scalar(&[Val::Str(&a), Val::Null, Val::Str(&b)]) else {
        panic!()
    };
    assert_eq!(percentile(&merged, 100.0), 20.0);
    assert_eq!(percentile(&merged, 50.0), 10.0);
    let sketches: ArrayRef = Arc::new(StringViewArray::from(vec![Some(a.as_str()), None, Some(b.as_str())]));
    let aggregated = text(&run("tdigest_merge", std::slice::from_ref(&sketches)));
    assert_eq!(aggregated, merged);
    assert_eq!(text(&run("merge_tdigest", &[sketches])), merged);
    assert!(tdigest_merge_scalar(&[Val::Str("[1]")]).is_err());
    let Ok(Out::Str(array)) =
        percentiles_array_tdigest(&[Val::Str(&merged), Val::Long(50), Val::Str("[0, 100]"), Val::Str("long")])
    else {
        panic!()
    };
    assert_eq!(array, "[10,1,20]");
}

#[test]
fn percentilew_is_weighted_nearest_rank() {
    let buckets = longs([Some(10), Some(20), Some(30), Some(40), None]);
    let counts = longs([Some(8), Some(6), Some(3), Some(1), Some(5)]);
    for (p, expected) in [(50.0, 20), (75.0, 20), (99.9, 40), (0.0, 10)] {
        let percents = reals((0..5).map(|_| Some(p)));
        let got = run("percentilew", &[buckets.clone(), counts.clone(), percents]);
        assert_eq!(got, ScalarValue::Int64(Some(expected)), "p{p}");
    }
    let mut acc = accumulator("percentilew", &[buckets.clone(), counts.clone(), reals([])]);
    assert_eq!(acc.evaluate().ok(), Some(ScalarValue::Int64(None)));
}

#[test]
fn json_round_trip() {
    let mut digest = TDigest::new(COMPRESSION, ValueKind::Real);
    for i in 0..5_000 {
        digest.add(f64::from(i) * 0.5, 1.0);
    }
    digest.compress();
    let back = TDigest::from_json(&digest.to_json());
    assert_eq!(back.map(|d| d.centroids), Some(digest.centroids.clone()));
}
