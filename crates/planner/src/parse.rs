//! `parse` and `parse-where`: extract columns from a string with a pattern of literal text,
//! `*` wildcards and typed column captures. Kinds: `simple` (the default: text matched
//! literally), `regex` (text parts are regular expressions), `relaxed` (as simple, but a typed
//! column whose text does not convert is null on its own). Rows that do not match — in `simple`
//! and `regex` also rows where a typed column's text does not convert — get empty strings and
//! nulls in every extracted column; `parse-where` drops them.

use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::{Expr, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Parse, ParsePart};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::joins::param_word;
use crate::scalar::{kql_type_of_scalar, to_string};

/// Escapes regex metacharacters.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The capture of a column of `kql_type`. In regex mode text columns are greedy, as the
/// reference engine's documented examples show (a text column followed by `.*?` still takes
/// everything up to the next delimiter).
fn capture(kql_type: KqlType, last: bool, regex: bool, relaxed: bool) -> &'static str {
    match kql_type {
        // Relaxed: a number when there is one, else whatever text lets the rest match.
        KqlType::Int | KqlType::Long if relaxed => r"(-?\d+|.*?)",
        KqlType::Real | KqlType::Decimal if relaxed => r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|.*?)",
        KqlType::Int | KqlType::Long => r"(-?\d+)",
        KqlType::Real | KqlType::Decimal => r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)",
        _ if last || regex => "(.*)",
        _ => "(.*?)",
    }
}

/// `pattern` with its capturing groups made non-capturing, so that only the columns capture:
/// `(` not escaped, not in a character class and not already `(?…`.
fn uncaptured(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class && chars.peek() != Some(&'?') => out.push_str("?:"),
            _ => {}
        }
    }
    out
}

impl Planner<'_> {
    pub fn parse_operator(
        &mut self,
        input: Tabular,
        parse: &Parse,
        span: Span,
        keep_unmatched: bool,
    ) -> Result<Tabular, TrawlError> {
        let kind = param_word(&parse.params, "kind").unwrap_or_else(|| "simple".into());
        let relaxed = kind == "relaxed";
        let regex_kind = match kind.as_str() {
            "simple" | "relaxed" => false,
            "regex" => true,
            other => return Err(self.error(ErrorCode::BadRequest, span, format!("unknown parse kind '{other}'"))),
        };
        // Flags keep their case: `U` (swap greediness) is not `u` (Unicode).
        let flags = parse
            .params
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case("flags"))
            .and_then(|p| match &p.value.kind {
                trawl_kql::ast::ExprKind::Name(ident) => Some(ident.name.clone()),
                trawl_kql::ast::ExprKind::Literal(trawl_kql::ast::Literal::String(s)) => Some(s.clone()),
                _ => None,
            });
        let source = self.scalar(&parse.source, &input)?;
        let text = to_string(source);
        let mut pattern = String::from(if regex_kind { "" } else { "^" });
        let mut outputs: Vec<(String, KqlType)> = Vec::new();
        let last_index = parse.pattern.len().saturating_sub(1);
        for (index, part) in parse.pattern.iter().enumerate() {
            match part {
                ParsePart::Text { text, .. } => {
                    pattern.push_str(&if regex_kind { uncaptured(text) } else { escape(text) })
                }
                ParsePart::Wildcard { .. } => pattern.push_str(if index == last_index { ".*" } else { ".*?" }),
                ParsePart::Column { name, ty, .. } => {
                    let kql_type = ty.map_or(KqlType::String, kql_type_of_scalar);
                    pattern.push_str(capture(kql_type, index == last_index, regex_kind, relaxed));
                    outputs.push((name.name.clone(), kql_type));
                }
            }
        }
        if outputs.is_empty() {
            return Err(self.error(ErrorCode::BadRequest, span, "the parse pattern extracts no column"));
        }
        let flags = flags.map(lit);
        let matched_name = "__trawl_parse_match";
        let mut stage: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        stage.push(f::regexp_match(text, lit(pattern), flags).alias(matched_name));
        let mut builder = input.builder().project(stage).map_err(|e| internal(&e))?;
        let mut columns = input.columns.clone();
        for (name, kql_type) in &outputs {
            match columns.iter_mut().find(|(n, _)| n == name) {
                Some(existing) => existing.1 = *kql_type,
                None => columns.push((name.clone(), *kql_type)),
            }
        }
        // Each extracted column's value, and (outside relaxed mode) whether every typed column's
        // text converted: a row where one does not is treated as not matching.
        let mut converted: Vec<Expr> = Vec::with_capacity(outputs.len());
        let mut converts = column(matched_name).is_not_null();
        for (index, (_, kql_type)) in outputs.iter().enumerate() {
            let captured =
                datafusion::functions_nested::expr_fn::array_element(column(matched_name), lit(index as i64 + 1));
            converted.push(match kql_type {
                KqlType::String => f::coalesce(vec![captured, lit("")]),
                KqlType::Dynamic => crate::scalar::to_dynamic(Typed::new(captured, KqlType::String)),
                other => {
                    let text = Typed::new(
                        crate::scalar::to_dynamic(Typed::new(captured, KqlType::String)),
                        KqlType::Dynamic,
                    );
                    let value = self.dynamic_as(text, *other);
                    if !relaxed {
                        converts = converts.and(value.clone().is_not_null());
                    }
                    value
                }
            });
        }
        if !keep_unmatched {
            builder = builder.filter(converts.clone()).map_err(|e| internal(&e))?;
        }
        let mut exprs = Vec::with_capacity(columns.len());
        for (name, kql_type) in &columns {
            let value = match outputs.iter().position(|(n, _)| n == name) {
                Some(index) if relaxed || !keep_unmatched => converted[index].clone(),
                Some(index) => {
                    let missing = match kql_type {
                        KqlType::String => lit(""),
                        _ => lit(datafusion::common::ScalarValue::Null),
                    };
                    datafusion::logical_expr::when(converts.clone(), converted[index].clone())
                        .otherwise(missing)
                        .map_err(|e| internal(&e))?
                }
                None => column(name),
            };
            exprs.push(value.alias(name));
        }
        let plan = builder
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }
}
