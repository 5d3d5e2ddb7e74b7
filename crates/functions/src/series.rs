//! `range()` and the `series_*` functions on dynamic numeric arrays: element-wise math and
//! comparisons, filling missing values, and reductions (`series_sum`, `series_stats_dynamic`,
//! …). Arguments of kind Dynamic arrive as JSON text; results are JSON text. Elements that are
//! not numbers give null elements (element-wise) or are skipped (reductions).

use datafusion::error::Result;
use serde_json::{Map, Number, Value};

use crate::json::{self, as_real, out, parse, parse_array};
use crate::rowfn::{Out, Val, arg};

/// The most elements `range()` produces (Kusto's limit).
pub(crate) const RANGE_LIMIT: usize = 1 << 20;

/// `range(start, stop [, step])`: numbers, datetimes (with a timespan step) or timespans.
pub fn range(args: &[Val]) -> Result<Out> {
    let (start, stop, step) = (arg(args, 0), arg(args, 1), arg(args, 2));
    let items = match (start, stop) {
        (Val::DateTime(a), Val::DateTime(b)) => {
            let Some(step) = step.timespan() else {
                return Ok(Out::Null);
            };
            int_range(a, b, step).map(|v| {
                v.into_iter()
                    .map(|t| Value::String(trawl_common::time::format_datetime(t)))
                    .collect()
            })
        }
        (Val::Timespan(a), Val::Timespan(b)) => {
            let step = match step {
                Val::Null => return Ok(Out::Null),
                s => match s.timespan() {
                    Some(s) => s,
                    None => return Ok(Out::Null),
                },
            };
            int_range(a, b, step).map(|v| {
                v.into_iter()
                    .map(|t| Value::String(trawl_common::time::format_timespan(t)))
                    .collect()
            })
        }
        (Val::Long(a), Val::Long(b)) if matches!(step, Val::Long(_) | Val::Null) => {
            int_range(a, b, step.long().unwrap_or(1)).map(|v| v.into_iter().map(Value::from).collect())
        }
        (a, b) => match (a.real(), b.real(), if step.is_null() { Some(1.0) } else { step.real() }) {
            (Some(a), Some(b), Some(s)) => real_range(a, b, s),
            _ => None,
        },
    };
    Ok(json::out_opt(items.map(Value::Array)))
}

fn int_range(start: i64, stop: i64, step: i64) -> Option<Vec<i64>> {
    if step == 0 {
        return None;
    }
    let mut items = Vec::new();
    let mut v = start;
    while items.len() < RANGE_LIMIT && ((step > 0 && v <= stop) || (step < 0 && v >= stop)) {
        items.push(v);
        v = v.checked_add(step)?;
    }
    Some(items)
}

fn real_range(start: f64, stop: f64, step: f64) -> Option<Vec<Value>> {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
        return None;
    }
    let mut items = Vec::new();
    let mut i = 0u64;
    loop {
        let v = start + step * i as f64;
        if items.len() >= RANGE_LIMIT || (step > 0.0 && v > stop) || (step < 0.0 && v < stop) {
            break;
        }
        items.push(json::real(v));
        i += 1;
    }
    Some(items)
}

