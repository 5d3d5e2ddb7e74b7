//! Operators that run sub-pipelines over their input, or pick some of its rows: `fork`,
//! `partition`, `sample`, `sample-distinct` and `top-hitters`.
//!
//! - `fork (ops) name = (ops) ...` ends a statement: each branch runs over the same input and
//!   is its own result table, named by the branch (`name = (...)`, or a last `| as name`
//!   inside the branch), else `GenericResult_<n>` (1-based).
//! - `partition [hint.*] by column (ops)` runs the sub-pipeline once per value of `column`
//!   and unions the results. It is lowered to one pipeline over all partitions: a hidden copy
//!   of the column is carried along; row operators (`where`, `extend`, `project`, `parse`,
//!   `mv-expand`, ...) run as they are, `summarize`/`count`/`distinct` also group by it,
//!   `sort` sorts by it first, `top`/`take` number the rows within each partition, and `scan`
//!   keeps one state per partition.
//! - `sample n`: n rows picked at random. `sample-distinct n of column`: up to n distinct values
//!   of the column. `top-hitters n of column [by weight]`: the n values seen most often
//!   (`approximate_count_<column>`) or with the largest total weight
//!   (`approximate_sum_<weight>`); computed exactly.

use datafusion::logical_expr::SortExpr;
use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::ast::{
    Expr as KExpr, ExprKind, ForkBranch, Literal, Operator, OperatorKind, Partition, SampleDistinct, StatementKind,
    TopHitters,
};
use trawl_kql::span::Span;

use crate::context::{Binding, Planner, Tabular, internal};

/// Most partitions the legacy `partition by Column { ... }` form plans.
const MOST_LEGACY_PARTITIONS: usize = 64;

fn value_is_none(bound: &[Option<String>]) -> bool {
    matches!(bound, [None])
}
use crate::names::bracketed;

/// The name sub-pipelines read their input by.
const INPUT: &str = "__subquery_input";
/// The hidden copy of the partition column.
const PARTITION: &str = "__partition";

/// The operators of `input | text`, parsed.
fn operators_of(text: &str) -> Result<Vec<Operator>, TrawlError> {
    let query = trawl_kql::parse(&format!("{INPUT} | {text}"))?;
    match query.statements.last().map(|s| &s.kind) {
        Some(StatementKind::Expr(KExpr {
            kind: ExprKind::Pipeline { operators, .. },
            ..
        })) => Ok(operators.clone()),
        _ => Err(TrawlError::new(
            ErrorCode::Internal,
            format!("could not lower '{text}'"),
        )),
    }
}

fn name_of(expr: &KExpr) -> Option<&str> {
    match &expr.kind {
        ExprKind::Name(ident) => Some(&ident.name),
        _ => None,
    }
}

