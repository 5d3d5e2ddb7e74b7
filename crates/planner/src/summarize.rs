//! `summarize`: group keys (`bin` keeps its column's name), each aggregate computed once and
//! finished per output, `percentiles_array` sugar.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::Expr;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, NamedExpr};

use crate::aggregates::{Finish, is_aggregate};
use crate::context::{Planner, Tabular, column, internal};
use crate::names::default_name;
use crate::operators::build;

impl Planner<'_> {
    /// How `expr` bins its rows, when it is `bin(c, span)` (or `floor`), `bin_at(c, span,
    /// start)` or `bin_auto(c)` of a column `c` of `input`, with constant arguments.
    fn binning(&mut self, expr: &KExpr, input: &Tabular) -> Result<Option<crate::Binning>, TrawlError> {
        let ExprKind::Call { function, args } = &expr.kind else {
            return Ok(None);
        };
        if function.name == "bin_auto" {
            let Ok(equivalent) = crate::planner_functions::bin_auto_equivalent(self, function, args, expr, input) else {
                return Ok(None);
            };
            return self.binning(&equivalent, input);
        }
        let fixed = match (function.name.as_str(), args.len()) {
            ("bin" | "floor", 2) => false,
            ("bin_at", 3) => true,
            _ => return Ok(None),
        };
        let Some(ExprKind::Name(name)) = args.first().map(|a| &a.kind) else {
            return Ok(None);
        };
        let Some(kql_type) = input.column_type(&name.name) else {
            return Ok(None);
        };
        let time = match kql_type {
            KqlType::DateTime | KqlType::Timespan => true,
            KqlType::Int | KqlType::Long | KqlType::Real => false,
            _ => return Ok(None),
        };
        let Some(span) = self.whole_constant(&args[1], time) else {
            return Ok(None);
        };
        let origin = match fixed {
            true => match self.whole_constant(&args[2], time) {
                Some(origin) => origin,
                None => return Ok(None),
            },
            false => 0,
        };
        Ok((span > 0).then(|| crate::Binning {
            column: name.name.clone(),
            time,
            span,
            origin,
        }))
    }

    /// The value of a constant argument of a bin: nanoseconds of a timespan or datetime when
    /// `time`, else a whole number; `None` for anything else.
    fn whole_constant(&mut self, arg: &KExpr, time: bool) -> Option<i64> {
        let empty = self.empty_tabular().ok()?;
        let typed = self.scalar(arg, &empty).ok()?;
        match crate::sources::constant_value(&typed.expr)? {
            ScalarValue::DurationNanosecond(Some(n)) | ScalarValue::TimestampNanosecond(Some(n), _) if time => Some(n),
            ScalarValue::Int64(Some(n)) if !time => Some(n),
            ScalarValue::Int32(Some(n)) if !time => Some(i64::from(n)),
            ScalarValue::Float64(Some(n)) if !time && n.fract() == 0.0 && n.abs() < 9.0e18 => Some(n as i64),
            _ => None,
        }
    }

    pub(crate) fn summarize(
        &mut self,
        input: Tabular,
        aggregates: &[NamedExpr],
        by: &[NamedExpr],
    ) -> Result<Tabular, TrawlError> {
        let mut group_exprs = Vec::with_capacity(by.len());
        let mut columns: Vec<(String, KqlType)> = Vec::new();
        for (position, item) in by.iter().enumerate() {
            let value = self.scalar(&item.expr, &input)?;
            let name = match item.name() {
                Some(ident) => ident.name.clone(),
                None => match &item.expr.kind {
                    // bin(col, size) keeps the column's name.
                    ExprKind::Call { function, args }
                        if matches!(function.name.as_str(), "bin" | "floor" | "bin_at" | "bin_auto")
                            && matches!(args.first().map(|a| &a.kind), Some(ExprKind::Name(_))) =>
                    {
                        default_name(&args[0], position + 1)
                    }
                    _ => default_name(&item.expr, position + 1),
                },
            };
            if self.time_bin.is_none() {
                self.time_bin = self.binning(&item.expr, &input)?;
            }
            group_exprs.push(value.expr.alias(&name));
            columns.push((name, value.kql_type));
        }
        let group_names: Vec<String> = columns.iter().map(|(n, _)| n.clone()).collect();
        // Every aggregate call becomes an internal aggregate column; an item that is not a bare
        // aggregate call (`round(avg(x), 2)`, `100.0 * countif(e) / count()`) is computed
        // from those columns after the aggregation.
        let mut internals = Aggregates::default();
        let mut outputs: Vec<(String, SummarizeOutput)> = Vec::new();
        for (position, item) in aggregates.iter().enumerate() {
            let rewritten_item = percentiles_array_sugar(item);
            let item = rewritten_item.as_ref().unwrap_or(item);
            let direct = matches!(&item.expr.kind, ExprKind::Call { function, .. } if is_aggregate(&function.name));
            if direct {
                for output in self.aggregate_outputs(item, &input, &group_names)? {
                    let (name, kql_type) = (output.name.clone(), output.kql_type);
                    let internal_name = internals.add(output, None);
                    outputs.push((name, SummarizeOutput::Column(internal_name, kql_type)));
                }
                continue;
            }
            let mut extracted = Vec::new();
            let rewritten = self.extract_aggregates(&item.expr, &mut extracted)?;
            if extracted.is_empty() {
                // Report what is wrong inside first (an unknown function or column).
                self.scalar(&item.expr, &input)?;
                return Err(self.error(
                    ErrorCode::BadRequest,
                    item.expr.span,
                    "expected an aggregate function such as count() or sum(x)",
                ));
            }
            for (internal_name, call) in extracted {
                let named = NamedExpr {
                    names: Vec::new(),
                    expr: call,
                    span: item.span,
                };
                let output = self.one_aggregate_output(
                    &named,
                    &input,
                    &group_names,
                    (item.span, "this aggregate cannot be used inside an expression"),
                )?;
                internals.add(output, Some(internal_name));
            }
            let name = item
                .name()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| format!("Column{}", position + 1));
            outputs.push((name, SummarizeOutput::Computed(rewritten)));
        }
        // A name produced twice gets a numeric suffix (`set_y`, `set_y1`), as Kusto does.
        let mut taken: Vec<String> = columns.iter().map(|(n, _)| n.clone()).collect();
        for (name, _) in outputs.iter_mut() {
            let base = name.clone();
            let mut suffix = 1;
            while taken.contains(name) {
                *name = format!("{base}{suffix}");
                suffix += 1;
            }
            taken.push(name.clone());
        }

        let mut builder = input.builder();
        if !group_exprs.is_empty() {
            // Every group for now; the engine thins them out by rewriting this filter when
            // the summarize goes over its memory budget (`budget.rs`).
            let keys: Vec<Expr> = group_exprs.iter().map(|e| e.clone().unalias()).collect();
            builder = builder.filter(crate::budget::marker(keys)).map_err(|e| internal(&e))?;
        }
        let aggregated = builder
            .aggregate(group_exprs, internals.computed)
            .map_err(|e| internal(&e))?;
        // Stage 1: group columns and finished internal aggregates.
        let mut stage: Vec<Expr> = group_names.iter().map(|n| column(n).alias(n)).collect();
        let mut stage_columns = columns.clone();
        for (source, internal_name, finish, kql_type) in &internals.finished {
            stage.push(finish.apply(column(source)).alias(internal_name));
            stage_columns.push((internal_name.clone(), *kql_type));
        }
        let staged = Tabular {
            plan: build(aggregated.project(stage).map_err(|e| internal(&e))?)?,
            columns: stage_columns,
        };
        // Stage 2: the outputs in order.
        let mut projection: Vec<Expr> = group_names.iter().map(|n| column(n).alias(n)).collect();
        for (name, output) in outputs {
            let (expr, kql_type) = match output {
                SummarizeOutput::Column(internal_name, kql_type) => (column(&internal_name), kql_type),
                SummarizeOutput::Computed(rewritten) => {
                    let value = self.scalar(&rewritten, &staged)?;
                    (value.expr, value.kql_type)
                }
            };
            projection.push(expr.alias(&name));
            columns.push((name, kql_type));
        }
        let plan = build(staged.builder().project(projection).map_err(|e| internal(&e))?)?;
        Ok(Tabular { plan, columns })
    }
}

