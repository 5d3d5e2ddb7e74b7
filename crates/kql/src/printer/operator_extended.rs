//! Printing the operators beyond filtering and projection (everything after the name).

use std::fmt::{self, Formatter};

use super::expr::ExprContext;
use super::operator::write_params;
use super::write_list;
use crate::ast::{ExpandItem, Expr, Join, NamedExpr, Operator, OperatorKind, Parse, ParsePart, SeriesRange, SortOrder};

fn write_named_list(f: &mut Formatter<'_>, items: &[NamedExpr]) -> fmt::Result {
    write_list(f, items, |f, item| write!(f, "{item}"))
}

fn write_operators(f: &mut Formatter<'_>, operators: &[Operator]) -> fmt::Result {
    f.write_str("(")?;
    for (index, operator) in operators.iter().enumerate() {
        if index > 0 {
            f.write_str(" | ")?;
        }
        write!(f, "{operator}")?;
    }
    f.write_str(")")
}

fn write_expand_items(f: &mut Formatter<'_>, items: &[ExpandItem], limit: &Option<Expr>) -> fmt::Result {
    f.write_str(" ")?;
    write_list(f, items, |f, item| {
        write!(f, "{}", item.expr)?;
        match item.to_type {
            Some(ty) => write!(f, " to typeof({ty})"),
            None => Ok(()),
        }
    })?;
    match limit {
        Some(limit) => write!(f, " limit {}", ExprContext::scalar(limit)),
        None => Ok(()),
    }
}

fn write_join(f: &mut Formatter<'_>, join: &Join) -> fmt::Result {
    write_params(f, &join.params)?;
    write!(f, " {} on ", ExprContext::primary(&join.right))?;
    write_list(f, &join.on, |f, condition| {
        write!(f, "{}", ExprContext::at_equality(condition))
    })
}

fn write_parse(f: &mut Formatter<'_>, parse: &Parse) -> fmt::Result {
    write_params(f, &parse.params)?;
    write!(f, " {} with", ExprContext::scalar(&parse.source))?;
    for part in &parse.pattern {
        f.write_str(" ")?;
        match part {
            ParsePart::Text { text, .. } => super::literal::write_string(f, text)?,
            ParsePart::Wildcard { .. } => f.write_str("*")?,
            ParsePart::Column { name, ty: Some(ty), .. } => write!(f, "{name}:{ty}")?,
            ParsePart::Column { name, ty: None, .. } => write!(f, "{name}")?,
        }
    }
    Ok(())
}

fn write_with_options(f: &mut Formatter<'_>, options: &[NamedExpr]) -> fmt::Result {
    if options.is_empty() {
        return Ok(());
    }
    f.write_str(" with (")?;
    write_named_list(f, options)?;
    f.write_str(")")
}

