//! Row functions over the serialized order (`serialize`, or the order of a `sort`):
//! `row_number()`, `prev()`, `next()`, `row_cumsum()`, lowered to DataFusion window
//! functions over the whole input; `row_cumsum(x, restart)`, `row_rank_dense()`,
//! `row_rank_min()` and `row_window_session()` (in `serial_windows`); and `toscalar()`, a
//! scalar subquery.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ScalarValue};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::functions_window::expr_fn as window;
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, LogicalPlan, LogicalPlanBuilder, WindowFrame, WindowFrameBound, WindowFrameUnits, cast,
    scalar_subquery,
};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal};

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::serial_windows::{self, Serial};
use crate::sources::constant_value;

/// Names of the row functions handled here.
pub const ROW_FUNCTIONS: &[&str] = &[
    "row_number",
    "prev",
    "next",
    "row_cumsum",
    "row_rank_dense",
    "row_rank_min",
    "row_window_session",
    "toscalar",
];

impl Planner<'_> {
    fn literal_offset(&self, arg: Option<&KExpr>) -> Result<i64, TrawlError> {
        match arg.map(|a| &a.kind) {
            None => Ok(1),
            Some(ExprKind::Literal(Literal::Long(n))) => Ok(*n),
            Some(ExprKind::Literal(Literal::Int(n))) => Ok(i64::from(*n)),
            Some(_) => Err(self.error(
                ErrorCode::BadRequest,
                arg.map_or_else(Default::default, |a| a.span),
                "the offset must be a whole number literal",
            )),
        }
    }

    /// A restart condition: a bool expression.
    fn restart_argument(&mut self, arg: &KExpr, input: &Tabular) -> Result<Expr, TrawlError> {
        let restart = self.scalar(arg, input)?;
        if restart.kql_type != KqlType::Bool {
            return Err(self.error(
                ErrorCode::TypeMismatch,
                arg.span,
                format!("the restart condition must be a bool, found {}", restart.kql_type),
            ));
        }
        Ok(restart.expr)
    }

    /// Lowers a row function call `name(args)`.
    pub fn row_function(
        &mut self,
        name: &str,
        args: &[KExpr],
        e: &KExpr,
        input: &Tabular,
    ) -> Result<Typed, TrawlError> {
        match name {
            "row_number" => {
                let start = match args.first() {
                    Some(arg) => {
                        let value = self.scalar(arg, input)?;
                        constant_value(&value.expr)
                            .and_then(|v| match v {
                                ScalarValue::Int64(Some(n)) => Some(n),
                                ScalarValue::Int32(Some(n)) => Some(i64::from(n)),
                                _ => None,
                            })
                            .ok_or_else(|| {
                                self.error(
                                    ErrorCode::BadRequest,
                                    arg.span,
                                    "row_number() starts at a whole number literal",
                                )
                            })?
                    }
                    None => 1,
                };
                if let Some(restart) = args.get(1) {
                    // row_number(start, restart): numbering starts again where restart holds.
                    let restart = self.restart_argument(restart, input)?;
                    let ones = serial_windows::call(
                        Serial::CumsumRestart,
                        vec![datafusion::logical_expr::lit(1i64), restart],
                    );
                    return Ok(Typed::new(
                        ones + datafusion::logical_expr::lit(start - 1),
                        KqlType::Long,
                    ));
                }
                let number = cast(window::row_number(), datafusion::arrow::datatypes::DataType::Int64);
                Ok(Typed::new(
                    number + datafusion::logical_expr::lit(start - 1),
                    KqlType::Long,
                ))
            }
            "prev" | "next" => {
                let Some(first) = args.first() else {
                    return Err(self.error(ErrorCode::BadRequest, e.span, format!("'{name}()' needs a column")));
                };
                let value = self.scalar(first, input)?;
                let offset = self.literal_offset(args.get(1))?;
                let default = match args.get(2) {
                    Some(arg) => {
                        let typed = self.scalar(arg, input)?;
                        constant_value(&typed.expr)
                    }
                    None => None,
                };
                let expr = if name == "prev" {
                    window::lag(value.expr, Some(offset), default)
                } else {
                    window::lead(value.expr, Some(offset), default)
                };
                Ok(Typed::new(expr, value.kql_type))
            }
            "row_cumsum" => {
                let Some(first) = args.first() else {
                    return Err(self.error(ErrorCode::BadRequest, e.span, "'row_cumsum()' needs a column"));
                };
                let value = self.scalar(first, input)?;
                if !value.kql_type.is_numeric() {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        first.span,
                        format!("'row_cumsum()' needs a number, found {}", value.kql_type),
                    ));
                }
                if let Some(restart) = args.get(1) {
                    let restart = self.restart_argument(restart, input)?;
                    let kql_type = if value.kql_type == KqlType::Real {
                        KqlType::Real
                    } else {
                        KqlType::Long
                    };
                    let expr = serial_windows::call(Serial::CumsumRestart, vec![value.expr, restart]);
                    return Ok(Typed::new(expr, kql_type));
                }
                let frame = WindowFrame::new_bounds(
                    WindowFrameUnits::Rows,
                    WindowFrameBound::Preceding(ScalarValue::UInt64(None)),
                    WindowFrameBound::CurrentRow,
                );
                let sum = Expr::from(WindowFunction::new(
                    WindowFunctionDefinition::AggregateUDF(sum_udaf()),
                    vec![value.expr],
                ))
                .window_frame(frame)
                .build()
                .map_err(|e| internal(&e))?;
                let kql_type = if value.kql_type == KqlType::Real {
                    KqlType::Real
                } else {
                    KqlType::Long
                };
                Ok(Typed::new(sum, kql_type))
            }
            "row_rank_dense" | "row_rank_min" => {
                let (Some(first), 1..=2) = (args.first(), args.len()) else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        format!("'{name}()' takes a value and an optional restart condition"),
                    ));
                };
                let mut call_args = vec![self.scalar(first, input)?.expr];
                if let Some(restart) = args.get(1) {
                    call_args.push(self.restart_argument(restart, input)?);
                }
                let kind = if name == "row_rank_dense" {
                    Serial::RankDense
                } else {
                    Serial::RankMin
                };
                Ok(Typed::new(serial_windows::call(kind, call_args), KqlType::Long))
            }
            "row_window_session" => {
                if !(3..=4).contains(&args.len()) {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "'row_window_session()' takes a datetime, two timespans and an optional restart condition",
                    ));
                }
                let time = self.scalar(&args[0], input)?;
                if time.kql_type != KqlType::DateTime {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        args[0].span,
                        format!("'row_window_session()' needs a datetime, found {}", time.kql_type),
                    ));
                }
                let mut call_args = vec![time.expr];
                for arg in &args[1..3] {
                    let limit = self.scalar(arg, input)?;
                    if limit.kql_type != KqlType::Timespan {
                        return Err(self.error(
                            ErrorCode::TypeMismatch,
                            arg.span,
                            format!("'row_window_session()' needs a timespan here, found {}", limit.kql_type),
                        ));
                    }
                    call_args.push(limit.expr);
                }
                if let Some(restart) = args.get(3) {
                    call_args.push(self.restart_argument(restart, input)?);
                }
                Ok(Typed::new(
                    serial_windows::call(Serial::WindowSession, call_args),
                    KqlType::DateTime,
                ))
            }
            "toscalar" => {
                let [inner] = args else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "'toscalar()' takes one tabular expression",
                    ));
                };
                let tabular = match self.tabular(inner) {
                    Ok(tabular) => tabular,
                    // `toscalar(2)`, `toscalar(x)` of a scalar: the value itself.
                    Err(error) => return self.scalar(inner, input).map_err(|_| error),
                };
                let Some((first, kql_type)) = tabular.columns.first().cloned() else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        inner.span,
                        "'toscalar()' needs a table with a column",
                    ));
                };
                let plan = tabular
                    .builder()
                    .project(vec![column(&first).alias(&first)])
                    .and_then(|b| b.limit(0, Some(1)))
                    .and_then(|b| b.build())
                    .map_err(|e| internal(&e))?;
                Ok(Typed::new(scalar_subquery(Arc::new(plan)), kql_type))
            }
            _ => Err(self.unknown_function(name, e.span)),
        }
    }
}

