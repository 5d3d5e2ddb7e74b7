//! Seasonal analysis of dynamic numeric series: the seasonal component
//! (`series_seasonal`), period detection and validation (`series_periods_detect`,
//! `series_periods_validate`, through the bags of `__series_periods_detect` and
//! `__series_periods_validate`), and decomposition into trend, seasonality and residual with
//! anomaly flags and forecasts (`series_decompose`, `series_decompose_anomalies`,
//! `series_decompose_forecast`).

use datafusion::error::Result;
use serde_json::{Map, Value, json};

use crate::json::{out, parse_array};
use crate::rowfn::{Out, Val, arg};
use crate::series_analysis::{array_json, fence_percentiles, fit_line, numbers, outlier_scores, percentile, real_json};

/// The period `series_seasonal` finds on its own: the lag of at least 4 points and under half
/// the series with the highest autocorrelation, if it reaches 0.7.
fn seasonal_period(values: &[f64]) -> Option<usize> {
    let n = values.len();
    if n < 8 {
        return None;
    }
    let acf = autocorrelations(values, (n - 1) / 2);
    let mut best: Option<(usize, f64)> = None;
    for (lag, &score) in acf.iter().enumerate().skip(4) {
        if score >= 0.7 && best.is_none_or(|(_, s)| score > s + 1e-12) {
            best = Some((lag, score));
        }
    }
    best.map(|(lag, _)| lag)
}

/// `series_seasonal(series[, period])`: per position in the period, the median of the values
/// at that position across the periods; the period found in the series when not given (or
/// -1), zeros when there is none (or the period is not a positive whole number).
pub fn series_seasonal(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let values = numbers(&items);
    let n = values.len();
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    let period = match arg(args, 1).long() {
        None | Some(-1) => {
            let mean = if present.is_empty() {
                0.0
            } else {
                present.iter().sum::<f64>() / present.len() as f64
            };
            let filled: Vec<f64> = values.iter().map(|v| v.unwrap_or(mean)).collect();
            seasonal_period(&filled)
        }
        Some(p) => usize::try_from(p).ok().filter(|p| *p > 0),
    };
    let Some(period) = period else {
        return Ok(out(array_json(&vec![0.0; n])));
    };
    let medians: Vec<f64> = (0..period.min(n))
        .map(|phase| {
            let mut at: Vec<f64> = values.iter().skip(phase).step_by(period).flatten().copied().collect();
            at.sort_by(|a, b| a.total_cmp(b));
            match at.len() {
                0 => 0.0,
                len if len % 2 == 1 => at[len / 2],
                len => (at[len / 2 - 1] + at[len / 2]) / 2.0,
            }
        })
        .collect();
    let seasonal: Vec<f64> = (0..n).map(|i| medians[i % period]).collect();
    Ok(out(array_json(&seasonal)))
}

/// The autocorrelation of `values` (mean removed) at every lag up to `max_lag`, each over the
/// pairs it has (so a lag's score does not shrink with the lag); index 0 is 1.
fn autocorrelations(values: &[f64], max_lag: usize) -> Vec<f64> {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n.max(1) as f64;
    let centered: Vec<f64> = values.iter().map(|v| v - mean).collect();
    let energy: f64 = centered.iter().map(|v| v * v).sum();
    (0..=max_lag.min(n.saturating_sub(1)))
        .map(|lag| {
            if energy <= 0.0 {
                return 0.0;
            }
            centered.iter().zip(&centered[lag..]).map(|(a, b)| a * b).sum::<f64>() / energy * n as f64
                / (n - lag) as f64
        })
        .collect()
}

/// The score of period `lag`: its autocorrelation (at most 1) when it is a peak (no lower
/// than the lags beside it) above what white noise reaches (1.96/√n), else 0; 0 outside
/// 4 … n/2.
fn period_score(acf: &[f64], lag: usize, n: usize) -> f64 {
    if lag < 4 || lag > n / 2 || lag >= acf.len() {
        return 0.0;
    }
    let here = acf[lag];
    let before = acf[lag - 1];
    let after = acf.get(lag + 1).copied().unwrap_or(f64::NEG_INFINITY);
    // What white noise reaches: the 95% bound of its autocorrelation.
    let noise = 1.96 / (n as f64).sqrt();
    if here >= before && here >= after && here > noise {
        here.min(1.0)
    } else {
        0.0
    }
}