/// Everything after the operator name, for the operators of this module.
pub(crate) fn write_operator_body(f: &mut Formatter<'_>, kind: &OperatorKind) -> fmt::Result {
    match kind {
        OperatorKind::Print(items) | OperatorKind::Serialize(items) => {
            if !items.is_empty() {
                f.write_str(" ")?;
                write_named_list(f, items)?;
            }
            Ok(())
        }
        OperatorKind::Datatable(table) => {
            f.write_str("(")?;
            write_list(f, &table.columns, |f, column| {
                write!(f, "{}:{}", column.name, column.ty)
            })?;
            f.write_str(") [")?;
            write_list(f, &table.values, |f, value| write!(f, "{}", ExprContext::scalar(value)))?;
            f.write_str("]")
        }
        OperatorKind::Range(range) => write!(
            f,
            " {} from {} to {} step {}",
            range.column,
            ExprContext::scalar(&range.from),
            ExprContext::scalar(&range.to),
            ExprContext::scalar(&range.step)
        ),
        OperatorKind::Union(union) => {
            write_params(f, &union.params)?;
            f.write_str(" ")?;
            write_list(f, &union.tables, write_table_or_pattern)
        }
        OperatorKind::Join(join) | OperatorKind::Lookup(join) => write_join(f, join),
        OperatorKind::As(as_operator) => {
            write_params(f, &as_operator.params)?;
            write!(f, " {}", as_operator.name)
        }
        OperatorKind::MvExpand(expand) => {
            write_params(f, &expand.params)?;
            write_expand_items(f, &expand.items, &expand.limit)
        }
        OperatorKind::MvApply(apply) => {
            write_params(f, &apply.params)?;
            write_expand_items(f, &apply.items, &apply.limit)?;
            f.write_str(" on ")?;
            write_operators(f, &apply.subquery)
        }
        OperatorKind::Parse(parse) | OperatorKind::ParseWhere(parse) => write_parse(f, parse),
        OperatorKind::ParseKv(parse) => {
            write!(f, " {} as (", ExprContext::scalar(&parse.source))?;
            write_list(f, &parse.columns, |f, column| {
                write!(f, "{}:{}", column.name, column.ty)
            })?;
            f.write_str(")")?;
            write_with_options(f, &parse.options)
        }
        OperatorKind::MakeSeries(series) => {
            write_params(f, &series.params)?;
            f.write_str(" ")?;
            write_list(f, &series.aggregates, |f, aggregate| {
                write!(f, "{}", aggregate.aggregate)?;
                match &aggregate.default {
                    Some(default) => write!(f, " default = {}", ExprContext::scalar(default)),
                    None => Ok(()),
                }
            })?;
            write!(f, " on {}", ExprContext::at_relational(&series.on))?;
            match &series.range {
                SeriesRange::InRange { start, stop, step } => write!(
                    f,
                    " in range({}, {}, {})",
                    ExprContext::scalar(start),
                    ExprContext::scalar(stop),
                    ExprContext::scalar(step)
                )?,
                SeriesRange::FromTo { from, to, step } => {
                    if let Some(from) = from {
                        write!(f, " from {}", ExprContext::scalar(from))?;
                    }
                    if let Some(to) = to {
                        write!(f, " to {}", ExprContext::scalar(to))?;
                    }
                    write!(f, " step {}", ExprContext::scalar(step))?;
                }
            }
            if !series.by.is_empty() {
                f.write_str(" by ")?;
                write_named_list(f, &series.by)?;
            }
            Ok(())
        }
        OperatorKind::Render(render) => {
            write!(f, " {}", render.chart)?;
            write_with_options(f, &render.properties)
        }
        OperatorKind::TopNested(levels) => {
            for (index, level) in levels.iter().enumerate() {
                if index > 0 {
                    f.write_str(", top-nested")?;
                }
                if let Some(count) = &level.count {
                    write!(f, " {}", ExprContext::scalar(count))?;
                }
                write!(f, " of {}", level.of)?;
                if let Some(others) = &level.with_others {
                    write!(f, " with others = {}", ExprContext::scalar(others))?;
                }
                write!(f, " by {}", level.by)?;
                match level.order {
                    Some(SortOrder::Asc) => f.write_str(" asc")?,
                    Some(SortOrder::Desc) => f.write_str(" desc")?,
                    None => {}
                }
            }
            Ok(())
        }
        OperatorKind::Evaluate(evaluate) => {
            write_params(f, &evaluate.params)?;
            write!(f, " {}", ExprContext::primary(&evaluate.call))?;
            match &evaluate.output_schema {
                Some(schema) => {
                    f.write_str(" : (")?;
                    let mut parts: Vec<String> = schema
                        .columns
                        .iter()
                        .map(|column| format!("{}:{}", column.name, column.ty))
                        .collect();
                    if schema.open {
                        parts.insert(0, "*".to_string());
                    }
                    write!(f, "{})", parts.join(", "))
                }
                None => Ok(()),
            }
        }
        OperatorKind::FieldStats(items) if items.is_empty() => Ok(()),
        OperatorKind::OtelLogStats => Ok(()),
        OperatorKind::Facet(facet) => {
            f.write_str(" by ")?;
            write_list(f, &facet.columns, |f, column| write!(f, "{column}"))?;
            if let Some(with) = &facet.with {
                f.write_str(" with ")?;
                write_operators(f, with)?;
            }
            Ok(())
        }
        OperatorKind::Consume(params) => write_params(f, params),
        OperatorKind::GraphMarkComponents(params) => write_params(f, params),
        OperatorKind::GraphToTable(table) => {
            for (i, part) in table.parts.iter().enumerate() {
                f.write_str(if i == 0 { " " } else { ", " })?;
                write!(f, "{}", part.what)?;
                if let Some(alias) = &part.alias {
                    write!(f, " as {alias}")?;
                }
                write_params(f, &part.params)?;
            }
            Ok(())
        }
        OperatorKind::MakeGraph(graph) => {
            let arrow = if graph.directed { "-->" } else { "--" };
            write!(f, " {} {arrow} {}", graph.source, graph.target)?;
            if let Some(id) = &graph.node_id {
                write!(f, " with_node_id={id}")?;
            }
            for (i, (table, key)) in graph.nodes.iter().enumerate() {
                f.write_str(if i == 0 { " with " } else { ", " })?;
                write!(f, "{} on {key}", ExprContext::primary(table))?;
            }
            Ok(())
        }
        OperatorKind::GraphMatch(graph) | OperatorKind::GraphShortestPaths(graph) => {
            write_params(f, &graph.params)?;
            for (i, pattern) in graph.patterns.iter().enumerate() {
                f.write_str(if i == 0 { " " } else { ", " })?;
                for (j, node) in pattern.nodes.iter().enumerate() {
                    if j > 0
                        && let Some(edge) = pattern.edges.get(j - 1)
                    {
                        let name = edge.name.as_ref().map(|n| n.to_string()).unwrap_or_default();
                        let range = edge.range.map(|(a, b)| format!("*{a}..{b}")).unwrap_or_default();
                        let (left, right) = match edge.direction {
                            crate::ast::EdgeDirection::Forward => ("-", "->"),
                            crate::ast::EdgeDirection::Backward => ("<-", "-"),
                            crate::ast::EdgeDirection::Any => ("-", "-"),
                        };
                        write!(f, "{left}[{name}{range}]{right}")?;
                    }
                    let name = node.as_ref().map(|n| n.to_string()).unwrap_or_default();
                    write!(f, "({name})")?;
                }
            }
            if let Some(condition) = &graph.condition {
                write!(f, " where {}", ExprContext::full(condition))?;
            }
            if !graph.project.is_empty() {
                f.write_str(" project ")?;
                write_named_list(f, &graph.project)?;
            }
            Ok(())
        }
        OperatorKind::TraceFind(find) => {
            for (i, spanset) in find.spansets.iter().enumerate() {
                if i > 0 {
                    let relation = find.relations.get(i - 1).map_or("::", |r| r.symbol());
                    write!(f, " {relation}")?;
                }
                write!(f, " {{ {} }}", ExprContext::full(spanset))?;
            }
            if let Some(within) = &find.within {
                write!(f, " within {}", ExprContext::scalar(within))?;
            }
            Ok(())
        }
        OperatorKind::Annotate(items) => {
            f.write_str(" ")?;
            for (i, (path, ty)) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{}:{ty}", ExprContext::scalar(path))?;
            }
            Ok(())
        }
        OperatorKind::FieldStats(items) | OperatorKind::ProjectByNames(items) => {
            f.write_str(" ")?;
            write_list(f, items, |f, item| write!(f, "{}", ExprContext::scalar(item)))
        }
        OperatorKind::Reduce(reduce) => {
            write_params(f, &reduce.params)?;
            write!(f, " by {}", ExprContext::scalar(&reduce.by))?;
            if !reduce.options.is_empty() {
                f.write_str(" with ")?;
                write_named_list(f, &reduce.options)?;
            }
            Ok(())
        }
        OperatorKind::Invoke(call) => write!(f, " {}", ExprContext::primary(call)),
        OperatorKind::Search(search) => {
            write_params(f, &search.params)?;
            if !search.tables.is_empty() {
                f.write_str(" in (")?;
                write_list(f, &search.tables, |f, table| {
                    write!(f, "{}", ExprContext::primary(table))
                })?;
                f.write_str(")")?;
            }
            write!(f, " {}", ExprContext::scalar(&search.predicate))
        }
        OperatorKind::Find(find) => {
            write_params(f, &find.params)?;
            if !find.tables.is_empty() {
                f.write_str(" in (")?;
                write_list(f, &find.tables, write_table_or_pattern)?;
                f.write_str(")")?;
            }
            write!(f, " where {}", ExprContext::scalar(&find.predicate))?;
            if let Some(project) = &find.project {
                f.write_str(" project ")?;
                let mut first = true;
                for (name, ty) in &project.columns {
                    if !first {
                        f.write_str(", ")?;
                    }
                    first = false;
                    write!(f, "{name}")?;
                    if let Some(ty) = ty {
                        write!(f, ":{}", ty.name())?;
                    }
                }
                if project.pack_all {
                    f.write_str(if first { "pack_all()" } else { ", pack_all()" })?;
                }
            }
            Ok(())
        }
        OperatorKind::Fork(branches) => {
            for branch in branches {
                f.write_str(" ")?;
                if let Some(name) = &branch.name {
                    write!(f, "{name} = ")?;
                }
                write_operators(f, &branch.operators)?;
            }
            Ok(())
        }
        OperatorKind::Partition(partition) => {
            write_params(f, &partition.params)?;
            write!(f, " by {} ", ExprContext::scalar(&partition.by))?;
            match &partition.legacy {
                Some(source) => write!(f, "{{ {} }}", ExprContext::full(source)),
                None => write_operators(f, &partition.subquery),
            }
        }
        OperatorKind::Scan(scan) => {
            write_params(f, &scan.params)?;
            if !scan.declare.is_empty() {
                f.write_str(" declare (")?;
                write_list(f, &scan.declare, |f, param| {
                    write!(f, "{}:", param.name)?;
                    if let crate::ast::ParamType::Scalar(ty) = &param.ty {
                        write!(f, "{ty}")?;
                    }
                    match &param.default {
                        Some(default) => write!(f, " = {}", ExprContext::scalar(default)),
                        None => Ok(()),
                    }
                })?;
                f.write_str(")")?;
            }
            f.write_str(" with (")?;
            for step in &scan.steps {
                write!(f, "\n    step {}", step.name)?;
                if let Some(output) = &step.output {
                    write!(f, " output={output}")?;
                }
                write!(f, ": {}", ExprContext::scalar(&step.condition))?;
                if !step.assignments.is_empty() {
                    f.write_str(" => ")?;
                    write_named_list(f, &step.assignments)?;
                }
                f.write_str(";")?;
            }
            f.write_str("\n)")
        }
        OperatorKind::Sample(count) => write!(f, " {}", ExprContext::scalar(count)),
        OperatorKind::SampleDistinct(sample) => {
            write!(
                f,
                " {} of {}",
                ExprContext::scalar(&sample.count),
                ExprContext::scalar(&sample.of)
            )
        }
        OperatorKind::TopHitters(hitters) => {
            write!(
                f,
                " {} of {}",
                ExprContext::scalar(&hitters.count),
                ExprContext::scalar(&hitters.of)
            )?;
            match &hitters.by {
                Some(by) => write!(f, " by {}", ExprContext::scalar(by)),
                None => Ok(()),
            }
        }
        OperatorKind::GetSchema => Ok(()),
        _ => Ok(()),
    }
}

/// A table operand, or a name pattern as it was written (`Log*`), not as a quoted name.
pub(crate) fn write_table_or_pattern(f: &mut Formatter<'_>, table: &Expr) -> fmt::Result {
    match &table.kind {
        crate::ast::ExprKind::Name(ident) if ident.name.contains('*') => f.write_str(&ident.name),
        _ => write!(f, "{}", ExprContext::primary(table)),
    }
}
