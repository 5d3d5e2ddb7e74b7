//! Aggregate functions of `summarize`. Each aggregate call lowers to one or more outputs: a
//! DataFusion aggregate expression, and a [`Finish`] applied to its result in a projection
//! after the aggregation (list aggregates become dynamic arrays there, for example).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::expr_fn as agg;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ScalarUDF, SortExpr, cast, lit, when};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_functions::lists::{ListFinish, ListFinishUdf};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal, NamedExpr};

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::names::default_name;
use crate::scalar::{dynamic_as_real, to_dynamic, to_string};

pub(crate) const AGGREGATES: &[&str] = &[
    "count",
    "countif",
    "dcount",
    "dcountif",
    "sum",
    "sumif",
    "avg",
    "avgif",
    "min",
    "max",
    "minif",
    "maxif",
    "take_any",
    "any",
    "take_anyif",
    "make_list",
    "make_list_if",
    "make_set",
    "make_set_if",
    "make_bag",
    "make_bag_if",
    "arg_max",
    "arg_min",
    "percentile",
    "percentiles",
    "percentilesw",
    "stdev",
    "stdevif",
    "stdevp",
    "variance",
    "varianceif",
    "variancep",
    "make_list_with_nulls",
    "percentiles_array",
    "percentilesw_array",
];

pub fn is_aggregate(name: &str) -> bool {
    let name = crate::aliases::current_name(name).unwrap_or(name);
    AGGREGATES.contains(&name) || trawl_functions::aggregate_registry::lookup(name).is_some()
}

/// What happens to an aggregate's value after the aggregation.
#[derive(Debug, Clone)]
pub enum Finish {
    None,
    /// A list of JSON texts → a dynamic array or bag, keeping at most `limit` entries.
    List(ListFinish, Option<i64>),
    /// A cast back to the argument's type (percentiles of timespans and datetimes).
    Cast(DataType),
    /// The value KQL gives when nothing was aggregated (a sum of no values is 0, their
    /// average NaN).
    Otherwise(datafusion::common::ScalarValue),
    /// One percentile of a t-digest sketch (`percentile_tdigest`, the UDF given), as `target`
    /// (the type of the values: whole numbers, times and timespans come back rounded). The
    /// percentiles of one `percentiles(x, 50, 95, 99)` share one sketch.
    Percentile {
        udf: Arc<ScalarUDF>,
        percent: f64,
        target: DataType,
    },
}

impl Finish {
    pub fn apply(&self, value: Expr) -> Expr {
        match self {
            Finish::None => value,
            Finish::List(kind, limit) => {
                let udf = Arc::new(ScalarUDF::from(ListFinishUdf::new(*kind)));
                Expr::ScalarFunction(ScalarFunction::new_udf(udf, vec![value, lit(limit.unwrap_or(0))]))
            }
            Finish::Cast(data_type) => cast(cast(value, DataType::Int64), data_type.clone()),
            Finish::Otherwise(default) => {
                datafusion::functions::expr_fn::coalesce(vec![value, Expr::Literal(default.clone(), None)])
            }
            Finish::Percentile { udf, percent, target } => {
                let real = Expr::ScalarFunction(ScalarFunction::new_udf(Arc::clone(udf), vec![value, lit(*percent)]));
                match target {
                    DataType::Float64 => real,
                    other => cast(cast(real, DataType::Int64), other.clone()),
                }
            }
        }
    }
}

/// One output column of an aggregate call.
#[derive(Debug, Clone)]
pub struct AggregateOutput {
    pub name: String,
    pub aggregate: Expr,
    pub finish: Finish,
    pub kql_type: KqlType,
}

