//! The operator a [`QueryWarning`] is about: the gRPC `QueryWarning`'s `operator_id`, and its
//! `branch_index` inside `fork` (docs/api.md, "QueryWarning").
//!
//! Operators are numbered from 1 as `POST /plan`'s `syntax_sexp` lists them
//! ([`trawl_kql::sexp::operator_nodes`]): per statement, each pipeline's source (a table, or
//! an operator that starts a pipeline, such as `range` or `union`) and then its operators, a
//! `let`'s pipeline included. What runs inside an operator's own arguments (a `join`'s right
//! side, a subquery, the branches of `fork`) is that operator's. 0 is no one operator.
//!
//! - A warning with a location (the planner's) is about the operator whose text holds it;
//!   inside a `fork`, `branch_index` is the branch holding it (from 1, in the order written).
//! - A warning found while a result table ran, without a location of its own, is about the
//!   statement that makes the table: `SummarizeMemoryLimit` is its (last) `summarize`,
//!   `MissingTimeFilter` the source reading the table the warning names,
//!   `OtelNegativeIncrement` the operator calling `otel_increase`, any other (such as
//!   `ResultTruncated`) the operator whose output the table is: the statement's last. For a
//!   table of a `fork` branch, `branch_index` is that branch.
//! - Any other warning (one from no table, such as `RunNotKept`) is about operator 0.
//!
//! This reads the query text only, so every face can say which operator a warning is about
//! with the events it already has (which table was running when the warning came).

use trawl_kql::ast::{ExprKind, OperatorKind, Query, StatementKind};
use trawl_kql::span::Span;

use crate::QueryWarning;

/// The operator a warning is about (see the module notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WarningOperator {
    /// From 1, as `syntax_sexp` lists the operators; 0: no one operator.
    pub operator_id: u32,
    /// The `fork` branch, from 1; `None` outside a fork.
    pub branch_index: Option<u32>,
}

/// The operators of one query, to say which one a warning is about.
#[derive(Debug, Clone, Default)]
pub struct WarningOperators {
    text: String,
    nodes: Vec<Node>,
    /// The query's result tables, in the order they run.
    tables: Vec<ResultTable>,
}

#[derive(Debug, Clone)]
struct Node {
    statement: usize,
    span: Span,
    name: &'static str,
    /// The name a source reads (a table, a `let` name).
    source: Option<String>,
    /// The spans of the branches, for a `fork`.
    branches: Vec<Span>,
}

#[derive(Debug, Clone, Copy)]
struct ResultTable {
    statement: usize,
    /// The `fork` branch making the table (from 1) and its span.
    branch: Option<(u32, Span)>,
}

impl WarningOperators {
    /// The operators of `text`; none (every warning about operator 0) when it does not parse.
    pub fn of(text: &str) -> WarningOperators {
        // The syntax tree is built and dropped on a grown stack when it is deep, as planning
        // does (`crate::plan_text`).
        stacker::maybe_grow(crate::limits::STACK_RED_ZONE, crate::limits::STACK_SEGMENT, || {
            let Ok(query) = trawl_kql::parse(text) else {
                return WarningOperators::default();
            };
            WarningOperators {
                text: text.to_string(),
                nodes: nodes(&query),
                tables: result_tables(&query),
            }
        })
    }

