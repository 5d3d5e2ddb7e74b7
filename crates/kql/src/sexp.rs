//! The KQL-level plan of a query as an s-expression: statements, pipelines and one node per
//! operator, with expressions in their canonical KQL spelling. Stable (it depends only on the
//! syntax tree) and readable; served by `POST /plan`.
//!
//! ```text
//! (query
//!   (pipeline (source default)
//!     (where "severity_text == 'ERROR'")
//!     (count)))
//! ```

use crate::ast::{Expr, ExprKind, LetValue, Operator, Query, StatementKind};
use crate::span::Span;

/// `text` as an s-expression string: in double quotes, with `"`, `\\` and newlines escaped.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

/// One operator node of the s-expression, in the order [`to_sexp`] prints them: per statement,
/// each pipeline's source (a table name, or an operator that starts a pipeline, such as
/// `range`) and then its operators. Operators inside another operator's arguments (a `join`'s
/// right side, `fork` branches, subqueries) belong to that operator's node. Position `i` in
/// [`operator_nodes`] is operator number `i + 1` (docs/api.md, "QueryWarning").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OperatorNode<'a> {
    /// The statement (from 0) the node is in.
    pub statement: usize,
    pub span: Span,
    /// The operator, or `None` for a table name (or other name) read as a source.
    pub operator: Option<&'a Operator>,
    /// The name, for a source that is a name.
    pub source: Option<&'a str>,
}

impl OperatorNode<'_> {
    /// The node's name as printed: the operator's, or `source`.
    pub fn name(&self) -> &'static str {
        self.operator.map_or("source", |op| op.kind.name())
    }
}

/// Prints the s-expression and collects its operator nodes on the way, so that the nodes are
/// numbered as they are printed.
struct Printer<'a> {
    out: String,
    nodes: Vec<OperatorNode<'a>>,
    statement: usize,
}

impl<'a> Printer<'a> {
    fn operator(&mut self, op: &'a Operator, indent: usize) {
        self.nodes.push(OperatorNode {
            statement: self.statement,
            span: op.span,
            operator: Some(op),
            source: None,
        });
        let printed = op.to_string();
        let name = op.kind.name();
        let rest = printed.strip_prefix(name).unwrap_or(&printed).trim();
        self.out.push('\n');
        self.out.push_str(&" ".repeat(indent));
        if rest.is_empty() {
            self.out.push_str(&format!("({name})"));
        } else {
            self.out.push_str(&format!("({name} {})", quote(rest)));
        }
    }

    fn expr(&mut self, e: &'a Expr, indent: usize) {
        match &e.kind {
            ExprKind::Pipeline { source, operators } => {
                self.out.push_str("(pipeline ");
                self.expr(source, indent + 2);
                for op in operators {
                    self.operator(op, indent + 2);
                }
                self.out.push(')');
            }
            ExprKind::Name(ident) => {
                self.nodes.push(OperatorNode {
                    statement: self.statement,
                    span: e.span,
                    operator: None,
                    source: Some(&ident.name),
                });
                self.out.push_str(&format!("(source {})", quote(&ident.name)));
            }
            ExprKind::TabularOperator(op) => {
                // In place, without the line break that starts an operator of a pipeline.
                let at = self.out.len();
                self.operator(op, 0);
                let printed = self.out.split_off(at);
                self.out.push_str(printed.trim_start());
            }
            _ => self.out.push_str(&format!("(expr {})", quote(&e.to_string()))),
        }
    }

    fn query(query: &'a Query) -> Printer<'a> {
        let mut printer = Printer {
            out: String::from("(query"),
            nodes: Vec::new(),
            statement: 0,
        };
        for (index, statement) in query.statements.iter().enumerate() {
            printer.statement = index;
            printer.out.push_str("\n  ");
            match &statement.kind {
                StatementKind::Let(binding) => {
                    printer.out.push_str(&format!("(let {} ", quote(&binding.name.name)));
                    match &binding.value {
                        LetValue::Expr(value) => printer.expr(value, 4),
                        LetValue::Function(def) => printer
                            .out
                            .push_str(&format!("(function {})", quote(&def.to_string()))),
                    }
                    printer.out.push(')');
                }
                StatementKind::Expr(value) => printer.expr(value, 2),
                _ => printer
                    .out
                    .push_str(&format!("(statement {})", quote(&statement.to_string()))),
            }
        }
        printer.out.push(')');
        printer
    }
}

/// The s-expression of `query`.
pub fn to_sexp(query: &Query) -> String {
    Printer::query(query).out
}

/// The operator nodes of `query`'s s-expression, in the order [`to_sexp`] prints them.
pub fn operator_nodes(query: &Query) -> Vec<OperatorNode<'_>> {
    Printer::query(query).nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_print_one_node_per_operator() -> Result<(), crate::ParseError> {
        let query = crate::parse("let n = 5; default | where severity_text == 'ERROR' | take n | count")?;
        let sexp = to_sexp(&query);
        assert!(
            sexp.starts_with("(query\n  (let \"n\" (expr \"5\"))\n  (pipeline (source \"default\")"),
            "{sexp}"
        );
        assert!(sexp.contains("(where \"severity_text == "), "{sexp}");
        assert!(sexp.contains("(take \"n\")"), "{sexp}");
        assert!(sexp.ends_with("(count)))"), "{sexp}");
        // Stable: the same text gives the same plan.
        assert_eq!(
            sexp,
            to_sexp(&crate::parse(
                "let n = 5; default | where severity_text == 'ERROR' | take n | count"
            )?)
        );
        Ok(())
    }

    #[test]
    fn operator_nodes_are_numbered_as_printed() -> Result<(), crate::ParseError> {
        let text = "let t = default | where a == 1; t | summarize count() by b | fork (take 1) (count); range i from 1 to 2 step 1";
        let query = crate::parse(text)?;
        let nodes = operator_nodes(&query);
        let names: Vec<(usize, &str)> = nodes.iter().map(|n| (n.statement, n.name())).collect();
        assert_eq!(
            names,
            [(0, "source"), (0, "where"), (1, "source"), (1, "summarize"), (1, "fork"), (2, "range")]
        );
        assert_eq!(nodes[0].source, Some("default"));
        assert_eq!(nodes[2].source, Some("t"));
        // Each node's span is its text.
        let fork = nodes[4].span;
        assert_eq!(&text[fork.start as usize..fork.end as usize], "fork (take 1) (count)");
        // As many nodes as the s-expression prints.
        let sexp = to_sexp(&query);
        for name in ["(source", "(where", "(summarize", "(fork", "(range"] {
            assert_eq!(sexp.matches(name).count(), names.iter().filter(|n| format!("({}", n.1) == name).count(), "{sexp}");
        }
        Ok(())
    }
}
