//! Output column names: KQL's defaults for unnamed expressions, and wildcard patterns.

use trawl_kql::ast::{Expr as KExpr, ExprKind};

/// The name KQL gives an unnamed projected expression: a column keeps its name, a dynamic
/// path or a function of one column gets a derived name, anything else `Column<N>`.
pub fn default_name(expr: &KExpr, position: usize) -> String {
    match &expr.kind {
        ExprKind::Name(ident) => ident.name.clone(),
        ExprKind::Member { target, member } => match default_root(target) {
            Some(root) => format!("{root}_{}", member.name),
            None => format!("Column{position}"),
        },
        ExprKind::Index { target, index } => match (default_root(target), &index.kind) {
            (Some(root), ExprKind::Literal(trawl_kql::ast::Literal::String(key))) => {
                format!("{root}_{}", key.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
            }
            _ => format!("Column{position}"),
        },
        // A call over exactly one column is named after both: `dcount_hll(merged)` is
        // `dcount_hll_merged`; over several columns it is `Column<N>`.
        ExprKind::Call { function, args } => {
            let columns: Vec<&str> = args
                .iter()
                .filter_map(|a| match &a.kind {
                    ExprKind::Name(ident) => Some(ident.name.as_str()),
                    _ => None,
                })
                .collect();
            match columns.as_slice() {
                [only] => format!("{}_{only}", function.name),
                _ => format!("Column{position}"),
            }
        }
        _ => format!("Column{position}"),
    }
}

fn default_root(expr: &KExpr) -> Option<String> {
    match &expr.kind {
        ExprKind::Name(ident) => Some(ident.name.clone()),
        ExprKind::Member { target, member } => default_root(target).map(|root| format!("{root}_{}", member.name)),
        _ => None,
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(stripped) = rest.strip_prefix(part) else {
                return false;
            };
            rest = stripped;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(matches_pattern("a*", "abc"));
        assert!(matches_pattern("*c", "abc"));
        assert!(matches_pattern("a*c", "abc"));
        assert!(matches_pattern("*", "x"));
        assert!(!matches_pattern("b*", "abc"));
        assert!(matches_pattern("abc", "abc"));
    }
}