/// KQL's default output name of an aggregate: `count_`, `sum_x` (for a column argument),
/// `sum_` otherwise.
pub fn default_aggregate_name(name: &str, args: &[KExpr]) -> String {
    let base = match name {
        "make_list" | "make_list_with_nulls" | "make_list_if" => "list",
        "make_set" | "make_set_if" => "set",
        "make_bag" | "make_bag_if" => "bag",
        "buildschema" => "schema",
        other => other,
    };
    // A column, also under conversions (`buildschema(todynamic(tostring(x)))` is `schema_x`).
    fn column_name(arg: Option<&KExpr>) -> Option<String> {
        match arg.map(|a| &a.kind) {
            Some(ExprKind::Name(ident)) => Some(ident.name.clone()),
            Some(ExprKind::Call { function, args }) if function.name.starts_with("to") && args.len() == 1 => {
                column_name(args.first())
            }
            _ => None,
        }
    }
    if name.starts_with("covariance")
        && let (Some(x), Some(y)) = (column_name(args.first()), column_name(args.get(1)))
    {
        return format!("{base}_{x}_{y}");
    }
    match column_name(args.first()) {
        Some(column) if name != "countif" => format!("{base}_{column}"),
        _ => format!("{base}_"),
    }
}

fn single(name: String, aggregate: Expr, kql_type: KqlType) -> Vec<AggregateOutput> {
    vec![AggregateOutput {
        name,
        aggregate,
        finish: Finish::None,
        kql_type,
    }]
}