impl Planner<'_> {
    /// A whole number literal operand (`sample 10`).
    fn count_literal(&self, expr: &KExpr, what: &str) -> Result<i64, TrawlError> {
        match &expr.kind {
            ExprKind::Literal(Literal::Long(n)) if *n >= 0 => Ok(*n),
            ExprKind::Literal(Literal::Int(n)) if *n >= 0 => Ok(i64::from(*n)),
            _ => Err(self.error(
                ErrorCode::BadRequest,
                expr.span,
                format!("{what} takes a whole number literal"),
            )),
        }
    }

    /// Plans `operators` over `input` (bound as [`INPUT`]).
    fn over_input(&mut self, input: Tabular, operators: Vec<Operator>, span: Span) -> Result<Tabular, TrawlError> {
        let pipeline = KExpr::new(
            ExprKind::Pipeline {
                source: Box::new(KExpr::new(
                    ExprKind::Name(trawl_kql::ast::Ident::new(INPUT, span)),
                    span,
                )),
                operators,
            },
            span,
        );
        self.with_input(INPUT, input, |planner| planner.tabular(&pipeline))
    }

    /// Runs `plan` with `input` bound to `name` (the binding it shadows comes back after).
    pub(crate) fn with_input<T>(
        &mut self,
        name: &str,
        input: Tabular,
        plan: impl FnOnce(&mut Self) -> Result<T, TrawlError>,
    ) -> Result<T, TrawlError> {
        let previous = self.bindings.insert(name.to_owned(), Binding::Tabular(input));
        let planned = plan(self);
        match previous {
            Some(binding) => self.bindings.insert(name.to_owned(), binding),
            None => self.bindings.remove(name),
        };
        planned
    }

    pub fn sample(&mut self, input: Tabular, count: &KExpr, _span: Span) -> Result<Tabular, TrawlError> {
        let n = self.count_literal(count, "sample")?;
        let random = datafusion::functions::math::expr_fn::random();
        let plan = input
            .builder()
            .sort(vec![SortExpr::new(random, true, false)])
            .and_then(|b| b.limit(0, Some(n as usize)))
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: input.columns,
        })
    }

    pub fn sample_distinct(
        &mut self,
        input: Tabular,
        sample: &SampleDistinct,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let n = self.count_literal(&sample.count, "sample-distinct")?;
        let Some(column) = name_of(&sample.of) else {
            return Err(self.error(ErrorCode::BadRequest, sample.of.span, "sample-distinct takes a column"));
        };
        let operators = operators_of(&format!("summarize by {} | take {n}", bracketed(column)))?;
        self.over_input(input, operators, span)
    }

    pub fn top_hitters(&mut self, input: Tabular, hitters: &TopHitters, span: Span) -> Result<Tabular, TrawlError> {
        let n = self.count_literal(&hitters.count, "top-hitters")?;
        let Some(column) = name_of(&hitters.of) else {
            return Err(self.error(ErrorCode::BadRequest, hitters.of.span, "top-hitters takes a column"));
        };
        let (output, aggregate) = match &hitters.by {
            None => (format!("approximate_count_{column}"), "count()".to_owned()),
            Some(weight) => match name_of(weight) {
                Some(weight) => (
                    format!("approximate_sum_{weight}"),
                    format!("sum({})", bracketed(weight)),
                ),
                None => {
                    return Err(self.error(ErrorCode::BadRequest, weight.span, "top-hitters weighs by a column"));
                }
            },
        };
        let operators = operators_of(&format!(
            "summarize {out} = {aggregate} by {col} | top {n} by {out} desc",
            out = bracketed(&output),
            col = bracketed(column),
        ))?;
        self.over_input(input, operators, span)
    }

    /// `fork`: one named result per branch (see the module notes).
    pub fn fork(
        &mut self,
        source: &KExpr,
        before: &[Operator],
        branches: &[ForkBranch],
    ) -> Result<Vec<(Option<String>, Tabular)>, TrawlError> {
        let mut input = self.tabular(source)?;
        for operator in before {
            input = self.operator(input, operator)?;
        }
        let mut results = Vec::with_capacity(branches.len());
        for (index, branch) in branches.iter().enumerate() {
            let named_by_as = branch.operators.last().and_then(|op| match &op.kind {
                OperatorKind::As(binding) => Some(binding.name.name.clone()),
                _ => None,
            });
            let name = branch
                .name
                .as_ref()
                .map(|n| n.name.clone())
                .or(named_by_as)
                .unwrap_or_else(|| format!("GenericResult_{}", index + 1));
            let planned = self.over_input(input.clone(), branch.operators.clone(), branch.span)?;
            results.push((Some(name), planned));
        }
        Ok(results)
    }

    /// `facet by c1, c2 [with (operators)]`: the `with` pipeline's table, then per column the
    /// count of rows per value (`count_<column>`), most rows first.
    pub fn facet(
        &mut self,
        source: &KExpr,
        before: &[Operator],
        facet: &trawl_kql::ast::Facet,
    ) -> Result<Vec<(Option<String>, Tabular)>, TrawlError> {
        let mut input = self.tabular(source)?;
        for operator in before {
            input = self.operator(input, operator)?;
        }
        let mut results = Vec::with_capacity(facet.columns.len() + 1);
        if let Some(with) = &facet.with {
            let span = with.first().map(|op| op.span).unwrap_or_default();
            results.push((None, self.over_input(input.clone(), with.clone(), span)?));
        }
        for column in &facet.columns {
            if input.column_type(&column.name).is_none() {
                return Err(self.error(
                    ErrorCode::UnknownColumn,
                    column.span,
                    format!("unknown column '{}'", column.name),
                ));
            }
            let name = bracketed(&column.name);
            let count = bracketed(&format!("count_{}", column.name));
            let operators = operators_of(&format!(
                "summarize {count} = count() by {name} | order by {count} desc, {name} asc"
            ))?;
            results.push((None, self.over_input(input.clone(), operators, column.span)?));
        }
        Ok(results)
    }

    /// `partition by column (operators)` (see the module notes).
    pub fn partition(&mut self, input: Tabular, partition: &Partition, span: Span) -> Result<Tabular, TrawlError> {
        let Some(column) = name_of(&partition.by) else {
            return Err(self.error(ErrorCode::BadRequest, partition.by.span, "partition by takes a column"));
        };
        if input.column_type(column).is_none() {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                partition.by.span,
                format!("unknown column '{column}'"),
            ));
        }
        if let Some(source) = &partition.legacy {
            return self.legacy_partition(input, column, source, span);
        }
        let mut operators = operators_of(&format!("extend {PARTITION} = {}", bracketed(column)))?;
        for operator in &partition.subquery {
            operators.extend(self.partitioned(operator)?);
        }
        operators.extend(operators_of(&format!("project-away {PARTITION}"))?);
        let previous = self.partition_column.replace(PARTITION.to_owned());
        let planned = self.over_input(input, operators, span);
        self.partition_column = previous;
        planned
    }

    /// `partition by Column { SubQueryWithSource }`: the subquery planned once per distinct value
    /// of the column (found by a discovery round, at most [`MOST_LEGACY_PARTITIONS`]), with the
    /// column's name bound to that value; the results one after the other.
    fn legacy_partition(
        &mut self,
        input: Tabular,
        column: &str,
        source: &KExpr,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        use datafusion::logical_expr::lit;
        use trawl_common::KqlType;
        let Some(kql_type) = input.column_type(column) else {
            return Err(self.error(ErrorCode::UnknownColumn, span, format!("unknown column '{column}'")));
        };
        // The distinct values, as the keys of one-key bags (the discovery collects bag keys).
        let key_bag = KExpr::new(
            ExprKind::Call {
                function: trawl_kql::ast::Ident::new("bag_pack", span),
                args: vec![
                    KExpr::new(
                        ExprKind::Call {
                            function: trawl_kql::ast::Ident::new("tostring", span),
                            args: vec![KExpr::new(
                                ExprKind::Name(trawl_kql::ast::Ident::new(column, span)),
                                span,
                            )],
                        },
                        span,
                    ),
                    KExpr::new(ExprKind::Literal(trawl_kql::ast::Literal::Bool(true)), span),
                ],
            },
            span,
        );
        let bag = self.scalar(&key_bag, &input)?;
        let probe = input
            .builder()
            .project(vec![bag.expr.alias("bag")])
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let key = format!("partition\n{}", probe.display_indent());
        let values: Option<Vec<String>> = self
            .options
            .discovered
            .get(&key)
            .map(|found| found.iter().map(|(k, _)| k.clone()).collect());
        let values = match values {
            Some(values) => values,
            None => {
                self.discoveries.push(crate::Discovery { key, plan: probe });
                Vec::new()
            }
        };
        if values.len() > MOST_LEGACY_PARTITIONS {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!(
                    "partition by {column} {{...}} has {} partitions; the legacy form takes at most \
                     {MOST_LEGACY_PARTITIONS} (use partition by {column} (operators) instead)",
                    values.len()
                ),
            ));
        }
        let mut planned: Vec<Tabular> = Vec::new();
        // With no value (or before discovery), the subquery with a null value gives the columns.
        let bound: Vec<Option<String>> = if values.is_empty() {
            vec![None]
        } else {
            values.into_iter().map(Some).collect()
        };
        for value in &bound {
            let typed = match value {
                None => crate::context::Typed::new(crate::scalar::null_of(kql_type), kql_type),
                Some(text) if kql_type == KqlType::String => {
                    crate::context::Typed::new(lit(text.clone()), KqlType::String)
                }
                Some(text) => {
                    let json = serde_json::Value::String(text.clone()).to_string();
                    let dynamic = crate::context::Typed::new(lit(json), KqlType::Dynamic);
                    crate::context::Typed::new(self.dynamic_as(dynamic, kql_type), kql_type)
                }
            };
            let saved = self.bindings.insert(column.to_string(), Binding::Scalar(typed));
            let result = self.tabular(source);
            match saved {
                Some(previous) => {
                    self.bindings.insert(column.to_string(), previous);
                }
                None => {
                    self.bindings.remove(column);
                }
            }
            planned.push(result?);
        }
        let first = planned.remove(0);
        let columns = first.columns.clone();
        let mut builder = first.builder();
        if value_is_none(&bound) {
            builder = builder.limit(0, Some(0)).map_err(|e| internal(&e))?;
        }
        for other in planned {
            if other.columns != columns {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    source.span,
                    "the partitions' results differ in their columns",
                ));
            }
            builder = builder.union(other.plan).map_err(|e| internal(&e))?;
        }
        let plan = builder.build().map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// `operator` rewritten to work within each partition.
    fn partitioned(&self, operator: &Operator) -> Result<Vec<Operator>, TrawlError> {
        let with_span = |mut ops: Vec<Operator>| {
            for op in &mut ops {
                op.span = operator.span;
            }
            ops
        };
        Ok(match &operator.kind {
            OperatorKind::Where(_)
            | OperatorKind::Extend(_)
            | OperatorKind::Parse(_)
            | OperatorKind::ParseWhere(_)
            | OperatorKind::ParseKv(_)
            | OperatorKind::MvExpand(_)
            | OperatorKind::MvApply(_)
            | OperatorKind::ProjectAway(_)
            | OperatorKind::ProjectRename(_)
            | OperatorKind::ProjectReorder(_)
            | OperatorKind::Scan(_)
            | OperatorKind::Serialize(_)
            | OperatorKind::Render(_) => vec![operator.clone()],
            OperatorKind::Project(items) => {
                let mut items = items.clone();
                items.extend(self.partition_items()?);
                vec![Operator {
                    kind: OperatorKind::Project(items),
                    span: operator.span,
                }]
            }
            OperatorKind::ProjectKeep(patterns) => {
                let mut patterns = patterns.clone();
                if let Some(OperatorKind::ProjectKeep(hidden)) = operators_of(&format!("project-keep {PARTITION}"))?
                    .first()
                    .map(|o| &o.kind)
                {
                    patterns.extend(hidden.iter().cloned());
                }
                vec![Operator {
                    kind: OperatorKind::ProjectKeep(patterns),
                    span: operator.span,
                }]
            }
            OperatorKind::Summarize(summarize) => {
                let mut summarize = summarize.clone();
                summarize.by.extend(self.partition_items()?);
                vec![Operator {
                    kind: OperatorKind::Summarize(summarize),
                    span: operator.span,
                }]
            }
            OperatorKind::Count => with_span(operators_of(&format!("summarize Count = count() by {PARTITION}"))?),
            OperatorKind::Distinct(items) => {
                if items.iter().any(|i| matches!(i.kind, ExprKind::Star)) {
                    vec![operator.clone()]
                } else {
                    let mut items = items.clone();
                    items.push(KExpr::new(
                        ExprKind::Name(trawl_kql::ast::Ident::new(PARTITION, operator.span)),
                        operator.span,
                    ));
                    vec![Operator {
                        kind: OperatorKind::Distinct(items),
                        span: operator.span,
                    }]
                }
            }
            OperatorKind::Sort(sort) => {
                let mut ops = operators_of(&format!("sort by {PARTITION} asc"))?;
                if let Some(OperatorKind::Sort(first)) = ops.first_mut().map(|o| &mut o.kind) {
                    first.keys.extend(sort.keys.iter().cloned());
                }
                with_span(ops)
            }
            OperatorKind::Top(top) => {
                let n = self.count_literal(&top.count, "top")?;
                let mut ops = operators_of(&format!(
                    "sort by {PARTITION} asc \
                     | extend __partition_rank = row_number(1, prev({PARTITION}) != {PARTITION}) \
                     | where __partition_rank <= {n} | project-away __partition_rank"
                ))?;
                if let Some(OperatorKind::Sort(first)) = ops.first_mut().map(|o| &mut o.kind) {
                    first.keys.push(top.by.clone());
                }
                with_span(ops)
            }
            OperatorKind::Take(count) => {
                let n = self.count_literal(count, "take")?;
                with_span(operators_of(&format!(
                    "sort by {PARTITION} asc \
                     | extend __partition_rank = row_number(1, prev({PARTITION}) != {PARTITION}) \
                     | where __partition_rank <= {n} | project-away __partition_rank"
                ))?)
            }
            other => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    operator.span,
                    format!("'{}' is not supported inside partition yet", other.name()),
                ));
            }
        })
    }

    /// `__partition` as a `by`/`project` item.
    fn partition_items(&self) -> Result<Vec<trawl_kql::ast::NamedExpr>, TrawlError> {
        match operators_of(&format!("project {PARTITION}"))?
            .into_iter()
            .next()
            .map(|o| o.kind)
        {
            Some(OperatorKind::Project(items)) => Ok(items),
            _ => Err(TrawlError::new(
                ErrorCode::Internal,
                "could not name the partition column",
            )),
        }
    }
}
