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

fn operator(op: &Operator, indent: usize, out: &mut String) {
    let printed = op.to_string();
    let name = op.kind.name();
    let rest = printed.strip_prefix(name).unwrap_or(&printed).trim();
    out.push('\n');
    out.push_str(&" ".repeat(indent));
    if rest.is_empty() {
        out.push_str(&format!("({name})"));
    } else {
        out.push_str(&format!("({name} {})", quote(rest)));
    }
}

fn expr(e: &Expr, indent: usize, out: &mut String) {
    match &e.kind {
        ExprKind::Pipeline { source, operators } => {
            out.push_str("(pipeline ");
            expr(source, indent + 2, out);
            for op in operators {
                operator(op, indent + 2, out);
            }
            out.push(')');
        }
        ExprKind::Name(ident) => out.push_str(&format!("(source {})", quote(&ident.name))),
        ExprKind::TabularOperator(op) => {
            let mut inner = String::new();
            operator(op, 0, &mut inner);
            out.push_str(inner.trim_start());
        }
        _ => out.push_str(&format!("(expr {})", quote(&e.to_string()))),
    }
}

/// The s-expression of `query`.
pub fn to_sexp(query: &Query) -> String {
    let mut out = String::from("(query");
    for statement in &query.statements {
        out.push_str("\n  ");
        match &statement.kind {
            StatementKind::Let(binding) => {
                out.push_str(&format!("(let {} ", quote(&binding.name.name)));
                match &binding.value {
                    LetValue::Expr(value) => expr(value, 4, &mut out),
                    LetValue::Function(def) => out.push_str(&format!("(function {})", quote(&def.to_string()))),
                }
                out.push(')');
            }
            StatementKind::Expr(value) => expr(value, 2, &mut out),
            _ => out.push_str(&format!("(statement {})", quote(&statement.to_string()))),
        }
    }
    out.push(')');
    out
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
}
