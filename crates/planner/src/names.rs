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

/// Functions with several output columns: the function computing them all as a bag, and each
/// output (bag key and whether it is a real, a long or left dynamic).
fn multi_output(name: &str) -> Option<(&'static str, &'static [(&'static str, char)])> {
    Some(match name {
        "series_fit_line" => (
            "series_fit_line_dynamic",
            &[
                ("rsquare", 'r'),
                ("slope", 'r'),
                ("variance", 'r'),
                ("rvariance", 'r'),
                ("interception", 'r'),
                ("line_fit", 'd'),
            ],
        ),
        "series_fit_2lines" => (
            "series_fit_2lines_dynamic",
            &[
                ("rsquare", 'r'),
                ("split_idx", 'l'),
                ("variance", 'r'),
                ("rvariance", 'r'),
                ("line_fit", 'd'),
                ("right_rsquare", 'r'),
                ("right_slope", 'r'),
                ("right_interception", 'r'),
                ("right_variance", 'r'),
                ("right_rvariance", 'r'),
                ("left_rsquare", 'r'),
                ("left_slope", 'r'),
                ("left_interception", 'r'),
                ("left_variance", 'r'),
                ("left_rvariance", 'r'),
            ],
        ),
        "series_fft" => ("__series_fft", &[("real", 'd'), ("imag", 'd')]),
        "series_ifft" => ("__series_ifft", &[("real", 'd'), ("imag", 'd')]),
        "series_fit_poly" => (
            "__series_fit_poly",
            &[
                ("rsquare", 'r'),
                ("coefficients", 'd'),
                ("variance", 'r'),
                ("rvariance", 'r'),
                ("poly_fit", 'd'),
            ],
        ),
        "series_periods_detect" => ("__series_periods_detect", &[("periods", 'd'), ("periods_scores", 'd')]),
        "series_periods_validate" => ("__series_periods_validate", &[("periods", 'd'), ("scores", 'd')]),
        "series_stats" => (
            "series_stats_dynamic",
            &[
                ("min", 'r'),
                ("min_idx", 'l'),
                ("max", 'r'),
                ("max_idx", 'l'),
                ("avg", 'r'),
                ("stdev", 'r'),
                ("variance", 'r'),
            ],
        ),
        "series_decompose" => (
            "__series_decompose",
            &[("baseline", 'd'), ("seasonal", 'd'), ("trend", 'd'), ("residual", 'd')],
        ),
        "series_decompose_anomalies" => (
            "__series_decompose_anomalies",
            &[("ad_flag", 'd'), ("ad_score", 'd'), ("baseline", 'd')],
        ),
        _ => return None,
    })
}

/// `extend series_fit_line(y)` (and the other functions of [`multi_output`]) gives one column
/// per output, named `<function>_<argument>_<output>` (or by a `(a, b, …) = …` tuple, which
/// takes the first outputs in order). Other items are returned as they are.
pub fn expand_multi_outputs(items: &[trawl_kql::ast::NamedExpr]) -> Vec<trawl_kql::ast::NamedExpr> {
    use trawl_kql::ast::{Ident, Literal, NamedExpr};
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let expansion = match &item.expr.kind {
            ExprKind::Call { function, args } => multi_output(&function.name).map(|m| (function, args, m)),
            _ => None,
        };
        let Some((function, args, (bag_function, outputs))) = expansion else {
            out.push(item.clone());
            continue;
        };
        if item.names.len() > outputs.len() {
            out.push(item.clone());
            continue;
        }
        let argument = match args.first().map(|a| &a.kind) {
            Some(ExprKind::Name(ident)) => ident.name.clone(),
            _ => "series".to_owned(),
        };
        let span = item.expr.span;
        let bag = KExpr::new(
            ExprKind::Call {
                function: Ident::new(bag_function, function.span),
                args: args.clone(),
            },
            span,
        );
        let wanted = if item.names.is_empty() {
            outputs.len()
        } else {
            item.names.len()
        };
        for (index, (key, kind)) in outputs.iter().take(wanted).enumerate() {
            let name = match item.names.get(index) {
                Some(ident) => ident.clone(),
                None => Ident::new(format!("{}_{argument}_{key}", function.name), span),
            };
            let value = KExpr::new(
                ExprKind::Index {
                    target: Box::new(bag.clone()),
                    index: Box::new(KExpr::new(ExprKind::Literal(Literal::String((*key).to_owned())), span)),
                },
                span,
            );
            let converter = match kind {
                'r' => Some("toreal"),
                'l' => Some("tolong"),
                _ => None,
            };
            let expr = match converter {
                Some(converter) => KExpr::new(
                    ExprKind::Call {
                        function: Ident::new(converter, span),
                        args: vec![value],
                    },
                    span,
                ),
                None => value,
            };
            out.push(NamedExpr {
                names: vec![name],
                expr,
                span: item.span,
            });
        }
    }
    out
}

/// `array_sort_asc(a, b, …)` (and `_desc`) with several arrays gives one column per array,
/// each in the order that sorts the first, named `<array>_sorted` (or by a `(x, y) = …`
/// tuple). Other items are returned as they are.
pub fn expand_multi_array_sorts(items: &[trawl_kql::ast::NamedExpr]) -> Vec<trawl_kql::ast::NamedExpr> {
    use trawl_kql::ast::{Ident, Literal, NamedExpr};
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let ExprKind::Call { function, args } = &item.expr.kind else {
            out.push(item.clone());
            continue;
        };
        let by = match function.name.as_str() {
            "array_sort_asc" => "__array_sort_by_asc",
            "array_sort_desc" => "__array_sort_by_desc",
            _ => {
                out.push(item.clone());
                continue;
            }
        };
        let (arrays, nulls_last) = match args.split_last() {
            Some((last, rest)) if matches!(last.kind, ExprKind::Literal(Literal::Bool(_))) => (rest, Some(last)),
            _ => (args.as_slice(), None),
        };
        if arrays.len() < 2 || !(item.names.is_empty() || item.names.len() == arrays.len()) {
            out.push(item.clone());
            continue;
        }
        for (index, array) in arrays.iter().enumerate() {
            let name = match (item.names.get(index), &array.kind) {
                (Some(ident), _) => ident.clone(),
                (None, ExprKind::Name(ident)) => Ident::new(format!("{}_sorted", ident.name), array.span),
                (None, _) => Ident::new(format!("array{}_sorted", index + 1), array.span),
            };
            let (callee, mut call_args) = if index == 0 {
                (function.clone(), vec![array.clone()])
            } else {
                (Ident::new(by, function.span), vec![arrays[0].clone(), array.clone()])
            };
            call_args.extend(nulls_last.cloned());
            out.push(NamedExpr {
                names: vec![name],
                expr: KExpr::new(
                    ExprKind::Call {
                        function: callee,
                        args: call_args,
                    },
                    item.expr.span,
                ),
                span: item.span,
            });
        }
    }
    out
}

/// `name` as a bracketed column name for generated KQL text (`['a b']`).
pub fn bracketed(name: &str) -> String {
    format!("['{}']", name.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `text` as a KQL string literal.
pub(crate) fn string_literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
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