/// The aggregates a `summarize` computes, each once: outputs whose aggregate is the same
/// expression (the percentiles of one `percentiles(x, 50, 95, 99)` share a sketch; `count()`
/// asked twice) read the same column, each through its own finish.
#[derive(Default)]
struct Aggregates {
    /// The aggregate expressions, aliased `__trawl_aggregate_<n>`.
    computed: Vec<Expr>,
    /// Per output: the computed column it reads, its own column after the finish, the finish
    /// and its type.
    finished: Vec<(String, String, Finish, KqlType)>,
}

impl Aggregates {
    /// Adds `output`, named `name` after its finish (a new internal name when `None`), and
    /// returns that name.
    fn add(&mut self, output: crate::aggregates::AggregateOutput, name: Option<String>) -> String {
        let source = match self.computed.iter().position(|computed| match computed {
            Expr::Alias(alias) => *alias.expr == output.aggregate,
            _ => false,
        }) {
            Some(index) => format!("__trawl_aggregate_{index}"),
            None => {
                let source = format!("__trawl_aggregate_{}", self.computed.len());
                self.computed.push(output.aggregate.alias(&source));
                source
            }
        };
        let name = name.unwrap_or_else(|| format!("__trawl_output_{}", self.finished.len()));
        self.finished
            .push((source, name.clone(), output.finish, output.kql_type));
        name
    }
}

