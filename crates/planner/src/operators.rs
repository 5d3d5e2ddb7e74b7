//! Tabular operators: each takes a typed tabular value and returns a new one.

use datafusion::logical_expr::{Expr, LogicalPlan, SortExpr, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{
    ColumnPattern, Expr as KExpr, ExprKind, NamedExpr, NullsOrder, Operator, OperatorKind, SortKey, SortOrder,
};

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::names::{default_name, matches_pattern};

pub(crate) fn build(
    builder: datafusion::logical_expr::LogicalPlanBuilder,
) -> Result<datafusion::logical_expr::LogicalPlan, TrawlError> {
    builder.build().map_err(|e| internal(&e))
}

impl Planner<'_> {
    pub fn operator(&mut self, input: Tabular, operator: &Operator) -> Result<Tabular, TrawlError> {
        match &operator.kind {
            OperatorKind::Where(predicate) => {
                let value = self.scalar(predicate, &input)?;
                let condition = self.boolean(value, predicate)?;
                let plan = build(input.builder().filter(condition).map_err(|e| internal(&e))?)?;
                Ok(Tabular {
                    plan,
                    columns: input.columns,
                })
            }
            OperatorKind::Project(items) => self.project(input, items, false),
            OperatorKind::Extend(items) => self.project(input, items, true),
            OperatorKind::Take(count) => {
                let n = self.row_count(count)?;
                let plan = build(input.builder().limit(0, Some(n)).map_err(|e| internal(&e))?)?;
                Ok(Tabular {
                    plan,
                    columns: input.columns,
                })
            }
            OperatorKind::Count => {
                let count = datafusion::functions_aggregate::expr_fn::count(lit(1i64)).alias("Count");
                let plan = build(
                    input
                        .builder()
                        .aggregate(Vec::<Expr>::new(), vec![count])
                        .map_err(|e| internal(&e))?,
                )?;
                Ok(Tabular {
                    plan,
                    columns: vec![("Count".into(), KqlType::Long)],
                })
            }
            OperatorKind::Sort(sort) => {
                let keys = self.sort_keys(&sort.keys, &input)?;
                let plan = build(input.builder().sort(keys).map_err(|e| internal(&e))?)?;
                Ok(Tabular {
                    plan,
                    columns: input.columns,
                })
            }
            OperatorKind::Top(top) => {
                let n = self.row_count(&top.count)?;
                let keys = self.sort_keys(std::slice::from_ref(&top.by), &input)?;
                let plan = build(
                    input
                        .builder()
                        .sort_with_limit(keys, Some(n))
                        .and_then(|b| b.limit(0, Some(n)))
                        .map_err(|e| internal(&e))?,
                )?;
                Ok(Tabular {
                    plan,
                    columns: input.columns,
                })
            }
            OperatorKind::Summarize(summarize) => {
                let input = self.summarize_sample(input, &summarize.params, operator.span)?;
                let budget = self.summarize_budget(&summarize.params)?;
                let groups = summarize.by.len();
                let summarized = self.summarize(input, &summarize.aggregates, &summarize.by)?;
                if let Some(bytes) = budget
                    && groups > 0
                {
                    let keys = summarized.columns[..groups]
                        .iter()
                        .map(|(name, _)| name.clone())
                        .collect();
                    self.summarize_budgets.push(crate::SummarizeBudget { keys, bytes });
                }
                Ok(summarized)
            }
            OperatorKind::Distinct(items) => {
                if matches!(
                    items.as_slice(),
                    [KExpr {
                        kind: ExprKind::Star,
                        ..
                    }]
                ) {
                    let input = crate::shredded::visible(input)?;
                    let plan = build(input.builder().distinct().map_err(|e| internal(&e))?)?;
                    return Ok(Tabular {
                        plan,
                        columns: input.columns,
                    });
                }
                let named: Vec<NamedExpr> = items
                    .iter()
                    .map(|e| NamedExpr {
                        names: Vec::new(),
                        expr: e.clone(),
                        span: e.span,
                    })
                    .collect();
                self.summarize(input, &[], &named)
            }
            OperatorKind::ProjectAway(patterns) => {
                self.check_patterns(patterns, &input)?;
                let keep: Vec<(String, KqlType)> = input
                    .columns
                    .iter()
                    .filter(|(name, _)| !patterns.iter().any(|p| matches_pattern(&p.pattern, name)))
                    .cloned()
                    .collect();
                self.select(input, keep)
            }
            OperatorKind::ProjectKeep(patterns) => {
                self.check_patterns(patterns, &input)?;
                let keep: Vec<(String, KqlType)> = input
                    .columns
                    .iter()
                    .filter(|(name, _)| patterns.iter().any(|p| matches_pattern(&p.pattern, name)))
                    .cloned()
                    .collect();
                self.select(input, keep)
            }
            OperatorKind::ProjectRename(renames) => {
                let mut columns = input.columns.clone();
                let mut exprs: Vec<Expr> = columns.iter().map(|(n, _)| column(n).alias(n)).collect();
                for rename in renames {
                    let Some(index) = columns.iter().position(|(n, _)| *n == rename.old_name.name) else {
                        return Err(self.error(
                            ErrorCode::UnknownColumn,
                            rename.old_name.span,
                            format!("unknown column '{}'", rename.old_name.name),
                        ));
                    };
                    let new_name = &rename.new_name.name;
                    if columns
                        .iter()
                        .enumerate()
                        .any(|(i, (n, _))| i != index && n == new_name)
                    {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            rename.new_name.span,
                            format!("a column named '{new_name}' already exists; project it away first"),
                        ));
                    }
                    exprs[index] = column(&rename.old_name.name).alias(new_name);
                    columns[index].0 = new_name.clone();
                }
                let plan = build(input.builder().project(exprs).map_err(|e| internal(&e))?)?;
                Ok(Tabular { plan, columns })
            }
            OperatorKind::ProjectReorder(keys) => {
                let mut ordered: Vec<(String, KqlType)> = Vec::new();
                for key in keys {
                    let mut matched: Vec<(String, KqlType)> = input
                        .columns
                        .iter()
                        .filter(|(n, _)| {
                            matches_pattern(&key.pattern.pattern, n) && !ordered.iter().any(|(o, _)| o == n)
                        })
                        .cloned()
                        .collect();
                    match key.order {
                        Some(trawl_kql::ast::ReorderOrder::Asc | trawl_kql::ast::ReorderOrder::GrannyAsc) => {
                            matched.sort_by(|a, b| a.0.cmp(&b.0))
                        }
                        Some(trawl_kql::ast::ReorderOrder::Desc | trawl_kql::ast::ReorderOrder::GrannyDesc) => {
                            matched.sort_by(|a, b| b.0.cmp(&a.0))
                        }
                        None => {}
                    }
                    ordered.extend(matched);
                }
                for column in &input.columns {
                    if !ordered.iter().any(|(n, _)| *n == column.0) {
                        ordered.push(column.clone());
                    }
                }
                self.select(input, ordered)
            }
            OperatorKind::Join(join) => self.join(input, join, operator.span, false),
            OperatorKind::Invoke(call) => self.invoke(input, call),
            OperatorKind::Evaluate(evaluate) => self.evaluate(input, evaluate, operator.span),
            OperatorKind::ParseKv(parse) => self.parse_kv(input, parse, operator.span),
            OperatorKind::Render(render) => {
                let mut properties = Vec::with_capacity(render.properties.len());
                for property in &render.properties {
                    let name = property.name().map(|i| i.name.clone()).unwrap_or_default();
                    let value = match &property.expr.kind {
                        ExprKind::Literal(trawl_kql::ast::Literal::String(s)) => serde_json::Value::String(s.clone()),
                        ExprKind::Literal(trawl_kql::ast::Literal::Long(n)) => serde_json::Value::from(*n),
                        ExprKind::Literal(trawl_kql::ast::Literal::Real(x)) => serde_json::Value::from(*x),
                        ExprKind::Literal(trawl_kql::ast::Literal::Bool(b)) => serde_json::Value::Bool(*b),
                        ExprKind::Name(ident) => serde_json::Value::String(ident.name.clone()),
                        _ => serde_json::Value::String(property.expr.to_string()),
                    };
                    properties.push((name, value));
                }
                self.visualization = Some(crate::Visualization {
                    visualization_type: render.chart.name.clone(),
                    properties,
                });
                Ok(input)
            }
            OperatorKind::Parse(parse) => self.parse_operator(input, parse, operator.span, true),
            OperatorKind::ParseWhere(parse) => self.parse_operator(input, parse, operator.span, false),
            OperatorKind::GetSchema => self.getschema(&input),
            OperatorKind::MvExpand(expand) => self.mv_expand(input, expand),
            OperatorKind::TopNested(levels) => self.top_nested(input, levels, operator.span),
            OperatorKind::Search(search) => self.search(Some(input), search, operator.span),
            OperatorKind::ProjectByNames(items) => {
                // Names or wildcard patterns known while planning: strings or dynamic arrays of
                // strings (function parameters too). Names that match nothing are skipped.
                let empty = self.empty_tabular()?;
                let mut patterns = Vec::new();
                for item in items {
                    let value = self.scalar(item, &empty)?;
                    let constant = crate::sources::constant_value(&value.expr);
                    let text = match &constant {
                        Some(
                            datafusion::common::ScalarValue::Utf8(Some(t))
                            | datafusion::common::ScalarValue::Utf8View(Some(t)),
                        ) => t.clone(),
                        _ => {
                            return Err(self.error(
                                ErrorCode::BadRequest,
                                item.span,
                                "project-by-names takes constant names",
                            ));
                        }
                    };
                    match (value.kql_type, serde_json::from_str::<serde_json::Value>(&text)) {
                        (KqlType::Dynamic, Ok(serde_json::Value::Array(names))) => {
                            patterns.extend(names.iter().filter_map(|n| n.as_str().map(str::to_string)));
                        }
                        (KqlType::Dynamic, Ok(serde_json::Value::String(name))) => patterns.push(name),
                        _ => patterns.push(text),
                    }
                }
                let mut keep: Vec<(String, KqlType)> = Vec::new();
                for pattern in &patterns {
                    for column in &input.columns {
                        if matches_pattern(pattern, &column.0) && !keep.iter().any(|(n, _)| *n == column.0) {
                            keep.push(column.clone());
                        }
                    }
                }
                self.select(input, keep)
            }
            OperatorKind::MvApply(apply) => self.mv_apply(input, apply, operator.span),
            OperatorKind::MakeSeries(series) => self.make_series(input, series, operator.span),
            OperatorKind::Lookup(join) => self.join(input, join, operator.span, true),
            OperatorKind::Union(union) => self.union(Some(input), union, operator.span),
            OperatorKind::As(binding) => {
                self.bindings.insert(
                    binding.name.name.clone(),
                    crate::context::Binding::Tabular(input.clone()),
                );
                Ok(input)
            }
            OperatorKind::Serialize(items) => self.project(input, items, true),
            OperatorKind::Scan(scan) => self.scan_operator(input, scan, operator.span),
            OperatorKind::Reduce(reduce) => self.reduce(input, reduce, operator.span),
            OperatorKind::FieldStats(columns) => self.fieldstats(input, columns, operator.span),
            OperatorKind::Annotate(items) => self.annotate(input, items),
            OperatorKind::TraceFind(find) => self.trace_find(input, find, operator.span),
            OperatorKind::OtelLogStats => self.otel_log_stats(input, operator.span),
            OperatorKind::Sample(count) => self.sample(input, count, operator.span),
            OperatorKind::SampleDistinct(sample) => self.sample_distinct(input, sample, operator.span),
            OperatorKind::TopHitters(hitters) => self.top_hitters(input, hitters, operator.span),
            OperatorKind::Partition(partition) => self.partition(input, partition, operator.span),
            OperatorKind::Fork(_) | OperatorKind::Facet(_) => Err(self.error(
                ErrorCode::BadRequest,
                operator.span,
                format!(
                    "{} must be the last operator of a query statement (it returns several tables)",
                    operator.kind.name()
                ),
            )),
            OperatorKind::Consume(_) => {
                // Every row is read (a volatile condition is not folded away) and none kept.
                let never = datafusion::functions::math::expr_fn::random().lt(lit(0.0));
                let plan = build(input.builder().filter(never).map_err(|e| internal(&e))?)?;
                Ok(Tabular {
                    plan,
                    columns: input.columns,
                })
            }
            _ => Err(self.error(
                ErrorCode::BadRequest,
                operator.span,
                format!("the operator '{}' is not supported yet", operator.kind.name()),
            )),
        }
    }

    fn check_patterns(&self, patterns: &[ColumnPattern], input: &Tabular) -> Result<(), TrawlError> {
        for pattern in patterns {
            if !pattern.is_wildcard() && input.column_type(&pattern.pattern).is_none() {
                return Err(self.error(
                    ErrorCode::UnknownColumn,
                    pattern.span,
                    format!("unknown column '{}'", pattern.pattern),
                ));
            }
        }
        Ok(())
    }

    fn select(&self, input: Tabular, columns: Vec<(String, KqlType)>) -> Result<Tabular, TrawlError> {
        let exprs: Vec<Expr> = columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        let plan = build(input.builder().project(exprs).map_err(|e| internal(&e))?)?;
        Ok(Tabular { plan, columns })
    }

    /// A non-negative row count known at planning time: a literal, or a constant expression
    /// (a `let` name, `2 * n`).
    pub(crate) fn row_count(&mut self, e: &KExpr) -> Result<usize, TrawlError> {
        let known = match &e.kind {
            ExprKind::Literal(trawl_kql::ast::Literal::Long(n)) => Some(*n),
            ExprKind::Literal(trawl_kql::ast::Literal::Int(n)) => Some(i64::from(*n)),
            _ => {
                let empty = self.empty_tabular()?;
                let value = self.scalar(e, &empty)?;
                match crate::sources::constant_value(&value.expr) {
                    Some(datafusion::common::ScalarValue::Int64(Some(n))) => Some(n),
                    Some(datafusion::common::ScalarValue::Int32(Some(n))) => Some(i64::from(n)),
                    _ => None,
                }
            }
        };
        match known.and_then(|n| usize::try_from(n).ok()) {
            Some(n) => Ok(n),
            None => Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                "expected a non-negative whole number of rows (a constant)",
            )),
        }
    }

    fn sort_keys(&mut self, keys: &[SortKey], input: &Tabular) -> Result<Vec<SortExpr>, TrawlError> {
        let mut sort = Vec::with_capacity(keys.len());
        for key in keys {
            let value = self.scalar(&key.expr, input)?;
            let expr = match value.kql_type {
                KqlType::Dynamic => crate::scalar::to_string(value),
                _ => value.expr,
            };
            // KQL sorts descending by default; nulls first when ascending, last when descending.
            let ascending = key.order == Some(SortOrder::Asc);
            let nulls_first = match key.nulls {
                Some(NullsOrder::First) => true,
                Some(NullsOrder::Last) => false,
                None => ascending,
            };
            sort.push(SortExpr::new(expr, ascending, nulls_first));
        }
        Ok(sort)
    }

    /// `project` (only the listed columns) and `extend` (every column plus the listed ones;
    /// a listed name that exists replaces it in place).
    fn project(&mut self, input: Tabular, items: &[NamedExpr], extend: bool) -> Result<Tabular, TrawlError> {
        let items = &crate::names::expand_multi_outputs(&crate::names::expand_multi_array_sorts(items));
        let mut outputs: Vec<(String, Typed)> = Vec::new();
        if extend {
            for (name, kql_type) in &input.columns {
                outputs.push((name.clone(), Typed::new(column(name), *kql_type)));
            }
        }
        let mut produced: Vec<String> = Vec::new();
        for (position, item) in items.iter().enumerate() {
            if item.names.len() > 1 {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    item.span,
                    format!(
                        "{} names for an expression with fewer outputs (a tuple names the outputs of \
                         array_sort_asc/desc, series_fit_line, series_stats, series_decompose or \
                         series_decompose_anomalies)",
                        item.names.len()
                    ),
                ));
            }
            let value = self.scalar(&item.expr, &input)?;
            let name = match item.name() {
                Some(ident) => ident.name.clone(),
                // An unnamed expression named like one produced before it here gets the first
                // free numbered name (`f_x`, `f_x1`, …), as Kusto does.
                None => {
                    let base = default_name(&item.expr, position + 1);
                    let taken = |n: &str| produced.iter().any(|p| p == n);
                    if taken(&base) {
                        (1..)
                            .map(|k| format!("{base}{k}"))
                            .find(|n| !taken(n) && !outputs.iter().any(|(o, _)| o == n))
                            .unwrap_or(base)
                    } else {
                        base
                    }
                }
            };
            produced.push(name.clone());
            match outputs.iter_mut().find(|(n, _)| *n == name) {
                Some(existing) if extend => existing.1 = value,
                Some(_) => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        item.span,
                        format!("the column '{name}' is produced twice"),
                    ));
                }
                None => outputs.push((name, value)),
            }
        }
        let exprs: Vec<Expr> = outputs
            .iter()
            .map(|(name, value)| value.expr.clone().alias(name))
            .collect();
        let columns = outputs
            .into_iter()
            .map(|(name, value)| (name, value.kql_type))
            .collect();
        let exprs = unlike_input_projection(&input.plan, exprs);
        let input = Tabular {
            plan: projection_stage(input.plan)?,
            columns: input.columns,
        };
        let (builder, exprs) = crate::windows::with_staged_windows(&input, exprs)?;
        let plan = build(builder.project(exprs).map_err(|e| internal(&e))?)?;
        Ok(Tabular { plan, columns })
    }
}