impl Planner<'_> {
    fn condition(&mut self, arg: &KExpr, input: &Tabular) -> Result<Expr, TrawlError> {
        let value = self.scalar(arg, input)?;
        self.boolean(value, arg)
    }

    /// A numeric view of a value for statistics.
    fn numeric(&self, value: Typed, at: &KExpr, function: &str) -> Result<Expr, TrawlError> {
        match value.kql_type {
            KqlType::Dynamic => Ok(dynamic_as_real(value)),
            t if t.is_numeric() => Ok(value.expr),
            KqlType::Timespan | KqlType::DateTime => Ok(cast(value.expr, DataType::Int64)),
            other => Err(self.error(
                ErrorCode::TypeMismatch,
                at.span,
                format!("'{function}()' needs a number, found {other}"),
            )),
        }
    }

    /// The one output of an aggregate `item` where only one fits (in an expression of
    /// `summarize`, `make-series`, `top-nested`); a 400 at `span` with `message` when it has
    /// several.
    pub fn one_aggregate_output(
        &mut self,
        item: &NamedExpr,
        input: &Tabular,
        group_names: &[String],
        (span, message): (trawl_kql::span::Span, &str),
    ) -> Result<AggregateOutput, TrawlError> {
        let mut produced = self.aggregate_outputs(item, input, group_names)?;
        if produced.len() != 1 {
            return Err(self.error(ErrorCode::BadRequest, span, message));
        }
        Ok(produced.remove(0))
    }

    /// Lowers the aggregate item `item` (`[name =] agg(...)`).
    pub fn aggregate_outputs(
        &mut self,
        item: &NamedExpr,
        input: &Tabular,
        group_names: &[String],
    ) -> Result<Vec<AggregateOutput>, TrawlError> {
        let e = &item.expr;
        let ExprKind::Call { function, args } = &e.kind else {
            return Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                "expected an aggregate function such as count() or sum(x)",
            ));
        };
        let name = function.name.as_str();
        let name = crate::aliases::current_name(name).unwrap_or(name);
        if !is_aggregate(name) {
            let error = self.error(
                ErrorCode::UnknownFunction,
                function.span,
                format!("'{name}' is not an aggregate function"),
            );
            let aggregates = AGGREGATES
                .iter()
                .copied()
                .chain(trawl_functions::aggregate_registry::AGGREGATES.iter().map(|a| a.name));
            return Err(match crate::suggest::closest(name, aggregates) {
                Some(found) => error.suggesting(found),
                None => error,
            });
        }
        let out_name = item
            .name()
            .map(|i| i.name.clone())
            .unwrap_or_else(|| default_aggregate_name(name, args));
        let arity = |low: usize, high: usize| -> Result<(), TrawlError> {
            if (low..=high).contains(&args.len()) {
                Ok(())
            } else {
                Err(self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    format!("'{name}()' takes {low} to {high} argument(s), found {}", args.len()),
                ))
            }
        };
        Ok(match name {
            "count" => {
                arity(0, 1)?;
                single(out_name, agg::count(lit(1i64)), KqlType::Long)
            }
            "countif" => {
                arity(1, 1)?;
                let condition = self.condition(&args[0], input)?;
                let one = when(condition, lit(1i64))
                    .otherwise(lit(0i64))
                    .map_err(|e| internal(&e))?;
                let total = datafusion::functions::expr_fn::coalesce(vec![agg::sum(one), lit(0i64)]);
                single(out_name, total, KqlType::Long)
            }
            "dcount" | "dcountif" => {
                arity(if name == "dcount" { 1 } else { 2 }, 3)?;
                let value = self.scalar(&args[0], input)?;
                let mut value = match value.kql_type {
                    KqlType::Dynamic => to_string(value),
                    // The estimator takes integers, text and times: reals are counted by their
                    // text (after `+ 0.0`, so that -0 and 0 are one value), bools likewise.
                    KqlType::Real => cast(value.expr + lit(0.0f64), DataType::Utf8),
                    KqlType::Bool => cast(value.expr, DataType::Utf8),
                    _ => value.expr,
                };
                if name == "dcountif" {
                    let condition = self.condition(&args[1], input)?;
                    value = when(condition, value).end().map_err(|e| internal(&e))?;
                }
                single(
                    out_name,
                    cast(agg::approx_distinct(value), DataType::Int64),
                    KqlType::Long,
                )
            }
            "sum" | "sumif" | "avg" | "avgif" => {
                let conditional = name.ends_with("if");
                arity(1 + usize::from(conditional), 1 + usize::from(conditional))?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                let mut numeric = match kql_type {
                    KqlType::Timespan => value.expr,
                    _ => self.numeric(value, &args[0], name)?,
                };
                if conditional {
                    let condition = self.condition(&args[1], input)?;
                    numeric = when(condition, numeric).end().map_err(|e| internal(&e))?;
                }
                let (aggregate, result_type, otherwise) = if name.starts_with("avg") {
                    (agg::avg(numeric), KqlType::Real, ScalarValue::Float64(Some(f64::NAN)))
                } else {
                    match kql_type {
                        KqlType::Int | KqlType::Long | KqlType::Bool => {
                            (agg::sum(numeric), KqlType::Long, ScalarValue::Int64(Some(0)))
                        }
                        KqlType::Timespan => (
                            agg::sum(numeric),
                            KqlType::Timespan,
                            ScalarValue::DurationNanosecond(Some(0)),
                        ),
                        _ => (agg::sum(numeric), KqlType::Real, ScalarValue::Float64(Some(0.0))),
                    }
                };
                vec![AggregateOutput {
                    name: out_name,
                    aggregate,
                    finish: Finish::Otherwise(otherwise),
                    kql_type: result_type,
                }]
            }
            "min" | "max" | "minif" | "maxif" => {
                let conditional = name.ends_with("if");
                arity(1 + usize::from(conditional), 1 + usize::from(conditional))?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                let mut expr = if kql_type == KqlType::Dynamic {
                    dynamic_as_real(value)
                } else {
                    value.expr
                };
                if conditional {
                    let condition = self.condition(&args[1], input)?;
                    expr = when(condition, expr).end().map_err(|e| internal(&e))?;
                }
                let result_type = if kql_type == KqlType::Dynamic {
                    KqlType::Real
                } else {
                    kql_type
                };
                let aggregate = if name.starts_with("min") {
                    agg::min(expr)
                } else {
                    agg::max(expr)
                };
                single(out_name, aggregate, result_type)
            }
            "take_any" | "any" => {
                arity(1, 1)?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                single(out_name, agg::first_value(value.expr, vec![]), kql_type)
            }
            // Some value of a row the predicate holds for (the least), null when none.
            "take_anyif" => {
                arity(2, 2)?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                let condition = self.condition(&args[1], input)?;
                let kept = when(condition, value.expr).end().map_err(|e| internal(&e))?;
                single(out_name, agg::min(kept), kql_type)
            }
            "make_list"
            | "make_list_if"
            | "make_set"
            | "make_set_if"
            | "make_bag"
            | "make_bag_if"
            | "make_list_with_nulls" => {
                let conditional = name.ends_with("_if");
                let base_args = 1 + usize::from(conditional);
                arity(base_args, base_args + 1)?;
                let value = self.scalar(&args[0], input)?;
                let mut json = to_dynamic(value);
                if conditional {
                    let condition = self.condition(&args[1], input)?;
                    json = when(condition, json).end().map_err(|e| internal(&e))?;
                }
                let limit = match args.get(base_args).map(|a| &a.kind) {
                    Some(ExprKind::Literal(Literal::Long(n))) => Some(*n),
                    Some(ExprKind::Literal(Literal::Int(n))) => Some(i64::from(*n)),
                    Some(_) => {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            args[base_args].span,
                            "the size limit must be a whole number",
                        ));
                    }
                    None => None,
                };
                let (aggregate, kind) = if name.starts_with("make_set") {
                    (agg::array_agg(json), ListFinish::Set)
                } else if name.starts_with("make_bag") {
                    (agg::array_agg(json), ListFinish::MergeBags)
                } else if name == "make_list_with_nulls" {
                    (agg::array_agg(json), ListFinish::ArrayWithNulls)
                } else {
                    (agg::array_agg(json), ListFinish::Array)
                };
                vec![AggregateOutput {
                    name: out_name,
                    aggregate,
                    finish: Finish::List(kind, limit),
                    kql_type: KqlType::Dynamic,
                }]
            }
            "arg_max" | "arg_min" => self.arg_extreme(name, item, args, input, group_names)?,
            "percentile" | "percentiles" | "percentilesw" => {
                let weighted = name == "percentilesw";
                arity(2 + usize::from(weighted), usize::MAX)?;
                let value = self.scalar(&args[0], input)?;
                let kql_type = value.kql_type;
                let finish = match kql_type {
                    KqlType::Timespan => Finish::Cast(DataType::Duration(TimeUnit::Nanosecond)),
                    KqlType::DateTime => Finish::Cast(trawl_functions::types::arrow_type(KqlType::DateTime)),
                    _ => Finish::None,
                };
                let numeric = cast(self.numeric(value, &args[0], name)?, DataType::Float64);
                let column_name = match &args[0].kind {
                    ExprKind::Name(ident) => ident.name.clone(),
                    _ => String::new(),
                };
                let mut outputs = Vec::new();
                let first_percent = 1 + usize::from(weighted);
                let sketch = self.percentile_sketch(args, weighted, kql_type, input, group_names, e.span)?;
                for (index, p) in args[first_percent..].iter().enumerate() {
                    let percent = match &p.kind {
                        ExprKind::Literal(Literal::Long(n)) => *n as f64,
                        ExprKind::Literal(Literal::Int(n)) => f64::from(*n),
                        ExprKind::Literal(Literal::Real(x)) => *x,
                        // A constant: a parameter or `let` of a number.
                        _ => {
                            let typed = self.scalar(p, input)?;
                            match crate::sources::constant_value(&typed.expr) {
                                Some(ScalarValue::Float64(Some(x))) => x,
                                Some(ScalarValue::Int64(Some(n))) => n as f64,
                                Some(ScalarValue::Int32(Some(n))) => f64::from(n),
                                _ => {
                                    return Err(self.error(
                                        ErrorCode::BadRequest,
                                        p.span,
                                        "a percentile must be a constant number",
                                    ));
                                }
                            }
                        }
                    };
                    if !(0.0..=100.0).contains(&percent) {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            p.span,
                            "a percentile must be between 0 and 100",
                        ));
                    }
                    let label = if percent.fract() == 0.0 {
                        format!("{}", percent as i64)
                    } else {
                        format!("{percent}").replace('.', "_")
                    };
                    let out = match item.names.get(index) {
                        Some(ident) => ident.name.clone(),
                        None if name == "percentile" && item.name().is_some() => out_name.clone(),
                        None => format!("percentile_{column_name}_{label}"),
                    };
                    if let Some((aggregate, udf)) = &sketch {
                        outputs.push(AggregateOutput {
                            name: out,
                            aggregate: aggregate.clone(),
                            finish: Finish::Percentile {
                                udf: Arc::clone(udf),
                                percent,
                                target: trawl_functions::types::arrow_type(kql_type),
                            },
                            kql_type,
                        });
                        continue;
                    }
                    // Kusto's percentile is nearest-rank over a t-digest: the registered
                    // `percentilew` with weight 1 computes exactly that.
                    let weighted = KExpr::new(
                        ExprKind::Call {
                            function: trawl_kql::ast::Ident::new("percentilew", p.span),
                            args: vec![
                                args[0].clone(),
                                if weighted {
                                    args[1].clone()
                                } else {
                                    KExpr::new(ExprKind::Literal(Literal::Long(1)), p.span)
                                },
                                p.clone(),
                            ],
                        },
                        p.span,
                    );
                    let named = NamedExpr {
                        names: Vec::new(),
                        expr: weighted,
                        span: p.span,
                    };
                    let mut produced = match trawl_functions::aggregate_registry::lookup("percentilew") {
                        Some(_) => self.aggregate_outputs(&named, input, group_names)?,
                        None => {
                            let sort = SortExpr::new(numeric.clone(), true, false);
                            let aggregate = agg::approx_percentile_cont(sort, lit(percent / 100.0), None);
                            let result_type = if finish_is_cast(&finish) {
                                kql_type
                            } else {
                                KqlType::Real
                            };
                            vec![AggregateOutput {
                                name: String::new(),
                                aggregate,
                                finish: finish.clone(),
                                kql_type: result_type,
                            }]
                        }
                    };
                    let mut output = produced.remove(0);
                    output.name = out;
                    outputs.push(output);
                }
                outputs
            }
            "stdev" | "stdevif" | "stdevp" | "variance" | "varianceif" | "variancep" => {
                let conditional = name.ends_with("if");
                arity(1 + usize::from(conditional), 1 + usize::from(conditional))?;
                let value = self.scalar(&args[0], input)?;
                let mut numeric = cast(self.numeric(value, &args[0], name)?, DataType::Float64);
                if conditional {
                    let condition = self.condition(&args[1], input)?;
                    numeric = when(condition, numeric).end().map_err(|e| internal(&e))?;
                }
                let aggregate = match name {
                    "stdev" | "stdevif" => agg::stddev(numeric),
                    "stdevp" => agg::stddev_pop(numeric),
                    "variance" | "varianceif" => agg::var_sample(numeric),
                    _ => agg::var_pop(numeric),
                };
                // One value or none: 0, as KQL gives.
                vec![AggregateOutput {
                    name: out_name,
                    aggregate,
                    finish: Finish::Otherwise(ScalarValue::Float64(Some(0.0))),
                    kql_type: KqlType::Real,
                }]
            }
            _ => match trawl_functions::aggregate_registry::lookup(name) {
                Some(registered) => {
                    let too_many = registered.max_args().is_some_and(|max| args.len() > max);
                    if args.len() < registered.min_args || too_many {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            e.span,
                            format!(
                                "'{name}()' takes at least {} argument(s), found {}",
                                registered.min_args,
                                args.len()
                            ),
                        ));
                    }
                    let user_args = match name {
                        "otel_histogram_percentile" => Some(2),
                        _ if name.starts_with("otel_") => Some(1),
                        _ => None,
                    };
                    if user_args.is_some_and(|n| args.len() != n) {
                        let usage = if user_args == Some(2) {
                            "($raw, percentile)"
                        } else {
                            "($raw)"
                        };
                        return Err(self.error(ErrorCode::BadRequest, e.span, format!("expected {name}{usage}")));
                    }
                    let mut lowered = Vec::with_capacity(args.len());
                    let mut types = Vec::with_capacity(args.len());
                    for (index, arg) in args.iter().enumerate() {
                        let value = self.scalar(arg, input)?;
                        let kind = registered
                            .kind_of(index)
                            .unwrap_or(trawl_functions::registry::ArgKind::Any);
                        let (expr, kql_type) = self.convert_arg(value, kind, arg, name)?;
                        lowered.push(expr);
                        types.push(kql_type);
                    }
                    if user_args.is_some() {
                        // The query window's start (series that began in it count in full) and
                        // where warnings raised while running go.
                        let key = *self
                            .runtime_warning_key
                            .get_or_insert_with(trawl_functions::otel::new_warning_key);
                        lowered.push(lit(datafusion::common::ScalarValue::Int64(self.options.since)));
                        lowered.push(lit(key));
                    }
                    let kql_type = match registered.returns {
                        trawl_functions::registry::ReturnRule::Fixed(t) => t,
                        trawl_functions::registry::ReturnRule::SameAsArg(i) => {
                            types.get(i).copied().unwrap_or(KqlType::Dynamic)
                        }
                    };
                    single(out_name, (registered.udaf)().call(lowered), kql_type)
                }
                None => {
                    return Err(self.error(
                        ErrorCode::UnknownFunction,
                        function.span,
                        format!("unknown aggregate function '{name}'"),
                    ));
                }
            },
        })
    }

    /// `arg_max(by, col1, col2 | *)`: the `by` maximum and, from the row holding it, the
    /// listed columns (`*`: every column not grouped by).
    fn arg_extreme(
        &mut self,
        name: &str,
        item: &NamedExpr,
        args: &[KExpr],
        input: &Tabular,
        group_names: &[String],
    ) -> Result<Vec<AggregateOutput>, TrawlError> {
        let Some((by, rest)) = args.split_first() else {
            return Err(self.error(
                ErrorCode::BadRequest,
                item.span,
                format!("'{name}()' needs the expression to maximize"),
            ));
        };
        let value = self.scalar(by, input)?;
        let by_type = value.kql_type;
        let by_expr = if by_type == KqlType::Dynamic {
            dynamic_as_real(value)
        } else {
            value.expr
        };
        let descending = name == "arg_max";
        let by_name = item.name().map(|i| i.name.clone()).unwrap_or_else(|| match &by.kind {
            ExprKind::Name(ident) => ident.name.clone(),
            _ => format!("{}_", if descending { "max" } else { "min" }),
        });
        let extreme = if descending {
            agg::max(by_expr.clone())
        } else {
            agg::min(by_expr.clone())
        };
        let mut outputs = vec![AggregateOutput {
            name: by_name.clone(),
            aggregate: extreme,
            finish: Finish::None,
            kql_type: if by_type == KqlType::Dynamic {
                KqlType::Real
            } else {
                by_type
            },
        }];
        let order = vec![SortExpr::new(by_expr, !descending, false)];
        let mut columns: Vec<(String, Typed)> = Vec::new();
        for arg in rest {
            match &arg.kind {
                ExprKind::Star => {
                    for (column_name, kql_type) in &input.columns {
                        let is_by_column = matches!(&by.kind, ExprKind::Name(ident) if ident.name == *column_name);
                        if *column_name != by_name && !is_by_column && !group_names.contains(column_name) {
                            columns.push((column_name.clone(), Typed::new(column(column_name), *kql_type)));
                        }
                    }
                }
                ExprKind::NamedArgument { name: alias, value } => {
                    let typed = self.scalar(value, input)?;
                    columns.push((alias.name.clone(), typed));
                }
                _ => {
                    let typed = self.scalar(arg, input)?;
                    columns.push((default_name(arg, columns.len() + 1), typed));
                }
            }
        }
        for (column_name, typed) in columns {
            if outputs.iter().any(|o| o.name == column_name) {
                continue;
            }
            let kql_type = typed.kql_type;
            outputs.push(AggregateOutput {
                name: column_name,
                aggregate: agg::first_value(typed.expr, order.clone()),
                finish: Finish::None,
                kql_type,
            });
        }
        // `(a, b) = arg_max(x, y)` names the outputs in order.
        if item.names.len() > 1 {
            for (output, name) in outputs.iter_mut().zip(&item.names) {
                output.name = name.name.clone();
            }
        }
        Ok(outputs)
    }
}