/// An integer element, when the element is an integral JSON number.
fn as_long(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

fn real_value(r: f64) -> Value {
    json::real(r)
}

/// Maps each element with `f`; non-numbers become null.
fn unary(args: &[Val], f: impl Fn(f64) -> f64) -> Result<Out> {
    Ok(json::out_opt(parse_array(arg(args, 0)).map(|items| {
        Value::Array(
            items
                .iter()
                .map(|v| as_real(v).map_or(Value::Null, |x| real_value(f(x))))
                .collect(),
        )
    })))
}

pub fn series_abs(args: &[Val]) -> Result<Out> {
    Ok(json::out_opt(parse_array(arg(args, 0)).map(|items| {
        Value::Array(
            items
                .iter()
                .map(|v| match (as_long(v), as_real(v)) {
                    (Some(n), _) => n
                        .checked_abs()
                        .map_or_else(|| real_value((n as f64).abs()), Value::from),
                    (None, Some(x)) => real_value(x.abs()),
                    _ => Value::Null,
                })
                .collect(),
        )
    })))
}

pub fn series_acos(args: &[Val]) -> Result<Out> {
    unary(args, f64::acos)
}

pub fn series_asin(args: &[Val]) -> Result<Out> {
    unary(args, f64::asin)
}

pub fn series_atan(args: &[Val]) -> Result<Out> {
    unary(args, f64::atan)
}

pub fn series_ceiling(args: &[Val]) -> Result<Out> {
    unary(args, f64::ceil)
}

pub fn series_floor(args: &[Val]) -> Result<Out> {
    unary(args, f64::floor)
}

pub fn series_cos(args: &[Val]) -> Result<Out> {
    unary(args, f64::cos)
}

pub fn series_sin(args: &[Val]) -> Result<Out> {
    unary(args, f64::sin)
}

pub fn series_tan(args: &[Val]) -> Result<Out> {
    unary(args, f64::tan)
}

pub fn series_exp(args: &[Val]) -> Result<Out> {
    unary(args, f64::exp)
}

pub fn series_log(args: &[Val]) -> Result<Out> {
    unary(args, f64::ln)
}

pub fn series_sign(args: &[Val]) -> Result<Out> {
    unary(args, |x| {
        if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            0.0
        }
    })
}

/// An operand of an element-wise binary function: an array or a broadcast scalar.
enum Operand {
    Array(Vec<Value>),
    Scalar(Value),
}

impl Operand {
    fn of(v: Val) -> Option<Operand> {
        match parse(v)? {
            Value::Array(items) => Some(Operand::Array(items)),
            Value::Number(n) => Some(Operand::Scalar(Value::Number(n))),
            _ => None,
        }
    }

    fn len(&self) -> Option<usize> {
        match self {
            Operand::Array(items) => Some(items.len()),
            Operand::Scalar(_) => None,
        }
    }

    fn get(&self, i: usize) -> &Value {
        match self {
            Operand::Array(items) => items.get(i).unwrap_or(&Value::Null),
            Operand::Scalar(v) => v,
        }
    }
}