    /// The operator `warning` is about; `table` is the result table (from 0, in the order the
    /// tables ran) that was running when the warning came, if one was.
    pub fn operator_of(&self, warning: &QueryWarning, table: Option<usize>) -> WarningOperator {
        if let Some(location) = &warning.location {
            return self.at(location.start_byte);
        }
        let Some(table) = table.and_then(|index| self.tables.get(index)) else {
            return WarningOperator::default();
        };
        let statement: Vec<(usize, &Node)> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.statement == table.statement)
            .collect();
        let branch_text = table
            .branch
            .map(|(_, span)| self.text_of(span))
            .unwrap_or_default();
        let reads_named = |node: &Node| {
            node.source
                .as_ref()
                .is_some_and(|name| warning.message.contains(&format!("'{name}'")))
        };
        let last = statement.last().map(|(index, _)| *index);
        let found = match warning.kind.as_str() {
            "SummarizeMemoryLimit" if branch_text.contains("summarize") => last,
            "SummarizeMemoryLimit" => statement
                .iter()
                .rev()
                .find(|(_, node)| node.name == "summarize")
                .map(|(index, _)| *index),
            // The table may be read through a `let` of another statement.
            "MissingTimeFilter" => statement
                .iter()
                .find(|(_, node)| reads_named(node))
                .map(|(index, _)| *index)
                .or_else(|| self.nodes.iter().position(reads_named)),
            "OtelNegativeIncrement" if branch_text.contains("otel_increase") => last,
            "OtelNegativeIncrement" => statement
                .iter()
                .find(|(_, node)| self.text_of(node.span).contains("otel_increase"))
                .map(|(index, _)| *index),
            _ => None,
        };
        let Some(index) = found.or(last) else {
            return WarningOperator::default();
        };
        WarningOperator {
            operator_id: number(index),
            branch_index: table.branch.map(|(branch, _)| branch),
        }
    }

    /// The operator whose text holds byte `offset` (the innermost, were they nested).
    fn at(&self, offset: u32) -> WarningOperator {
        let holding = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, node)| node.span.start <= offset && offset < node.span.end.max(node.span.start + 1))
            .min_by_key(|(_, node)| node.span.end - node.span.start);
        let Some((index, node)) = holding else {
            return WarningOperator::default();
        };
        let branch_index = node
            .branches
            .iter()
            .position(|span| span.start <= offset && offset < span.end)
            .map(|position| number(position));
        WarningOperator {
            operator_id: number(index),
            branch_index,
        }
    }

    fn text_of(&self, span: Span) -> &str {
        self.text.get(span.start as usize..span.end as usize).unwrap_or_default()
    }
}

