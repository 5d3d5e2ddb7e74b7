//! `search`: rows in which a term occurs in any string or dynamic column.
//!
//! `T | search "term"` filters `T`; a leading `search "term"` reads every table of the
//! database (or `search in (T1, T2) "term"` the listed ones) and adds a `$table` column first.
//! A string literal in the predicate means "some column has this term" (`has` semantics:
//! whole terms, case-insensitive; `kind=case_sensitive` for `has_cs`); a `*` inside a term
//! turns it into a substring match. Other predicates (`Level == "Error"`) are ordinary
//! conditions, and `and`, `or`, `not()` combine both. `column:"term"` looks for the term in
//! that column only (a table without the column has no match).

use datafusion::logical_expr::{Expr, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{BinaryOp, Expr as KExpr, ExprKind, Ident, Literal, Search, UnaryOp, Union};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, internal};
use crate::joins::param_word;

impl Planner<'_> {
    /// The condition of a search predicate over `input`'s columns.
    fn search_condition(&mut self, e: &KExpr, input: &Tabular, case_sensitive: bool) -> Result<Expr, TrawlError> {
        match &e.kind {
            ExprKind::Literal(Literal::String(term)) => {
                let mut any: Option<Expr> = None;
                for (name, kql_type) in input.columns.clone() {
                    if !matches!(kql_type, KqlType::String | KqlType::Dynamic) || name.starts_with("$") {
                        continue;
                    }
                    let value = self.term_in_column(&name, term, case_sensitive, input, e.span)?;
                    any = Some(match any {
                        Some(previous) => previous.or(value),
                        None => value,
                    });
                }
                Ok(any.unwrap_or(lit(false)))
            }
            // `column:"term"`: the term in that column only (false for a table without it).
            ExprKind::Call { function, args } if function.name == trawl_kql::SEARCH_COLUMN => {
                let [column, term] = args.as_slice() else {
                    return Err(self.error(ErrorCode::BadRequest, e.span, "expected column:\"term\""));
                };
                let (ExprKind::Name(column), ExprKind::Literal(Literal::String(term))) = (&column.kind, &term.kind)
                else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "search scopes a term to a column as column:\"term\"",
                    ));
                };
                if input.column_type(&column.name).is_none() {
                    return Ok(lit(false));
                }
                self.term_in_column(&column.name, term, case_sensitive, input, e.span)
            }
            // `* has "term"` (any text operator): the test on every text column.
            ExprKind::Binary { op, left, right } if matches!(left.kind, ExprKind::Star) => {
                let mut any: Option<Expr> = None;
                for (name, kql_type) in input.columns.clone() {
                    if !matches!(kql_type, KqlType::String | KqlType::Dynamic) || name.starts_with('$') {
                        continue;
                    }
                    let check = KExpr::new(
                        ExprKind::Binary {
                            op: *op,
                            left: Box::new(KExpr::new(ExprKind::Name(Ident::new(&name, left.span)), left.span)),
                            right: right.clone(),
                        },
                        e.span,
                    );
                    let value = self.scalar(&check, input)?;
                    let value = self.boolean(value, e)?;
                    any = Some(match any {
                        Some(previous) => previous.or(value),
                        None => value,
                    });
                }
                Ok(any.unwrap_or(lit(false)))
            }
            ExprKind::Binary {
                op: op @ (BinaryOp::And | BinaryOp::Or),
                left,
                right,
            } => {
                let l = self.search_condition(left, input, case_sensitive)?;
                let r = self.search_condition(right, input, case_sensitive)?;
                Ok(if *op == BinaryOp::And { l.and(r) } else { l.or(r) })
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
            } => Ok(Expr::Not(Box::new(self.search_condition(
                operand,
                input,
                case_sensitive,
            )?))),
            _ => {
                let value = self.scalar(e, input)?;
                self.boolean(value, e)
            }
        }
    }

    /// Whether column `name` holds `term` (whole terms as `has` matches them; a `*` in the term
    /// makes it a substring match).
    fn term_in_column(
        &mut self,
        name: &str,
        term: &str,
        case_sensitive: bool,
        input: &Tabular,
        span: Span,
    ) -> Result<Expr, TrawlError> {
        let op = match (term.contains('*'), case_sensitive) {
            (false, false) => BinaryOp::Has,
            (false, true) => BinaryOp::HasCs,
            (true, false) => BinaryOp::Contains,
            (true, true) => BinaryOp::ContainsCs,
        };
        let needle = KExpr::new(ExprKind::Literal(Literal::String(term.replace('*', ""))), span);
        let check = KExpr::new(
            ExprKind::Binary {
                op,
                left: Box::new(KExpr::new(ExprKind::Name(Ident::new(name, span)), span)),
                right: Box::new(needle),
            },
            span,
        );
        Ok(self.scalar(&check, input)?.expr)
    }

    /// `search` with a piped input (`input` is `Some`) or as a source.
    pub fn search(&mut self, input: Option<Tabular>, search: &Search, span: Span) -> Result<Tabular, TrawlError> {
        let case_sensitive = param_word(&search.params, "kind").as_deref() == Some("case_sensitive");
        let source = match input {
            Some(input) if search.tables.is_empty() => input,
            Some(_) => {
                return Err(self.error(ErrorCode::BadRequest, span, "a piped search takes no 'in (...)' tables"));
            }
            None => {
                let tables: Vec<KExpr> = if search.tables.is_empty() {
                    let names: Vec<String> = self
                        .tables
                        .table_names()
                        .into_iter()
                        .filter(|t| self.is_visible(t))
                        .collect();
                    if names.is_empty() {
                        return Err(self.error(ErrorCode::UnknownTable, span, "there is no table to search"));
                    }
                    names
                        .into_iter()
                        .map(|n| KExpr::new(ExprKind::Name(Ident::new(n, span)), span))
                        .collect()
                } else {
                    search.tables.clone()
                };
                let dollar_table = trawl_kql::ast::OperatorParam {
                    name: "withsource".into(),
                    value: KExpr::new(ExprKind::Name(Ident::new("$table", span)), span),
                    span,
                };
                self.union(
                    None,
                    &Union {
                        params: vec![dollar_table],
                        tables,
                    },
                    span,
                )?
            }
        };
        let condition = self.search_condition(&search.predicate, &source, case_sensitive)?;
        let plan = source
            .builder()
            .filter(condition)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: source.columns,
        })
    }
}
