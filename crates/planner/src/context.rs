//! Planner state: the query text (for locations), tables, `let` bindings, warnings, and the
//! typed tabular value that operators transform.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, SortExpr};
use trawl_common::error::Location;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, LetValue, OperatorKind, Statement, StatementKind};
use trawl_kql::span::Span;

use crate::{PlanOptions, PlannedResult, QueryWarning, TableLookup};

/// A tabular value under construction: a plan and the KQL type of each output column, in
/// order.
#[derive(Debug, Clone)]
pub struct Tabular {
    pub plan: LogicalPlan,
    pub columns: Vec<(String, KqlType)>,
}

impl Tabular {
    /// This table with `added` columns after its own (name, value, type).
    pub(crate) fn extended(&self, added: Vec<(&str, Expr, KqlType)>) -> Result<Tabular, TrawlError> {
        let mut exprs: Vec<Expr> = self.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        let mut columns = self.columns.clone();
        for (name, value, kql_type) in added {
            exprs.push(value.alias(name));
            columns.push((name.to_string(), kql_type));
        }
        let plan = self
            .builder()
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    pub fn column_type(&self, name: &str) -> Option<KqlType> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
    }

    pub fn builder(&self) -> LogicalPlanBuilder {
        LogicalPlanBuilder::from(self.plan.clone())
    }
}

/// A reference to a column by its plain name (names may contain dots or spaces).
pub fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// The sort keys `plan`'s rows are in, when a `sort`/`top` below it still orders them: found
/// through the operators that keep row order and whose output still holds the keys' columns
/// under the same names.
pub fn serial_order(plan: &LogicalPlan) -> Option<Vec<SortExpr>> {
    let keys = match plan {
        LogicalPlan::Sort(sort) => sort.expr.clone(),
        LogicalPlan::Projection(projection) => serial_order(&projection.input)?,
        LogicalPlan::Filter(filter) => serial_order(&filter.input)?,
        LogicalPlan::SubqueryAlias(alias) => serial_order(&alias.input)?,
        LogicalPlan::Limit(limit) => serial_order(&limit.input)?,
        LogicalPlan::Window(window) => serial_order(&window.input)?,
        _ => return None,
    };
    let schema = plan.schema();
    let mut unqualified = Vec::with_capacity(keys.len());
    for key in keys {
        let expr = key
            .expr
            .transform(|e| match e {
                Expr::Column(c) => Ok(Transformed::yes(Expr::Column(Column::new_unqualified(c.name)))),
                other => Ok(Transformed::no(other)),
            })
            .ok()?
            .data;
        // Every column of the key must pass through unchanged.
        for c in expr.column_refs() {
            let kept = match plan {
                LogicalPlan::Projection(projection) => projection.expr.iter().any(|e| match e {
                    Expr::Column(inner) => inner.name == c.name,
                    Expr::Alias(alias) => {
                        alias.name == c.name
                            && matches!(alias.expr.as_ref(), Expr::Column(inner) if inner.name == c.name)
                    }
                    _ => false,
                }),
                _ => schema.field_with_unqualified_name(&c.name).is_ok(),
            };
            if !kept {
                return None;
            }
        }
        unqualified.push(SortExpr::new(expr, key.asc, key.nulls_first));
    }
    Some(unqualified)
}

/// A scalar expression with its KQL type.
#[derive(Debug, Clone)]
pub struct Typed {
    pub expr: Expr,
    pub kql_type: KqlType,
}

impl Typed {
    pub fn new(expr: Expr, kql_type: KqlType) -> Typed {
        Typed { expr, kql_type }
    }
}

/// What a `let` name stands for.
#[derive(Debug, Clone)]
pub enum Binding {
    Scalar(Typed),
    Tabular(Tabular),
    /// A user-defined function, expanded at each call.
    Function(std::rc::Rc<trawl_kql::ast::FunctionDef>),
}

