//! The beta distribution: `beta_cdf(x, alpha, beta)`, `beta_pdf(x, alpha, beta)` and
//! `beta_inv(probability, alpha, beta)`; and `welch_test`, whose Student's t tail is a
//! regularized incomplete beta function. A missing (null) argument gives null; a value outside
//! the domain (x or the probability outside [0, 1], a shape parameter ≤ 0 or above 10,000)
//! gives NaN, as Kusto documents.

use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg};

/// Largest shape parameter accepted.
const MAX_SHAPE: f64 = 10_000.0;

/// The three arguments, or the result for missing or out-of-domain ones.
fn arguments(args: &[Val]) -> std::result::Result<(f64, f64, f64), Out> {
    let (Some(x), Some(a), Some(b)) = (arg(args, 0).real(), arg(args, 1).real(), arg(args, 2).real()) else {
        return Err(Out::Null);
    };
    let shape_ok = |s: f64| s > 0.0 && s <= MAX_SHAPE;
    if !(0.0..=1.0).contains(&x) || !shape_ok(a) || !shape_ok(b) {
        return Err(Out::Real(f64::NAN));
    }
    Ok((x, a, b))
}

fn ln_beta(a: f64, b: f64) -> f64 {
    libm::lgamma(a) + libm::lgamma(b) - libm::lgamma(a + b)
}

/// One step of the modified Lentz method: the next `c` and `d` for the coefficient `aa`.
fn lentz(aa: f64, c: f64, d: f64) -> (f64, f64) {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let d = guard(1.0 + aa * d);
    let c = guard(1.0 + aa / c);
    (c, 1.0 / d)
}

/// The continued fraction of the incomplete beta function (modified Lentz's method).
fn continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=1000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        (c, d) = lentz(even, c, d);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        (c, d) = lentz(odd, c, d);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
fn regularized(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (a * x.ln() + b * (1.0 - x).ln() - ln_beta(a, b)).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * continued_fraction(a, b, x) / a
    } else {
        1.0 - front * continued_fraction(b, a, 1.0 - x) / b
    }
}

pub fn beta_cdf(args: &[Val]) -> Result<Out> {
    Ok(match arguments(args) {
        Ok((x, a, b)) => Out::Real(regularized(x, a, b)),
        Err(out) => out,
    })
}

pub fn beta_pdf(args: &[Val]) -> Result<Out> {
    let (x, a, b) = match arguments(args) {
        Ok(values) => values,
        Err(out) => return Ok(out),
    };
    let density = if x > 0.0 && x < 1.0 {
        ((a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln() - ln_beta(a, b)).exp()
    } else {
        x.powf(a - 1.0) * (1.0 - x).powf(b - 1.0) / ln_beta(a, b).exp()
    };
    Ok(Out::Real(density))
}

/// The x whose cumulative probability is `probability`, by bisection (the function is
/// monotonic on [0, 1]).
pub fn beta_inv(args: &[Val]) -> Result<Out> {
    let (p, a, b) = match arguments(args) {
        Ok(values) => values,
        Err(out) => return Ok(out),
    };
    let (mut low, mut high) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if middle <= low || middle >= high {
            break;
        }
        if regularized(middle, a, b) < p {
            low = middle;
        } else {
            high = middle;
        }
    }
    Ok(Out::Real(0.5 * (low + high)))
}

