//! Pratt parsing of scalar expressions, and pipelines as expressions.

use super::{ParseResult, Parser};
use crate::ast::{BinaryOp, Expr, ExprKind, Ident, ListOp, Literal, NamedExpr, Precedence, UnaryOp};
use crate::span::Span;
use crate::token::TokenKind;

/// An infix operator found at the current position, and how many tokens spell it.
#[derive(Debug, Clone, Copy)]
enum Infix {
    Binary(BinaryOp),
    List(ListOp),
    Between { negated: bool },
}

impl Infix {
    fn precedence(self) -> Precedence {
        match self {
            Infix::Binary(op) => op.precedence(),
            Infix::List(_) | Infix::Between { .. } => Precedence::Equality,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Infix::Binary(op) => op.as_str(),
            Infix::List(op) => op.as_str(),
            Infix::Between { negated: true } => "!between",
            Infix::Between { negated: false } => "between",
        }
    }
}

/// The call a `search` predicate's `column:"term"` reads as.
pub const SEARCH_COLUMN: &str = "__search_column";

impl Parser<'_> {
    /// A scalar or tabular expression: an expression optionally followed by `| operator`s.
    pub(crate) fn parse_pipeline_expr(&mut self) -> ParseResult<Expr> {
        self.enter()?;
        let result = self.parse_pipeline_inner();
        self.leave();
        result
    }

    fn parse_pipeline_inner(&mut self) -> ParseResult<Expr> {
        let source = match self.try_parse_source_operator()? {
            Some(operator) => {
                let span = operator.span;
                Expr::new(ExprKind::TabularOperator(Box::new(operator)), span)
            }
            None => self.parse_expr()?,
        };
        if self.peek().kind != TokenKind::Pipe {
            return Ok(source);
        }
        let mut operators = Vec::new();
        let base = self.tree_depth;
        while self.eat(&TokenKind::Pipe).is_some() {
            self.deepen()?;
            operators.push(self.parse_operator()?);
        }
        self.tree_depth = base;
        let span = source.span.to(Span {
            start: 0,
            end: self.last_end,
        });
        Ok(Expr::new(
            ExprKind::Pipeline {
                source: Box::new(source),
                operators,
            },
            span,
        ))
    }

    /// A scalar expression (no `|`).
    pub(crate) fn parse_expr(&mut self) -> ParseResult<Expr> {
        self.parse_binary(Precedence::Or)
    }

    /// True when the current token can begin an expression.
    pub(crate) fn can_start_expr(&self) -> bool {
        match self.peek_kind() {
            TokenKind::Ident
            | TokenKind::Long(_)
            | TokenKind::Real(_)
            | TokenKind::Timespan(_)
            | TokenKind::String(_)
            | TokenKind::LParen
            | TokenKind::Minus
            | TokenKind::Plus
            | TokenKind::Star => true,
            TokenKind::LBracket => matches!(self.peek_at(1).kind, TokenKind::String(_)),
            _ => false,
        }
    }

    pub(crate) fn parse_binary(&mut self, min_precedence: Precedence) -> ParseResult<Expr> {
        self.enter()?;
        let result = self.parse_binary_inner(min_precedence);
        self.leave();
        result
    }

    fn parse_binary_inner(&mut self, min_precedence: Precedence) -> ParseResult<Expr> {
        let base = self.tree_depth;
        let left = self.parse_binary_chain(min_precedence);
        self.tree_depth = base;
        left
    }

    /// The operand and the operators that follow it (each wraps the tree so far).
    fn parse_binary_chain(&mut self, min_precedence: Precedence) -> ParseResult<Expr> {
        let mut left = self.parse_unary()?;
        while let Some((infix, token_count)) = self.peek_infix() {
            let precedence = infix.precedence();
            if precedence < min_precedence {
                break;
            }
            self.deepen()?;
            for _ in 0..token_count {
                self.advance();
            }
            left = match infix {
                Infix::Binary(op) => {
                    if !self.can_start_expr() {
                        return Err(self.error_expected(&format!("an expression after '{}'", op.as_str())));
                    }
                    let right = self.parse_binary(next_precedence(precedence))?;
                    let span = left.span.to(right.span);
                    Expr::new(
                        ExprKind::Binary {
                            op,
                            left: Box::new(left),
                            right: Box::new(right),
                        },
                        span,
                    )
                }
                Infix::List(op) => {
                    self.expect(&TokenKind::LParen, &format!("'(' after '{}'", infix.text()))?;
                    let items = if self.at(&TokenKind::RParen) {
                        Vec::new()
                    } else {
                        self.comma_separated(Self::parse_pipeline_expr)?
                    };
                    self.expect(
                        &TokenKind::RParen,
                        &format!("',' or ')' in the '{}' list", infix.text()),
                    )?;
                    let span = self.span_from(left.span);
                    Expr::new(
                        ExprKind::List {
                            op,
                            operand: Box::new(left),
                            items,
                        },
                        span,
                    )
                }
                Infix::Between { negated } => {
                    self.expect(&TokenKind::LParen, &format!("'(' after '{}'", infix.text()))?;
                    let low = self.parse_expr()?;
                    self.expect(&TokenKind::DotDot, "'..' between the bounds of 'between'")?;
                    let high = self.parse_expr()?;
                    self.expect(&TokenKind::RParen, "')' after the bounds of 'between'")?;
                    let span = self.span_from(left.span);
                    let (low, high) = (Box::new(low), Box::new(high));
                    Expr::new(
                        ExprKind::Between {
                            negated,
                            operand: Box::new(left),
                            low,
                            high,
                        },
                        span,
                    )
                }
            };
        }
        Ok(left)
    }

    /// Recognizes an infix operator at the current position without consuming it.
    fn peek_infix(&self) -> Option<(Infix, usize)> {
        let binary = |op| Some((Infix::Binary(op), 1));
        match self.peek_kind() {
            TokenKind::Star => binary(BinaryOp::Mul),
            TokenKind::Slash => binary(BinaryOp::Div),
            TokenKind::Percent => binary(BinaryOp::Mod),
            TokenKind::Plus => binary(BinaryOp::Add),
            TokenKind::Minus => binary(BinaryOp::Sub),
            TokenKind::Lt => binary(BinaryOp::Lt),
            TokenKind::Le => binary(BinaryOp::Le),
            TokenKind::Gt => binary(BinaryOp::Gt),
            TokenKind::Ge => binary(BinaryOp::Ge),
            TokenKind::EqEq => binary(BinaryOp::Eq),
            TokenKind::NotEq | TokenKind::LtGt => binary(BinaryOp::NotEq),
            TokenKind::EqTilde => binary(BinaryOp::EqCi),
            TokenKind::BangTilde => binary(BinaryOp::NotEqCi),
            TokenKind::Ident => self.word_infix(self.peek_word().unwrap_or(""), 0),
            TokenKind::Bang if self.adjacent(1) => {
                let word = self.word_at(1)?;
                match self.word_infix(word, 1)? {
                    (Infix::Binary(_), _) => {
                        let op = BinaryOp::from_word(&format!("!{word}"))?;
                        Some((Infix::Binary(op), 2))
                    }
                    (Infix::List(ListOp::In), count) => Some((Infix::List(ListOp::NotIn), count + 1)),
                    (Infix::List(ListOp::InCi), count) => Some((Infix::List(ListOp::NotInCi), count + 1)),
                    (Infix::Between { negated: false }, count) => Some((Infix::Between { negated: true }, count + 1)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// An infix operator spelled by `word` at token `offset`.
    fn word_infix(&self, word: &str, offset: usize) -> Option<(Infix, usize)> {
        match word {
            "in" if self.peek_at(offset + 1).kind == TokenKind::Tilde && self.adjacent(offset + 1) => {
                Some((Infix::List(ListOp::InCi), 2))
            }
            "in" => Some((Infix::List(ListOp::In), 1)),
            "has_any" => Some((Infix::List(ListOp::HasAny), 1)),
            "has_all" => Some((Infix::List(ListOp::HasAll), 1)),
            "between" => Some((Infix::Between { negated: false }, 1)),
            "matches" if self.word_at(offset + 1) == Some("regex") => Some((Infix::Binary(BinaryOp::MatchesRegex), 2)),
            _ => BinaryOp::from_word(word).map(|op| (Infix::Binary(op), 1)),
        }
    }

    pub(crate) fn parse_unary(&mut self) -> ParseResult<Expr> {
        let op = match self.peek_kind() {
            TokenKind::Minus => UnaryOp::Neg,
            TokenKind::Plus => UnaryOp::Plus,
            _ => return self.parse_postfix(),
        };
        let start = self.advance().span;
        if !self.can_start_expr() {
            let text = if op == UnaryOp::Neg { "-" } else { "+" };
            return Err(self.error_expected(&format!("an expression after '{text}'")));
        }
        let operand = self.parse_binary(Precedence::Unary)?;
        let span = start.to(operand.span);
        Ok(Expr::new(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
        ))
    }

    /// A primary expression followed by `.member` and `[index]` accesses.
    pub(crate) fn parse_postfix(&mut self) -> ParseResult<Expr> {
        let base = self.tree_depth;
        let expr = self.parse_postfix_chain();
        self.tree_depth = base;
        expr
    }

    fn parse_postfix_chain(&mut self) -> ParseResult<Expr> {
        let mut expr = self.parse_primary()?;
        // `search column:"term"`: the term in one column, as `__search_column(column, "term")`.
        if self.in_search && matches!(expr.kind, ExprKind::Name(_)) && *self.peek_kind() == TokenKind::Colon {
            self.advance();
            let term = self.parse_primary()?;
            let span = expr.span.to(term.span);
            return Ok(Expr::new(
                ExprKind::Call {
                    function: Ident::new(SEARCH_COLUMN, span),
                    args: vec![expr, term],
                },
                span,
            ));
        }
        loop {
            if matches!(self.peek_kind(), TokenKind::Dot | TokenKind::LBracket) {
                self.deepen()?;
            }
            match self.peek_kind() {
                TokenKind::Dot => {
                    self.advance();
                    let member = self.parse_ident("a member name after '.'")?;
                    let span = expr.span.to(member.span);
                    expr = Expr::new(
                        ExprKind::Member {
                            target: Box::new(expr),
                            member,
                        },
                        span,
                    );
                }
                TokenKind::LBracket => {
                    self.advance();
                    let index = self.parse_expr()?;
                    self.expect(&TokenKind::RBracket, "']' after index")?;
                    let span = self.span_from(expr.span);
                    expr = Expr::new(
                        ExprKind::Index {
                            target: Box::new(expr),
                            index: Box::new(index),
                        },
                        span,
                    );
                }
                _ => return Ok(expr),
            }
        }
    }

    fn parse_primary(&mut self) -> ParseResult<Expr> {
        let token = self.peek().clone();
        let literal = |literal| Ok(Expr::new(ExprKind::Literal(literal), token.span));
        match token.kind {
            TokenKind::Long(value) => {
                self.advance();
                literal(Literal::Long(value))
            }
            TokenKind::Real(value) => {
                self.advance();
                literal(Literal::Real(value))
            }
            TokenKind::Timespan(value) => {
                self.advance();
                literal(Literal::Timespan(value))
            }
            TokenKind::String(_) => {
                let mut value = String::new();
                while let TokenKind::String(part) = &self.peek().kind {
                    value.push_str(part);
                    self.advance();
                }
                Ok(Expr::new(
                    ExprKind::Literal(Literal::String(value)),
                    self.span_from(token.span),
                ))
            }
            TokenKind::Star => {
                self.advance();
                Ok(Expr::new(ExprKind::Star, token.span))
            }
            TokenKind::LParen => {
                self.advance();
                if !self.can_start_expr() {
                    return Err(self.error_expected("an expression after '('"));
                }
                let inner = self.parse_pipeline_expr()?;
                self.expect(&TokenKind::RParen, "')'")?;
                Ok(inner)
            }
            TokenKind::LBracket => match self.eat_bracketed_name() {
                Some(ident) => Ok(Expr::new(ExprKind::Name(ident.clone()), ident.span)),
                None => Err(self.error_expected("an expression")),
            },
            TokenKind::Ident => self.parse_word_primary(),
            _ => Err(self.error_expected("an expression")),
        }
    }

    /// A primary that starts with a word: a keyword literal, a typed literal, a call, a name.
    fn parse_word_primary(&mut self) -> ParseResult<Expr> {
        let token = self.advance();
        let word = self.token_text(&token);
        let literal = |literal| Ok(Expr::new(ExprKind::Literal(literal), token.span));
        match word {
            "true" | "True" | "TRUE" => return literal(Literal::Bool(true)),
            "false" | "False" | "FALSE" => return literal(Literal::Bool(false)),
            "null" => return literal(Literal::Null(None)),
            _ => {}
        }
        if self.peek().kind != TokenKind::LParen {
            return Ok(Expr::new(ExprKind::Name(Ident::new(word, token.span)), token.span));
        }
        if let Some(expr) = self.parse_typed_literal(word, token.span)? {
            return Ok(expr);
        }
        self.advance();
        if word == "not" {
            let operand = self.parse_expr()?;
            self.expect(&TokenKind::RParen, "')' after the argument of 'not'")?;
            let span = self.span_from(token.span);
            return Ok(Expr::new(
                ExprKind::Unary {
                    op: UnaryOp::Not,
                    operand: Box::new(operand),
                },
                span,
            ));
        }
        let mut args = Vec::new();
        if self.eat(&TokenKind::RParen).is_none() {
            args = self.comma_separated(Self::parse_argument)?;
            self.expect(&TokenKind::RParen, &format!("',' or ')' in the arguments of '{word}'"))?;
        }
        let function = Ident::new(word, token.span);
        Ok(Expr::new(ExprKind::Call { function, args }, self.span_from(token.span)))
    }

    /// A call argument: `name = value` or an expression (possibly a pipeline).
    fn parse_argument(&mut self) -> ParseResult<Expr> {
        if self.peek().kind == TokenKind::Ident && self.peek_at(1).kind == TokenKind::Assign {
            let name = self.parse_ident("an argument name")?;
            self.advance();
            let value = self.parse_expr()?;
            let span = name.span.to(value.span);
            return Ok(Expr::new(
                ExprKind::NamedArgument {
                    name,
                    value: Box::new(value),
                },
                span,
            ));
        }
        if !self.can_start_expr() {
            return Err(self.error_expected("an argument"));
        }
        self.parse_pipeline_expr()
    }

    /// `expr`, `name = expr` or `(a, b) = expr`.
    pub(crate) fn parse_named_expr(&mut self) -> ParseResult<NamedExpr> {
        let start = self.peek().span;
        let mut names = Vec::new();
        if self.assignment_follows() {
            names.push(self.parse_ident("a column name")?);
            self.advance();
        } else if self.tuple_assignment_follows() {
            self.advance();
            names = self.comma_separated(|parser| parser.parse_ident("a column name"))?;
            self.expect(&TokenKind::RParen, "')'")?;
            self.expect(&TokenKind::Assign, "'='")?;
        }
        if !self.can_start_expr() {
            let what = match names.last() {
                Some(name) => format!("an expression after '{} ='", name.name),
                None => "an expression".to_string(),
            };
            return Err(self.error_expected(&what));
        }
        let expr = self.parse_expr()?;
        Ok(NamedExpr {
            names,
            expr,
            span: self.span_from(start),
        })
    }

    /// `( name, name ) =`
    fn tuple_assignment_follows(&self) -> bool {
        if self.peek().kind != TokenKind::LParen {
            return false;
        }
        let mut offset = 1;
        loop {
            if self.peek_at(offset).kind != TokenKind::Ident {
                return false;
            }
            match self.peek_at(offset + 1).kind {
                TokenKind::Comma => offset += 2,
                TokenKind::RParen => return self.peek_at(offset + 2).kind == TokenKind::Assign,
                _ => return false,
            }
        }
    }
}

/// The precedence one step tighter, for left-associative right operands.
fn next_precedence(precedence: Precedence) -> Precedence {
    match precedence {
        Precedence::Or => Precedence::And,
        Precedence::And => Precedence::Equality,
        Precedence::Equality => Precedence::Relational,
        Precedence::Relational => Precedence::Additive,
        Precedence::Additive => Precedence::Multiplicative,
        Precedence::Multiplicative | Precedence::Unary => Precedence::Unary,
    }
}