/// A series' values with gaps filled by the mean.
fn filled(items: &[Value]) -> Vec<f64> {
    let values = numbers(items);
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    let mean = if present.is_empty() {
        0.0
    } else {
        present.iter().sum::<f64>() / present.len() as f64
    };
    values.iter().map(|v| v.unwrap_or(mean)).collect()
}

/// `series_periods_detect(series, min_period, max_period, num_periods)` as a bag of
/// `periods` and `periods_scores`: the peaks of the autocorrelation between the bounds (4 …
/// n/2 points) scoring at least 0.7, best first, leaving out multiples of a period already
/// found; padded with zeros to `num_periods`.
pub fn series_periods_detect_bag(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let (Some(low), Some(high), Some(wanted)) = (arg(args, 1).real(), arg(args, 2).real(), arg(args, 3).long()) else {
        return Ok(Out::Null);
    };
    let wanted = usize::try_from(wanted).unwrap_or(0).min(1024);
    let values = filled(&items);
    let n = values.len();
    let acf = autocorrelations(&values, n / 2 + 1);
    let mut candidates: Vec<(usize, f64)> = (4..=n / 2)
        .filter(|&lag| lag as f64 >= low && lag as f64 <= high)
        .map(|lag| (lag, period_score(&acf, lag, n)))
        .filter(|(_, score)| *score >= 0.7)
        .collect();
    candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut found: Vec<(usize, f64)> = Vec::new();
    for (lag, score) in candidates {
        if found.len() == wanted {
            break;
        }
        if !found.iter().any(|(period, _)| lag % period == 0) {
            found.push((lag, score));
        }
    }
    let mut periods: Vec<Value> = found.iter().map(|(lag, _)| json!(lag)).collect();
    let mut scores: Vec<Value> = found.iter().map(|(_, score)| real_json(*score)).collect();
    periods.resize(wanted, json!(0));
    scores.resize(wanted, json!(0.0));
    Ok(out(json!({ "periods": periods, "periods_scores": scores })))
}

/// `series_periods_validate(series, period, ...)` as a bag of `periods` (as given) and
/// `scores`: each period's autocorrelation when it is a significant peak, else 0 (0 outside
/// 4 … n/2;
/// a fractional period is read at its nearest whole lag).
pub fn series_periods_validate_bag(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let values = filled(&items);
    let n = values.len();
    let acf = autocorrelations(&values, n / 2 + 1);
    let mut periods = Vec::new();
    let mut scores = Vec::new();
    for period in args.iter().skip(1).take(16) {
        let Some(period) = period.real() else {
            continue;
        };
        periods.push(real_json(period));
        let lag = period.round();
        let score = if lag >= 0.0 && lag <= n as f64 {
            period_score(&acf, lag as usize, n)
        } else {
            0.0
        };
        scores.push(real_json(score));
    }
    Ok(out(json!({ "periods": periods, "scores": scores })))
}