/// `expr` with its window functions ordered by the sort keys `input`'s rows are in (see
/// [`crate::context::serial_order`]): a window with no order does not ask for one, and the
/// physical optimizer may then drop a sort that no later operator needs.
pub fn in_serial_order(expr: Expr, input: &Tabular) -> Expr {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    let Some(order) = crate::context::serial_order(&input.plan) else {
        return expr;
    };
    let original = expr.clone();
    // The rewrite cannot fail; should it, the expression stays as it was.
    expr.transform(|e| match e {
        Expr::WindowFunction(mut window) if window.params.order_by.is_empty() => {
            window.params.order_by = order.clone();
            Ok(Transformed::yes(Expr::WindowFunction(window)))
        }
        other => Ok(Transformed::no(other)),
    })
    .map_or(original, |t| t.data)
}

/// A builder over `input` with a window node for the window functions in `exprs`, if any.
pub fn with_windows(input: &Tabular, exprs: &[Expr]) -> Result<LogicalPlanBuilder, TrawlError> {
    window_node(input.plan.clone(), exprs)
}

/// `plan` under a window node for the (top-level) window functions in `exprs`, if any.
fn window_node(plan: LogicalPlan, exprs: &[Expr]) -> Result<LogicalPlanBuilder, TrawlError> {
    let windows = datafusion::logical_expr::utils::find_window_exprs(exprs.iter());
    if windows.is_empty() {
        return Ok(LogicalPlanBuilder::from(plan));
    }
    let plan = LogicalPlanBuilder::window_plan(plan, windows).map_err(|e| internal(&e))?;
    Ok(LogicalPlanBuilder::from(plan))
}