/// Applies `f` element-wise to two arrays (or an array and a scalar); the shorter array is
/// extended with nulls.
fn binary(args: &[Val], f: impl Fn(&Value, &Value) -> Value) -> Result<Out> {
    let (Some(a), Some(b)) = (Operand::of(arg(args, 0)), Operand::of(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let len = match (a.len(), b.len()) {
        (Some(x), Some(y)) => x.max(y),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return Ok(Out::Null),
    };
    Ok(out(Value::Array((0..len).map(|i| f(a.get(i), b.get(i))).collect())))
}

/// Integer arithmetic when both elements are integers (falling back to reals on overflow).
fn arith(a: &Value, b: &Value, int: fn(i64, i64) -> Option<i64>, real: fn(f64, f64) -> f64) -> Value {
    if let (Some(x), Some(y)) = (as_long(a), as_long(b))
        && let Some(r) = int(x, y)
    {
        return Value::from(r);
    }
    match (as_real(a), as_real(b)) {
        (Some(x), Some(y)) => real_value(real(x, y)),
        _ => Value::Null,
    }
}

pub fn series_add(args: &[Val]) -> Result<Out> {
    binary(args, |a, b| arith(a, b, i64::checked_add, |x, y| x + y))
}

pub fn series_subtract(args: &[Val]) -> Result<Out> {
    binary(args, |a, b| arith(a, b, i64::checked_sub, |x, y| x - y))
}

pub fn series_multiply(args: &[Val]) -> Result<Out> {
    binary(args, |a, b| arith(a, b, i64::checked_mul, |x, y| x * y))
}

pub fn series_divide(args: &[Val]) -> Result<Out> {
    binary(args, |a, b| match (as_real(a), as_real(b)) {
        (Some(x), Some(y)) => real_value(x / y),
        _ => Value::Null,
    })
}

pub fn series_pow(args: &[Val]) -> Result<Out> {
    binary(args, |a, b| match (as_real(a), as_real(b)) {
        (Some(x), Some(y)) => real_value(x.powf(y)),
        _ => Value::Null,
    })
}

fn compare(args: &[Val], f: fn(f64, f64) -> bool) -> Result<Out> {
    binary(args, |a, b| match (as_long(a), as_long(b), as_real(a), as_real(b)) {
        (Some(x), Some(y), _, _) => Value::Bool(int_compare(x, y, f)),
        (_, _, Some(x), Some(y)) => Value::Bool(f(x, y)),
        _ => Value::Null,
    })
}

/// Exact comparison of large integers (which `f64` may not tell apart).
fn int_compare(x: i64, y: i64, f: fn(f64, f64) -> bool) -> bool {
    let ordering = x.cmp(&y);
    let as_f = match ordering {
        std::cmp::Ordering::Less => (0.0, 1.0),
        std::cmp::Ordering::Equal => (0.0, 0.0),
        std::cmp::Ordering::Greater => (1.0, 0.0),
    };
    f(as_f.0, as_f.1)
}

pub fn series_greater(args: &[Val]) -> Result<Out> {
    compare(args, |x, y| x > y)
}

pub fn series_greater_equals(args: &[Val]) -> Result<Out> {
    compare(args, |x, y| x >= y)
}

pub fn series_less(args: &[Val]) -> Result<Out> {
    compare(args, |x, y| x < y)
}

pub fn series_less_equals(args: &[Val]) -> Result<Out> {
    compare(args, |x, y| x <= y)
}

pub fn series_equals(args: &[Val]) -> Result<Out> {
    compare(args, |x, y| x == y)
}

pub fn series_not_equals(args: &[Val]) -> Result<Out> {
    compare(args, |x, y| x != y)
}

/// Whether an element is a missing value: null for a null placeholder, else equal to it.
fn is_missing(value: &Value, placeholder: Val) -> bool {
    match placeholder {
        Val::Null => value.is_null(),
        p => match (as_real(value), p.real()) {
            (Some(x), Some(y)) => x == y || (x.is_nan() && y.is_nan()),
            _ => false,
        },
    }
}

/// A scalar argument as a JSON element.
fn val_value(v: Val) -> Value {
    match v {
        Val::Long(n) => Value::from(n),
        Val::Real(r) => real_value(r),
        Val::Bool(b) => Value::Bool(b),
        Val::Str(_) => parse(v).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

pub fn series_fill_forward(args: &[Val]) -> Result<Out> {
    let Some(mut items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let placeholder = arg(args, 1);
    let mut last: Option<Value> = None;
    for item in items.iter_mut() {
        if is_missing(item, placeholder) {
            if let Some(v) = &last {
                *item = v.clone();
            }
        } else {
            last = Some(item.clone());
        }
    }
    Ok(out(Value::Array(items)))
}

pub fn series_fill_backward(args: &[Val]) -> Result<Out> {
    let Some(mut items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let placeholder = arg(args, 1);
    let mut next: Option<Value> = None;
    for item in items.iter_mut().rev() {
        if is_missing(item, placeholder) {
            if let Some(v) = &next {
                *item = v.clone();
            }
        } else {
            next = Some(item.clone());
        }
    }
    Ok(out(Value::Array(items)))
}

pub fn series_fill_const(args: &[Val]) -> Result<Out> {
    let Some(mut items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let constant = val_value(arg(args, 1));
    let placeholder = arg(args, 2);
    for item in items.iter_mut() {
        if is_missing(item, placeholder) {
            *item = constant.clone();
        }
    }
    Ok(out(Value::Array(items)))
}

/// `series_fill_linear(series [, placeholder [, fill_edges [, constant_value]]])`.
pub fn series_fill_linear(args: &[Val]) -> Result<Out> {
    let Some(mut items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let placeholder = arg(args, 1);
    let fill_edges = arg(args, 2).bool().unwrap_or(true);
    let constant = match arg(args, 3) {
        Val::Null if args.len() > 3 => Value::Null,
        Val::Null => Value::from(0),
        v => val_value(v),
    };
    let known: Vec<(usize, f64)> = items
        .iter()
        .enumerate()
        .filter(|(_, v)| !is_missing(v, placeholder))
        .filter_map(|(i, v)| as_real(v).map(|x| (i, x)))
        .collect();
    if known.is_empty() {
        for item in items.iter_mut() {
            if is_missing(item, placeholder) {
                *item = constant.clone();
            }
        }
        return Ok(out(Value::Array(items)));
    }
    let integers = items
        .iter()
        .filter(|v| !is_missing(v, placeholder))
        .all(|v| as_long(v).is_some());
    let make = |x: f64| {
        if integers {
            // Integer series keep integers, truncated as Kusto's documented output shows.
            Value::from(x.trunc() as i64)
        } else {
            real_value(x)
        }
    };
    for pair in known.windows(2) {
        let ((i, a), (j, b)) = (pair[0], pair[1]);
        for (k, item) in items.iter_mut().enumerate().take(j).skip(i + 1) {
            if is_missing(item, placeholder) {
                *item = make(a + (b - a) * (k - i) as f64 / (j - i) as f64);
            }
        }
    }
    if fill_edges {
        let (first_i, first) = known[0];
        let (last_i, last) = known[known.len() - 1];
        for (k, item) in items.iter_mut().enumerate() {
            if (k < first_i || k > last_i) && is_missing(item, placeholder) {
                *item = make(if k < first_i { first } else { last });
            }
        }
    }
    Ok(out(Value::Array(items)))
}

/// The numbers of two series paired up (truncated to the shorter; scalars broadcast),
/// skipping pairs with a non-number.
fn pairs(args: &[Val]) -> Option<Vec<(f64, f64)>> {
    let (a, b) = (Operand::of(arg(args, 0))?, Operand::of(arg(args, 1))?);
    let len = match (a.len(), b.len()) {
        (Some(x), Some(y)) => x.min(y),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return None,
    };
    if len == 0 {
        return None;
    }
    Some(
        (0..len)
            .filter_map(|i| Some((as_real(a.get(i))?, as_real(b.get(i))?)))
            .collect(),
    )
}

pub fn series_dot_product(args: &[Val]) -> Result<Out> {
    Ok(pairs(args).map(|p| p.iter().map(|(x, y)| x * y).sum::<f64>()).into())
}

/// `series_product(series)`: the product of the numeric elements (1 for none); null when
/// the argument is not an array.
pub fn series_product(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .map(|values| values.iter().fold(1.0, |product, (_, x)| product * x))
        .into())
}

/// `series_magnitude(series)`: the square root of the sum of the squared elements
/// (non-numeric elements count as 0); null when the argument is not an array.
pub fn series_magnitude(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .map(|values| values.iter().fold(0.0, |sum, (_, x)| sum + x * x).sqrt())
        .into())
}

/// `series_pearson_correlation(s1, s2)`: Pearson's correlation coefficient of the two
/// series (over the positions both hold numbers, up to the shorter one's length).
pub fn series_pearson_correlation(args: &[Val]) -> Result<Out> {
    let Some(p) = pairs(args) else {
        return Ok(Out::Null);
    };
    let n = p.len() as f64;
    let (mean_x, mean_y) = (
        p.iter().map(|(x, _)| x).sum::<f64>() / n,
        p.iter().map(|(_, y)| y).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in &p {
        let (dx, dy) = (x - mean_x, y - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    Ok(Out::Real(sxy / (sxx * syy).sqrt()))
}

/// `series_cosine_similarity(s1, s2 [, magnitude1 [, magnitude2]])`.
pub fn series_cosine_similarity(args: &[Val]) -> Result<Out> {
    let Some(p) = pairs(args) else {
        return Ok(Out::Null);
    };
    let dot: f64 = p.iter().map(|(x, y)| x * y).sum();
    let m1 = arg(args, 2)
        .real()
        .unwrap_or_else(|| p.iter().map(|(x, _)| x * x).sum::<f64>().sqrt());
    let m2 = arg(args, 3)
        .real()
        .unwrap_or_else(|| p.iter().map(|(_, y)| y * y).sum::<f64>().sqrt());
    Ok(Out::Real(dot / (m1 * m2)))
}

/// The numbers of a series (non-numbers skipped), with their positions.
fn numbers(v: Val) -> Option<Vec<(usize, f64)>> {
    Some(
        parse_array(v)?
            .iter()
            .enumerate()
            .filter_map(|(i, v)| as_real(v).map(|x| (i, x)))
            .collect(),
    )
}

pub fn series_sum(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .map(|n| n.iter().map(|(_, x)| x).sum::<f64>())
        .into())
}

pub fn series_min(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .and_then(|n| n.iter().map(|(_, x)| *x).reduce(f64::min))
        .into())
}

pub fn series_max(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .and_then(|n| n.iter().map(|(_, x)| *x).reduce(f64::max))
        .into())
}

pub fn series_avg(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .filter(|n| !n.is_empty())
        .map(|n| n.iter().map(|(_, x)| x).sum::<f64>() / n.len() as f64)
        .into())
}

/// Sample variance (n − 1 in the denominator).
fn variance(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    if values.len() == 1 {
        return Some(0.0);
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    Some(values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (values.len() - 1) as f64)
}

pub fn series_variance(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .and_then(|n| variance(&n.iter().map(|(_, x)| *x).collect::<Vec<_>>()))
        .into())
}

pub fn series_stdev(args: &[Val]) -> Result<Out> {
    Ok(numbers(arg(args, 0))
        .and_then(|n| variance(&n.iter().map(|(_, x)| *x).collect::<Vec<_>>()))
        .map(f64::sqrt)
        .into())
}

/// `series_stats_dynamic(series [, ignore_nonfinite])`: a bag of min, min_idx, max, max_idx,
/// avg, stdev, variance, sum and len. Null when a non-finite element is present unless
/// ignored.
pub fn series_stats_dynamic(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let ignore = arg(args, 1).bool().unwrap_or(false);
    let mut values: Vec<(usize, f64)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match as_real(item) {
            Some(x) if x.is_finite() => values.push((i, x)),
            _ if ignore => {}
            _ => return Ok(Out::Null),
        }
    }
    let mut bag = Map::new();
    let num = |x: Option<f64>| x.map_or(Value::Null, real_value);
    let min = values.iter().copied().reduce(|a, b| if b.1 < a.1 { b } else { a });
    let max = values.iter().copied().reduce(|a, b| if b.1 > a.1 { b } else { a });
    let plain: Vec<f64> = values.iter().map(|(_, x)| *x).collect();
    let sum: f64 = plain.iter().sum();
    let var = variance(&plain);
    bag.insert("min".into(), num(min.map(|m| m.1)));
    bag.insert("min_idx".into(), min.map_or(Value::Null, |m| Value::from(m.0)));
    bag.insert("max".into(), num(max.map(|m| m.1)));
    bag.insert("max_idx".into(), max.map_or(Value::Null, |m| Value::from(m.0)));
    bag.insert("avg".into(), num((!plain.is_empty()).then(|| sum / plain.len() as f64)));
    bag.insert("stdev".into(), num(var.map(f64::sqrt)));
    bag.insert("variance".into(), num(var));
    bag.insert(
        "sum".into(),
        Value::Number(Number::from_f64(sum).unwrap_or_else(|| Number::from(0))),
    );
    bag.insert("len".into(), Value::from(items.len()));
    Ok(out(Value::Object(bag)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{b, d, dt, l, null_dyn, r, run, ts};

    #[test]
    fn range_numbers_times() {
        assert_eq!(run("range", &[l(1), l(8), l(3)]), "[1,4,7]");
        assert_eq!(run("range", &[l(10), l(1), l(-3)]), "[10,7,4,1]");
        assert_eq!(run("range", &[l(1), l(3)]), "[1,2,3]");
        assert_eq!(run("range", &[r(1.0), l(2), r(0.5)]), "[1.0,1.5,2.0]");
        assert_eq!(run("range", &[l(1), l(3), l(0)]), "null");
        let day = 86_400_000_000_000;
        assert_eq!(
            run(
                "range",
                &[dt("2017-01-01T00:00:00Z"), dt("2017-01-03T00:00:00Z"), ts(day)]
            ),
            r#"["2017-01-01T00:00:00.0000000Z","2017-01-02T00:00:00.0000000Z","2017-01-03T00:00:00.0000000Z"]"#
        );
        assert_eq!(
            run("range", &[ts(0), ts(2 * 3_600_000_000_000), ts(3_600_000_000_000)]),
            r#"["00:00:00","01:00:00","02:00:00"]"#
        );
        let big = run("range", &[l(1), l(1_000_000_000)]);
        assert_eq!(big.matches(',').count() + 1, 1_048_576);
    }

    #[test]
    fn magnitude_and_correlation() {
        assert_eq!(run("series_magnitude", &[d("[3,4]")]), "5");
        assert_eq!(run("series_product", &[d("[1,2,3,4]")]), "24");
        assert_eq!(run("series_product", &[d("[]")]), "1");
        assert_eq!(run("series_magnitude", &[d("[]")]), "0");
        assert_eq!(run("series_magnitude", &[null_dyn()]), "null");
        assert_eq!(run("series_pearson_correlation", &[d("[1,2,3]"), d("[2,4,6]")]), "1");
        assert_eq!(run("series_pearson_correlation", &[d("[1,2,3]"), d("[3,2,1]")]), "-1");
        let r = run("series_pearson_correlation", &[d("[1,2,4,8]"), d("[1,3,2,5]")]);
        let value: f64 = r.parse().unwrap_or(f64::NAN);
        assert!((value - 0.8669214468630106).abs() < 1e-12, "{r}");
    }

    #[test]
    fn element_wise_math() {
        assert_eq!(
            run("series_acos", &[d("[-1,0,1]")]),
            "[3.141592653589793,1.5707963267948966,0.0]"
        );
        assert_eq!(run("series_ceiling", &[d("[-1.5,1,2.5]")]), "[-1.0,1.0,3.0]");
        assert_eq!(run("series_floor", &[d("[-1.5,1,2.5]")]), "[-2.0,1.0,2.0]");
        assert_eq!(run("series_log", &[d("[1,null,\"x\"]")]), "[0.0,null,null]");
        assert_eq!(run("series_abs", &[d("[-1,2.5,null]")]), "[1,2.5,null]");
        assert_eq!(run("series_sign", &[d("[-3,0,2]")]), "[-1.0,0.0,1.0]");
        assert_eq!(run("series_exp", &[d("[0]")]), "[1.0]");
        assert_eq!(run("series_sin", &[d("[0]")]), "[0.0]");
        assert_eq!(run("series_cos", &[d("[0]")]), "[1.0]");
        assert_eq!(run("series_tan", &[d("[0]")]), "[0.0]");
        assert_eq!(run("series_asin", &[d("[0]")]), "[0.0]");
        assert_eq!(run("series_atan", &[d("[0]")]), "[0.0]");
        assert_eq!(run("series_acos", &[d("{}")]), "null");
        assert_eq!(run("series_acos", &[null_dyn()]), "null");
    }

    #[test]
    fn binary_ops() {
        assert_eq!(
            run("series_pow", &[d("[1,2,3,4]"), d("[1,2,3,0.5]")]),
            "[1.0,4.0,27.0,2.0]"
        );
        assert_eq!(run("series_add", &[d("[1,2,3]"), d("[4,5,6]")]), "[5,7,9]");
        assert_eq!(run("series_add", &[d("[1,2,3]"), d("1.5")]), "[2.5,3.5,4.5]");
        assert_eq!(run("series_subtract", &[d("[1,2]"), d("[1]")]), "[0,null]");
        assert_eq!(run("series_multiply", &[d("2"), d("[1,2]")]), "[2,4]");
        assert_eq!(run("series_divide", &[d("[1,3]"), d("[2,0]")]), r#"[0.5,"Infinity"]"#);
        assert_eq!(
            run("series_greater", &[d("[1,2,4]"), d("[4,2,1]")]),
            "[false,false,true]"
        );
        assert_eq!(
            run("series_greater_equals", &[d("[1,2,4]"), d("[4,2,1]")]),
            "[false,true,true]"
        );
        assert_eq!(run("series_less", &[d("[1,2,4]"), d("[4,2,1]")]), "[true,false,false]");
        assert_eq!(
            run("series_less_equals", &[d("[1,2,4]"), d("[4,2,1]")]),
            "[true,true,false]"
        );
        assert_eq!(
            run("series_equals", &[d("[1,2,null]"), d("[4,2,1]")]),
            "[false,true,null]"
        );
        assert_eq!(run("series_not_equals", &[d("[1,2]"), d("2")]), "[true,false]");
        assert_eq!(run("series_add", &[d("1"), d("2")]), "null");
    }

    #[test]
    fn fills() {
        assert_eq!(
            run(
                "series_fill_forward",
                &[d("[null,null,36,41,null,null,16,61,33,null,null]")]
            ),
            "[null,null,36,41,41,41,16,61,33,33,33]"
        );
        assert_eq!(
            run(
                "series_fill_backward",
                &[d("[111,null,36,41,null,null,16,61,33,null,null]")]
            ),
            "[111,36,36,41,16,16,16,61,33,null,null]"
        );
        let arr = d("[111,null,36,41,23,null,16,61,33,null,null]");
        assert_eq!(
            run("series_fill_const", &[arr.clone(), r(0.0)]),
            "[111,0.0,36,41,23,0.0,16,61,33,0.0,0.0]"
        );
        assert_eq!(
            run("series_fill_const", &[arr, l(-1)]),
            "[111,-1,36,41,23,-1,16,61,33,-1,-1]"
        );
        assert_eq!(run("series_fill_forward", &[d("[1,-1,3]"), l(-1)]), "[1,1,3]");
        assert_eq!(
            run(
                "series_fill_linear",
                &[d("[null,111.0,null,36.0,41.0,null,null,16.0,61.0,33.0,null,null]")]
            ),
            "[111.0,111.0,73.5,36.0,41.0,32.666666666666664,24.333333333333332,16.0,61.0,33.0,33.0,33.0]"
        );
        assert_eq!(
            run(
                "series_fill_linear",
                &[d("[null,111,null,36,41,null,null,16,61,33,null,null]")]
            ),
            "[111,111,73,36,41,32,24,16,61,33,33,33]"
        );
        assert_eq!(
            run(
                "series_fill_linear",
                &[d("[null,111,null,36,null]"), null_dyn(), b(false)]
            ),
            "[null,111,73,36,null]"
        );
        assert_eq!(run("series_fill_linear", &[d("[null,null]")]), "[0,0]");
    }

    #[test]
    fn reductions() {
        assert_eq!(run("series_dot_product", &[d("[1,2,4]"), d("1")]), "7");
        assert_eq!(run("series_dot_product", &[d("[1,2,3]"), d("[1,2]")]), "5");
        assert_eq!(run("series_dot_product", &[d("[]"), d("[1]")]), "null");
        let cs = run(
            "series_cosine_similarity",
            &[d("[0.1,0.2,0.1,0.2]"), d("[0.11,0.2,0.11,0.21]")],
        );
        assert!(cs.starts_with("0.99935343825"), "{cs}");
        let cs = run("series_cosine_similarity", &[d("[0.1,0.2,0.1,0.2]"), d("[1,2,3,4]")]);
        assert!(cs.starts_with("0.9237604307"), "{cs}");
        assert_eq!(run("series_sum", &[d("[1,2,3,4]")]), "10");
        assert_eq!(run("series_min", &[d("[3,1,null,2]")]), "1");
        assert_eq!(run("series_max", &[d("[3,1,2]")]), "3");
        assert_eq!(run("series_avg", &[d("[1,2,3,4]")]), "2.5");
        assert_eq!(run("series_variance", &[d("[1,2,3,4,5]")]), "2.5");
        assert!(run("series_stdev", &[d("[1,2,3,4,5]")]).starts_with("1.58113883"));
        let stats = run(
            "series_stats_dynamic",
            &[d("[23, 46, 23, 87, 4, 8, 3, 75, 2, 56, 13, 75, 32, 16, 29]")],
        );
        let v: serde_json::Value = serde_json::from_str(&stats).expect("json");
        assert_eq!(v["min"], 2.0);
        assert_eq!(v["min_idx"], 8);
        assert_eq!(v["max"], 87.0);
        assert_eq!(v["max_idx"], 3);
        assert_eq!(v["avg"], 32.8);
        assert_eq!(v["sum"], 492.0);
        assert_eq!(v["len"], 15);
        assert!((v["variance"].as_f64().unwrap_or(0.0) - 812.457142857143).abs() < 1e-9);
        assert!((v["stdev"].as_f64().unwrap_or(0.0) - 28.50363385354827).abs() < 1e-9);
        assert_eq!(run("series_stats_dynamic", &[d("[1,null]")]), "null");
        let ignored = run("series_stats_dynamic", &[d("[1,null,3]"), b(true)]);
        assert!(
            ignored.contains("\"len\":3") && ignored.contains("\"avg\":2.0"),
            "{ignored}"
        );
    }
}
