//! Math functions. Reals arrive as Float64; an undefined result (log of a negative number,
//! say) is null as in Kusto.

use std::cmp::Ordering;

use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg};

/// A real function of one real argument; NaN results are null unless the input was NaN.
fn real1(args: &[Val], f: impl Fn(f64) -> f64) -> Result<Out> {
    Ok(match arg(args, 0).real() {
        Some(x) => {
            let y = f(x);
            if y.is_nan() && !x.is_nan() {
                Out::Null
            } else {
                Out::Real(y)
            }
        }
        None => Out::Null,
    })
}

macro_rules! real_fns {
    ($($name:ident => $f:expr),* $(,)?) => {
        $(pub fn $name(args: &[Val]) -> Result<Out> {
            real1(args, $f)
        })*
    };
}

real_fns! {
    sqrt => f64::sqrt,
    exp => f64::exp,
    exp2 => f64::exp2,
    exp10 => |x| 10f64.powf(x),
    log => |x| if x <= 0.0 { f64::NAN } else { x.ln() },
    log2 => |x| if x <= 0.0 { f64::NAN } else { x.log2() },
    log10 => |x| if x <= 0.0 { f64::NAN } else { x.log10() },
    acos => f64::acos,
    asin => f64::asin,
    atan => f64::atan,
    cos => f64::cos,
    sin => f64::sin,
    tan => f64::tan,
    cot => |x| 1.0 / x.tan(),
    radians => f64::to_radians,
    degrees => f64::to_degrees,
    gamma => libm::tgamma,
    loggamma => libm::lgamma,
    erf => libm::erf,
    erfc => libm::erfc,
    sign => |x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { 0.0 },
}

pub fn pi(_args: &[Val]) -> Result<Out> {
    Ok(Out::Real(std::f64::consts::PI))
}

pub fn pow(args: &[Val]) -> Result<Out> {
    Ok(match (arg(args, 0).real(), arg(args, 1).real()) {
        (Some(x), Some(y)) => Out::Real(x.powf(y)),
        _ => Out::Null,
    })
}

pub fn atan2(args: &[Val]) -> Result<Out> {
    Ok(match (arg(args, 0).real(), arg(args, 1).real()) {
        (Some(y), Some(x)) => Out::Real(y.atan2(x)),
        _ => Out::Null,
    })
}

/// `abs(x)` for numbers and timespans (the result has the argument's type).
pub fn abs(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0) {
        Val::Long(n) => n.checked_abs().into(),
        Val::Real(r) => Out::Real(r.abs()),
        Val::Timespan(t) => t.checked_abs().map_or(Out::Null, Out::Timespan),
        _ => Out::Null,
    })
}

/// `ceiling(x)`: whole numbers stay as they are.
pub fn ceiling(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0) {
        Val::Long(n) => Out::Long(n),
        Val::Real(r) => Out::Real(r.ceil()),
        _ => Out::Null,
    })
}

/// `round(x[, precision])`: halves away from zero; a negative precision rounds to tens,
/// hundreds, ...
pub fn round(args: &[Val]) -> Result<Out> {
    let Some(x) = arg(args, 0).real() else {
        return Ok(Out::Null);
    };
    let precision = arg(args, 1).long().unwrap_or(0).clamp(-300, 300) as i32;
    let factor = 10f64.powi(precision.abs());
    let rounded = if precision >= 0 {
        (x * factor).round() / factor
    } else {
        (x / factor).round() * factor
    };
    Ok(Out::Real(if rounded.is_finite() { rounded } else { x }))
}

pub fn isnan(args: &[Val]) -> Result<Out> {
    Ok(Out::Bool(arg(args, 0).real().is_some_and(f64::is_nan)))
}

pub fn isinf(args: &[Val]) -> Result<Out> {
    Ok(Out::Bool(arg(args, 0).real().is_some_and(f64::is_infinite)))
}

pub fn isfinite(args: &[Val]) -> Result<Out> {
    Ok(Out::Bool(arg(args, 0).real().is_some_and(f64::is_finite)))
}

pub fn bitset_count_ones(args: &[Val]) -> Result<Out> {
    Ok(arg(args, 0).long().map(|n| n.count_ones() as i64).into())
}