/// The period of the strongest repetition in `values` (autocorrelation of the detrended
/// values at lags 2 … n/2 above `threshold`), if any.
fn detect_period(values: &[f64], threshold: f64) -> Option<usize> {
    let n = values.len();
    if n < 8 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let centered: Vec<f64> = values.iter().map(|v| v - mean).collect();
    let energy: f64 = centered.iter().map(|v| v * v).sum();
    if energy <= 0.0 {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for lag in 2..=n / 2 {
        let score: f64 = centered.iter().zip(&centered[lag..]).map(|(a, b)| a * b).sum::<f64>() / energy * n as f64
            / (n - lag) as f64;
        if score >= threshold && best.is_none_or(|(_, s)| score > s + 1e-9) {
            best = Some((lag, score));
        }
    }
    best.map(|(lag, _)| lag)
}

/// A decomposition: baseline = seasonal + trend; residual = value − baseline.
struct Decomposition {
    baseline: Vec<f64>,
    seasonal: Vec<f64>,
    trend: Vec<f64>,
    residual: Vec<f64>,
}

/// Decomposes the first `len − test_points` values and extends trend and seasonality over the
/// test points. `seasonality`: −1 detects it, 0 none, n a period of n points. `trend`: `avg`,
/// `linefit` or `none`.
fn decompose(
    values: &[Option<f64>],
    seasonality: i64,
    trend: &str,
    test_points: usize,
    threshold: f64,
) -> Decomposition {
    let n = values.len();
    let train = n.saturating_sub(test_points).max(1).min(n);
    let filled: Vec<f64> = {
        let present: Vec<f64> = values[..train].iter().flatten().copied().collect();
        let mean = if present.is_empty() {
            0.0
        } else {
            present.iter().sum::<f64>() / present.len() as f64
        };
        values.iter().map(|v| v.unwrap_or(mean)).collect()
    };
    let trend_values: Vec<f64> = match trend {
        "none" => vec![0.0; n],
        "linefit" => match fit_line(&values[..train]) {
            Some(line) => (0..n).map(|i| line.origin + line.slope * i as f64).collect(),
            None => vec![0.0; n],
        },
        _ => {
            let present: Vec<f64> = values[..train].iter().flatten().copied().collect();
            let mean = if present.is_empty() {
                0.0
            } else {
                present.iter().sum::<f64>() / present.len() as f64
            };
            vec![mean; n]
        }
    };
    let detrended: Vec<f64> = filled.iter().zip(&trend_values).map(|(v, t)| v - t).collect();
    let period = match seasonality {
        s if s < 0 => detect_period(&detrended[..train], threshold),
        0 | 1 => None,
        s => usize::try_from(s).ok().filter(|p| *p < train),
    };
    let seasonal: Vec<f64> = match period {
        None => vec![0.0; n],
        Some(period) => {
            // Each phase: the median of the training values at that phase.
            let mut phases: Vec<Vec<f64>> = vec![Vec::new(); period];
            for (i, v) in detrended[..train].iter().enumerate() {
                if values[i].is_some() {
                    phases[i % period].push(*v);
                }
            }
            let medians: Vec<f64> = phases
                .iter_mut()
                .map(|phase| {
                    phase.sort_by(f64::total_cmp);
                    if phase.is_empty() { 0.0 } else { percentile(phase, 50.0) }
                })
                .collect();
            (0..n).map(|i| medians[i % period]).collect()
        }
    };
    let baseline: Vec<f64> = seasonal.iter().zip(&trend_values).map(|(s, t)| s + t).collect();
    let residual: Vec<f64> = filled.iter().zip(&baseline).map(|(v, b)| v - b).collect();
    Decomposition {
        baseline,
        seasonal,
        trend: trend_values,
        residual,
    }
}

fn decompose_args(args: &[Val], seasonality_at: usize, default_trend: &str) -> (i64, String, usize, f64) {
    let seasonality = arg(args, seasonality_at).long().unwrap_or(-1);
    let trend = match arg(args, seasonality_at + 1) {
        Val::Str(s) => s.to_ascii_lowercase(),
        _ => default_trend.to_owned(),
    };
    let test_points = arg(args, seasonality_at + 2).long().unwrap_or(0).max(0) as usize;
    (seasonality, trend, test_points, 0.6)
}

/// `series_decompose(series [, seasonality = -1, trend = 'avg', test_points = 0,
/// seasonality_threshold = 0.6])` as a bag of baseline, seasonal, trend and residual.
pub fn series_decompose_bag(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let (seasonality, trend, test_points, _) = decompose_args(args, 1, "avg");
    let threshold = arg(args, 4).real().unwrap_or(0.6);
    let parts = decompose(&numbers(&items), seasonality, &trend, test_points, threshold);
    let mut bag = Map::new();
    bag.insert("baseline".into(), array_json(&parts.baseline));
    bag.insert("seasonal".into(), array_json(&parts.seasonal));
    bag.insert("trend".into(), array_json(&parts.trend));
    bag.insert("residual".into(), array_json(&parts.residual));
    Ok(out(Value::Object(bag)))
}

/// `series_decompose_anomalies(series [, threshold = 1.5, seasonality = -1, trend = 'linefit',
/// test_points = 0, ad_method = 'ctukey', seasonality_threshold = 0.6])` as a bag of ad_flag
/// (+1, −1 or 0), ad_score (the outlier score of the residual) and baseline.
pub fn series_decompose_anomalies_bag(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let threshold = arg(args, 1).real().unwrap_or(1.5);
    let (seasonality, trend, test_points, _) = decompose_args(args, 2, "linefit");
    let method = match arg(args, 5) {
        Val::Str(s) => Some(s.to_ascii_lowercase()),
        _ => None,
    };
    let seasonality_threshold = arg(args, 6).real().unwrap_or(0.6);
    let values = numbers(&items);
    let parts = decompose(&values, seasonality, &trend, test_points, seasonality_threshold);
    let residual: Vec<Option<f64>> = parts.residual.iter().zip(&values).map(|(r, v)| v.map(|_| *r)).collect();
    let (low, high) = fence_percentiles(method.as_deref(), None, None);
    let scores = outlier_scores(&residual, low, high);
    let flags: Vec<Value> = scores
        .iter()
        .map(|s| {
            json!(if *s > threshold {
                1
            } else if *s < -threshold {
                -1
            } else {
                0
            })
        })
        .collect();
    let mut bag = Map::new();
    bag.insert("ad_flag".into(), Value::Array(flags));
    bag.insert("ad_score".into(), array_json(&scores));
    bag.insert("baseline".into(), array_json(&parts.baseline));
    Ok(out(Value::Object(bag)))
}

/// `series_decompose_forecast(series, points [, seasonality = -1, trend = 'avg',
/// seasonality_threshold = 0.6])`: the baseline (seasonal + trend) learned from all but the
/// last `points` values, over the whole series: the last `points` values are its forecast.
pub fn series_decompose_forecast(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let points = arg(args, 1).long().unwrap_or(0).max(0) as usize;
    let seasonality = arg(args, 2).long().unwrap_or(-1);
    let trend = match arg(args, 3) {
        Val::Str(s) => s.to_ascii_lowercase(),
        _ => "avg".to_owned(),
    };
    let threshold = arg(args, 4).real().unwrap_or(0.6);
    let parts = decompose(&numbers(&items), seasonality, &trend, points, threshold);
    Ok(out(array_json(&parts.baseline)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, r, reals, run, s};

    #[test]
    fn periods_are_detected_and_validated() {
        let traffic = "[80, 139, 87, 110, 68, 54, 50, 51, 53, 133, 86, 141, 97, 156, 94, 149, 95, 140, 77, 61, 50, 54, \
                       47, 133, 72, 152, 94, 148, 105, 162, 101, 160, 87, 63, 53, 55, 54, 151, 103, 189, 108, 183, 113, \
                       175, 113, 178, 90, 71, 62, 62, 65, 165, 109, 181, 115, 182, 121, 178, 114, 170]";
        let bag: serde_json::Value =
            serde_json::from_str(&run("__series_periods_detect", &[d(traffic), r(0.0), r(50.0), l(2)]))
                .unwrap_or_default();
        assert_eq!(bag["periods"], serde_json::json!([14, 0]), "{bag}");
        let score = bag["periods_scores"][0].as_f64().unwrap_or(0.0);
        assert!(score > 0.8 && score <= 1.0, "{bag}");
        assert_eq!(bag["periods_scores"][1], 0.0);
        let bag: serde_json::Value = serde_json::from_str(&run(
            "__series_periods_validate",
            &[d(traffic), r(14.0), r(10.0), r(2.0)],
        ))
        .unwrap_or_default();
        assert_eq!(bag["periods"], serde_json::json!([14.0, 10.0, 2.0]));
        assert!(bag["scores"][0].as_f64().unwrap_or(0.0) > 0.8, "{bag}");
        assert_eq!(bag["scores"][1], 0.0, "{bag}");
        assert_eq!(bag["scores"][2], 0.0, "{bag}");
    }

    #[test]
    fn seasonal_component_as_documented() {
        for (series, period, expected) in [
            (
                "[2,5,3,4,3,2,1,2,3,4,3,2,1,2,3,4,3,2,1,2,3,4,3,2,1]",
                None,
                "[1.0,2.0,3.0,4.0,3.0,2.0,1.0,2.0,3.0,4.0,3.0,2.0,1.0,2.0,3.0,4.0,3.0,2.0,1.0,2.0,3.0,4.0,3.0,2.0,1.0]",
            ),
            (
                "[8,12,14,12,10,10,12,14,12,10,10,12,14,12,10,10,12,14,12,10]",
                None,
                "[10.0,12.0,14.0,12.0,10.0,10.0,12.0,14.0,12.0,10.0,10.0,12.0,14.0,12.0,10.0,10.0,12.0,14.0,12.0,10.0]",
            ),
            (
                "[1,3,5,2,4,6,1,3,5,2,4,6]",
                None,
                "[0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0]",
            ),
            ("[1,3,5,1,3,5,2,4,6]", Some(3), "[1.0,3.0,5.0,1.0,3.0,5.0,1.0,3.0,5.0]"),
            (
                "[1,3,5,2,4,6,1,3,5,2,4,6]",
                Some(3),
                "[1.5,3.5,5.5,1.5,3.5,5.5,1.5,3.5,5.5,1.5,3.5,5.5]",
            ),
            ("[1,2,3]", Some(0), "[0.0,0.0,0.0]"),
        ] {
            let got = match period {
                Some(p) => run("series_seasonal", &[d(series), l(p)]),
                None => run("series_seasonal", &[d(series)]),
            };
            assert_eq!(got, expected, "{series} {period:?}");
        }
    }

    #[test]
    fn seasonal_decomposition_and_anomalies() {
        // A weekly pattern over four weeks plus a spike.
        let mut values: Vec<f64> = (0..28)
            .map(|i| [10.0, 12.0, 14.0, 12.0, 10.0, 5.0, 5.0][i % 7])
            .collect();
        values[20] += 40.0;
        let text = serde_json::to_string(&values).unwrap_or_default();
        let bag: serde_json::Value =
            serde_json::from_str(&run("__series_decompose", &[d(&text), l(7), s("avg")])).unwrap_or_default();
        let seasonal = bag["seasonal"].as_array().map(Vec::len);
        assert_eq!(seasonal, Some(28));
        let baseline: Vec<f64> = serde_json::from_value(bag["baseline"].clone()).unwrap_or_default();
        assert!((baseline[2] - 14.0).abs() < 1.5, "{baseline:?}");
        let anomalies: serde_json::Value =
            serde_json::from_str(&run("__series_decompose_anomalies", &[d(&text), r(1.5), l(-1)])).unwrap_or_default();
        let flags: Vec<i64> = serde_json::from_value(anomalies["ad_flag"].clone()).unwrap_or_default();
        assert_eq!(flags.iter().filter(|f| **f != 0).count(), 1, "{flags:?}");
        assert_eq!(flags[20], 1);
    }

    #[test]
    fn a_forecast_repeats_the_season_over_the_trend() {
        // A period of 4 (no slope within a period) on a rising line, the last 8 points to forecast (empty, as
        // make-series leaves them).
        let mut values: Vec<String> = (0..24)
            .map(|i| format!("{}", [10.0, 20.0, 20.0, 10.0][i % 4] + i as f64))
            .collect();
        for v in values.iter_mut().skip(16) {
            *v = "null".into();
        }
        let series = format!("[{}]", values.join(","));
        let forecast = reals(&run(
            "series_decompose_forecast",
            &[d(&series), l(8), l(4), s("linefit")],
        ));
        assert_eq!(forecast.len(), 24);
        for (i, f) in forecast.iter().enumerate().skip(16) {
            let want = [10.0, 20.0, 20.0, 10.0][i % 4] + i as f64;
            assert!((f - want).abs() < 1.0, "{i}: {f} vs {want}");
        }
    }
}
