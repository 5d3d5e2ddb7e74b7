//! Operators that produce rows without input: `print`, `datatable`, `range`.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, DurationNanosecondArray, Float64Array, Int64Array, TimestampNanosecondArray};
use datafusion::arrow::datatypes::{DataType, Schema, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{Column, ScalarValue, UnnestOptions};
use datafusion::datasource::{MemTable, provider_as_source};
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, cast, lit};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Datatable, Expr as KExpr, NamedExpr, Range};

use crate::context::{Planner, Tabular, Typed, internal};
use crate::scalar::{kql_type_of_scalar, null_of};

/// Most rows a `range` may produce.
pub const MAX_RANGE_ROWS: usize = trawl_functions::ranges::MAX_RANGE_ROWS as usize;

/// Folds a constant expression to its value.
pub fn constant_value(expr: &Expr) -> Option<ScalarValue> {
    let simplified = ExprSimplifier::new(SimplifyContext::default())
        .simplify(expr.clone())
        .ok()?;
    match simplified {
        Expr::Literal(value, _) => Some(value),
        _ => None,
    }
}

impl Planner<'_> {
    /// `print a = 1, b = "x"`: one row.
    pub fn print(&mut self, items: &[NamedExpr]) -> Result<Tabular, TrawlError> {
        let input = self.empty_tabular()?;
        let items = &crate::names::expand_multi_outputs(&crate::names::expand_multi_array_sorts(items));
        let mut exprs = Vec::with_capacity(items.len());
        let mut columns = Vec::with_capacity(items.len());
        for (position, item) in items.iter().enumerate() {
            let value = self.scalar(&item.expr, &input)?;
            let name = match item.name() {
                Some(ident) => ident.name.clone(),
                None => format!("print_{position}"),
            };
            exprs.push(value.expr.alias(&name));
            columns.push((name, value.kql_type));
        }
        // Row functions (`row_number()`, `prev()`) see the one row in its order.
        let (builder, exprs) = crate::windows::with_staged_windows(&input, exprs)?;
        let plan = builder
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// `datatable(a:long, b:string) [1, "x", ...]`.
    pub fn datatable(&mut self, table: &Datatable, span: trawl_kql::Span) -> Result<Tabular, TrawlError> {
        let width = table.columns.len();
        if width == 0 {
            return Err(self.error(ErrorCode::SyntaxError, span, "a datatable needs at least one column"));
        }
        if !table.values.len().is_multiple_of(width) {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!(
                    "a datatable with {width} columns needs a multiple of {width} values, found {}",
                    table.values.len()
                ),
            ));
        }
        let input = self.empty_tabular()?;
        let types: Vec<KqlType> = table.columns.iter().map(|c| kql_type_of_scalar(c.ty)).collect();
        let columns: Vec<(String, KqlType)> = table
            .columns
            .iter()
            .zip(&types)
            .map(|(c, t)| (c.name.name.clone(), *t))
            .collect();
        if table.values.is_empty() {
            let exprs: Vec<Expr> = columns.iter().map(|(n, t)| null_of(*t).alias(n)).collect();
            let plan = LogicalPlanBuilder::empty(false)
                .project(exprs)
                .and_then(|b| b.build())
                .map_err(|e| internal(&e))?;
            return Ok(Tabular { plan, columns });
        }
        let mut rows = Vec::with_capacity(table.values.len() / width);
        for chunk in table.values.chunks(width) {
            let mut row = Vec::with_capacity(width);
            for (value, kql_type) in chunk.iter().zip(&types) {
                let typed = self.scalar(value, &input)?;
                row.push(self.convert(typed, *kql_type, value)?);
            }
            rows.push(row);
        }
        let values = LogicalPlanBuilder::values(rows)
            .map_err(|e| internal(&e))?
            .build()
            .map_err(|e| internal(&e))?;
        let generated: Vec<String> = values.schema().fields().iter().map(|f| f.name().clone()).collect();
        let exprs: Vec<Expr> = generated
            .iter()
            .zip(&columns)
            .map(|(g, (name, _))| crate::context::column(g).alias(name))
            .collect();
        let plan = LogicalPlanBuilder::from(values)
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// A value converted to a declared column type (datatable cells, typed parameters).
    pub fn convert(&self, value: Typed, target: KqlType, at: &KExpr) -> Result<Expr, TrawlError> {
        let data_type = trawl_functions::types::arrow_type(target);
        if value.kql_type == target {
            return Ok(cast(value.expr, data_type));
        }
        let compatible = match (value.kql_type, target) {
            (a, b) if a.is_numeric() && b.is_numeric() => true,
            (_, KqlType::Dynamic) => true,
            (KqlType::String, KqlType::Guid) | (KqlType::Guid, KqlType::String) => true,
            _ => false,
        };
        if !compatible && !matches!(value.expr, Expr::Literal(ScalarValue::Null, _)) {
            return Err(self.error(
                ErrorCode::TypeMismatch,
                at.span,
                format!("expected a value of type {target}, found {}", value.kql_type),
            ));
        }
        if target == KqlType::Dynamic && value.kql_type != KqlType::Dynamic {
            return Ok(crate::scalar::to_dynamic(value));
        }
        Ok(cast(value.expr, data_type))
    }

    /// `range x from a to b step s`: numbers, datetimes or timespans, `b` inclusive.
    pub fn range(&mut self, range: &Range, span: trawl_kql::Span) -> Result<Tabular, TrawlError> {
        let input = self.empty_tabular()?;
        let from = self.scalar(&range.from, &input)?;
        let to = self.scalar(&range.to, &input)?;
        let step = self.scalar(&range.step, &input)?;
        let name = range.column.name.clone();
        let (Some(from_value), Some(to_value), Some(step_value)) = (
            constant_value(&from.expr),
            constant_value(&to.expr),
            constant_value(&step.expr),
        ) else {
            return self.computed_range(range, name, from, to, step);
        };
        let (array, kql_type): (ArrayRef, KqlType) = match from.kql_type {
            KqlType::DateTime | KqlType::Timespan => {
                let start = as_i64(&from_value);
                let stop = as_i64(&to_value);
                let step = as_i64(&step_value);
                let (Some(start), Some(stop), Some(step)) = (start, stop, step) else {
                    return self.empty_range(&name, from.kql_type);
                };
                let values = self.steps_i64(start, stop, step, span)?;
                if from.kql_type == KqlType::DateTime {
                    (
                        Arc::new(TimestampNanosecondArray::from(values).with_timezone(trawl_functions::types::UTC)),
                        KqlType::DateTime,
                    )
                } else {
                    (Arc::new(DurationNanosecondArray::from(values)), KqlType::Timespan)
                }
            }
            t if t.is_numeric() && to.kql_type.is_numeric() && step.kql_type.is_numeric() => {
                let real = [from.kql_type, to.kql_type, step.kql_type].contains(&KqlType::Real);
                if real {
                    let (Some(start), Some(stop), Some(step)) =
                        (as_f64(&from_value), as_f64(&to_value), as_f64(&step_value))
                    else {
                        return self.empty_range(&name, KqlType::Real);
                    };
                    if step == 0.0 || !step.is_finite() {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            range.step.span,
                            "the range step must not be zero",
                        ));
                    }
                    let count = ((stop - start) / step).floor();
                    if count >= MAX_RANGE_ROWS as f64 {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            span,
                            format!("a range may produce at most {MAX_RANGE_ROWS} rows"),
                        ));
                    }
                    let values: Vec<f64> = if count < 0.0 {
                        Vec::new()
                    } else {
                        (0..=count as usize).map(|i| start + step * i as f64).collect()
                    };
                    (Arc::new(Float64Array::from(values)), KqlType::Real)
                } else {
                    let (Some(start), Some(stop), Some(step)) =
                        (as_i64(&from_value), as_i64(&to_value), as_i64(&step_value))
                    else {
                        return self.empty_range(&name, KqlType::Long);
                    };
                    (
                        Arc::new(Int64Array::from(self.steps_i64(start, stop, step, span)?)),
                        KqlType::Long,
                    )
                }
            }
            other => {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    range.from.span,
                    format!("range needs numbers, datetimes or timespans, found {other}"),
                ));
            }
        };
        let field = trawl_functions::types::field(&name, kql_type, array.data_type().clone());
        let schema = Arc::new(Schema::new(vec![field]));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![array]).map_err(|e| TrawlError::internal(e.to_string()))?;
        let table = MemTable::try_new(schema, vec![vec![batch]]).map_err(|e| internal(&e))?;
        let plan = LogicalPlanBuilder::scan("range", provider_as_source(Arc::new(table)), None)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: vec![(name, kql_type)],
        })
    }

    /// A `range` whose bounds are known only when the query runs (`toscalar()` of a query, a
    /// function's parameters): one row holding the first value, the step and the count of
    /// steps, expanded into the steps.
    fn computed_range(
        &mut self,
        range: &Range,
        name: String,
        from: Typed,
        to: Typed,
        step: Typed,
    ) -> Result<Tabular, TrawlError> {
        const FROM: &str = "__trawl_range_from";
        const STEP: &str = "__trawl_range_step";
        const INDEX: &str = "__trawl_range_index";
        let kql_type = match from.kql_type {
            KqlType::DateTime | KqlType::Timespan => from.kql_type,
            t if t.is_numeric() && to.kql_type.is_numeric() && step.kql_type.is_numeric() => {
                if [t, to.kql_type, step.kql_type].contains(&KqlType::Real) {
                    KqlType::Real
                } else {
                    KqlType::Long
                }
            }
            other => {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    range.from.span,
                    format!("range needs numbers, datetimes or timespans, found {other}"),
                ));
            }
        };
        let Some(count) = trawl_functions::registry::lookup("__range_count") else {
            return Err(TrawlError::internal("__range_count is not registered"));
        };
        let count = Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            Arc::new((count.udf)()),
            vec![from.expr.clone(), to.expr, step.expr.clone()],
        ));
        let as_long = |e: Expr| cast(e, DataType::Int64);
        let (start, by) = match kql_type {
            KqlType::Real => (cast(from.expr, DataType::Float64), cast(step.expr, DataType::Float64)),
            _ => (as_long(from.expr), as_long(step.expr)),
        };
        let steps = datafusion::functions_nested::expr_fn::gen_series(lit(0i64), count, lit(1i64));
        let index = crate::context::column(INDEX);
        let value = match kql_type {
            KqlType::Real => {
                crate::context::column(FROM) + cast(index, DataType::Float64) * crate::context::column(STEP)
            }
            _ => crate::context::column(FROM) + index * crate::context::column(STEP),
        };
        let value = match kql_type {
            KqlType::DateTime => cast(
                value,
                DataType::Timestamp(TimeUnit::Nanosecond, Some(trawl_functions::types::UTC.into())),
            ),
            KqlType::Timespan => cast(value, DataType::Duration(TimeUnit::Nanosecond)),
            _ => value,
        };
        let options = UnnestOptions::new().with_preserve_nulls(false);
        let plan = LogicalPlanBuilder::empty(true)
            .project(vec![start.alias(FROM), by.alias(STEP), steps.alias(INDEX)])
            .and_then(|b| b.unnest_columns_with_options(vec![Column::new_unqualified(INDEX)], options))
            .and_then(|b| b.project(vec![value.alias(&name)]))
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: vec![(name, kql_type)],
        })
    }

    fn steps_i64(&self, start: i64, stop: i64, step: i64, span: trawl_kql::Span) -> Result<Vec<i64>, TrawlError> {
        if step == 0 {
            return Err(self.error(ErrorCode::BadRequest, span, "the range step must not be zero"));
        }
        let count = (i128::from(stop) - i128::from(start)) / i128::from(step);
        if count < 0 {
            return Ok(Vec::new());
        }
        if count >= MAX_RANGE_ROWS as i128 {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("a range may produce at most {MAX_RANGE_ROWS} rows"),
            ));
        }
        Ok((0..=count as i64).map(|i| start + step * i).collect())
    }

    fn empty_range(&self, name: &str, kql_type: KqlType) -> Result<Tabular, TrawlError> {
        let plan = LogicalPlanBuilder::empty(false)
            .project(vec![null_of(kql_type).alias(name)])
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: vec![(name.to_string(), kql_type)],
        })
    }
}

fn as_i64(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).ok(),
        ScalarValue::Float64(Some(v)) => Some(*v as i64),
        ScalarValue::TimestampNanosecond(Some(v), _) | ScalarValue::DurationNanosecond(Some(v)) => Some(*v),
        _ => None,
    }
}

fn as_f64(value: &ScalarValue) -> Option<f64> {
    match value {
        ScalarValue::Float64(Some(v)) => Some(*v),
        ScalarValue::Float32(Some(v)) => Some(f64::from(*v)),
        other => as_i64(other).map(|v| v as f64),
    }
}