/// `welch_test(mean1, variance1, count1, mean2, variance2, count2)`: the two-sided p-value of
/// Welch's t-test that the two samples' means are equal (Welch–Satterthwaite degrees of
/// freedom); null for missing arguments, counts below 2 or no variance at all.
pub fn welch_test(args: &[Val]) -> Result<Out> {
    let values: Option<Vec<f64>> = (0..6).map(|i| arg(args, i).real()).collect();
    let Some([m1, v1, n1, m2, v2, n2]) = values.as_deref().and_then(|v| <[f64; 6]>::try_from(v).ok()) else {
        return Ok(Out::Null);
    };
    if n1 < 2.0 || n2 < 2.0 || v1 < 0.0 || v2 < 0.0 {
        return Ok(Out::Null);
    }
    let (s1, s2) = (v1 / n1, v2 / n2);
    let spread = s1 + s2;
    if spread <= 0.0 {
        return Ok(Out::Null);
    }
    let t = (m1 - m2) / spread.sqrt();
    let dof = spread * spread / (s1 * s1 / (n1 - 1.0) + s2 * s2 / (n2 - 1.0));
    // P(|T| > |t|) for Student's t with `dof` degrees of freedom.
    let p = regularized(dof / (dof + t * t), dof / 2.0, 0.5);
    Ok(Out::Real(p))
}

#[cfg(test)]
mod tests {
    use crate::testing::{r, run};

    fn value(text: String) -> f64 {
        text.parse().unwrap_or(f64::NAN)
    }

    #[test]
    fn cumulative_density_and_inverse_agree_with_reference_values() {
        let cdf = value(run("beta_cdf", &[r(0.9), r(10.0), r(20.0)]));
        assert!((cdf - 0.999999999999959).abs() < 1e-13, "{cdf}");
        // I_0.5(2, 3) = 11/16; the density of Beta(2, 3) at 0.5 is 12 · 0.5 · 0.25 = 1.5.
        let half = value(run("beta_cdf", &[r(0.5), r(2.0), r(3.0)]));
        assert!((half - 0.6875).abs() < 1e-14, "{half}");
        let pdf = value(run("beta_pdf", &[r(0.5), r(2.0), r(3.0)]));
        assert!((pdf - 1.5).abs() < 1e-12, "{pdf}");
        let x = value(run("beta_inv", &[r(0.6875), r(2.0), r(3.0)]));
        assert!((x - 0.5).abs() < 1e-12, "{x}");
        // Beta(1, 1) is uniform.
        assert_eq!(value(run("beta_cdf", &[r(0.25), r(1.0), r(1.0)])), 0.25);
        assert_eq!(value(run("beta_pdf", &[r(0.0), r(1.0), r(1.0)])), 1.0);
    }

    #[test]
    fn welch_test_of_the_documented_samples() {
        let s1 = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4,
        ];
        let s2 = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4,
        ];
        let moments = |s: &[f64]| {
            let n = s.len() as f64;
            let mean = s.iter().sum::<f64>() / n;
            let variance = s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (mean, variance, n)
        };
        let ((m1, v1, n1), (m2, v2, n2)) = (moments(&s1), moments(&s2));
        let p = value(run("welch_test", &[r(m1), r(v1), r(n1), r(m2), r(v2), r(n2)]));
        // The documentation's 0.021 (Wikipedia's first example: t = -2.46, ν ≈ 24.99).
        assert!((p - 0.021).abs() < 5e-4, "{p}");
        assert_eq!(
            run("welch_test", &[r(1.0), r(0.0), r(5.0), r(1.0), r(0.0), r(5.0)]),
            "null"
        );
    }

    #[test]
    fn out_of_domain_is_nan_and_null_is_null() {
        for (name, x, a, b) in [
            ("beta_cdf", 1.5, 10.0, 20.0),
            ("beta_cdf", -10.0, 10.0, 20.0),
            ("beta_cdf", 0.1, -1.0, 20.0),
            ("beta_pdf", 0.1, 1.0, 10_001.0),
            ("beta_inv", 1.1, 1.0, 2.0),
        ] {
            assert_eq!(run(name, &[r(x), r(a), r(b)]), "NaN", "{name}({x}, {a}, {b})");
        }
        let null = datafusion::logical_expr::ColumnarValue::Scalar(datafusion::common::ScalarValue::Float64(None));
        assert_eq!(run("beta_cdf", &[null, r(1.0), r(1.0)]), "null");
    }
}
