//! `make-series [kind=nonempty] agg [default=v], ... on axis (from a to b step s | in
//! range(a, b, s)) [by ...]`: per group, one dynamic array per aggregate with a value for each
//! bin of the axis (`default`, 0 unless given, where a bin has no rows), and the axis itself as
//! an array of bin starts.
//!
//! Lowering: rows outside the axis range are dropped; aggregate by group and bin index; then
//! per group collect (bin index, value) lists and lay them out densely (`kql_dense_series`).
//! With `kind=nonempty` and no grouping, empty input still gives one row of defaults.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::expr_fn as agg;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ScalarUDF, cast, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_functions::lists::DenseSeriesUdf;
use trawl_kql::ast::{Expr as KExpr, ExprKind, Ident, MakeSeries, NamedExpr, SeriesRange};
use trawl_kql::span::Span;

use crate::aggregates::is_aggregate;
use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::joins::param_word;
use crate::names::default_name;
use crate::scalar::to_dynamic;
use crate::sources::constant_value;

/// Most bins a series may have.
const MAX_BINS: i64 = 100_000;

fn scalar_i64(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::TimestampNanosecond(Some(v), _) | ScalarValue::DurationNanosecond(Some(v)) => Some(*v),
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Float64(Some(v)) => Some(*v as i64),
        _ => None,
    }
}

fn json_of(value: &ScalarValue) -> String {
    match value {
        ScalarValue::Int64(Some(v)) => v.to_string(),
        ScalarValue::Int32(Some(v)) => v.to_string(),
        ScalarValue::Float64(Some(v)) => serde_json::Number::from_f64(*v).map_or("null".into(), |n| n.to_string()),
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => serde_json::Value::String(s.clone()).to_string(),
        ScalarValue::TimestampNanosecond(Some(v), _) => format!("\"{}\"", trawl_common::time::format_datetime(*v)),
        ScalarValue::DurationNanosecond(Some(v)) => format!("\"{}\"", trawl_common::time::format_timespan(*v)),
        _ => "null".into(),
    }
}

