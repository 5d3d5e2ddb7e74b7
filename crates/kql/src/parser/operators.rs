//! Recursive descent for the tabular operators after `|`.

use super::{ParseResult, Parser};
use crate::ast::{
    ColumnPattern, Expr, ExprKind, Ident, NullsOrder, Operator, OperatorKind, OperatorParam, Rename, ReorderKey,
    ReorderOrder, Sort, SortKey, SortOrder, Summarize, Top,
};
use crate::span::Span;
use crate::token::TokenKind;

impl Parser<'_> {
    /// Reads an operator name after `|`, joining hyphenated names (`project-away`).
    fn parse_operator_name(&mut self) -> ParseResult<(String, Span)> {
        if self.peek().kind != TokenKind::Ident {
            return Err(self.error_expected("an operator name after '|'"));
        }
        let first = self.advance();
        let mut name = self.token_text(&first).to_string();
        while self.peek().kind == TokenKind::Minus
            && self.peek().span.start == self.last_end
            && self.peek_at(1).kind == TokenKind::Ident
            && self.adjacent(1)
        {
            self.advance();
            let part = self.advance();
            name.push('-');
            name.push_str(self.token_text(&part));
        }
        Ok((name, self.span_from(first.span)))
    }

    /// One operator after `|`.
    pub(crate) fn parse_operator(&mut self) -> ParseResult<Operator> {
        let (name, name_span) = self.parse_operator_name()?;
        let kind = match name.as_str() {
            "where" | "filter" => OperatorKind::Where(self.parse_required_expr(&name)?),
            "project" => OperatorKind::Project(self.comma_separated(Self::parse_named_expr)?),
            "extend" => OperatorKind::Extend(self.comma_separated(Self::parse_named_expr)?),
            "take" | "limit" => OperatorKind::Take(self.parse_required_expr(&name)?),
            "count" => OperatorKind::Count,
            "sort" | "order" => {
                let params = self.parse_params(&[])?;
                self.expect_word("by")
                    .map_err(|_| self.error_expected(&format!("'by' after '{name}'")))?;
                OperatorKind::Sort(Sort {
                    params,
                    keys: self.comma_separated(Self::parse_sort_key)?,
                })
            }
            "summarize" => OperatorKind::Summarize(self.parse_summarize()?),
            "top" => {
                let params = self.parse_params(&[])?;
                let count = self.parse_required_expr("top")?;
                self.expect_word("by")
                    .map_err(|_| self.error_expected("'by' after the row count of 'top'"))?;
                OperatorKind::Top(Top {
                    params,
                    count,
                    by: self.parse_sort_key()?,
                })
            }
            "distinct" => {
                self.parse_params(&[])?;
                OperatorKind::Distinct(self.comma_separated(|parser| parser.parse_required_expr("distinct"))?)
            }
            "project-away" => OperatorKind::ProjectAway(self.comma_separated(Self::parse_column_pattern)?),
            "project-keep" => OperatorKind::ProjectKeep(self.comma_separated(Self::parse_column_pattern)?),
            "project-rename" => OperatorKind::ProjectRename(self.comma_separated(Self::parse_rename)?),
            "project-reorder" => OperatorKind::ProjectReorder(self.comma_separated(Self::parse_reorder_key)?),
            _ => match self.parse_more_operators(&name)? {
                Some(kind) => kind,
                None => {
                    return Err(self.error_at(
                        name_span,
                        format!("expected an operator name after '|', found unknown operator '{name}'"),
                    ));
                }
            },
        };
        Ok(Operator {
            kind,
            span: self.span_from(name_span),
        })
    }

    /// An expression that must be present, e.g. after `where`.
    pub(crate) fn parse_required_expr(&mut self, after: &str) -> ParseResult<Expr> {
        if !self.can_start_expr() {
            return Err(self.error_expected(&format!("an expression after '{after}'")));
        }
        self.parse_expr()
    }

    fn parse_summarize(&mut self) -> ParseResult<Summarize> {
        let params = self.parse_params(&[])?;
        let mut aggregates = Vec::new();
        if !self.at_word("by") || self.peek_at(1).kind == TokenKind::Assign {
            if !self.can_start_expr() {
                return Err(self.error_expected("an aggregate or 'by' after 'summarize'"));
            }
            aggregates = self.comma_separated(Self::parse_named_expr)?;
        }
        let mut by = Vec::new();
        if self.eat_word("by").is_some() {
            by = self.comma_separated(Self::parse_named_expr)?;
        }
        Ok(Summarize { params, aggregates, by })
    }

    /// `expr [asc|desc] [nulls first|nulls last]`.
    pub(crate) fn parse_sort_key(&mut self) -> ParseResult<SortKey> {
        let expr = self.parse_required_expr("by")?;
        let order = if self.eat_word("asc").is_some() {
            Some(SortOrder::Asc)
        } else if self.eat_word("desc").is_some() {
            Some(SortOrder::Desc)
        } else {
            None
        };
        let nulls = if self.eat_word("nulls").is_some() {
            if self.eat_word("first").is_some() {
                Some(NullsOrder::First)
            } else if self.eat_word("last").is_some() {
                Some(NullsOrder::Last)
            } else {
                return Err(self.error_expected("'first' or 'last' after 'nulls'"));
            }
        } else {
            None
        };
        let span = self.span_from(expr.span);
        Ok(SortKey {
            expr,
            order,
            nulls,
            span,
        })
    }

    /// A column name or wildcard pattern: `a`, `['a b']`, `prefix*`, `*`.
    pub(crate) fn parse_column_pattern(&mut self) -> ParseResult<ColumnPattern> {
        if let Some(ident) = self.eat_bracketed_name() {
            return Ok(ColumnPattern {
                pattern: ident.name,
                bracketed: true,
                span: ident.span,
            });
        }
        let start = self.peek().span;
        let mut pattern = String::new();
        while matches!(self.peek().kind, TokenKind::Ident | TokenKind::Star)
            && (pattern.is_empty() || self.peek().span.start == self.last_end)
        {
            let token = self.advance();
            pattern.push_str(self.token_text(&token));
        }
        if pattern.is_empty() {
            return Err(self.error_expected("a column name or wildcard pattern"));
        }
        Ok(ColumnPattern {
            pattern,
            bracketed: false,
            span: self.span_from(start),
        })
    }

    fn parse_rename(&mut self) -> ParseResult<Rename> {
        let start = self.peek().span;
        let new_name = self.parse_ident("a new column name")?;
        self.expect(&TokenKind::Assign, &format!("'=' after '{}'", new_name.name))?;
        let old_name = self.parse_ident("the column to rename")?;
        Ok(Rename {
            new_name,
            old_name,
            span: self.span_from(start),
        })
    }

    fn parse_reorder_key(&mut self) -> ParseResult<ReorderKey> {
        let pattern = self.parse_column_pattern()?;
        let order = match self.peek_word() {
            Some("asc") => Some(ReorderOrder::Asc),
            Some("desc") => Some(ReorderOrder::Desc),
            Some("granny") if self.peek_at(1).kind == TokenKind::Minus => match self.word_at(2) {
                Some("asc") => Some(ReorderOrder::GrannyAsc),
                Some("desc") => Some(ReorderOrder::GrannyDesc),
                _ => None,
            },
            _ => None,
        };
        if let Some(order) = order {
            let token_count = if matches!(order, ReorderOrder::GrannyAsc | ReorderOrder::GrannyDesc) {
                3
            } else {
                1
            };
            for _ in 0..token_count {
                self.advance();
            }
        }
        let span = self.span_from(pattern.span);
        Ok(ReorderKey { pattern, order, span })
    }

    /// Operator options `name=value` before the operator's arguments. `allowed` lists the
    /// option names the operator takes besides `hint.*`.
    pub(crate) fn parse_params(&mut self, allowed: &[&str]) -> ParseResult<Vec<OperatorParam>> {
        let mut params = Vec::new();
        while let Some((name, token_count)) = self.param_name_ahead() {
            if !(allowed.contains(&name.as_str()) || name.starts_with("hint.")) {
                break;
            }
            let start = self.peek().span;
            for _ in 0..=token_count {
                self.advance();
            }
            let value = match self.peek().kind {
                TokenKind::Ident if !matches!(self.peek_word(), Some("true" | "false")) => {
                    let token = self.advance();
                    Expr::new(
                        ExprKind::Name(Ident::new(self.token_text(&token), token.span)),
                        token.span,
                    )
                }
                _ => {
                    if !self.can_start_expr() {
                        return Err(self.error_expected(&format!("a value after '{name}='")));
                    }
                    self.parse_unary()?
                }
            };
            params.push(OperatorParam {
                name,
                value,
                span: self.span_from(start),
            });
        }
        Ok(params)
    }

    /// A dotted option name followed by `=`: returns the name and its token count.
    fn param_name_ahead(&self) -> Option<(String, usize)> {
        let mut name = self.word_at(0)?.to_string();
        let mut offset = 1;
        while self.peek_at(offset).kind == TokenKind::Dot {
            name.push('.');
            name.push_str(self.word_at(offset + 1)?);
            offset += 2;
        }
        (self.peek_at(offset).kind == TokenKind::Assign).then_some((name, offset))
    }
}
