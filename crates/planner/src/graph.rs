//! `make-graph Source --> Target [with Nodes on Key, ...] [with_node_id = Name] | graph-match
//! [cycles = ...] pattern, ... [where condition] [project items]`, and `graph-shortest-paths
//! [output = any|all]` (the same patterns; per binding of the named nodes, only the matches with
//! the fewest edges that meet the condition: one, or all of them).
//!
//! The input's rows are the edges; node tables give nodes their properties (a node only an
//! edge names has just its key, under the first node table's key column or `with_node_id`'s
//! name). The matching runs in the `__graph_match` aggregate over the rows of the edges and the
//! nodes, each packed into a bag; every match comes back as a bag of its named nodes and edges,
//! which the `where` condition and the `project` items read as dynamic values (`a.name`,
//! `e.weight`). Calls over a variable-length edge's steps — `all(e, condition)`, `any(e,
//! condition)`, `map(e, value)`, the same over `inner_nodes(e)` — are computed per edge (or
//! node) row before matching and combined per match; `inner_nodes(e)` is the array of the nodes
//! inside the path, `node_degree_in(n)`/`node_degree_out(n)` the node's edge counts.

use base64::Engine as _;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, lit};
use serde_json::{Value, json};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{EdgeDirection, Expr as KExpr, ExprKind, GraphMatch, Ident, MakeGraph};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, column, internal};
use crate::rolling::INPUT;

/// A call over the steps (or inner nodes) of an edge variable, computed per row.
struct StepAggregate {
    field: String,
    edge: String,
    op: &'static str,
    inner: bool,
    value: KExpr,
    /// A field every node bag has (`node_degree_in()` of an inner node), read as it is.
    node_field: Option<String>,
}

fn name_expr(name: &str, span: Span) -> KExpr {
    KExpr::new(ExprKind::Name(Ident::new(name, span)), span)
}

fn call(function: &str, args: Vec<KExpr>, span: Span) -> KExpr {
    KExpr::new(
        ExprKind::Call {
            function: Ident::new(function, span),
            args,
        },
        span,
    )
}

/// The bag of every column of `input` (`pack_all()`), with `kind`, source and target keys.
fn graph_rows(
    planner: &mut Planner<'_>,
    input: &Tabular,
    kind: i64,
    source: Expr,
    target: Expr,
    span: Span,
) -> Result<Tabular, TrawlError> {
    let bag = planner.scalar(&call("pack_all", Vec::new(), span), input)?;
    let plan = input
        .builder()
        .project(vec![
            lit(kind).alias("kind"),
            source.alias("src"),
            target.alias("dst"),
            bag.expr.alias("bag"),
        ])
        .and_then(|b| b.build())
        .map_err(|e| internal(&e))?;
    Ok(Tabular {
        plan,
        columns: vec![
            ("kind".into(), KqlType::Long),
            ("src".into(), KqlType::String),
            ("dst".into(), KqlType::String),
            ("bag".into(), KqlType::Dynamic),
        ],
    })
}