impl Planner<'_> {
    fn constant_i64(&mut self, e: &KExpr, input: &Tabular, what: &str) -> Result<(i64, KqlType), TrawlError> {
        let value = self.scalar(e, input)?;
        let kql_type = value.kql_type;
        constant_value(&value.expr)
            .as_ref()
            .and_then(scalar_i64)
            .map(|v| (v, kql_type))
            .ok_or_else(|| {
                self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    format!("the make-series {what} must be a constant"),
                )
            })
    }

    pub fn make_series(&mut self, input: Tabular, series: &MakeSeries, span: Span) -> Result<Tabular, TrawlError> {
        let nonempty = param_word(&series.params, "kind").as_deref() == Some("nonempty");
        let axis = self.scalar(&series.on, &input)?;
        let axis_name = match &series.on.kind {
            ExprKind::Name(ident) => ident.name.clone(),
            _ => default_name(&series.on, 1),
        };
        let (start, end, step, inclusive) = match &series.range {
            SeriesRange::FromTo {
                from: Some(from),
                to: Some(to),
                step,
            } => (from, to, step, false),
            SeriesRange::InRange { start, stop, step } => (start, stop, step, true),
            SeriesRange::FromTo { .. } => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    span,
                    "make-series needs 'from' and 'to' (or 'in range(...)')",
                ));
            }
        };
        let empty = self.empty_tabular()?;
        let (start, start_type) = self.constant_i64(start, &empty, "start")?;
        let (end, _) = self.constant_i64(end, &empty, "end")?;
        let (step, _) = self.constant_i64(step, &empty, "step")?;
        if step <= 0 {
            return Err(self.error(ErrorCode::BadRequest, span, "the make-series step must be positive"));
        }
        let span_width = i128::from(end) - i128::from(start);
        let bins = if inclusive {
            span_width / i128::from(step) + 1
        } else {
            (span_width + i128::from(step) - 1) / i128::from(step)
        };
        if !(0..=i128::from(MAX_BINS)).contains(&bins) {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("a series may have at most {MAX_BINS} bins"),
            ));
        }
        let bins = bins as i64;
        let axis_raw = match axis.kql_type {
            KqlType::DateTime | KqlType::Timespan => cast(axis.expr.clone(), DataType::Int64),
            t if t.is_numeric() => cast(axis.expr.clone(), DataType::Int64),
            other => {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    series.on.span,
                    format!("a series axis must be a datetime, timespan or number, found {other}"),
                ));
            }
        };
        let bin_index = (axis_raw.clone() - lit(start)) / lit(step);
        let in_range = axis_raw.clone().gt_eq(lit(start)).and(bin_index.clone().lt(lit(bins)));

        // Stage 1: aggregate by group and bin.
        let mut group_exprs = Vec::new();
        let mut group_columns: Vec<(String, KqlType)> = Vec::new();
        for (position, item) in series.by.iter().enumerate() {
            let value = self.scalar(&item.expr, &input)?;
            let name = item
                .name()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| default_name(&item.expr, position + 1));
            group_exprs.push(value.expr.alias(&name));
            group_columns.push((name, value.kql_type));
        }
        let group_names: Vec<String> = group_columns.iter().map(|(n, _)| n.clone()).collect();
        let mut stage_group = group_exprs.clone();
        stage_group.push(bin_index.alias("__trawl_bin"));
        let mut outputs: Vec<(String, String, KqlType)> = Vec::new(); // (name, default JSON, value type)
        let mut first_aggregates = Vec::new();
        let mut finishes = Vec::new();
        for (index, item) in series.aggregates.iter().enumerate() {
            // A plain expression is the value of any row in the bin.
            let named: NamedExpr = match &item.aggregate.expr.kind {
                ExprKind::Call { function, .. } if is_aggregate(&function.name) => item.aggregate.clone(),
                _ => NamedExpr {
                    names: item.aggregate.names.clone(),
                    expr: KExpr::new(
                        ExprKind::Call {
                            function: Ident::new("take_any", item.span),
                            args: vec![item.aggregate.expr.clone()],
                        },
                        item.span,
                    ),
                    span: item.span,
                },
            };
            let output = self.one_aggregate_output(
                &named,
                &input,
                &group_names,
                (item.span, "make-series takes aggregates with one result"),
            )?;
            let default = match &item.default {
                Some(default) => {
                    let value = self.scalar(default, &empty)?;
                    constant_value(&value.expr).map(|v| json_of(&v)).ok_or_else(|| {
                        self.error(ErrorCode::BadRequest, default.span, "the default must be a constant")
                    })?
                }
                None => "0".to_string(),
            };
            let internal_name = format!("__trawl_series_{index}");
            first_aggregates.push(output.aggregate.alias(&internal_name));
            finishes.push((internal_name, output.finish, output.kql_type));
            outputs.push((output.name, default, output.kql_type));
        }
        let stage1 = input
            .builder()
            .filter(in_range)
            .and_then(|b| b.aggregate(stage_group, first_aggregates))
            .map_err(|e| internal(&e))?;
        let mut finish_exprs: Vec<Expr> = group_names.iter().map(|n| column(n).alias(n)).collect();
        finish_exprs.push(column("__trawl_bin").alias("__trawl_bin"));
        for (internal_name, finish, kql_type) in &finishes {
            let finished = finish.apply(column(internal_name));
            finish_exprs.push(to_dynamic(Typed::new(finished, *kql_type)).alias(internal_name));
        }
        let stage1 = stage1.project(finish_exprs).map_err(|e| internal(&e))?;

        // Stage 2: per group, the bins' values as lists, laid out densely.
        let mut lists = vec![
            agg::array_agg(column("__trawl_bin")).alias("__trawl_bins"),
            agg::count(lit(1i64)).alias("__trawl_rows"),
        ];
        for (internal_name, _, _) in &finishes {
            lists.push(agg::array_agg(column(internal_name)).alias(internal_name));
        }
        let group_refs: Vec<Expr> = group_names.iter().map(|n| column(n)).collect();
        let mut stage2 = stage1.aggregate(group_refs, lists).map_err(|e| internal(&e))?;
        if !nonempty || !group_names.is_empty() {
            stage2 = stage2
                .filter(column("__trawl_rows").gt(lit(0i64)))
                .map_err(|e| internal(&e))?;
        }
        let dense = Arc::new(ScalarUDF::from(DenseSeriesUdf::new()));
        let mut projection: Vec<Expr> = group_names.iter().map(|n| column(n).alias(n)).collect();
        let mut columns = group_columns.clone();
        for ((internal_name, _, _), (name, default, _)) in finishes.iter().zip(&outputs) {
            let call = Expr::ScalarFunction(ScalarFunction::new_udf(
                dense.clone(),
                vec![
                    column("__trawl_bins"),
                    column(internal_name),
                    lit(bins),
                    lit(default.clone()),
                ],
            ));
            projection.push(call.alias(name));
            columns.push((name.clone(), KqlType::Dynamic));
        }
        let axis_values: Vec<String> = (0..bins)
            .map(|i| {
                let at = start.saturating_add(step.saturating_mul(i));
                match start_type {
                    KqlType::DateTime => format!("\"{}\"", trawl_common::time::format_datetime(at)),
                    KqlType::Timespan => format!("\"{}\"", trawl_common::time::format_timespan(at)),
                    _ => at.to_string(),
                }
            })
            .collect();
        projection.push(lit(format!("[{}]", axis_values.join(","))).alias(&axis_name));
        columns.push((axis_name, KqlType::Dynamic));
        let plan = stage2
            .project(projection)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }
}