/// One output of `summarize`: an aggregate column as is, or an expression over aggregates.
enum SummarizeOutput {
    Column(String, KqlType),
    Computed(KExpr),
}

impl Planner<'_> {
    /// Replaces every aggregate call inside `e` with a reference to a new internal column and
    /// collects the calls.
    fn extract_aggregates(&self, e: &KExpr, found: &mut Vec<(String, KExpr)>) -> Result<KExpr, TrawlError> {
        if let ExprKind::Call { function, .. } = &e.kind
            && is_aggregate(&function.name)
            && !matches!(
                self.bindings.get(&function.name),
                Some(crate::context::Binding::Function(_))
            )
        {
            let internal_name = format!("__trawl_nested_{}_{}", e.span.start, found.len());
            found.push((internal_name.clone(), e.clone()));
            return Ok(KExpr::new(
                ExprKind::Name(trawl_kql::ast::Ident::new(internal_name, e.span)),
                e.span,
            ));
        }
        let mut out = e.clone();
        match &mut out.kind {
            ExprKind::Call { args, .. } => {
                for arg in args.iter_mut() {
                    *arg = self.extract_aggregates(arg, found)?;
                }
            }
            ExprKind::Unary { operand, .. } => **operand = self.extract_aggregates(operand, found)?,
            ExprKind::Binary { left, right, .. } => {
                **left = self.extract_aggregates(left, found)?;
                **right = self.extract_aggregates(right, found)?;
            }
            ExprKind::Index { target, index } => {
                **target = self.extract_aggregates(target, found)?;
                **index = self.extract_aggregates(index, found)?;
            }
            ExprKind::Member { target, .. } => **target = self.extract_aggregates(target, found)?,
            ExprKind::Between { operand, low, high, .. } => {
                **operand = self.extract_aggregates(operand, found)?;
                **low = self.extract_aggregates(low, found)?;
                **high = self.extract_aggregates(high, found)?;
            }
            ExprKind::List { operand, items, .. } => {
                **operand = self.extract_aggregates(operand, found)?;
                for item in items.iter_mut() {
                    *item = self.extract_aggregates(item, found)?;
                }
            }
            _ => {}
        }
        Ok(out)
    }
}

/// `percentiles_array(x, p1, p2, ...)` (or `percentiles_array(x, dynamic([p1, ...]))`) is
/// `percentiles_x = pack_array(percentile(x, p1), percentile(x, p2), ...)`.
fn percentiles_array_sugar(item: &NamedExpr) -> Option<NamedExpr> {
    let ExprKind::Call { function, args } = &item.expr.kind else {
        return None;
    };
    // percentilesw_array(value, weight, …) is the same with weights: `percentilew` calls.
    let weighted = match function.name.as_str() {
        "percentiles_array" => false,
        "percentilesw_array" => true,
        _ => return None,
    };
    let (value, rest) = args.split_first()?;
    let (weight, percents) = match weighted {
        true => {
            let (weight, percents) = rest.split_first()?;
            (Some(weight), percents)
        }
        false => (None, rest),
    };
    let span = item.expr.span;
    let percents: Vec<KExpr> = match percents {
        [single] => match &single.kind {
            ExprKind::Literal(trawl_kql::ast::Literal::Dynamic(trawl_kql::ast::DynamicValue::Array(items))) => items
                .iter()
                .filter_map(|i| match i {
                    trawl_kql::ast::DynamicValue::Long(n) => Some(trawl_kql::ast::Literal::Long(*n)),
                    trawl_kql::ast::DynamicValue::Real(x) => Some(trawl_kql::ast::Literal::Real(*x)),
                    _ => None,
                })
                .map(|l| KExpr::new(ExprKind::Literal(l), single.span))
                .collect(),
            _ => vec![single.clone()],
        },
        many => many.to_vec(),
    };
    let calls: Vec<KExpr> = percents
        .into_iter()
        .map(|p| {
            KExpr::new(
                ExprKind::Call {
                    function: trawl_kql::ast::Ident::new(if weighted { "percentilew" } else { "percentile" }, span),
                    args: match weight {
                        Some(weight) => vec![value.clone(), weight.clone(), p],
                        None => vec![value.clone(), p],
                    },
                },
                span,
            )
        })
        .collect();
    let name = match (item.name(), &value.kind) {
        (Some(ident), _) => ident.clone(),
        (None, ExprKind::Name(column)) => trawl_kql::ast::Ident::new(format!("percentiles_{}", column.name), span),
        (None, _) => trawl_kql::ast::Ident::new("percentiles_", span),
    };
    Some(NamedExpr {
        names: vec![name],
        expr: KExpr::new(
            ExprKind::Call {
                function: trawl_kql::ast::Ident::new("pack_array", span),
                args: calls,
            },
            span,
        ),
        span: item.span,
    })
}
