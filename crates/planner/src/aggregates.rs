//! Aggregate functions of `summarize`.

use datafusion::arrow::datatypes::DataType;
use datafusion::functions_aggregate::expr_fn as agg;
use datafusion::logical_expr::{cast, lit, when};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind};

use crate::context::{Planner, Tabular, Typed, internal};
use crate::scalar::{dynamic_as_real, to_string};

const AGGREGATES: &[&str] = &[
    "count", "countif", "dcount", "dcountif", "sum", "sumif", "avg", "avgif", "min", "max", "take_any", "any",
];

pub fn is_aggregate(name: &str) -> bool {
    AGGREGATES.contains(&name)
}

/// KQL's default output name of an aggregate: `count_`, `sum_x` (for a column argument),
/// `sum_` otherwise.
pub fn default_aggregate_name(name: &str, args: &[KExpr]) -> String {
    match args.first().map(|a| &a.kind) {
        Some(ExprKind::Name(ident)) if name != "countif" => format!("{name}_{}", ident.name),
        _ => format!("{name}_"),
    }
}

impl Planner<'_> {
    /// Lowers an aggregate call `e` (which must be a call of a known aggregate).
    pub fn aggregate(&mut self, e: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        let ExprKind::Call { function, args } = &e.kind else {
            return Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                "expected an aggregate function such as count() or sum(x)",
            ));
        };
        let name = function.name.as_str();
        let arity = |n: usize| -> Result<(), TrawlError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    format!("'{name}()' takes {n} argument(s), found {}", args.len()),
                ))
            }
        };
        match name {
            "count" => {
                if args.len() > 1 {
                    return Err(self.error(ErrorCode::BadRequest, e.span, "'count()' takes no argument"));
                }
                Ok(Typed::new(agg::count(lit(1i64)), KqlType::Long))
            }
            "countif" => {
                arity(1)?;
                let condition = self.scalar(&args[0], input)?;
                let condition = self.boolean(condition, &args[0])?;
                let one = when(condition, lit(1i64))
                    .otherwise(lit(0i64))
                    .map_err(|e| internal(&e))?;
                Ok(Typed::new(
                    datafusion::functions::expr_fn::coalesce(vec![agg::sum(one), lit(0i64)]),
                    KqlType::Long,
                ))
            }
            "dcount" | "dcountif" => {
                let value = self.scalar(&args[0], input)?;
                let value = match value.kql_type {
                    KqlType::Dynamic => to_string(value),
                    _ => value.expr,
                };
                let value = if name == "dcountif" {
                    if args.len() < 2 {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            e.span,
                            "'dcountif()' needs a value and a condition",
                        ));
                    }
                    let condition = self.scalar(&args[1], input)?;
                    let condition = self.boolean(condition, &args[1])?;
                    when(condition, value).end().map_err(|e| internal(&e))?
                } else {
                    value
                };
                Ok(Typed::new(
                    cast(agg::approx_distinct(value), DataType::Int64),
                    KqlType::Long,
                ))
            }
            "sum" | "avg" | "sumif" | "avgif" => {
                let expected = if name.ends_with("if") { 2 } else { 1 };
                arity(expected)?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                let mut numeric = match kql_type {
                    KqlType::Dynamic => dynamic_as_real(value),
                    t if t.is_numeric() || t == KqlType::Timespan => value.expr,
                    other => {
                        return Err(self.error(
                            ErrorCode::TypeMismatch,
                            args[0].span,
                            format!("'{name}()' needs a number, found {other}"),
                        ));
                    }
                };
                if expected == 2 {
                    let condition = self.scalar(&args[1], input)?;
                    let condition = self.boolean(condition, &args[1])?;
                    numeric = when(condition, numeric).end().map_err(|e| internal(&e))?;
                }
                if name.starts_with("avg") {
                    return Ok(Typed::new(agg::avg(numeric), KqlType::Real));
                }
                let result_type = match kql_type {
                    KqlType::Int | KqlType::Long => KqlType::Long,
                    KqlType::Timespan => KqlType::Timespan,
                    _ => KqlType::Real,
                };
                Ok(Typed::new(agg::sum(numeric), result_type))
            }
            "min" | "max" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                let expr = if name == "min" {
                    agg::min(value.expr)
                } else {
                    agg::max(value.expr)
                };
                Ok(Typed::new(expr, kql_type))
            }
            "take_any" | "any" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                Ok(Typed::new(agg::first_value(value.expr, vec![]), kql_type))
            }
            _ => Err(self.error(
                ErrorCode::UnknownFunction,
                function.span,
                format!("unknown aggregate function '{name}'"),
            )),
        }
    }
}