/// Orders two values of the same kind; `None` when they can't be compared.
fn order(a: Val, b: Val) -> Option<Ordering> {
    match (a, b) {
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        (Val::DateTime(x), Val::DateTime(y)) | (Val::Timespan(x), Val::Timespan(y)) => Some(x.cmp(&y)),
        (Val::Long(x), Val::Long(y)) => Some(x.cmp(&y)),
        (Val::Bool(x), Val::Bool(y)) => Some(x.cmp(&y)),
        (x, y) => x.real()?.partial_cmp(&y.real()?),
    }
}

fn extreme(args: &[Val], want: Ordering) -> Result<Out> {
    let mut best: Option<Val> = None;
    for v in args {
        if v.is_null() || v.real().is_some_and(f64::is_nan) {
            continue;
        }
        best = match best {
            None => Some(*v),
            Some(b) if order(*v, b) == Some(want) => Some(*v),
            keep => keep,
        };
    }
    Ok(best.map_or(Out::Null, Out::from))
}

/// `max_of(a, b, ...)`: nulls are ignored.
pub fn max_of(args: &[Val]) -> Result<Out> {
    extreme(args, Ordering::Greater)
}

/// `min_of(a, b, ...)`: nulls are ignored.
pub fn min_of(args: &[Val]) -> Result<Out> {
    extreme(args, Ordering::Less)
}

#[cfg(test)]
mod tests {
    use crate::testing::{dt, l, r, run, ts};

    #[test]
    fn functions_of_reals() {
        assert_eq!(run("sqrt", &[r(16.0)]), "4");
        assert_eq!(run("sqrt", &[r(-1.0)]), "null");
        assert_eq!(run("exp10", &[r(2.0)]), "100");
        assert_eq!(run("exp2", &[r(3.0)]), "8");
        assert_eq!(run("log10", &[r(1000.0)]), "3");
        assert_eq!(run("log", &[r(0.0)]), "null");
        assert_eq!(run("log2", &[r(8.0)]), "3");
        assert_eq!(run("pow", &[r(2.0), r(10.0)]), "1024");
        assert_eq!(run("gamma", &[r(5.0)]), "24");
        assert_eq!(run("degrees", &[r(std::f64::consts::PI / 4.0)]), "45");
        assert_eq!(run("radians", &[r(180.0)]), run("pi", &[]));
        assert_eq!(run("erfc", &[r(0.0)]), "1");
        assert_eq!(run("erfc", &[r(-1.0)]), "1.8427007929497148");
        assert_eq!(run("sign", &[r(-42.0)]), "-1");
        assert_eq!(run("sign", &[r(0.0)]), "0");
        assert_eq!(run("acos", &[r(1.0)]), "0");
    }

    #[test]
    fn rounding_and_checks() {
        assert_eq!(run("round", &[r(2.98765), l(3)]), "2.988");
        assert_eq!(run("round", &[r(2.15), l(1)]), "2.2");
        assert_eq!(run("round", &[r(2.15)]), "2");
        assert_eq!(run("round", &[r(-50.55), l(-2)]), "-100");
        assert_eq!(run("round", &[r(21.5), l(-1)]), "20");
        assert_eq!(run("round", &[r(2.5)]), "3");
        assert_eq!(run("ceiling", &[r(-1.1)]), "-1");
        assert_eq!(run("ceiling", &[l(5)]), "5");
        assert_eq!(run("abs", &[l(-5)]), "5");
        assert_eq!(run("abs", &[r(-5.5)]), "5.5");
        assert_eq!(run("abs", &[ts(-7)]), "7");
        assert_eq!(run("isnan", &[r(f64::NAN)]), "true");
        assert_eq!(run("isinf", &[r(f64::INFINITY)]), "true");
        assert_eq!(run("isfinite", &[r(1.0)]), "true");
        assert_eq!(run("bitset_count_ones", &[l(42)]), "3");
    }

    #[test]
    fn extremes() {
        assert_eq!(run("max_of", &[l(10), l(1), l(-3), l(17)]), "17");
        assert_eq!(run("min_of", &[l(10), l(1), l(-3), l(17)]), "-3");
        assert_eq!(run("max_of", &[r(1.5), crate::testing::null_dyn(), r(0.5)]), "1.5");
        assert_eq!(
            run("max_of", &[dt("2024-12-15T07:15:22Z"), dt("2024-12-15T07:15:24Z")]),
            "2024-12-15T07:15:24Z"
        );
        assert_eq!(run("min_of", &[crate::testing::s("b"), crate::testing::s("a")]), "a");
    }
}