impl Planner<'_> {
    pub(crate) fn graph_match(
        &mut self,
        edges: Tabular,
        make: &MakeGraph,
        matching: &GraphMatch,
        shortest: bool,
        components: Option<&[trawl_kql::ast::OperatorParam]>,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        for column in [&make.source, &make.target] {
            if edges.column_type(&column.name).is_none() {
                return Err(self.unknown_column(&column.name, column.span, &edges));
            }
        }
        let cycles = match shortest {
            // A shortest path never comes back to a node.
            true => Some("none".to_string()),
            false => crate::joins::param_word(&matching.params, "cycles"),
        };
        let output = crate::joins::param_word(&matching.params, "output").unwrap_or_else(|| "any".into());
        if shortest && !matches!(output.as_str(), "any" | "all") {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("unknown output '{output}': expected any or all"),
            ));
        }
        if let Some(mode) = &cycles
            && !matches!(mode.as_str(), "all" | "none" | "unique_edges")
        {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("unknown cycles mode '{mode}': expected all, none or unique_edges"),
            ));
        }
        // The pattern's names.
        let mut edge_names: Vec<(String, bool)> = Vec::new();
        let mut node_names: Vec<String> = Vec::new();
        for pattern in &matching.patterns {
            for node in pattern.nodes.iter().flatten() {
                if !node_names.contains(&node.name) {
                    node_names.push(node.name.clone());
                }
            }
            for edge in &pattern.edges {
                if let Some(name) = &edge.name {
                    if edge_names.iter().any(|(n, _)| *n == name.name) || node_names.contains(&name.name) {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            name.span,
                            format!("the pattern names '{}' twice", name.name),
                        ));
                    }
                    edge_names.push((name.name.clone(), edge.range.is_some()));
                }
            }
        }
        // Node tables, or the nodes the edges name.
        let mut node_tables: Vec<(Tabular, String)> = Vec::new();
        for (table, key) in &make.nodes {
            let tabular = self.tabular(table)?;
            if tabular.column_type(&key.name).is_none() {
                return Err(self.unknown_column(&key.name, key.span, &tabular));
            }
            node_tables.push((tabular, key.name.clone()));
        }
        let node_key = make
            .node_id
            .as_ref()
            .map(|i| i.name.clone())
            .or_else(|| node_tables.first().map(|(_, key)| key.clone()));
        if node_tables.is_empty() {
            let key = node_key.clone().unwrap_or_else(|| "__node_id".into());
            let ends = |end: &str| -> Result<LogicalPlanBuilder, TrawlError> {
                edges
                    .builder()
                    .project(vec![
                        crate::scalar::to_string(crate::context::Typed::new(
                            column(end),
                            edges.column_type(end).unwrap_or(KqlType::String),
                        ))
                        .alias(&key),
                    ])
                    .map_err(|e| internal(&e))
            };
            let plan = ends(&make.source.name)?
                .union(ends(&make.target.name)?.build().map_err(|e| internal(&e))?)
                .and_then(|b| b.distinct())
                .and_then(|b| b.build())
                .map_err(|e| internal(&e))?;
            node_tables.push((
                Tabular {
                    plan,
                    columns: vec![(key.clone(), KqlType::String)],
                },
                key,
            ));
        }
        if let Some(params) = components {
            node_tables = self.mark_components(&edges, make, node_tables, params)?;
        }
        // Calls over steps, inner nodes and degrees, replaced by the fields each match carries.
        let mut aggregates: Vec<StepAggregate> = Vec::new();
        let mut inner_nodes: Vec<String> = Vec::new();
        let is_edge = |e: &KExpr| match &e.kind {
            ExprKind::Name(n) if edge_names.iter().any(|(name, _)| *name == n.name) => Some(n.name.clone()),
            _ => None,
        };
        // `node.property` and `edge.property` read as the property's column type.
        let typed_property = |e: &KExpr| -> Option<KExpr> {
            let ExprKind::Member { target, member } = &e.kind else {
                return None;
            };
            let ExprKind::Name(variable) = &target.kind else {
                return None;
            };
            let kql_type = if node_names.contains(&variable.name) {
                node_tables.iter().find_map(|(t, _)| t.column_type(&member.name))?
            } else if edge_names
                .iter()
                .any(|(n, variable_length)| *n == variable.name && !variable_length)
            {
                edges.column_type(&member.name)?
            } else {
                return None;
            };
            let convert = match kql_type {
                KqlType::String => "tostring",
                KqlType::Long => "tolong",
                KqlType::Int => "toint",
                KqlType::Real => "toreal",
                KqlType::Bool => "tobool",
                KqlType::DateTime => "todatetime",
                KqlType::Timespan => "totimespan",
                KqlType::Guid => "toguid",
                _ => return None,
            };
            Some(call(convert, vec![e.clone()], e.span))
        };
        let mut rewrite = |e: &KExpr| -> Option<KExpr> {
            if let Some(typed) = typed_property(e) {
                return Some(typed);
            }
            let ExprKind::Call { function, args } = &e.kind else {
                return None;
            };
            match (function.name.as_str(), args.as_slice()) {
                (op @ ("all" | "any" | "map"), [steps, value]) => {
                    let (edge, inner) = match &steps.kind {
                        ExprKind::Call { function, args } if function.name == "inner_nodes" => {
                            (args.first().and_then(is_edge)?, true)
                        }
                        _ => (is_edge(steps)?, false),
                    };
                    let field = format!("__agg{}", aggregates.len());
                    let node_field = match &value.kind {
                        ExprKind::Call { function, args }
                            if inner
                                && args.is_empty()
                                && matches!(function.name.as_str(), "node_degree_in" | "node_degree_out") =>
                        {
                            Some(format!("__{}", &function.name["node_".len()..]))
                        }
                        _ => None,
                    };
                    aggregates.push(StepAggregate {
                        field: field.clone(),
                        edge,
                        op: match op {
                            "all" => "all",
                            "any" => "any",
                            _ => "map",
                        },
                        inner,
                        value: value.clone(),
                        node_field,
                    });
                    Some(name_expr(&field, e.span))
                }
                ("inner_nodes", [steps]) => {
                    let edge = is_edge(steps)?;
                    if !inner_nodes.contains(&edge) {
                        inner_nodes.push(edge.clone());
                    }
                    Some(name_expr(&format!("__inner_{edge}"), e.span))
                }
                (degree @ ("node_degree_in" | "node_degree_out"), [node]) => {
                    let ExprKind::Name(_) = &node.kind else { return None };
                    let member = KExpr::new(
                        ExprKind::Member {
                            target: Box::new(node.clone()),
                            member: Ident::new(format!("__{}", &degree["node_".len()..]), e.span),
                        },
                        e.span,
                    );
                    Some(call("tolong", vec![member], e.span))
                }
                _ => None,
            }
        };
        let condition = matching.condition.as_ref().map(|c| c.rewritten(&mut rewrite));
        let items: Vec<(String, KExpr)> = if matching.project.is_empty() {
            node_names
                .iter()
                .chain(edge_names.iter().map(|(n, _)| n))
                .map(|n| (n.clone(), name_expr(n, span)))
                .collect()
        } else {
            matching
                .project
                .iter()
                .enumerate()
                .map(|(position, item)| {
                    let name = match (item.name(), &item.expr.kind) {
                        (Some(name), _) => name.name.clone(),
                        (None, ExprKind::Call { function, .. })
                            if matches!(function.name.as_str(), "node_degree_in" | "node_degree_out") =>
                        {
                            function.name.clone()
                        }
                        (None, _) => crate::names::default_name(&item.expr, position + 1),
                    };
                    (name, item.expr.rewritten(&mut rewrite))
                })
                .collect()
        };
        // Per-row values of the step calls, then every row packed.
        let mut edge_values: Vec<(String, Expr, KqlType)> = Vec::new();
        let mut node_values: Vec<Vec<(String, Expr, KqlType)>> = vec![Vec::new(); node_tables.len()];
        for (k, aggregate) in aggregates.iter().enumerate() {
            if aggregate.node_field.is_some() {
                continue;
            }
            let column = format!("__v{k}");
            let lower = |planner: &mut Self, input: &Tabular| -> Result<(Expr, KqlType), TrawlError> {
                let typed = planner.scalar(&aggregate.value, input)?;
                Ok(if aggregate.op == "map" {
                    (crate::scalar::to_dynamic(typed), KqlType::Dynamic)
                } else {
                    (planner.boolean(typed, &aggregate.value)?, KqlType::Bool)
                })
            };
            if aggregate.inner {
                for (i, (table, _)) in node_tables.clone().iter().enumerate() {
                    let (expr, kql_type) = lower(self, table)?;
                    node_values[i].push((column.clone(), expr, kql_type));
                }
            } else {
                let (expr, kql_type) = lower(self, &edges)?;
                edge_values.push((column, expr, kql_type));
            }
        }
        let key_text = |t: &Tabular, name: &str| {
            crate::scalar::to_string(crate::context::Typed::new(
                column(name),
                t.column_type(name).unwrap_or(KqlType::String),
            ))
        };
        let edges_ext = edges.extended(
            edge_values
                .iter()
                .map(|(n, e, t)| (n.as_str(), e.clone(), *t))
                .collect(),
        )?;
        let mut rows = graph_rows(
            self,
            &edges_ext,
            1,
            key_text(&edges, &make.source.name),
            key_text(&edges, &make.target.name),
            span,
        )?;
        for (i, (table, key)) in node_tables.iter().enumerate() {
            let table_ext = table.extended(
                node_values[i]
                    .iter()
                    .map(|(n, e, t)| (n.as_str(), e.clone(), *t))
                    .collect(),
            )?;
            let nodes = graph_rows(self, &table_ext, 0, key_text(table, key), lit(""), span)?;
            let plan = rows
                .builder()
                .union(nodes.plan)
                .and_then(|b| b.build())
                .map_err(|e| internal(&e))?;
            rows = Tabular {
                plan,
                columns: rows.columns,
            };
        }
        // The specification the aggregate reads.
        let patterns: Vec<Value> = matching
            .patterns
            .iter()
            .map(|p| {
                json!({
                    "nodes": p.nodes.iter().map(|n| n.as_ref().map(|i| i.name.clone())).collect::<Vec<_>>(),
                    "edges": p.edges.iter().map(|e| {
                        let (min, max) = e.range.unwrap_or((1, 1));
                        json!({
                            "name": e.name.as_ref().map(|i| i.name.clone()),
                            "dir": match e.direction {
                                EdgeDirection::Forward => "f",
                                EdgeDirection::Backward => "b",
                                EdgeDirection::Any => "a",
                            },
                            "min": min,
                            "max": max,
                            "variable": e.range.is_some(),
                        })
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        let spec = json!({
            "directed": make.directed,
            "cycles": cycles,
            "patterns": patterns,
            "node_key": node_key,
            "aggregates": aggregates.iter().enumerate().map(|(k, a)| json!({
                "field": a.field, "edge": a.edge, "op": a.op, "inner": a.inner,
                "value": a.node_field.clone().unwrap_or_else(|| format!("__v{k}")),
            })).collect::<Vec<_>>(),
            "inner_nodes": inner_nodes,
            "shortest": shortest,
        });
        let encoded = base64::engine::general_purpose::STANDARD.encode(spec.to_string());
        let mut fields: Vec<String> = node_names
            .iter()
            .chain(edge_names.iter().map(|(n, _)| n))
            .map(|n| crate::names::bracketed(n))
            .collect();
        fields.extend(aggregates.iter().map(|a| a.field.clone()));
        fields.extend(inner_nodes.iter().map(|e| format!("__inner_{e}")));
        let extend: Vec<String> = fields.iter().map(|f| format!("{f} = __r[{}]", quoted(f))).collect();
        let mut text = format!(
            "{INPUT} | summarize __g = __graph_match(kind, src, dst, bag, '{encoded}') \
             | mv-expand __r = __g | extend {}",
            extend.join(", ")
        );
        if shortest {
            text.push_str(", __length = tolong(__r['__length']), __group = tostring(__r['__group'])");
        }
        if let Some(condition) = &condition {
            text.push_str(&format!(" | where {condition}"));
        }
        if shortest && output == "any" {
            text.push_str(
                " | sort by __group asc, __length asc \
                 | extend __rank = row_number(1, __group != prev(__group)) | where __rank == 1",
            );
        } else if shortest {
            text.push_str(
                " | as __matched \
                 | join kind=inner (__matched | summarize __shortest = min(__length) by __group) on __group \
                 | where __length == __shortest",
            );
        }
        let projected: Vec<String> = items
            .iter()
            .map(|(name, expr)| format!("{} = {expr}", crate::names::bracketed(name)))
            .collect();
        text.push_str(&format!(" | project {}", projected.join(", ")));
        self.lowered(rows, "graph-match", &text, span)
    }
}

impl Planner<'_> {
    /// `make-graph ... | graph-to-table nodes [with_node_id = C]` or `edges [with_source_id = S]
    /// [with_target_id = T]`: the graph's nodes (the node tables' rows, then the nodes only an
    /// edge names, with just their key) or its edges (the input's rows). Ids are
    /// `hash(tostring(key))`.
    pub(crate) fn graph_to_table(
        &mut self,
        edges: Tabular,
        make: &MakeGraph,
        table: &trawl_kql::ast::GraphToTable,
        components: Option<&[trawl_kql::ast::OperatorParam]>,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let [part] = table.parts.as_slice() else {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "graph-to-table returns one table: ask for nodes or for edges",
            ));
        };
        let named = |name: &str| -> Result<Option<String>, TrawlError> {
            match part.params.iter().find(|p| p.name.eq_ignore_ascii_case(name)) {
                None => Ok(None),
                Some(param) => match &param.value.kind {
                    ExprKind::Name(ident) => Ok(Some(crate::names::bracketed(&ident.name))),
                    _ => Err(self.error(
                        ErrorCode::BadRequest,
                        param.value.span,
                        format!("{name} takes a column name"),
                    )),
                },
            }
        };
        let (node_id, source_id, target_id) = (
            named("with_node_id")?,
            named("with_source_id")?,
            named("with_target_id")?,
        );
        for column in [&make.source, &make.target] {
            if edges.column_type(&column.name).is_none() {
                return Err(self.unknown_column(&column.name, column.span, &edges));
            }
        }
        let (src, dst) = (
            crate::names::bracketed(&make.source.name),
            crate::names::bracketed(&make.target.name),
        );
        let text = match part.what.name.to_ascii_lowercase().as_str() {
            "edges" => {
                let mut text = INPUT.to_string();
                let mut first = Vec::new();
                if let Some(source_id) = source_id {
                    text.push_str(&format!(" | extend {source_id} = hash(tostring({src}))"));
                    first.push(source_id);
                }
                if let Some(target_id) = target_id {
                    text.push_str(&format!(" | extend {target_id} = hash(tostring({dst}))"));
                    first.push(target_id);
                }
                if !first.is_empty() {
                    text.push_str(&format!(" | project-reorder {}", first.join(", ")));
                }
                text
            }
            "nodes" => {
                let ends = format!(
                    "{INPUT} | project __k = tostring({src}) | union ({INPUT} | project __k = tostring({dst})) \
                     | distinct __k"
                );
                let (key, mut text) = match make.nodes.as_slice() {
                    [] => {
                        let key = make
                            .node_id
                            .as_ref()
                            .map_or("__node_id".to_string(), |i| i.name.clone());
                        let key = crate::names::bracketed(&key);
                        (key.clone(), format!("{ends} | project {key} = __k"))
                    }
                    [(nodes, key)] => {
                        let tabular = self.tabular(nodes)?;
                        let Some(kql_type) = tabular.column_type(&key.name) else {
                            return Err(self.unknown_column(&key.name, key.span, &tabular));
                        };
                        let convert = match kql_type {
                            KqlType::Long => "tolong",
                            KqlType::Int => "toint",
                            KqlType::Real => "toreal",
                            KqlType::Bool => "tobool",
                            KqlType::DateTime => "todatetime",
                            KqlType::Guid => "toguid",
                            _ => "tostring",
                        };
                        let key = crate::names::bracketed(&key.name);
                        let text = format!(
                            "union ({nodes}), ({ends} | join kind=leftanti ({nodes} | project __k = tostring({key})) on __k \
                             | project {key} = {convert}(__k))"
                        );
                        (key, text)
                    }
                    _ => {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            span,
                            "graph-to-table nodes reads one node table here",
                        ));
                    }
                };
                if let Some(params) = components {
                    let (strong, name) = self.component_params(params)?;
                    let name = crate::names::bracketed(&name);
                    let node_rows = match make.nodes.first() {
                        Some((nodes, _)) => {
                            format!(", ({nodes} | project __s = tostring({key}), __d = tostring({key}))")
                        }
                        None => String::new(),
                    };
                    text.push_str(&format!(
                        " | extend {name} = toint(toscalar(union ({INPUT} | project __s = tostring({src}), \
                         __d = tostring({dst})){node_rows} | summarize __graph_components(__s, __d, {strong}))\
                         [tostring({key})])"
                    ));
                }
                if let Some(node_id) = node_id {
                    text.push_str(&format!(
                        " | extend {node_id} = hash(tostring({key})) | project-reorder {node_id}"
                    ));
                }
                text
            }
            other => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    part.what.span,
                    format!("graph-to-table returns nodes or edges, not '{other}'"),
                ));
            }
        };
        self.lowered(edges, "graph-to-table", &text, span)
    }
}

