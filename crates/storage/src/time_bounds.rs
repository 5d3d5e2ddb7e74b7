//! The time range a scan's filters imply on `timestamp`, which narrows the segments listed.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use trawl_catalog::TimeRange;
use trawl_common::TIME_COLUMN;

/// The inclusive time range on `timestamp` implied by conjunctive filters, if any.
pub fn time_bounds_of_filters(filters: &[Expr]) -> Option<TimeRange> {
    let mut range = TimeRange {
        min: i64::MIN,
        max: i64::MAX,
    };
    let mut bounded = false;
    for filter in filters {
        bounded |= narrow(filter, &mut range);
    }
    bounded.then_some(range)
}

fn timestamp_literal(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Literal(ScalarValue::TimestampNanosecond(Some(v), _), _) => Some(*v),
        Expr::Literal(ScalarValue::TimestampMicrosecond(Some(v), _), _) => v.checked_mul(1_000),
        Expr::Literal(ScalarValue::TimestampMillisecond(Some(v), _), _) => v.checked_mul(1_000_000),
        Expr::Literal(ScalarValue::TimestampSecond(Some(v), _), _) => v.checked_mul(1_000_000_000),
        Expr::Cast(cast) => timestamp_literal(&cast.expr),
        _ => None,
    }
}

fn is_time_column(expr: &Expr) -> bool {
    match expr {
        Expr::Column(column) => column.name == TIME_COLUMN,
        Expr::Cast(cast) => is_time_column(&cast.expr),
        _ => false,
    }
}

/// Narrows `range` by `expr`; returns whether it did.
fn narrow(expr: &Expr, range: &mut TimeRange) -> bool {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            let l = narrow(left, range);
            let r = narrow(right, range);
            l || r
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, value) = if is_time_column(left) {
                match timestamp_literal(right) {
                    Some(v) => (*op, v),
                    None => return false,
                }
            } else if is_time_column(right) {
                match (timestamp_literal(left), op.swap()) {
                    (Some(v), Some(op)) => (op, v),
                    _ => return false,
                }
            } else {
                return false;
            };
            match op {
                Operator::Gt => range.min = range.min.max(value.saturating_add(1)),
                Operator::GtEq => range.min = range.min.max(value),
                Operator::Lt => range.max = range.max.min(value.saturating_sub(1)),
                Operator::LtEq => range.max = range.max.min(value),
                Operator::Eq => {
                    range.min = range.min.max(value);
                    range.max = range.max.min(value);
                }
                _ => return false,
            }
            true
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_time_column(expr) => match (timestamp_literal(low), timestamp_literal(high)) {
            (Some(low), Some(high)) => {
                range.min = range.min.max(low);
                range.max = range.max.min(high);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn ts(v: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(Some(v), Some("UTC".into())))
    }

    #[test]
    fn time_bounds_come_from_conjunctions() {
        let filters = vec![
            col("timestamp").gt_eq(ts(10)).and(col("timestamp").lt(ts(20))),
            col("x").eq(lit(1)),
        ];
        assert_eq!(time_bounds_of_filters(&filters), Some(TimeRange { min: 10, max: 19 }));
        let reversed = vec![ts(5).lt(col("timestamp"))];
        assert_eq!(
            time_bounds_of_filters(&reversed),
            Some(TimeRange { min: 6, max: i64::MAX })
        );
        let or = vec![col("timestamp").gt(ts(10)).or(col("timestamp").lt(ts(5)))];
        assert_eq!(time_bounds_of_filters(&or), None);
    }
}
