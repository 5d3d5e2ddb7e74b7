//! Scalar function calls.

use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano};
use datafusion::common::ScalarValue;
use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::{Expr, cast, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Ident, Literal};

use datafusion::logical_expr::expr::ScalarFunction;
use trawl_functions::registry::{ArgKind, KqlFunction, ReturnRule};

use crate::aggregates::is_aggregate;
use crate::context::{Planner, Tabular, Typed};
use crate::scalar::{datetime_literal, to_string};

impl Planner<'_> {
    /// Lowers a scalar function call.
    pub fn call(&mut self, function: &Ident, args: &[KExpr], e: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        let name = function.name.as_str();
        if let Some(crate::context::Binding::Function(def)) = self.bindings.get(name) {
            let def = def.clone();
            return self.call_scalar_function(name, &def, args, input, e.span);
        }
        if let Some(current) = crate::aliases::current_name(name) {
            let renamed = Ident::new(current, function.span);
            return self.call(&renamed, args, e, input);
        }
        if crate::windows::ROW_FUNCTIONS.contains(&name) {
            // Tied to the order a sort below gave the rows, so that the optimizer keeps it.
            let typed = self.row_function(name, args, e, input)?;
            return Ok(Typed::new(
                crate::windows::in_serial_order(typed.expr, input),
                typed.kql_type,
            ));
        }
        if is_aggregate(name) && trawl_functions::registry::lookup(name).is_none() {
            return Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                format!("the aggregate '{name}()' can only be used in summarize"),
            ));
        }
        if let Some(own) = crate::planner_functions::lookup(name) {
            let call = crate::planner_functions::Call {
                name,
                function,
                args,
                e,
                input,
            };
            return (own.lower)(self, &call);
        }
        match trawl_functions::registry::lookup(name) {
            Some(registered) => self.registered_call(registered, args, e, input),
            None => Err(self.unknown_function(name, function.span)),
        }
    }

    /// A registered UDF's call, or the unknown-function error: what a planner function whose
    /// special form does not apply falls back to.
    pub(crate) fn registered_or_unknown(
        &mut self,
        c: &crate::planner_functions::Call<'_>,
    ) -> Result<Typed, TrawlError> {
        match trawl_functions::registry::lookup(c.name) {
            Some(registered) => self.registered_call(registered, c.args, c.e, c.input),
            None => Err(self.unknown_function(c.name, c.function.span)),
        }
    }

    /// A call of a function from the UDF registry: arguments converted to the declared kinds.
    fn registered_call(
        &mut self,
        function: &'static KqlFunction,
        args: &[KExpr],
        e: &KExpr,
        input: &Tabular,
    ) -> Result<Typed, TrawlError> {
        let too_many = function.max_args().is_some_and(|max| args.len() > max);
        if args.len() < function.min_args || too_many {
            let expected = match function.max_args() {
                Some(max) if max == function.min_args => format!("{max}"),
                Some(max) => format!("{} to {max}", function.min_args),
                None => format!("at least {}", function.min_args),
            };
            return Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                format!(
                    "'{}()' takes {expected} argument(s), found {}",
                    function.name,
                    args.len()
                ),
            ));
        }
        // `*` stands for every column of the row.
        let expanded: Vec<KExpr>;
        let args = if args.iter().any(|a| matches!(a.kind, ExprKind::Star)) {
            expanded = args
                .iter()
                .flat_map(|a| match a.kind {
                    ExprKind::Star => input
                        .columns
                        .iter()
                        .map(|(n, _)| KExpr::new(ExprKind::Name(trawl_kql::ast::Ident::new(n.clone(), a.span)), a.span))
                        .collect::<Vec<_>>(),
                    _ => vec![a.clone()],
                })
                .collect();
            expanded.as_slice()
        } else {
            args
        };
        let mut lowered = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for (index, arg) in args.iter().enumerate() {
            let value = self.scalar(arg, input)?;
            let kind = function.kind_of(index).unwrap_or(ArgKind::Any);
            let (expr, kql_type) = self.convert_arg(value, kind, arg, function.name)?;
            lowered.push(expr);
            types.push(kql_type);
        }
        let kql_type = match function.returns {
            ReturnRule::Fixed(t) => t,
            ReturnRule::SameAsArg(i) => types.get(i).copied().unwrap_or(KqlType::Dynamic),
        };
        let udf = std::sync::Arc::new((function.udf)());
        Ok(Typed::new(
            Expr::ScalarFunction(ScalarFunction::new_udf(udf, lowered)),
            kql_type,
        ))
    }

    /// Converts an argument to the kind a registered function declares.
    pub(crate) fn convert_arg(
        &self,
        value: Typed,
        kind: ArgKind,
        at: &KExpr,
        function: &str,
    ) -> Result<(Expr, KqlType), TrawlError> {
        let mismatch = |found: KqlType, expected: &str| {
            self.error(
                ErrorCode::TypeMismatch,
                at.span,
                format!("'{function}()' expects {expected} here, found {found}"),
            )
        };
        Ok(match kind {
            ArgKind::Any => (value.expr, value.kql_type),
            ArgKind::String => (to_string(value), KqlType::String),
            ArgKind::Dynamic => (crate::scalar::to_dynamic(value), KqlType::Dynamic),
            ArgKind::Real => match value.kql_type {
                t if t.is_numeric() => (cast(value.expr, DataType::Float64), KqlType::Real),
                KqlType::Dynamic | KqlType::String => (crate::scalar::dynamic_as_real(value), KqlType::Real),
                KqlType::Bool => (
                    cast(cast(value.expr, DataType::Int64), DataType::Float64),
                    KqlType::Real,
                ),
                other => return Err(mismatch(other, "a number")),
            },
            ArgKind::Long => match value.kql_type {
                t if t.is_numeric() => (cast(value.expr, DataType::Int64), KqlType::Long),
                KqlType::Dynamic | KqlType::String => (
                    cast(crate::scalar::dynamic_as_real(value), DataType::Int64),
                    KqlType::Long,
                ),
                KqlType::Bool => (cast(value.expr, DataType::Int64), KqlType::Long),
                other => return Err(mismatch(other, "a whole number")),
            },
            ArgKind::Bool => (self.boolean(value, at)?, KqlType::Bool),
            ArgKind::DateTime => match value.kql_type {
                KqlType::DateTime => (value.expr, KqlType::DateTime),
                KqlType::String | KqlType::Dynamic => (
                    cast(to_string(value), trawl_functions::types::arrow_type(KqlType::DateTime)),
                    KqlType::DateTime,
                ),
                other => return Err(mismatch(other, "a datetime")),
            },
            ArgKind::Timespan => match value.kql_type {
                KqlType::Timespan => (value.expr, KqlType::Timespan),
                other => return Err(mismatch(other, "a timespan")),
            },
        })
    }

    /// `bin(value, size)`: the start of the bin `value` falls in.
    pub fn bin(&mut self, value: Typed, size: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        match value.kql_type {
            KqlType::DateTime => {
                let nanos = self.timespan_constant(size)?;
                if nanos <= 0 {
                    return Err(self.error(ErrorCode::BadRequest, size.span, "the bin size must be positive"));
                }
                let stride = lit(ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
                    0, 0, nanos,
                ))));
                let expr = f::date_bin(stride, value.expr, datetime_literal(0));
                Ok(Typed::new(expr, KqlType::DateTime))
            }
            KqlType::Int | KqlType::Long | KqlType::Real => {
                let step = self.scalar(size, input)?;
                if !step.kql_type.is_numeric() {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        size.span,
                        format!("the bin size must be a number, found {}", step.kql_type),
                    ));
                }
                let real = f::floor(cast(value.expr, DataType::Float64) / cast(step.expr.clone(), DataType::Float64))
                    * cast(step.expr, DataType::Float64);
                let (expr, kql_type) = match (value.kql_type, step.kql_type) {
                    (KqlType::Real, _) | (_, KqlType::Real) => (real, KqlType::Real),
                    (k, _) => (
                        cast(real, DataType::Int64),
                        if k == KqlType::Int { KqlType::Long } else { k },
                    ),
                };
                Ok(Typed::new(expr, kql_type))
            }
            KqlType::Timespan => {
                let nanos = self.timespan_constant(size)?;
                if nanos <= 0 {
                    return Err(self.error(ErrorCode::BadRequest, size.span, "the bin size must be positive"));
                }
                let raw = cast(value.expr, DataType::Int64);
                let floored = cast(
                    f::floor(cast(raw, DataType::Float64) / lit(nanos as f64)) * lit(nanos as f64),
                    DataType::Int64,
                );
                Ok(Typed::new(
                    cast(
                        floored,
                        DataType::Duration(datafusion::arrow::datatypes::TimeUnit::Nanosecond),
                    ),
                    KqlType::Timespan,
                ))
            }
            other => Err(self.error(
                ErrorCode::TypeMismatch,
                size.span,
                format!("bin() needs a number, datetime or timespan, found {other}"),
            )),
        }
    }

    /// A timespan that must be known at planning time: a literal, or an expression of constants
    /// (a `let` name, `2 * 1h`); a number counts days.
    pub fn timespan_constant(&mut self, e: &KExpr) -> Result<i64, TrawlError> {
        match &e.kind {
            ExprKind::Literal(Literal::Timespan(n)) => return Ok(*n),
            ExprKind::Literal(Literal::Long(n)) => return Ok(n.saturating_mul(86_400_000_000_000)),
            ExprKind::Unary {
                op: trawl_kql::ast::UnaryOp::Neg,
                operand,
            } => return Ok(-self.timespan_constant(operand)?),
            _ => {}
        }
        let not_constant = |p: &Self| {
            p.error(
                ErrorCode::BadRequest,
                e.span,
                "expected a constant timespan such as 5m or 1h",
            )
        };
        let input = self.empty_tabular()?;
        let Ok(typed) = self.scalar(e, &input) else {
            return Err(not_constant(self));
        };
        let days = |n: f64| (n * 86_400_000_000_000.0) as i64;
        match crate::sources::constant_value(&typed.expr) {
            Some(ScalarValue::DurationNanosecond(Some(n))) => Ok(n),
            Some(ScalarValue::Int64(Some(n))) => Ok(n.saturating_mul(86_400_000_000_000)),
            Some(ScalarValue::Int32(Some(n))) => Ok(i64::from(n).saturating_mul(86_400_000_000_000)),
            Some(ScalarValue::Float64(Some(n))) if n.is_finite() => Ok(days(n)),
            _ => Err(not_constant(self)),
        }
    }
}