impl Planner<'_> {
    /// The node tables of a graph with each node's component (`graph-mark-components`) as a
    /// property: the `__graph_components` map over the edges and the node tables' keys.
    fn mark_components(
        &mut self,
        edges: &Tabular,
        make: &MakeGraph,
        node_tables: Vec<(Tabular, String)>,
        params: &[trawl_kql::ast::OperatorParam],
    ) -> Result<Vec<(Tabular, String)>, TrawlError> {
        let (strong, name) = self.component_params(params)?;
        let (src, dst) = (
            crate::names::bracketed(&make.source.name),
            crate::names::bracketed(&make.target.name),
        );
        let mut parts = vec![format!(
            "({INPUT} | project __s = tostring({src}), __d = tostring({dst}))"
        )];
        let mut bound = Vec::new();
        for (i, (table, key)) in node_tables.iter().enumerate() {
            let binding = format!("__graph_nodes_{i}");
            let key = crate::names::bracketed(key);
            parts.push(format!(
                "({binding} | project __s = tostring({key}), __d = tostring({key}))"
            ));
            bound.push((binding, table.clone()));
        }
        let map = format!(
            "toscalar(union {} | summarize __graph_components(__s, __d, {strong}))",
            parts.join(", ")
        );
        let mut marked = Vec::with_capacity(node_tables.len());
        for (table, key) in node_tables {
            let text = format!("print __c = toint({map}[tostring({})])", crate::names::bracketed(&key));
            let query = trawl_kql::parse(&text).map_err(|e| TrawlError::internal(e.message))?;
            let Some(trawl_kql::ast::StatementKind::Expr(KExpr {
                kind: ExprKind::TabularOperator(operator),
                ..
            })) = query.statements.last().map(|s| &s.kind)
            else {
                return Err(TrawlError::internal("graph-mark-components could not be lowered"));
            };
            let trawl_kql::ast::OperatorKind::Print(items) = &operator.kind else {
                return Err(TrawlError::internal("graph-mark-components could not be lowered"));
            };
            let Some(item) = items.first() else {
                return Err(TrawlError::internal("graph-mark-components could not be lowered"));
            };
            let mut previous = Vec::new();
            for (binding, tabular) in &bound {
                previous.push((
                    binding.clone(),
                    self.bindings
                        .insert(binding.clone(), crate::context::Binding::Tabular(tabular.clone())),
                ));
            }
            let component = self.with_input(INPUT, edges.clone(), |p| p.scalar(&item.expr, &table));
            for (binding, old) in previous {
                match old {
                    Some(old) => self.bindings.insert(binding, old),
                    None => self.bindings.remove(&binding),
                };
            }
            let component = component?;
            marked.push((
                table.extended(vec![(name.as_str(), component.expr, KqlType::Int)])?,
                key,
            ));
        }
        Ok(marked)
    }

    /// `graph-mark-components`' `kind` (whether strong) and the component property's name
    /// (bracketed; `ComponentId` by default).
    fn component_params(&self, params: &[trawl_kql::ast::OperatorParam]) -> Result<(bool, String), TrawlError> {
        let mut strong = false;
        let mut name = "ComponentId".to_string();
        for param in params {
            let word = match &param.value.kind {
                ExprKind::Name(ident) => ident.name.clone(),
                ExprKind::Literal(trawl_kql::ast::Literal::String(text)) => text.clone(),
                _ => String::new(),
            };
            match param.name.to_ascii_lowercase().as_str() {
                "kind" => {
                    strong = match word.to_ascii_lowercase().as_str() {
                        "weak" => false,
                        "strong" => true,
                        _ => {
                            return Err(self.error(
                                ErrorCode::BadRequest,
                                param.value.span,
                                "graph-mark-components' kind is weak or strong",
                            ));
                        }
                    };
                }
                _ if word.is_empty() => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        param.value.span,
                        "with_component_id takes a property name",
                    ));
                }
                _ => name = word,
            }
        }
        Ok((strong, name))
    }
}