impl Planner<'_> {
    /// For `percentile(s)(w)` over whole numbers, reals, times or timespans: one t-digest
    /// sketch of the values (`tdigest(x, weight)`, the aggregate every percentile of the call
    /// shares; the summarize computes it once) and the `percentile_tdigest` UDF that reads a
    /// percentile off it. It gives what `percentilew(x, weight, p)` gives: the same digest,
    /// the same nearest-rank reading. `None` for other types (they keep `percentilew`).
    fn percentile_sketch(
        &mut self,
        args: &[KExpr],
        weighted: bool,
        kql_type: KqlType,
        input: &Tabular,
        group_names: &[String],
        span: trawl_kql::Span,
    ) -> Result<Option<(Expr, Arc<ScalarUDF>)>, TrawlError> {
        let shareable = matches!(
            kql_type,
            KqlType::Int | KqlType::Long | KqlType::Real | KqlType::Timespan | KqlType::DateTime
        );
        let Some(function) = trawl_functions::registry::lookup("percentile_tdigest").filter(|_| shareable) else {
            return Ok(None);
        };
        let weight = if weighted {
            args[1].clone()
        } else {
            KExpr::new(ExprKind::Literal(Literal::Long(1)), span)
        };
        let call = NamedExpr {
            names: Vec::new(),
            expr: KExpr::new(
                ExprKind::Call {
                    function: trawl_kql::ast::Ident::new("tdigest", span),
                    args: vec![args[0].clone(), weight],
                },
                span,
            ),
            span,
        };
        let mut produced = self.aggregate_outputs(&call, input, group_names)?;
        if produced.len() != 1 {
            return Ok(None);
        }
        Ok(Some((produced.remove(0).aggregate, Arc::new((function.udf)()))))
    }
}