/// `exprs`, made to differ from the projection `input` is, when they are the same.
///
/// DataFusion's projection merging drops a projection whose expressions equal those of the
/// projection below it, as if it were a no-op; `extend x = x + 1 | extend x = x + 1` is not
/// one (it adds 2). Empty metadata on the aliases changes nothing in the result's schema but
/// makes the two lists differ, so the projections are merged by substitution instead.
/// How many projections (with filters between them) the optimizer may fold into one.
const PROJECTION_STAGE: usize = 32;

/// `plan`, closed into a stage of its own when it ends in a long chain of projections.
///
/// The optimizer folds consecutive projections into one, substituting each into the next; a
/// chain of n `extend x = x + 1` becomes one expression n deep, and deriving the field of every
/// intermediate result costs O(n³) (2.5 s for 300 steps in a debug build). A subquery alias
/// between stages stops the folding, so a long pipeline costs O(n) stages of bounded size.
fn projection_stage(plan: LogicalPlan) -> Result<LogicalPlan, TrawlError> {
    let mut chain = 0;
    let mut node = &plan;
    loop {
        match node {
            LogicalPlan::Projection(projection) => {
                chain += 1;
                node = &projection.input;
            }
            LogicalPlan::Filter(filter) => node = &filter.input,
            _ => break,
        }
    }
    if chain < PROJECTION_STAGE {
        return Ok(plan);
    }
    static STAGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let stage = STAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let alias =
        datafusion::logical_expr::SubqueryAlias::try_new(std::sync::Arc::new(plan), format!("__trawl_stage_{stage}"))
            .map_err(|e| internal(&e))?;
    Ok(LogicalPlan::SubqueryAlias(alias))
}

fn unlike_input_projection(input: &LogicalPlan, exprs: Vec<Expr>) -> Vec<Expr> {
    let LogicalPlan::Projection(below) = input else {
        return exprs;
    };
    if below.expr != exprs {
        return exprs;
    }
    exprs
        .into_iter()
        .map(|expr| match expr {
            Expr::Alias(mut alias) => {
                alias.metadata = Some(datafusion::common::metadata::FieldMetadata::new_empty());
                Expr::Alias(alias)
            }
            other => other,
        })
        .collect()
}
