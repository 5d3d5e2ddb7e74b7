//! Time-sliced runs: queries whose result can be built from disjoint time slices of one table
//! run newest slice first, each slice planned with the query window narrowed to it. Two
//! shapes qualify (row operators such as `where`, `extend`, `project`, `parse` may come before
//! and after the final step):
//!
//! - **newest rows**: `T | … | top N by timestamp desc` (or `sort by timestamp desc | take N`).
//!   Slices come out sorted and newer than the ones after them, so their results in order are
//!   the answer; the run stops as soon as N rows are in, without reading older data.
//! - **time bins**: `T | … | summarize … by bin(timestamp, span), …`. Slices are whole bins, so
//!   no group spans two slices and the union of the slices' results is the answer.
//!
//! Each slice that is not the last gives a refined snapshot ([`crate::QueryEvent::Snapshot`])
//! for clients that show partial results; the first comes from the newest 1/256 of the time
//! range (one sixteenth for bins) and slices then double in width.

use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, col, lit};
use trawl_kql::ast::{ExprKind, Literal, NamedExpr, Operator, OperatorKind, SortOrder, StatementKind};

/// What a sliced run computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SliceMode {
    /// The newest `n` rows.
    Newest { n: usize },
    /// Groups by `bin(timestamp, span)` (nanoseconds).
    Bins { span: i64 },
}

/// A query that can run in time slices: its table and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sliced {
    pub table: String,
    pub mode: SliceMode,
}

fn is_timestamp(expr: &trawl_kql::ast::Expr) -> bool {
    matches!(&expr.kind, ExprKind::Name(ident) if ident.name == "timestamp")
}

/// Whether `items` leave `timestamp` as the table's column (none assigns it anew).
fn keeps_timestamp(items: &[NamedExpr]) -> bool {
    items
        .iter()
        .all(|item| item.names.iter().all(|n| n.name != "timestamp") || is_timestamp(&item.expr))
}

/// A row operator that keeps `timestamp` (for the newest-rows shape) and works row by row.
fn row_operator(operator: &Operator) -> bool {
    match &operator.kind {
        OperatorKind::Where(_)
        | OperatorKind::ProjectAway(_)
        | OperatorKind::ProjectKeep(_)
        | OperatorKind::ProjectReorder(_)
        | OperatorKind::Parse(_)
        | OperatorKind::ParseWhere(_) => true,
        OperatorKind::Extend(items) | OperatorKind::Project(items) => keeps_timestamp(items),
        OperatorKind::ProjectRename(renames) => renames
            .iter()
            .all(|r| r.new_name.name != "timestamp" && r.old_name.name != "timestamp"),
        _ => false,
    }
}

fn whole_number(expr: &trawl_kql::ast::Expr) -> Option<usize> {
    match &expr.kind {
        ExprKind::Literal(Literal::Long(n)) if *n > 0 => usize::try_from(*n).ok(),
        ExprKind::Literal(Literal::Int(n)) if *n > 0 => usize::try_from(*n).ok(),
        _ => None,
    }
}