pub struct Planner<'a> {
    pub text: &'a str,
    pub tables: &'a dyn TableLookup,
    pub options: PlanOptions,
    pub bindings: HashMap<String, Binding>,
    /// Nesting of user function calls being expanded.
    pub call_depth: usize,
    /// Planning steps so far (see [`crate::limits`]).
    steps: usize,
    /// Set by `render`.
    pub visualization: Option<crate::Visualization>,
    /// Discoveries still needed (see [`crate::Discovery`]).
    pub discoveries: Vec<crate::Discovery>,
    /// `materialize()` calls still to run (see [`crate::Materialization`]).
    pub materializations: Vec<crate::Materialization>,
    /// `materialize()` calls planned so far (they are numbered in planning order).
    pub materialize_calls: usize,
    /// See [`crate::PlannedQuery::time_bin`].
    pub time_bin: Option<crate::Binning>,
    /// See [`crate::PlannedQuery::runtime_warning_key`].
    pub runtime_warning_key: Option<i64>,
    /// Inside `partition by`: the column telling partitions apart, for operators that keep
    /// state across rows (`scan`).
    pub partition_column: Option<String>,
    /// Dynamic paths given a type by `annotate`: (column, keys) and the type.
    pub annotations: Vec<((String, Vec<String>), KqlType)>,
    /// Declared patterns (`declare pattern`), by name.
    pub patterns: HashMap<String, std::rc::Rc<trawl_kql::ast::PatternDecl>>,
    /// See [`crate::PlannedQuery::summarize_budgets`].
    pub summarize_budgets: Vec<crate::SummarizeBudget>,
    /// The names and patterns `restrict access to` left visible, if the query restricts.
    pub restricted: Option<Vec<String>>,
    /// `set query_bin_auto_size` and `set query_bin_auto_at`: `bin_auto()`'s bin size and
    /// fixed point.
    pub bin_auto_size: Option<KExpr>,
    pub bin_auto_at: Option<KExpr>,
    warnings: Vec<QueryWarning>,
}

