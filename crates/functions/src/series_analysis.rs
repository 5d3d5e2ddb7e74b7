//! Series analysis on dynamic numeric arrays (the output of `make-series`): filters
//! (`series_fir`, `series_iir`), outlier scores (`series_outliers`) and fitted lines
//! (`series_fit_line_dynamic`, `series_fit_2lines_dynamic`, and the columns of
//! `series_fit_line` / `series_fit_2lines`); seasonal analysis is in `series_decompose.rs`,
//! polynomial fits in `series_poly.rs`. Elements that are not numbers count as missing:
//! filters read them as 0, fits skip them.

use datafusion::error::Result;
use serde_json::{Value, json};

use crate::json::{as_real, out, parse_array};
use crate::rowfn::{Out, Val, arg};

pub(crate) fn numbers(items: &[Value]) -> Vec<Option<f64>> {
    items.iter().map(|v| as_real(v).filter(|x| x.is_finite())).collect()
}

pub(crate) fn real_json(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

pub(crate) fn array_json(values: &[f64]) -> Value {
    Value::Array(values.iter().map(|x| real_json(*x)).collect())
}

fn real_array(arg_value: Val) -> Option<Vec<f64>> {
    parse_array(arg_value).map(|items| items.iter().map(|v| as_real(v).unwrap_or(0.0)).collect())
}

/// `series_fir(series, filter [, normalize = true, center = false])`: y[i] = Σ filter[j] ·
/// x[i − j] (or centered: x[i + (len − 1)/2 − j]), divided by Σ filter when normalizing.
pub fn series_fir(args: &[Val]) -> Result<Out> {
    let (Some(items), Some(filter)) = (parse_array(arg(args, 0)), real_array(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    if filter.is_empty() {
        return Ok(Out::Null);
    }
    let normalize = arg(args, 2).bool().unwrap_or(true);
    let center = arg(args, 3).bool().unwrap_or(false);
    let x: Vec<f64> = numbers(&items).into_iter().map(|v| v.unwrap_or(0.0)).collect();
    let total: f64 = filter.iter().sum();
    let scale = if normalize && total != 0.0 { total } else { 1.0 };
    let shift = if center { (filter.len() as i64 - 1) / 2 } else { 0 };
    let y: Vec<f64> = (0..x.len() as i64)
        .map(|i| {
            let mut sum = 0.0;
            for (j, weight) in filter.iter().enumerate() {
                let at = i + shift - j as i64;
                if at >= 0 && (at as usize) < x.len() {
                    sum += weight * x[at as usize];
                }
            }
            sum / scale
        })
        .collect();
    Ok(out(array_json(&y)))
}

/// `series_iir(series, numerators, denominators)`: y[n] = (Σ b[k]·x[n−k] − Σ_{k≥1} a[k]·y[n−k])
/// / a[0].
pub fn series_iir(args: &[Val]) -> Result<Out> {
    let (Some(items), Some(b), Some(a)) = (
        parse_array(arg(args, 0)),
        real_array(arg(args, 1)),
        real_array(arg(args, 2)),
    ) else {
        return Ok(Out::Null);
    };
    let Some(a0) = a.first().copied().filter(|a0| *a0 != 0.0) else {
        return Ok(Out::Null);
    };
    let x: Vec<f64> = numbers(&items).into_iter().map(|v| v.unwrap_or(0.0)).collect();
    let mut y = vec![0.0; x.len()];
    for n in 0..x.len() {
        let mut sum = 0.0;
        for (k, bk) in b.iter().enumerate() {
            if k <= n {
                sum += bk * x[n - k];
            }
        }
        for (k, ak) in a.iter().enumerate().skip(1) {
            if k <= n {
                sum -= ak * y[n - k];
            }
        }
        y[n] = sum / a0;
    }
    Ok(out(array_json(&y)))
}

/// The `p`th percentile (0–100) of sorted values, interpolated between neighbours.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64)
}

/// Tukey fence scores of `values` with the `low`/`high` percentiles as quartiles: 0 inside
/// [P_low − 1.5·IQR, P_high + 1.5·IQR], else the distance past the fence in IQRs (negative
/// below). Missing values score 0.
pub(crate) fn outlier_scores(values: &[Option<f64>], low: f64, high: f64) -> Vec<f64> {
    let mut sorted: Vec<f64> = values.iter().flatten().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let (q1, q3) = (percentile(&sorted, low), percentile(&sorted, high));
    let iqr = q3 - q1;
    let (lower, upper) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    values
        .iter()
        .map(|v| match v {
            Some(x) if *x > upper => (x - upper) / iqr.max(f64::MIN_POSITIVE),
            Some(x) if *x < lower => (x - lower) / iqr.max(f64::MIN_POSITIVE),
            _ => 0.0,
        })
        .map(|s| if s.is_finite() { s } else { 0.0 })
        .collect()
}

/// The quartile percentiles of an outlier test kind: `tukey` (25, 75) or `ctukey` (given,
/// default 10, 90).
pub(crate) fn fence_percentiles(kind: Option<&str>, low: Option<f64>, high: Option<f64>) -> (f64, f64) {
    match kind {
        Some("tukey") => (25.0, 75.0),
        _ => (low.unwrap_or(10.0), high.unwrap_or(90.0)),
    }
}

/// `series_outliers(series [, kind = 'ctukey', ignore_val, min_percentile = 10,
/// max_percentile = 90])`: a score per element (see [`outlier_scores`]).
pub fn series_outliers(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let kind = match arg(args, 1) {
        Val::Str(s) => Some(s.to_ascii_lowercase()),
        _ => None,
    };
    let ignore = arg(args, 2).real();
    let mut values = numbers(&items);
    if let Some(ignored) = ignore {
        for v in values.iter_mut() {
            if *v == Some(ignored) {
                *v = None;
            }
        }
    }
    let (low, high) = fence_percentiles(kind.as_deref(), arg(args, 3).real(), arg(args, 4).real());
    Ok(out(array_json(&outlier_scores(&values, low, high))))
}

/// The least-squares line through (i, y[i]) of the present values.
pub(crate) struct Line {
    pub(crate) slope: f64,
    /// The line's value at index 0.
    pub(crate) origin: f64,
    rsquare: f64,
    /// Sample variances (over n − 1) of the values and of their residuals.
    variance: f64,
    rvariance: f64,
    /// Sum of squared residuals, and of squared deviations from the mean.
    residual: f64,
    total: f64,
    fit: Vec<f64>,
}

impl Line {
    /// Kusto's interception: the line's value at x = 0 when the first value sits at x = 1.
    fn interception(&self) -> f64 {
        self.origin - self.slope
    }
}

pub(crate) fn fit_line(values: &[Option<f64>]) -> Option<Line> {
    fit_segment(values, 0)
}

/// The least-squares line through `values`, the first of which is at index `offset`.
fn fit_segment(values: &[Option<f64>], offset: usize) -> Option<Line> {
    let points: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|y| ((offset + i) as f64, y)))
        .collect();
    let n = points.len() as f64;
    if points.is_empty() {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let origin = mean_y - slope * mean_x;
    let fit: Vec<f64> = (0..values.len())
        .map(|i| origin + slope * (offset + i) as f64)
        .collect();
    let total: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    let residual: f64 = points.iter().map(|p| (p.1 - (origin + slope * p.0)).powi(2)).sum();
    let rsquare = if total > 0.0 { 1.0 - residual / total } else { 1.0 };
    let dof = (n - 1.0).max(1.0);
    Some(Line {
        slope,
        origin,
        rsquare,
        variance: total / dof,
        rvariance: residual / dof,
        residual,
        total,
        fit,
    })
}

/// `series_fit_line_dynamic(series)`: a bag of rsquare, slope, variance, rvariance,
/// interception and line_fit (the fitted values). Variances are sample variances (over
/// n − 1); the interception is the line's value at x = 0 with the first value at x = 1.
pub fn series_fit_line_dynamic(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let Some(line) = fit_line(&numbers(&items)) else {
        return Ok(Out::Null);
    };
    Ok(out(json!({
        "rsquare": real_json(line.rsquare),
        "slope": real_json(line.slope),
        "variance": real_json(line.variance),
        "rvariance": real_json(line.rvariance),
        "interception": real_json(line.interception()),
        "line_fit": array_json(&line.fit),
    })))
}

/// `series_fit_2lines_dynamic(series)`: the best split of the series into two lines (the
/// split with the highest total r-square, each side holding at least two values): rsquare,
/// split_idx (the first index of the right side), variance, rvariance, line_fit, and each
/// side's rsquare, slope, interception, variance and rvariance (`left_*`, `right_*`). A
/// series of fewer than four values is fitted with one line on both sides.
pub fn series_fit_2lines_dynamic(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let values = numbers(&items);
    let Some(whole) = fit_line(&values) else {
        return Ok(Out::Null);
    };
    let n = values.len();
    let mut best: Option<(f64, usize, Line, Line)> = None;
    for split in 2..n.saturating_sub(1) {
        let (Some(left), Some(right)) = (fit_segment(&values[..split], 0), fit_segment(&values[split..], split)) else {
            continue;
        };
        let rsquare = if whole.total > 0.0 {
            1.0 - (left.residual + right.residual) / whole.total
        } else {
            1.0
        };
        if best.as_ref().is_none_or(|(r, ..)| rsquare > *r) {
            best = Some((rsquare, split, left, right));
        }
    }
    let (rsquare, split, left, right) = match best {
        Some(best) => best,
        None => {
            let (left, right) = (fit_line(&values), fit_line(&values));
            match (left, right) {
                (Some(left), Some(right)) => (whole.rsquare, 0, left, right),
                _ => return Ok(Out::Null),
            }
        }
    };
    let present = values.iter().flatten().count() as f64;
    let rvariance = (left.residual + right.residual) / (present - 1.0).max(1.0);
    let mut fit = left.fit.clone();
    if split > 0 {
        fit.extend_from_slice(&right.fit);
    }
    Ok(out(json!({
        "rsquare": real_json(rsquare),
        "split_idx": split,
        "variance": real_json(whole.variance),
        "rvariance": real_json(rvariance),
        "line_fit": array_json(&fit),
        "right_rsquare": real_json(right.rsquare),
        "right_slope": real_json(right.slope),
        "right_interception": real_json(right.interception()),
        "right_variance": real_json(right.variance),
        "right_rvariance": real_json(right.rvariance),
        "left_rsquare": real_json(left.rsquare),
        "left_slope": real_json(left.slope),
        "left_interception": real_json(left.interception()),
        "left_variance": real_json(left.variance),
        "left_rvariance": real_json(left.rvariance),
    })))
}

#[cfg(test)]
mod tests {
    use crate::testing::{b, d, reals, run, s};

    #[test]
    fn filters() {
        // A moving sum of 3 (not normalized), then a centered moving average.
        assert_eq!(
            run("series_fir", &[d("[1,2,3,4,5]"), d("[1,1,1]"), b(false)]),
            "[1.0,3.0,6.0,9.0,12.0]"
        );
        assert_eq!(
            run("series_fir", &[d("[1,2,3,4,5]"), d("[1,1,1]"), b(true), b(true)]),
            "[1.0,2.0,3.0,4.0,3.0]"
        );
        // y[n] = x[n] + y[n-1]: a cumulative sum (the documented example).
        assert_eq!(
            run("series_iir", &[d("[1,2,3,4]"), d("[1]"), d("[1,-1]")]),
            "[1.0,3.0,6.0,10.0]"
        );
        assert_eq!(run("series_iir", &[d("[1]"), d("[1]"), d("[0]")]), "null");
    }

    #[test]
    fn outliers_score_past_the_fences() {
        let scores = reals(&run("series_outliers", &[d("[1,2,3,2,1,2,3,2,1,50]")]));
        assert_eq!(scores.len(), 10);
        assert!(scores[9] > 1.5, "{scores:?}");
        assert!(scores[..9].iter().all(|s| *s == 0.0), "{scores:?}");
        let tukey = reals(&run("series_outliers", &[d("[1,2,3,4,-40]"), s("tukey")]));
        assert!(tukey[4] < 0.0);
    }

    #[test]
    fn a_line_fits() {
        let bag: serde_json::Value =
            serde_json::from_str(&run("series_fit_line_dynamic", &[d("[1,3,5,7]")])).unwrap_or_default();
        assert_eq!(bag["slope"], 2.0);
        // The first value sits at x = 1: the line crosses x = 0 at -1.
        assert_eq!(bag["interception"], -1.0);
        assert_eq!(bag["rsquare"], 1.0);
        assert_eq!(bag["line_fit"], serde_json::json!([1.0, 3.0, 5.0, 7.0]));
        assert_eq!(bag["rvariance"], 0.0);
        // The documented example: sample variances, interception -1.666.
        let bag: serde_json::Value = serde_json::from_str(&run(
            "series_fit_line_dynamic",
            &[d("[2, 5, 6, 8, 11, 15, 17, 18, 25, 26, 30, 30]")],
        ))
        .unwrap_or_default();
        let value = |key: &str| bag[key].as_f64().unwrap_or(f64::NAN);
        assert!((value("rsquare") - 0.982).abs() < 1e-3, "{bag}");
        assert!((value("slope") - 2.730).abs() < 1e-3, "{bag}");
        assert!((value("variance") - 98.628).abs() < 1e-3, "{bag}");
        assert!((value("rvariance") - 1.686).abs() < 1e-3, "{bag}");
        assert!((value("interception") + 1.666).abs() < 1e-3, "{bag}");
    }

    #[test]
    fn two_lines_split_where_the_trend_turns() {
        let bag: serde_json::Value =
            serde_json::from_str(&run("series_fit_2lines_dynamic", &[d("[1,2,3,4,5,10,8,6,4]")])).unwrap_or_default();
        // Up by 1 for five values, then down by 2 from 10: the right side starts at index 5.
        assert_eq!(bag["split_idx"], 5, "{bag}");
        assert_eq!(bag["left_slope"], 1.0);
        assert_eq!(bag["right_slope"], -2.0);
        assert_eq!(bag["rsquare"], 1.0);
        assert_eq!(bag["left_interception"], 0.0);
        assert_eq!(bag["right_interception"], 22.0);
        assert_eq!(
            bag["line_fit"],
            serde_json::json!([1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 8.0, 6.0, 4.0])
        );
        let short: serde_json::Value =
            serde_json::from_str(&run("series_fit_2lines_dynamic", &[d("[1,2,3]")])).unwrap_or_default();
        assert_eq!(short["split_idx"], 0);
        assert_eq!(run("series_fit_2lines_dynamic", &[d("7")]), "null");
    }
}