/// Round bin sizes (nanoseconds), each at most twice the one before, so that one of them
/// always gives between 750 and 1,500 bins.
const BIN_LADDER: &[i64] = {
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000 * MS;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;
    &[
        MS,
        2 * MS,
        4 * MS,
        5 * MS,
        10 * MS,
        20 * MS,
        40 * MS,
        50 * MS,
        100 * MS,
        200 * MS,
        250 * MS,
        500 * MS,
        S,
        2 * S,
        3 * S,
        5 * S,
        10 * S,
        15 * S,
        20 * S,
        30 * S,
        M,
        2 * M,
        3 * M,
        5 * M,
        10 * M,
        15 * M,
        20 * M,
        30 * M,
        H,
        2 * H,
        3 * H,
        4 * H,
        6 * H,
        8 * H,
        12 * H,
        D,
        2 * D,
        3 * D,
        4 * D,
        7 * D,
        14 * D,
        28 * D,
    ]
};

/// The smallest ladder size that gives at most 1,500 bins over `window` nanoseconds.
pub(crate) fn auto_bin_size(window: i64) -> i64 {
    let wanted = (window.max(1) as u64).div_ceil(1_500) as i64;
    BIN_LADDER
        .iter()
        .copied()
        .find(|size| *size >= wanted)
        .unwrap_or(BIN_LADDER[BIN_LADDER.len() - 1])
}

#[cfg(test)]
mod bin_auto_tests {
    use super::{BIN_LADDER, auto_bin_size};

    #[test]
    fn the_ladder_gives_750_to_1500_bins() {
        for pair in BIN_LADDER.windows(2) {
            assert!(pair[1] <= 2 * pair[0], "{} then {}", pair[0], pair[1]);
        }
        let hour = 3_600_000_000_000i64;
        assert_eq!(auto_bin_size(hour), 3_000_000_000, "1h → 3s (1,200 bins)");
        assert_eq!(auto_bin_size(24 * hour), 60_000_000_000, "1d → 1m (1,440 bins)");
        for window in [10_000_000_000i64, hour, 7 * 24 * hour, 90 * 24 * hour, 123_456_789_012] {
            let bins = window / auto_bin_size(window);
            assert!((750..=1_500).contains(&bins), "{window} ns gives {bins} bins");
        }
    }
}