impl<'a> Planner<'a> {
    pub fn new(text: &'a str, tables: &'a dyn TableLookup, options: PlanOptions) -> Planner<'a> {
        Planner {
            text,
            tables,
            options,
            bindings: HashMap::new(),
            call_depth: 0,
            steps: 0,
            visualization: None,
            discoveries: Vec::new(),
            materializations: Vec::new(),
            materialize_calls: 0,
            time_bin: None,
            runtime_warning_key: None,
            partition_column: None,
            patterns: HashMap::new(),
            annotations: Vec::new(),
            summarize_budgets: Vec::new(),
            restricted: None,
            bin_auto_size: None,
            bin_auto_at: None,
            warnings: Vec::new(),
        }
    }

    pub fn into_warnings(self) -> Vec<QueryWarning> {
        self.warnings
    }

    pub fn location(&self, span: Span) -> Location {
        Location::from_byte_range(self.text, span.start as usize, span.end as usize)
    }

    /// An error of `code` located at `span`.
    pub fn error(&self, code: ErrorCode, span: Span, message: impl Into<String>) -> TrawlError {
        TrawlError::new(code, message).at(self.location(span))
    }

    pub fn warn(&mut self, kind: &str, span: Span, message: impl Into<String>) {
        let warning = QueryWarning {
            kind: kind.to_string(),
            message: message.into(),
            location: Some(self.location(span)),
        };
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// Plans every statement; each tabular expression statement is one result.
    pub fn plan_statements(&mut self, statements: &[Statement]) -> Result<Vec<PlannedResult>, TrawlError> {
        let mut results = Vec::new();
        for (index, statement) in statements.iter().enumerate() {
            match &statement.kind {
                StatementKind::Let(binding) => {
                    let value = match &binding.value {
                        LetValue::Expr(expr) => self.bind_value(expr)?,
                        LetValue::Function(def) => Binding::Function(std::rc::Rc::new(def.clone())),
                    };
                    self.bindings.insert(binding.name.name.clone(), value);
                }
                StatementKind::Set(option) => self.set_option(option, statement.span)?,
                StatementKind::DeclareParameters(params) => {
                    for param in params {
                        let value = self.query_parameter(param)?;
                        self.bindings.insert(param.name.name.clone(), value);
                    }
                }
                StatementKind::DeclarePattern(pattern) => {
                    self.patterns
                        .insert(pattern.name.name.clone(), std::rc::Rc::new(pattern.clone()));
                }
                StatementKind::Expr(expr) => {
                    // Operators that end a query with several tables: `fork`, `facet`,
                    // `evaluate funnel_sequence`.
                    let tail = match &expr.kind {
                        ExprKind::Pipeline { source, operators } => operators
                            .split_last()
                            .map(|(last, before)| (source.as_ref(), before, &last.kind)),
                        _ => None,
                    };
                    let named = match tail {
                        Some((source, before, OperatorKind::Fork(branches))) => self.fork(source, before, branches)?,
                        Some((source, before, OperatorKind::Evaluate(evaluate)))
                            if matches!(&evaluate.call.kind, ExprKind::Call { function, .. }
                                if function.name == "funnel_sequence") =>
                        {
                            self.funnel_sequence(source, before, evaluate)?
                        }
                        Some((source, before, OperatorKind::Facet(facet))) => self.facet(source, before, facet)?,
                        Some((source, before, OperatorKind::Evaluate(evaluate)))
                            if matches!(&evaluate.call.kind, ExprKind::Call { function, .. }
                                if function.name == "preview") =>
                        {
                            self.preview(source, before, evaluate)?
                        }
                        Some((_, _, OperatorKind::GraphToTable(table))) if table.parts.len() > 1 => {
                            let last = index + 1 == statements.len();
                            self.graph_tables(expr, table, last, statement.span)?
                        }
                        _ => vec![(None, self.tabular(expr)?)],
                    };
                    for (name, tabular) in named {
                        let tabular = crate::shredded::visible(tabular)?;
                        results.push(PlannedResult {
                            plan: crate::shredded::read_shredded(tabular.plan)?,
                            columns: tabular.columns,
                            name,
                        });
                    }
                }
                StatementKind::Restrict(entities) => self.restrict(entities)?,
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        statement.span,
                        "this statement is not supported yet",
                    ));
                }
            }
        }
        Ok(results)
    }

    /// `... | graph-to-table nodes as N [params], edges as E [params]`: each table planned on its
    /// own and bound to its name for the statements after; as the last statement it is also
    /// the query's result (both tables).
    fn graph_tables(
        &mut self,
        expr: &KExpr,
        table: &trawl_kql::ast::GraphToTable,
        last: bool,
        span: Span,
    ) -> Result<Vec<(Option<String>, Tabular)>, TrawlError> {
        let ExprKind::Pipeline { source, operators } = &expr.kind else {
            return Ok(vec![(None, self.tabular(expr)?)]);
        };
        let mut named = Vec::with_capacity(table.parts.len());
        for part in &table.parts {
            let Some(alias) = &part.alias else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    part.what.span,
                    "graph-to-table with both nodes and edges names each table: nodes as N, edges as E",
                ));
            };
            let mut single = operators.clone();
            if let Some(last_operator) = single.last_mut() {
                last_operator.kind = OperatorKind::GraphToTable(trawl_kql::ast::GraphToTable {
                    parts: vec![trawl_kql::ast::GraphTablePart {
                        alias: None,
                        ..part.clone()
                    }],
                });
            }
            let pipeline = KExpr::new(
                ExprKind::Pipeline {
                    source: source.clone(),
                    operators: single,
                },
                span,
            );
            let tabular = self.tabular(&pipeline)?;
            self.bindings
                .insert(alias.name.clone(), Binding::Tabular(tabular.clone()));
            named.push((Some(alias.name.clone()), tabular));
        }
        Ok(if last { named } else { Vec::new() })
    }

    /// `restrict access to (entities)`: names (or `*` patterns) of tables, views and `let`
    /// names; `database().T` and `database('this database').T` name `T`.
    fn restrict(&mut self, entities: &[KExpr]) -> Result<(), TrawlError> {
        let mut visible = Vec::with_capacity(entities.len());
        for entity in entities {
            let name = match &entity.kind {
                ExprKind::Name(ident) => ident.name.clone(),
                ExprKind::Member { target, member } => match &target.kind {
                    ExprKind::Call { function, args }
                        if function.name == "database"
                            && (args.is_empty()
                                || matches!(&args[0].kind, ExprKind::Literal(trawl_kql::ast::Literal::String(db))
                                    if *db == self.options.database)) =>
                    {
                        member.name.clone()
                    }
                    _ => {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            entity.span,
                            "restrict access names entities of this database: a name, a pattern or database().Name",
                        ));
                    }
                },
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        entity.span,
                        "restrict access takes names of tables, views and let statements",
                    ));
                }
            };
            visible.push(name);
        }
        // A second restrict narrows the first.
        if let Some(before) = &self.restricted {
            visible.retain(|name| before.iter().any(|p| crate::names::matches_pattern(p, name)));
        }
        self.restricted = Some(visible);
        Ok(())
    }

    /// Whether `name` is visible to the query: always without `restrict access`, and inside a
    /// function defined before it (which reads what it was written against).
    pub(crate) fn is_visible(&self, name: &str) -> bool {
        match &self.restricted {
            None => true,
            Some(_) if self.call_depth > 0 || name == crate::rolling::INPUT => true,
            Some(visible) => visible.iter().any(|p| crate::names::matches_pattern(p, name)),
        }
    }

    /// `set name [= value]`: `query_now` fixes what `now()` and `ago()` read for the rest of the
    /// query; other request options are accepted and have no effect here.
    fn set_option(&mut self, option: &trawl_kql::ast::SetOption, span: Span) -> Result<(), TrawlError> {
        // `bin_auto()`'s size and fixed point, read where it is used.
        let bin_auto = ["query_bin_auto_size", "query_bin_auto_at"]
            .into_iter()
            .find(|name| option.name.eq_ignore_ascii_case(name));
        if let Some(name) = bin_auto {
            let Some(value) = &option.value else {
                return Err(self.error(ErrorCode::BadRequest, span, format!("set {name} takes a value")));
            };
            if name == "query_bin_auto_size" {
                self.bin_auto_size = Some(value.clone());
            } else {
                self.bin_auto_at = Some(value.clone());
            }
            return Ok(());
        }
        if !option.name.eq_ignore_ascii_case("query_now") {
            return Ok(());
        }
        let Some(value) = &option.value else {
            return Err(self.error(ErrorCode::BadRequest, span, "set query_now takes a datetime"));
        };
        let empty = self.empty_tabular()?;
        let typed = self.scalar(value, &empty)?;
        match (typed.kql_type, crate::sources::constant_value(&typed.expr)) {
            (KqlType::DateTime, Some(datafusion::common::ScalarValue::TimestampNanosecond(Some(ns), _))) => {
                self.options.now = ns;
                Ok(())
            }
            _ => Err(self.error(
                ErrorCode::BadRequest,
                value.span,
                "set query_now takes a constant datetime, such as datetime(2024-01-01)",
            )),
        }
    }

    /// A `let` value: tabular when it is a pipeline, a table or a tabular operator, else scalar.
    pub fn bind_value(&mut self, expr: &KExpr) -> Result<Binding, TrawlError> {
        if self.is_tabular(expr) {
            return Ok(Binding::Tabular(self.tabular(expr)?));
        }
        let empty = self.empty_tabular()?;
        Ok(Binding::Scalar(self.scalar(expr, &empty)?))
    }

    pub fn is_tabular(&self, expr: &KExpr) -> bool {
        if self.pattern_invocation(expr).is_some() {
            return true;
        }
        match &expr.kind {
            ExprKind::Pipeline { .. } | ExprKind::TabularOperator(_) => true,
            ExprKind::Name(ident) => match self.bindings.get(&ident.name) {
                Some(Binding::Tabular(_)) => true,
                Some(Binding::Function(def)) => def.params.is_empty() && self.function_is_tabular(def),
                Some(Binding::Scalar(_)) => false,
                None => self.tables.table(&ident.name).is_some() || self.tables.view(&ident.name).is_some(),
            },
            ExprKind::Member { target, .. } => Self::database_call(target).is_some(),
            ExprKind::Call { function, args } => match self.bindings.get(&function.name) {
                Some(Binding::Function(def)) => self.function_is_tabular(def),
                _ => {
                    matches!(function.name.as_str(), "materialize" | "table" | "view")
                        && args
                            .first()
                            .is_some_and(|a| function.name != "materialize" || self.is_tabular(a))
                }
            },
            _ => false,
        }
    }

    /// A one-row, no-column value, the input of scalar `let`s.
    pub fn empty_tabular(&self) -> Result<Tabular, TrawlError> {
        let plan = LogicalPlanBuilder::empty(true).build().map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: Vec::new(),
        })
    }

    /// Lowers a tabular expression.
    pub fn tabular(&mut self, expr: &KExpr) -> Result<Tabular, TrawlError> {
        self.step(1, expr.span)?;
        stacker::maybe_grow(crate::limits::STACK_RED_ZONE, crate::limits::STACK_SEGMENT, || {
            self.tabular_unbounded(expr)
        })
    }

    /// Counts `steps` more planning steps (see [`crate::limits`]).
    pub fn step(&mut self, steps: usize, span: Span) -> Result<(), TrawlError> {
        self.steps = self.steps.saturating_add(steps);
        if self.steps > crate::limits::MAX_PLANNING_STEPS {
            return Err(crate::limits::too_large(format!(
                "the query is too large to plan: it expands to more than {} expressions \
                 (a 'let' value or function is copied at each use)",
                crate::limits::MAX_PLANNING_STEPS
            ))
            .at(self.location(span)));
        }
        Ok(())
    }

    /// Accounts for one use of a scalar `let` value, which is copied into the plan.
    pub fn inline(&mut self, value: &Typed, span: Span) -> Result<(), TrawlError> {
        let left = crate::limits::MAX_PLANNING_STEPS.saturating_sub(self.steps);
        let size = crate::limits::expression_size(&value.expr, left);
        self.step(size.nodes, span)?;
        if size.depth > crate::limits::MAX_EXPRESSION_DEPTH {
            return Err(crate::limits::too_large(format!(
                "this value nests more than {} levels deep (each 'let' that uses the one \
                 before adds its levels)",
                crate::limits::MAX_EXPRESSION_DEPTH
            ))
            .at(self.location(span)));
        }
        Ok(())
    }

    /// `database('name')` or `database()`: the database's name argument (`None` inside for
    /// `database()`); `None` for anything else.
    fn database_call(expr: &KExpr) -> Option<Option<&KExpr>> {
        let ExprKind::Call { function, args } = &expr.kind else {
            return None;
        };
        if function.name != "database" || args.len() > 1 {
            return None;
        }
        Some(args.first())
    }

    /// `database('name').T`: table `T` when `name` is the query's own database.
    fn database_member(
        &mut self,
        database: Option<&KExpr>,
        table: &trawl_kql::ast::Ident,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let name = match database.map(|d| &d.kind) {
            None => None,
            Some(ExprKind::Literal(trawl_kql::ast::Literal::String(name))) => Some(name.clone()),
            Some(_) => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    span,
                    "database() takes a database name in quotes",
                ));
            }
        };
        match name {
            Some(name) if !name.eq_ignore_ascii_case(&self.options.database) => Err(self.error(
                ErrorCode::UnknownTable,
                span,
                format!(
                    "database('{name}'): a query reads its own database ('{}') only",
                    self.options.database
                ),
            )),
            _ => self.table_reference(&table.name, table.span),
        }
    }

    fn tabular_unbounded(&mut self, expr: &KExpr) -> Result<Tabular, TrawlError> {
        if let ExprKind::Member { target, member } = &expr.kind
            && let Some(database) = Self::database_call(target)
        {
            return self.database_member(database, member, expr.span);
        }
        let called = match &expr.kind {
            ExprKind::Call { function, .. } => Some(function),
            ExprKind::Member { target, .. } | ExprKind::Index { target, .. } => match &target.kind {
                ExprKind::Call { function, .. } => Some(function),
                _ => None,
            },
            _ => None,
        };
        if let Some(function) = called
            && (self.bindings.contains_key(&function.name) || self.patterns.contains_key(&function.name))
            && !self.is_visible(&function.name)
        {
            return Err(self.error(
                ErrorCode::UnknownTable,
                function.span,
                format!(
                    "'{}' is not accessible: the query restricts access to other entities",
                    function.name
                ),
            ));
        }
        if let Some(invocation) = self.pattern_invocation(expr) {
            return self.invoke_pattern(invocation, expr.span);
        }
        match &expr.kind {
            ExprKind::Name(ident) => self.table_reference(&ident.name, ident.span),
            ExprKind::Call { function, args } => {
                if let Some(Binding::Function(def)) = self.bindings.get(&function.name) {
                    let def = def.clone();
                    return self.call_tabular_function(&function.name, &def, args, expr.span);
                }
                match (function.name.as_str(), args.as_slice()) {
                    ("materialize", [inner]) => self.materialize(inner),
                    ("table" | "view", [name]) => match &name.kind {
                        ExprKind::Literal(trawl_kql::ast::Literal::String(table)) => {
                            self.table_reference(table, name.span)
                        }
                        _ => Err(self.error(ErrorCode::BadRequest, name.span, "table() takes a table name in quotes")),
                    },
                    _ => Err(self.error(
                        ErrorCode::SyntaxError,
                        expr.span,
                        format!("'{}(...)' is not a tabular expression", function.name),
                    )),
                }
            }
            ExprKind::Pipeline { source, operators } => {
                let mut current = self.tabular(source)?;
                let mut rest = operators.iter();
                while let Some(operator) = rest.next() {
                    current = match &operator.kind {
                        // A graph is not a table: make-graph goes with the graph operator after it.
                        OperatorKind::MakeGraph(make) => match rest.next().map(|o| (&o.kind, o.span)) {
                            Some((OperatorKind::GraphMarkComponents(params), marked_at)) => {
                                match rest.next().map(|o| &o.kind) {
                                    Some(OperatorKind::GraphToTable(table)) => {
                                        self.graph_to_table(current, make, table, Some(params), operator.span)?
                                    }
                                    Some(OperatorKind::GraphMatch(matching)) => {
                                        self.graph_match(current, make, matching, false, Some(params), operator.span)?
                                    }
                                    Some(OperatorKind::GraphShortestPaths(matching)) => {
                                        self.graph_match(current, make, matching, true, Some(params), operator.span)?
                                    }
                                    _ => {
                                        return Err(self.error(
                                            ErrorCode::BadRequest,
                                            marked_at,
                                            "graph-mark-components is followed by graph-match, graph-shortest-paths \
                                             or graph-to-table",
                                        ));
                                    }
                                }
                            }
                            Some((OperatorKind::GraphMatch(matching), _)) => {
                                self.graph_match(current, make, matching, false, None, operator.span)?
                            }
                            Some((OperatorKind::GraphShortestPaths(matching), _)) => {
                                self.graph_match(current, make, matching, true, None, operator.span)?
                            }
                            Some((OperatorKind::GraphToTable(table), _)) => {
                                self.graph_to_table(current, make, table, None, operator.span)?
                            }
                            _ => {
                                return Err(self.error(
                                    ErrorCode::BadRequest,
                                    operator.span,
                                    "make-graph makes a graph, not a table: follow it with graph-match, graph-shortest-paths or graph-to-table",
                                ));
                            }
                        },
                        OperatorKind::GraphMatch(_)
                        | OperatorKind::GraphShortestPaths(_)
                        | OperatorKind::GraphMarkComponents(_)
                        | OperatorKind::GraphToTable(_) => {
                            return Err(self.error(
                                ErrorCode::BadRequest,
                                operator.span,
                                format!("{} reads a graph: put make-graph before it", operator.kind.name()),
                            ));
                        }
                        _ => self.operator(current, operator)?,
                    };
                }
                Ok(current)
            }
            ExprKind::TabularOperator(operator) => match &operator.kind {
                OperatorKind::Print(items) => self.print(items),
                OperatorKind::Datatable(table) => self.datatable(table, operator.span),
                OperatorKind::Range(range) => self.range(range, operator.span),
                OperatorKind::Union(union) => self.union(None, union, operator.span),
                OperatorKind::Search(search) => self.search(None, search, operator.span),
                OperatorKind::Find(find) => self.find(find, operator.span),
                other => Err(self.error(
                    ErrorCode::BadRequest,
                    operator.span,
                    format!("the operator '{}' is not supported yet", other.name()),
                )),
            },
            _ => Err(self.error(
                ErrorCode::SyntaxError,
                expr.span,
                "expected a tabular expression (a table name or a pipeline)",
            )),
        }
    }

    pub(crate) fn table_reference(&mut self, name: &str, span: Span) -> Result<Tabular, TrawlError> {
        if !self.is_visible(name) {
            return Err(self.error(
                ErrorCode::UnknownTable,
                span,
                format!("'{name}' is not accessible: the query restricts access to other entities"),
            ));
        }
        if let Some(binding) = self.bindings.get(name) {
            return match binding {
                Binding::Tabular(tabular) => {
                    let tabular = tabular.clone();
                    // Each use is a copy of the plan once optimized: count it at its size.
                    let left = crate::limits::MAX_PLANNING_STEPS.saturating_sub(self.steps);
                    self.step(crate::limits::plan_size(&tabular.plan, left).nodes, span)?;
                    Ok(tabular)
                }
                Binding::Function(def) => {
                    let def = def.clone();
                    self.call_tabular_function(name, &def, &[], span)
                }
                Binding::Scalar(_) => Err(self.error(
                    ErrorCode::TypeMismatch,
                    span,
                    format!("'{name}' is a scalar, not a table"),
                )),
            };
        }
        if let Some(provider) = self.tables.table(name) {
            return self.scan(name, provider);
        }
        if let Some(members) = self.tables.view(name) {
            // A view is `union` of its tables.
            let tables = members
                .iter()
                .map(|member| KExpr::new(ExprKind::Name(trawl_kql::ast::Ident::new(member, span)), span))
                .collect();
            let union = trawl_kql::ast::Union {
                params: Vec::new(),
                tables,
            };
            return self.union(None, &union, span);
        }
        Err(self.error(ErrorCode::UnknownTable, span, format!("unknown table '{name}'")))
    }

    fn scan(
        &mut self,
        name: &str,
        provider: Arc<dyn datafusion::catalog::TableProvider>,
    ) -> Result<Tabular, TrawlError> {
        let schema = provider.schema();
        let columns: Vec<(String, KqlType)> = schema
            .fields()
            .iter()
            .filter(|f| !trawl_common::shred::is_hidden_column(f.name()))
            .map(|f| (f.name().clone(), trawl_functions::types::kql_type_of(f)))
            .collect();
        // The plan keeps the hidden columns (shredded keys) until an operator builds new
        // columns; see `shredded`.
        let source = datafusion::datasource::provider_as_source(provider);
        let mut builder = LogicalPlanBuilder::scan(name, source, None).map_err(|e| internal(&e))?;
        if columns
            .iter()
            .any(|(n, t)| n == trawl_common::TIME_COLUMN && *t == KqlType::DateTime)
        {
            let time = column(trawl_common::TIME_COLUMN);
            if let Some(since) = self.options.since {
                builder = builder
                    .filter(time.clone().gt_eq(crate::scalar::datetime_literal(since)))
                    .map_err(|e| internal(&e))?;
            }
            if let Some(until) = self.options.until {
                builder = builder
                    .filter(time.lt(crate::scalar::datetime_literal(until)))
                    .map_err(|e| internal(&e))?;
            }
        }
        // Columns are referenced unqualified (`column()`), so the scan's qualifier is harmless.
        let plan = builder.build().map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }
}

/// An internal planning failure (a DataFusion error on a plan we built).
pub fn internal(error: &datafusion::error::DataFusionError) -> TrawlError {
    TrawlError::new(ErrorCode::Internal, format!("planning failed: {error}"))
}