/// The span of a `bin(timestamp, <timespan>)` group key.
fn time_bin(item: &NamedExpr) -> Option<i64> {
    match &item.expr.kind {
        ExprKind::Call { function, args } if function.name == "bin" => match args.as_slice() {
            [value, span] if is_timestamp(value) => match &span.kind {
                ExprKind::Literal(Literal::Timespan(n)) if *n > 0 => Some(*n),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The sliced shape of a parsed query, if it has one.
pub(crate) fn sliceable(query: &trawl_kql::ast::Query) -> Option<Sliced> {
    let [statement] = query.statements.as_slice() else {
        return None;
    };
    let StatementKind::Expr(expr) = &statement.kind else {
        return None;
    };
    let ExprKind::Pipeline { source, operators } = &expr.kind else {
        return None;
    };
    let ExprKind::Name(table) = &source.kind else {
        return None;
    };
    let step = operators.iter().position(|op| !row_operator(op))?;
    let (step_op, after) = (&operators[step], &operators[step + 1..]);
    let (mode, rest) = match &step_op.kind {
        OperatorKind::Top(top) => {
            let newest = is_timestamp(&top.by.expr) && top.by.order != Some(SortOrder::Asc);
            (
                SliceMode::Newest {
                    n: whole_number(&top.count)?,
                },
                newest.then_some(after)?,
            )
        }
        OperatorKind::Sort(sort) => {
            let [key] = sort.keys.as_slice() else {
                return None;
            };
            if !is_timestamp(&key.expr) || key.order == Some(SortOrder::Asc) {
                return None;
            }
            let (take, rest) = after.split_first()?;
            let OperatorKind::Take(count) = &take.kind else {
                return None;
            };
            (
                SliceMode::Newest {
                    n: whole_number(count)?,
                },
                rest,
            )
        }
        OperatorKind::Summarize(summarize) => {
            let span = summarize.by.iter().find_map(time_bin)?;
            (SliceMode::Bins { span }, after)
        }
        _ => return None,
    };
    // After the step, only row operators (any: `timestamp` may go).
    let row_wise =
        |op: &Operator| row_operator(op) || matches!(op.kind, OperatorKind::Extend(_) | OperatorKind::Project(_));
    if !rest.iter().all(row_wise) {
        return None;
    }
    Some(Sliced {
        table: table.name.clone(),
        mode,
    })
}

/// The slices of `[lo, hi)`, newest first.
pub(crate) fn slices(mode: SliceMode, lo: i64, hi: i64) -> Vec<(i64, i64)> {
    let range = hi.saturating_sub(lo).max(1);
    let (mut top, mut width) = match mode {
        SliceMode::Newest { .. } => (hi, (range / 256).max(1_000_000)),
        SliceMode::Bins { span } => {
            // Whole bins: bounds on multiples of the span (bin() floors to them).
            let top = hi.div_euclid(span).saturating_add(1).saturating_mul(span);
            let bins = (range / 16).div_euclid(span).max(1);
            (top, bins.saturating_mul(span))
        }
    };
    let mut out = Vec::new();
    while top > lo {
        let bottom = top.saturating_sub(width);
        out.push((bottom.max(lo), top));
        if out.len() > 64 {
            out.push((lo, bottom));
            break;
        }
        top = bottom;
        width = width.saturating_mul(2);
    }
    out
}

/// `plan` narrowed to the slice `[lo, hi)` of `table`'s time: every scan of the table gets a
/// filter on `timestamp`, which the optimizer pushes into the scan (so segments outside the
/// slice are pruned). The rest of the plan (the query window, `now()`, series starts) is the
/// one planned for the whole query.
pub(crate) fn narrow(plan: &LogicalPlan, table: &str, lo: i64, hi: i64) -> datafusion::error::Result<LogicalPlan> {
    plan.clone()
        .transform_up_with_subqueries(|node| match node {
            LogicalPlan::TableScan(scan)
                if scan.table_name.table() == table
                    && scan.source.schema().field_with_name(trawl_common::TIME_COLUMN).is_ok() =>
            {
                let time = || col(trawl_common::TIME_COLUMN);
                let at = |nanos| {
                    lit(ScalarValue::TimestampNanosecond(
                        Some(nanos),
                        Some(trawl_functions::types::UTC.into()),
                    ))
                };
                let window = time().gt_eq(at(lo)).and(time().lt(at(hi)));
                let narrowed = LogicalPlanBuilder::from(LogicalPlan::TableScan(scan))
                    .filter(window)?
                    .build()?;
                Ok(Transformed::yes(narrowed))
            }
            other => Ok(Transformed::no(other)),
        })
        .data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sliceable(text: &str) -> Option<Sliced> {
        super::sliceable(&trawl_kql::parse(text).ok()?)
    }

    #[test]
    fn shapes_that_slice_and_shapes_that_do_not() {
        let newest = |n| Some(SliceMode::Newest { n });
        let mode = |text: &str| sliceable(text).map(|s| s.mode);
        assert_eq!(mode("logs | where x == 1 | top 10 by timestamp desc"), newest(10));
        assert_eq!(mode("logs | top 10 by timestamp | project body"), newest(10));
        assert_eq!(mode("logs | sort by timestamp desc | take 5"), newest(5));
        assert_eq!(
            mode("logs | summarize count() by bin(timestamp, 1m), level | extend x = 1"),
            Some(SliceMode::Bins { span: 60_000_000_000 })
        );
        for text in [
            "logs | top 10 by timestamp asc",
            "logs | top 10 by duration desc",
            "logs | extend timestamp = ingest_time | top 10 by timestamp desc",
            "logs | summarize count() by level",
            "logs | summarize count() by bin(timestamp, 1m) | top 3 by count_",
            "let x = 1; logs | top 1 by timestamp desc",
            "logs | take 10",
            "range x from 1 to 3 step 1 | top 1 by x",
        ] {
            assert_eq!(mode(text), None, "{text}");
        }
        assert_eq!(
            sliceable("logs | top 1 by timestamp").map(|s| s.table),
            Some("logs".into())
        );
    }

    #[test]
    fn slices_start_small_and_newest_and_cover_the_range() {
        let hour = 3_600_000_000_000i64;
        let slices = slices(SliceMode::Newest { n: 1 }, 0, 24 * hour);
        assert_eq!(slices[0], (24 * hour - 24 * hour / 256, 24 * hour));
        assert_eq!(slices.last().map(|s| s.0), Some(0));
        for pair in slices.windows(2) {
            assert_eq!(pair[0].0, pair[1].1, "contiguous");
        }
        let minute = 60_000_000_000i64;
        let bins = super::slices(SliceMode::Bins { span: minute }, 5, 24 * hour - 7);
        for (lo, hi) in &bins {
            assert!(*lo == 5 || lo % minute == 0, "{lo}");
            assert_eq!(hi % minute, 0);
        }
        assert_eq!(bins.last().map(|s| s.0), Some(5));
    }
}
