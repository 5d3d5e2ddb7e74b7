//! KQL's text operators (`has`, `contains`, `startswith`, `endswith`, `matches regex`, their
//! case-sensitive and negated forms, `has_any`/`has_all` aside): lowered to the term index
//! (`has`), LIKE patterns with a raw-text prefilter for dynamic values, or the contains kernel.

use std::sync::Arc;

use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::{Expr, Like, ScalarUDF, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_functions::contains::ContainsUdf;
use trawl_functions::strings::HasUdf;
use trawl_functions::tokenizer::TermMatch;
use trawl_kql::ast::{BinaryOp, Expr as KExpr};

use crate::context::{Planner, Typed};
use crate::scalar::{as_text, string_literal, to_string, udf_call};

/// Escapes `%`, `_` and `\` for a LIKE pattern.
fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// For a search in a dynamic value's text: a LIKE pattern on its JSON text that every match
/// satisfies, so cheap raw-text filtering can come before decoding. Only for needles that JSON
/// text holds unescaped (printable ASCII without quotes or backslashes).
fn json_text_prefilter(needle: &str) -> Option<String> {
    let plain = !needle.is_empty()
        && needle
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    plain.then(|| format!("%{}%", like_escape(needle)))
}

fn like(expr: Expr, pattern: String, negated: bool, case_insensitive: bool) -> Expr {
    Expr::Like(Like::new(
        negated,
        Box::new(expr),
        Box::new(lit(pattern)),
        Some('\\'),
        case_insensitive,
    ))
}

impl Planner<'_> {
    pub(crate) fn text_operator(&self, op: BinaryOp, l: Typed, r: Typed, right: &KExpr) -> Result<Typed, TrawlError> {
        use BinaryOp::*;
        if !matches!(r.kql_type, KqlType::String | KqlType::Dynamic | KqlType::Guid) {
            return Err(self.error(
                ErrorCode::TypeMismatch,
                right.span,
                format!(
                    "'{}' needs a string on its right side, found {}; write the value in quotes",
                    op.as_str(),
                    r.kql_type
                ),
            ));
        }
        let negated = matches!(
            op,
            NotHas
                | NotHasCs
                | NotContains
                | NotContainsCs
                | NotStartsWith
                | NotStartsWithCs
                | NotEndsWith
                | NotEndsWithCs
                | NotLike
                | NotLikeCs
                | NotHasPrefix
                | NotHasPrefixCs
                | NotHasSuffix
                | NotHasSuffixCs
        );
        let case_sensitive = matches!(
            op,
            HasCs
                | NotHasCs
                | ContainsCs
                | NotContainsCs
                | StartsWithCs
                | NotStartsWithCs
                | EndsWithCs
                | NotEndsWithCs
                | LikeCs
                | NotLikeCs
                | HasPrefixCs
                | NotHasPrefixCs
                | HasSuffixCs
                | NotHasSuffixCs
        );
        let needle = if r.kql_type == KqlType::Dynamic {
            to_string(r)
        } else {
            r.expr
        };
        let expr = match op {
            HasPrefix | NotHasPrefix | HasPrefixCs | NotHasPrefixCs | HasSuffix | NotHasSuffix | HasSuffixCs
            | NotHasSuffixCs => {
                let hay = match l.kql_type {
                    KqlType::String | KqlType::Dynamic | KqlType::Guid => l.expr,
                    _ => to_string(l),
                };
                let kind = match op {
                    HasPrefix | NotHasPrefix | HasPrefixCs | NotHasPrefixCs => TermMatch::Prefix,
                    _ => TermMatch::Suffix,
                };
                let udf = Arc::new(ScalarUDF::from(HasUdf::matching(case_sensitive, kind)));
                let call = udf_call(udf, vec![hay, needle]);
                if negated { Expr::Not(Box::new(call)) } else { call }
            }
            Has | NotHas | HasCs | NotHasCs => {
                // The has UDF reads dynamic JSON text itself (a JSON string without escapes
                // is searched in place), and the token index narrows what it reads.
                let (hay, column) = match l.kql_type {
                    KqlType::String | KqlType::Dynamic | KqlType::Guid => (l.expr.clone(), Some(l.expr)),
                    _ => (to_string(l), None),
                };
                let udf = Arc::new(ScalarUDF::from(HasUdf::new(case_sensitive)));
                let call = udf_call(udf, vec![hay, needle]);
                match (negated, column) {
                    (true, _) => Expr::Not(Box::new(call)),
                    // A null text has no terms: segments without the column are skipped by
                    // their statistics.
                    (false, Some(column)) => column.is_not_null().and(call),
                    (false, None) => call,
                }
            }
            Contains | NotContains | ContainsCs | NotContainsCs | StartsWith | NotStartsWith | StartsWithCs
            | NotStartsWithCs | EndsWith | NotEndsWith | EndsWithCs | NotEndsWithCs => {
                let raw = (l.kql_type == KqlType::Dynamic).then(|| l.expr.clone());
                let column =
                    matches!(l.kql_type, KqlType::String | KqlType::Dynamic | KqlType::Guid).then(|| l.expr.clone());
                let hay = f::coalesce(vec![as_text(l), lit("")]);
                let substring = matches!(op, Contains | NotContains | ContainsCs | NotContainsCs);
                match string_literal(&needle) {
                    // A vectorized substring search (`functions::contains`), for needles whose
                    // case folding is ASCII's (others keep ILIKE's Unicode folding).
                    Some(text) if substring && (case_sensitive || text.is_ascii()) => {
                        // A dynamic value's JSON text is searched as `tostring()` reads it, in
                        // one pass (a string without escapes in place).
                        let (udf, hay) = match raw {
                            Some(raw) => (ContainsUdf::dynamic(case_sensitive), raw),
                            None => (ContainsUdf::new(case_sensitive), hay),
                        };
                        let found = udf_call(Arc::new(ScalarUDF::from(udf)), vec![hay, lit(text)]);
                        match (negated, column) {
                            (true, _) => Expr::Not(Box::new(found)),
                            // Null text contains no needle but "": segments without the column
                            // are skipped by their statistics.
                            (false, Some(column)) if !text.is_empty() => column.is_not_null().and(found),
                            (false, _) => found,
                        }
                    }
                    Some(text) => {
                        let escaped = like_escape(text);
                        let pattern = match op {
                            Contains | NotContains | ContainsCs | NotContainsCs => format!("%{escaped}%"),
                            StartsWith | NotStartsWith | StartsWithCs | NotStartsWithCs => format!("{escaped}%"),
                            _ => format!("%{escaped}"),
                        };
                        let found = like(hay, pattern, false, !case_sensitive);
                        let found = match (raw, json_text_prefilter(text)) {
                            (Some(raw), Some(prefilter)) => {
                                f::coalesce(vec![like(raw, prefilter, false, !case_sensitive), lit(false)]).and(found)
                            }
                            _ => found,
                        };
                        if negated { Expr::Not(Box::new(found)) } else { found }
                    }
                    None => {
                        let (hay, pin) = if case_sensitive {
                            (hay, needle)
                        } else {
                            (f::lower(hay), f::lower(needle))
                        };
                        let found = match op {
                            Contains | NotContains | ContainsCs | NotContainsCs => f::strpos(hay, pin).gt(lit(0i64)),
                            StartsWith | NotStartsWith | StartsWithCs | NotStartsWithCs => f::starts_with(hay, pin),
                            _ => f::ends_with(hay, pin),
                        };
                        if negated { Expr::Not(Box::new(found)) } else { found }
                    }
                }
            }
            Like | NotLike | LikeCs | NotLikeCs => {
                let hay = f::coalesce(vec![as_text(l), lit("")]);
                Expr::Like(datafusion::logical_expr::Like::new(
                    negated,
                    Box::new(hay),
                    Box::new(needle),
                    Some('\\'),
                    !case_sensitive,
                ))
            }
            MatchesRegex => f::regexp_like(as_text(l), needle, None),
            _ => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    right.span,
                    format!("the operator '{}' is not supported yet", op.as_str()),
                ));
            }
        };
        Ok(Typed::new(expr, KqlType::Bool))
    }
}