/// As [`with_windows`], for expressions whose window functions may nest (a restart condition
/// that uses `prev()`): the innermost windows are computed first, each stage over the last,
/// and the expressions rewritten to read their results. Returns the builder and the
/// expressions to project from it.
pub fn with_staged_windows(input: &Tabular, exprs: Vec<Expr>) -> Result<(LogicalPlanBuilder, Vec<Expr>), TrawlError> {
    let mut plan = input.plan.clone();
    let mut exprs = exprs;
    loop {
        let mut innermost: Vec<Expr> = Vec::new();
        let mut nested = false;
        for expr in &exprs {
            expr.apply(|node| {
                if matches!(node, Expr::WindowFunction(_)) {
                    if window_count(node) == 1 {
                        if !innermost.contains(node) {
                            innermost.push(node.clone());
                        }
                    } else {
                        nested = true;
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .map_err(|e| internal(&e))?;
        }
        if !nested {
            return Ok((window_node(plan, &exprs)?, exprs));
        }
        plan = LogicalPlanBuilder::window_plan(plan, innermost.clone()).map_err(|e| internal(&e))?;
        let names: Vec<(Expr, String)> = innermost
            .into_iter()
            .map(|w| {
                let name = w.schema_name().to_string();
                (w, name)
            })
            .collect();
        exprs = exprs
            .into_iter()
            .map(|expr| {
                expr.transform_up(|node| match names.iter().find(|(w, _)| *w == node) {
                    Some((_, name)) => Ok(Transformed::yes(Expr::Column(Column::new_unqualified(name.clone())))),
                    None => Ok(Transformed::no(node)),
                })
                .map(|t| t.data)
            })
            .collect::<datafusion::common::Result<Vec<Expr>>>()
            .map_err(|e| internal(&e))?;
    }
}

/// How many window function calls `expr` holds, itself included.
fn window_count(expr: &Expr) -> usize {
    let mut count = 0;
    let _ = expr.apply(|node| {
        if matches!(node, Expr::WindowFunction(_)) {
            count += 1;
        }
        Ok(TreeNodeRecursion::Continue)
    });
    count
}