fn finish_is_cast(finish: &Finish) -> bool {
    matches!(finish, Finish::Cast(_))
}

#[cfg(test)]
mod tests {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::logical_expr::LogicalPlan;

    use super::*;
    use crate::testing::NoTables;

    /// The aggregate expressions of every `Aggregate` node of `plan`.
    fn aggregates(plan: &LogicalPlan) -> Vec<usize> {
        let mut found = Vec::new();
        let _ = plan.apply_with_subqueries(|node| {
            if let LogicalPlan::Aggregate(aggregate) = node {
                found.push(aggregate.aggr_expr.len());
            }
            Ok(TreeNodeRecursion::Continue)
        });
        found
    }

    #[test]
    fn the_percentiles_of_one_call_and_repeated_aggregates_are_computed_once() -> Result<(), TrawlError> {
        let plan = |text: &str| -> Result<Vec<usize>, TrawlError> {
            let planned = crate::plan_text(text, &NoTables, crate::PlanOptions::default())?;
            Ok(aggregates(&planned.results[0].plan))
        };
        let range = "range x from 1 to 10 step 1 | extend y = x * 2";
        assert_eq!(plan(&format!("{range} | summarize percentiles(x, 50, 95, 99)"))?, [1]);
        assert_eq!(
            plan(&format!("{range} | summarize percentiles(x, 50), percentile(x, 99)"))?,
            [1]
        );
        assert_eq!(
            plan(&format!("{range} | summarize count(), n = count(), 2 * count()"))?,
            [1]
        );
        // Different values, weights or functions are different aggregates.
        assert_eq!(
            plan(&format!("{range} | summarize percentiles(x, 50), percentiles(y, 50)"))?,
            [2]
        );
        assert_eq!(
            plan(&format!(
                "{range} | summarize percentiles(x, 50), percentilesw(x, y, 50)"
            ))?,
            [2]
        );
        assert_eq!(plan(&format!("{range} | summarize count(), sum(x), avg(x)"))?.len(), 1);
        Ok(())
    }
}