/// Number `index + 1`: operators and branches count from 1.
fn number(index: usize) -> u32 {
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

fn nodes(query: &Query) -> Vec<Node> {
    trawl_kql::sexp::operator_nodes(query)
        .into_iter()
        .map(|node| Node {
            statement: node.statement,
            span: node.span,
            name: node.name(),
            source: node.source.map(str::to_string),
            branches: match node.operator.map(|op| &op.kind) {
                Some(OperatorKind::Fork(branches)) => branches.iter().map(|branch| branch.span).collect(),
                _ => Vec::new(),
            },
        })
        .collect()
}

/// The result tables of `query` in the order they run, by the statement making each: a
/// statement makes one, except those ending in an operator that makes several (as
/// `Planner::plan_statements` plans them): a table per `fork` branch, `facet` one per column
/// (and one for `with`), `evaluate funnel_sequence` three, `evaluate preview` two, and
/// `graph-to-table` with two parts two when it is the last statement (none before).
fn result_tables(query: &Query) -> Vec<ResultTable> {
    let mut tables = Vec::new();
    for (index, statement) in query.statements.iter().enumerate() {
        let StatementKind::Expr(expr) = &statement.kind else {
            continue;
        };
        let tail = match &expr.kind {
            ExprKind::Pipeline { operators, .. } => operators.last().map(|op| &op.kind),
            _ => None,
        };
        let plugin = match tail {
            Some(OperatorKind::Evaluate(evaluate)) => match &evaluate.call.kind {
                ExprKind::Call { function, .. } => function.name.as_str(),
                _ => "",
            },
            _ => "",
        };
        let plain = ResultTable {
            statement: index,
            branch: None,
        };
        let count = match tail {
            Some(OperatorKind::Fork(branches)) => {
                for (position, branch) in branches.iter().enumerate() {
                    tables.push(ResultTable {
                        statement: index,
                        branch: Some((number(position), branch.span)),
                    });
                }
                0
            }
            Some(OperatorKind::Facet(facet)) => usize::from(facet.with.is_some()) + facet.columns.len(),
            Some(OperatorKind::Evaluate(_)) if plugin == "funnel_sequence" => 3,
            Some(OperatorKind::Evaluate(_)) if plugin == "preview" => 2,
            Some(OperatorKind::GraphToTable(table)) if table.parts.len() > 1 => {
                if index + 1 == query.statements.len() {
                    table.parts.len()
                } else {
                    0
                }
            }
            _ => 1,
        };
        tables.extend(std::iter::repeat_n(plain, count));
    }
    tables
}

#[cfg(test)]
mod tests {
    use trawl_common::error::Location;

    use super::*;

    fn warning(kind: &str, message: &str, location: Option<Location>) -> QueryWarning {
        QueryWarning {
            kind: kind.into(),
            message: message.into(),
            location,
        }
    }

    fn at(text: &str, fragment: &str) -> Option<Location> {
        let start = text.find(fragment)?;
        Some(Location::from_byte_range(text, start, start + fragment.len()))
    }

    fn id(operator_id: u32, branch_index: Option<u32>) -> WarningOperator {
        WarningOperator {
            operator_id,
            branch_index,
        }
    }

    #[test]
    fn a_located_warning_is_about_the_operator_holding_it() {
        let text = "let t = datatable(a: long)[1]; t | where a > 0 | fork (where a == 2 | take 1) hot = (count)";
        let operators = WarningOperators::of(text);
        // datatable 1 (the let's), source `t` 2, where 3, fork 4.
        let in_where = warning("DottedPathAdvice", "", at(text, "a > 0"));
        assert_eq!(operators.operator_of(&in_where, None), id(3, None));
        let in_second_branch = warning("DottedPathAdvice", "", at(text, "count"));
        assert_eq!(operators.operator_of(&in_second_branch, Some(1)), id(4, Some(2)));
        let in_first_branch = warning("DottedPathAdvice", "", at(text, "a == 2"));
        assert_eq!(operators.operator_of(&in_first_branch, None), id(4, Some(1)));
        let in_the_let = warning("DottedPathAdvice", "", at(text, "datatable"));
        assert_eq!(operators.operator_of(&in_the_let, None), id(1, None));
    }

    #[test]
    fn a_warning_while_a_table_ran_is_about_the_statement_making_it() {
        let text = "default | where x | summarize count() by k | take 5; \
                    spans | summarize otel_increase(v) by k | fork (summarize count() by k) (take 1)";
        let operators = WarningOperators::of(text);
        let truncated = warning("ResultTruncated", "the result of PrimaryResult was cut", None);
        assert_eq!(operators.operator_of(&truncated, Some(0)), id(4, None));
        let budget = warning("SummarizeMemoryLimit", "", None);
        assert_eq!(operators.operator_of(&budget, Some(0)), id(3, None));
        // The second statement: source 5, summarize 6, fork 7; a branch table per branch.
        assert_eq!(operators.operator_of(&budget, Some(1)), id(7, Some(1)));
        assert_eq!(operators.operator_of(&budget, Some(2)), id(6, Some(2)));
        assert_eq!(operators.operator_of(&truncated, Some(2)), id(7, Some(2)));
        let unbounded = warning("MissingTimeFilter", "the query reads all of table 'spans' (5.0 MB)", None);
        assert_eq!(operators.operator_of(&unbounded, Some(1)), id(5, Some(1)));
        assert_eq!(operators.operator_of(&unbounded, Some(0)), id(5, None), "the source of another statement");
        let elsewhere = warning("MissingTimeFilter", "the query reads all of table 'logs' (5.0 MB)", None);
        assert_eq!(operators.operator_of(&elsewhere, Some(0)), id(4, None), "no source of that name");
        let negative = warning("OtelNegativeIncrement", "", None);
        assert_eq!(operators.operator_of(&negative, Some(2)), id(6, Some(2)));
        // No table running, or one the query does not have: no one operator.
        assert_eq!(operators.operator_of(&truncated, None), id(0, None));
        assert_eq!(operators.operator_of(&truncated, Some(9)), id(0, None));
    }

    #[test]
    fn a_query_that_does_not_parse_has_no_operators() {
        let operators = WarningOperators::of("default | where (");
        let truncated = warning("ResultTruncated", "", None);
        assert_eq!(operators.operator_of(&truncated, Some(0)), id(0, None));
    }

    /// The tables counted here are the tables the planner makes.
    #[test]
    fn result_tables_are_the_planned_ones() -> Result<(), trawl_common::TrawlError> {
        let source = "datatable(a: long, b: string)[1, 'x', 2, 'y']";
        for text in [
            format!("{source} | count; {source} | take 1"),
            format!("{source} | fork (count) (take 1) named = (where a > 1)"),
            format!("{source} | facet by a, b with (take 1)"),
            format!("{source} | facet by a"),
            format!("{source} | evaluate preview(1)"),
            format!("let x = 1; {source} | fork (count) (count); print y = x"),
        ] {
            let planned = crate::plan_text(&text, &crate::testing::NoTables, crate::PlanOptions::default())?;
            let query = trawl_kql::parse(&text)?;
            assert_eq!(result_tables(&query).len(), planned.results.len(), "{text}");
        }
        Ok(())
    }
}
