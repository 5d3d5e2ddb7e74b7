//! Row functions over the serialized order (`serialize`, or the order of a `sort`):
//! `row_number()`, `prev()`, `next()`, `row_cumsum()`, lowered to DataFusion window
//! functions over the whole input; and `toscalar()`, a scalar subquery.

use std::sync::Arc;

use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::functions_window::expr_fn as window;
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, LogicalPlanBuilder, WindowFrame, WindowFrameBound, WindowFrameUnits, cast, scalar_subquery,
};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal};

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::sources::constant_value;

/// Names of the row functions handled here.
pub const ROW_FUNCTIONS: &[&str] = &["row_number", "prev", "next", "row_cumsum", "toscalar"];

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
            "toscalar" => {
                let [inner] = args else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "'toscalar()' takes one tabular expression",
                    ));
                };
                let tabular = self.tabular(inner)?;
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
            _ => Err(self.error(ErrorCode::UnknownFunction, e.span, format!("unknown function '{name}'"))),
        }
    }
}

/// A builder over `input` with a window node for the window functions in `exprs`, if any.
pub fn with_windows(input: &Tabular, exprs: &[Expr]) -> Result<LogicalPlanBuilder, TrawlError> {
    let windows = datafusion::logical_expr::utils::find_window_exprs(exprs.iter());
    if windows.is_empty() {
        return Ok(input.builder());
    }
    let plan = LogicalPlanBuilder::window_plan(input.plan.clone(), windows).map_err(|e| internal(&e))?;
    Ok(LogicalPlanBuilder::from(plan))
}
