//! What `/plan` shows of a query: the bound plan after optimization, as an s-expression.
//!
//! DataFusion prints a plan as an indented tree, one operator a line (`Filter: x > 1`). The
//! s-expression nests the same tree: each operator becomes `(name "details" children…)`
//! with the name in snake case, so it is stable to read and to compare in tests.

/// `indented` (DataFusion's `display_indent`, two spaces a level) as an s-expression.
pub fn indented_to_sexp(indented: &str) -> String {
    let mut out = String::new();
    let mut open: Vec<usize> = Vec::new();
    for line in indented.lines().filter(|l| !l.trim().is_empty()) {
        let depth = (line.len() - line.trim_start().len()) / 2;
        while open.last().is_some_and(|&d| d >= depth) {
            open.pop();
            out.push(')');
        }
        let text = line.trim();
        let (name, details) = match text.split_once(':') {
            Some((name, details)) if !name.contains(' ') || name.chars().all(|c| c.is_alphanumeric() || c == ' ') => {
                (name.trim(), details.trim())
            }
            _ => (text, ""),
        };
        if !out.is_empty() {
            out.push('\n');
            out.push_str(&"  ".repeat(depth));
        }
        out.push('(');
        out.push_str(&snake_case(name));
        if !details.is_empty() {
            out.push(' ');
            out.push_str(&trawl_kql::sexp::quote(details));
        }
        open.push(depth);
    }
    for _ in open {
        out.push(')');
    }
    out
}

fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_uppercase() {
            if previous_lower {
                out.push('_');
            }
            out.extend(c.to_lowercase());
            previous_lower = false;
        } else if c == ' ' {
            out.push('_');
            previous_lower = false;
        } else {
            out.push(c);
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_indented_plan_nests_as_an_s_expression() {
        let plan = "Projection: x\n  Filter: severity_text = Utf8(\"ERROR\")\n    TableScan: default projection=[x]\n  EmptyRelation: rows=1\n";
        assert_eq!(
            indented_to_sexp(plan),
            "(projection \"x\"\n  (filter \"severity_text = Utf8(\\\"ERROR\\\")\"\n    (table_scan \"default projection=[x]\"))\n  (empty_relation \"rows=1\"))"
        );
    }
}