/// A field name (possibly bracketed) as a KQL string literal.
fn quoted(field: &str) -> String {
    let plain = field
        .strip_prefix("['")
        .and_then(|f| f.strip_suffix("']"))
        .map_or(field.to_string(), |f| f.replace("\\'", "'").replace("\\\\", "\\"));
    format!("'{}'", plain.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    use trawl_common::ErrorCode;

    const EDGES: &str = "let edges = datatable(src:string, dst:string, kind:string) ['a', 'b', 'x'];";

    fn plan(text: &str) -> Result<Vec<String>, trawl_common::TrawlError> {
        crate::testing::columns_of(&format!("{EDGES} {text}"))
    }

    fn code(text: &str) -> Option<ErrorCode> {
        crate::testing::error_code(&format!("{EDGES} {text}"))
    }

    #[test]
    fn binding_and_errors() {
        assert_eq!(
            plan("edges | make-graph src --> dst with_node_id=name | graph-match (a)-[e]->(b) project a.name, e.kind, node_degree_out(a)").ok(),
            Some(vec!["a_name".to_string(), "e_kind".into(), "node_degree_out".into()])
        );
        assert_eq!(
            plan("edges | make-graph src --> dst | graph-match (a)-[e*1..2]->(b)").ok(),
            Some(vec!["a".to_string(), "b".into(), "e".into()])
        );
        assert_eq!(code("edges | make-graph src --> dst"), Some(ErrorCode::BadRequest));
        assert_eq!(
            plan("edges | make-graph src --> dst | graph-mark-components with_component_id=c | graph-to-table nodes")
                .ok(),
            Some(vec!["__node_id".to_string(), "c".into()])
        );
        assert_eq!(
            code("edges | make-graph src --> dst | graph-mark-components | count"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("edges | make-graph src --> dst | graph-mark-components kind=sideways | graph-to-table nodes"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(code("edges | graph-match (a)-[e]->(b)"), Some(ErrorCode::BadRequest));
        assert_eq!(
            code("edges | make-graph nope --> dst | graph-match (a)-[e]->(b)"),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            code("edges | make-graph src --> dst | graph-match (a)-[a]->(b)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("edges | make-graph src --> dst | graph-match cycles=some (a)-[e]->(b)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("edges | make-graph src --> dst with (print x = 1) on name | graph-match (a)-[e]->(b)"),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            plan("edges | make-graph src --> dst | graph-to-table edges with_source_id=S").ok(),
            Some(vec!["S".to_string(), "src".into(), "dst".into(), "kind".into()])
        );
        assert_eq!(
            code("edges | make-graph src --> dst | graph-to-table nodes, edges"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code("edges | make-graph src --> dst | graph-to-table paths"),
            Some(ErrorCode::BadRequest)
        );
    }
}
