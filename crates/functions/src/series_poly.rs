//! `series_fit_poly(y [, x, degree])`: the least-squares polynomial of `degree` (1 by default)
//! through the points (x, y), x being 1, 2, … when not given; as the bag of `__series_fit_poly`
//! whose keys the planner turns into the columns `rsquare`, `coefficients` (highest power
//! first), `variance`, `rvariance` and `poly_fit` (the polynomial at each x). Points whose x
//! or y is not a number are left out of the fit; their `poly_fit` is the polynomial at x, or
//! null without one. The fit solves the Vandermonde system by Householder QR (stable enough
//! for the degrees the reference shows with x normalized to [0, 1]); powers the points cannot
//! tell apart get a zero coefficient.

use datafusion::error::Result;
use serde_json::{Value, json};

use crate::json::{out, parse_array};
use crate::rowfn::{Out, Val, arg};
use crate::series_analysis::{array_json, numbers, real_json};

/// The highest degree taken.
const MAX_DEGREE: usize = 16;

/// Least squares: the `columns`-wide `matrix` (rows of the points) times the returned
/// coefficients is closest to `target`. Columns with no independent part get 0.
fn least_squares(mut matrix: Vec<Vec<f64>>, mut target: Vec<f64>, columns: usize) -> Vec<f64> {
    let rows = matrix.len();
    let mut diagonal = vec![0.0; columns];
    for j in 0..columns.min(rows) {
        let norm = matrix[j..].iter().map(|row| row[j] * row[j]).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = if matrix[j][j] > 0.0 { -norm } else { norm };
        // v = column j below the diagonal minus alpha·e_j; H = I − 2vvᵀ/vᵀv.
        let mut v: Vec<f64> = matrix[j..].iter().map(|row| row[j]).collect();
        v[0] -= alpha;
        let vv: f64 = v.iter().map(|x| x * x).sum();
        if vv == 0.0 {
            diagonal[j] = alpha;
            continue;
        }
        for k in j..columns {
            let dot: f64 = matrix[j..].iter().zip(&v).map(|(row, vi)| vi * row[k]).sum();
            let factor = 2.0 * dot / vv;
            for (row, vi) in matrix[j..].iter_mut().zip(&v) {
                row[k] -= factor * vi;
            }
        }
        let dot: f64 = target[j..].iter().zip(&v).map(|(t, vi)| vi * t).sum();
        let factor = 2.0 * dot / vv;
        for (t, vi) in target[j..].iter_mut().zip(&v) {
            *t -= factor * vi;
        }
        diagonal[j] = matrix[j][j];
    }
    let scale = diagonal.iter().fold(0.0f64, |m, d| m.max(d.abs()));
    let mut solution = vec![0.0; columns];
    for j in (0..columns.min(rows)).rev() {
        if diagonal[j].abs() <= scale * 1e-12 {
            continue;
        }
        let known: f64 = (j + 1..columns).map(|k| matrix[j][k] * solution[k]).sum();
        solution[j] = (target[j] - known) / matrix[j][j];
    }
    solution
}

fn polynomial(coefficients: &[f64], x: f64) -> f64 {
    // Lowest power first.
    coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// `__series_fit_poly(y [, x, degree])`.
pub fn series_fit_poly_bag(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let ys = numbers(&items);
    let xs: Vec<Option<f64>> = match arg(args, 1) {
        Val::Null => (1..=ys.len()).map(|i| Some(i as f64)).collect(),
        other => match parse_array(other) {
            Some(x_items) if !x_items.is_empty() => numbers(&x_items),
            _ => (1..=ys.len()).map(|i| Some(i as f64)).collect(),
        },
    };
    let degree = arg(args, 2).long().unwrap_or(1).clamp(0, MAX_DEGREE as i64) as usize;
    let points: Vec<(f64, f64)> = ys
        .iter()
        .zip(&xs)
        .filter_map(|(y, x)| Some(((*x)?, (*y)?)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if points.is_empty() {
        return Ok(Out::Null);
    }
    let columns = degree + 1;
    let matrix: Vec<Vec<f64>> = points
        .iter()
        .map(|(x, _)| (0..columns).map(|p| x.powi(p as i32)).collect())
        .collect();
    let target: Vec<f64> = points.iter().map(|(_, y)| *y).collect();
    let ascending = least_squares(matrix, target, columns);
    let n = points.len() as f64;
    let mean = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let total: f64 = points.iter().map(|(_, y)| (y - mean).powi(2)).sum();
    let residual: f64 = points
        .iter()
        .map(|(x, y)| (y - polynomial(&ascending, *x)).powi(2))
        .sum();
    let dof = (n - 1.0).max(1.0);
    let fit: Vec<Value> = (0..ys.len())
        .map(|i| match xs.get(i).copied().flatten() {
            Some(x) => real_json(polynomial(&ascending, x)),
            None => Value::Null,
        })
        .collect();
    let descending: Vec<f64> = ascending.iter().rev().copied().collect();
    Ok(out(json!({
        "rsquare": real_json(if total > 0.0 { 1.0 - residual / total } else { 1.0 }),
        "coefficients": array_json(&descending),
        "variance": real_json(total / dof),
        "rvariance": real_json(residual / dof),
        "poly_fit": Value::Array(fit),
    })))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, run};

    fn bag(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap_or_default()
    }

    #[test]
    fn a_quadratic_is_fitted_exactly() {
        // y = 2x² − 3x + 1 at x = 1…6.
        let fit = bag(&run("__series_fit_poly", &[d("[0,3,10,21,36,55]"), d("null"), l(2)]));
        let coefficients: Vec<f64> = serde_json::from_value(fit["coefficients"].clone()).unwrap_or_default();
        for (got, want) in coefficients.iter().zip([2.0, -3.0, 1.0]) {
            assert!((got - want).abs() < 1e-9, "{coefficients:?}");
        }
        assert!((fit["rsquare"].as_f64().unwrap_or(0.0) - 1.0).abs() < 1e-12);
        assert!(fit["rvariance"].as_f64().unwrap_or(1.0).abs() < 1e-9);
        assert_eq!(fit["poly_fit"].as_array().map(Vec::len), Some(6));
    }

    #[test]
    fn degree_one_is_the_line_fit_and_x_may_be_uneven() {
        let poly = bag(&run("__series_fit_poly", &[d("[1,2,4,4,7]")]));
        let line = bag(&run("series_fit_line_dynamic", &[d("[1,2,4,4,7]")]));
        let slope = poly["coefficients"][0].as_f64().unwrap_or(0.0);
        assert!((slope - line["slope"].as_f64().unwrap_or(1.0)).abs() < 1e-12);
        assert!((poly["rsquare"].as_f64().unwrap_or(0.0) - line["rsquare"].as_f64().unwrap_or(1.0)).abs() < 1e-12);
        assert!((poly["variance"].as_f64().unwrap_or(0.0) - line["variance"].as_f64().unwrap_or(1.0)).abs() < 1e-12);
        // y = 3x + 1 at uneven x; a missing y is left out and still gets its fitted value.
        let uneven = bag(&run("__series_fit_poly", &[d("[1,4,\"x\",31]"), d("[0,1,5,10]"), l(1)]));
        assert!((uneven["coefficients"][0].as_f64().unwrap_or(0.0) - 3.0).abs() < 1e-9);
        assert!((uneven["poly_fit"][2].as_f64().unwrap_or(0.0) - 16.0).abs() < 1e-9);
        assert_eq!(run("__series_fit_poly", &[d("[]")]), "null");
    }
}
