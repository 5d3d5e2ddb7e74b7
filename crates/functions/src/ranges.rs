//! `__range_count(from, to, step)`: how many steps past `from` a `range` whose bounds are only
//! known when the query runs (`toscalar()` of a query, a function's parameters) takes.

use datafusion::common::{Result, exec_err};

use crate::rowfn::{Out, Val, arg};

/// Most rows a `range` may produce (the planner's limit for constant bounds too).
pub const MAX_RANGE_ROWS: i64 = 10_000_000;

/// The last step index of `range x from a to b step s` (`-1` when it produces no row), null
/// when a bound is null; an error for a zero step or more than [`MAX_RANGE_ROWS`] rows.
pub fn range_count(args: &[Val]) -> Result<Out> {
    let count = match (arg(args, 0), arg(args, 1), arg(args, 2)) {
        (Val::Null, _, _) | (_, Val::Null, _) | (_, _, Val::Null) => return Ok(Out::Null),
        (from, to, step) if [from, to, step].iter().any(|v| matches!(v, Val::Real(_))) => {
            let (Some(from), Some(to), Some(step)) = (from.real(), to.real(), step.real()) else {
                return Ok(Out::Null);
            };
            if step == 0.0 || !step.is_finite() {
                return exec_err!("the range step must not be zero");
            }
            let count = ((to - from) / step).floor();
            if count.is_nan() {
                return Ok(Out::Null);
            }
            count.clamp(-1.0, MAX_RANGE_ROWS as f64) as i64
        }
        (from, to, step) => {
            let ns = |v: Val| v.long().or(v.datetime()).or(v.timespan());
            let (Some(from), Some(to), Some(step)) = (ns(from), ns(to), ns(step)) else {
                return Ok(Out::Null);
            };
            if step == 0 {
                return exec_err!("the range step must not be zero");
            }
            let count = (i128::from(to) - i128::from(from)) / i128::from(step);
            count.clamp(-1, i128::from(MAX_RANGE_ROWS)) as i64
        }
    };
    if count >= MAX_RANGE_ROWS {
        return exec_err!("a range may produce at most {MAX_RANGE_ROWS} rows");
    }
    Ok(Out::Long(count.max(-1)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{fails, l, r, run};

    #[test]
    fn counts_steps_or_refuses() {
        assert_eq!(run("__range_count", &[l(1), l(9), l(2)]), "4");
        assert_eq!(run("__range_count", &[l(9), l(1), l(2)]), "-1");
        assert_eq!(run("__range_count", &[l(9), l(1), l(-2)]), "4");
        assert_eq!(run("__range_count", &[r(0.0), r(1.0), r(0.25)]), "4");
        assert!(fails("__range_count", &[l(1), l(9), l(0)]));
        assert!(fails("__range_count", &[l(0), l(i64::MAX), l(1)]));
    }
}
