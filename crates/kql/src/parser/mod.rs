//! The parser: recursive descent for statements and `|` pipelines ([`operators`]), Pratt
//! parsing for expressions ([`expr`]), literal bodies in [`literal`].
//!
//! The parser never panics: every malformed input ends in a [`ParseError`], and nesting is
//! bounded by [`MAX_DEPTH`].

mod expr;
mod literal;

pub use expr::SEARCH_COLUMN;
pub use literal::parse_timespan_body;
mod operators;
mod operators_extended;
mod operators_nested;
mod statements;

use crate::ast::Query;
use crate::error::ParseError;
use crate::lexer::tokenize;
use crate::span::Span;
use crate::token::{Token, TokenKind};

/// Deepest nesting of expressions, parentheses and subqueries the parser accepts.
pub const MAX_DEPTH: usize = 120;

/// Deepest syntax tree the parser builds: nesting plus the operators of a chain (`a + b + c`
/// nests each `+` in the next, a pipeline each operator in the next, `x.a.b` each member).
/// Whatever walks the tree (binding, planning, DataFusion's optimizer, evaluation) may
/// recurse once per level, so a bound here keeps every later stage's stack bounded. A tree
/// is at most twice this deep (a chain's operands are checked against what is left when
/// they are read).
pub const MAX_TREE_DEPTH: usize = 1000;

pub(crate) type ParseResult<T> = Result<T, ParseError>;

/// Parses a whole query: statements separated by `;`.
pub fn parse(text: &str) -> Result<Query, ParseError> {
    let mut parser = Parser::new(text);
    parser.parse_query()
}

pub(crate) struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    position: usize,
    /// End byte of the last consumed token, for node spans.
    last_end: u32,
    depth: usize,
    /// Depth of the tree being built at the current position (see [`MAX_TREE_DEPTH`]).
    tree_depth: usize,
    /// Inside a `search` predicate, where `column:"term"` searches one column.
    in_search: bool,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            tokens: tokenize(text),
            position: 0,
            last_end: 0,
            depth: 0,
            tree_depth: 0,
            in_search: false,
        }
    }

    fn eof_token(&self) -> Token {
        let end = self.text.len();
        Token {
            kind: TokenKind::Eof,
            span: Span::new(end, end),
        }
    }

    /// The current token (the `Eof` token past the end).
    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, offset: usize) -> &Token {
        let last = self.tokens.len().saturating_sub(1);
        let index = (self.position + offset).min(last);
        &self.tokens[index]
    }

    fn peek_kind(&self) -> &TokenKind {
        &self.peek().kind
    }

    fn at(&self, kind: &TokenKind) -> bool {
        self.peek_kind() == kind
    }

    fn at_eof(&self) -> bool {
        self.at(&TokenKind::Eof)
    }

    /// Consumes the current token and returns it (stays on `Eof`).
    fn advance(&mut self) -> Token {
        let token = self
            .tokens
            .get(self.position)
            .cloned()
            .unwrap_or_else(|| self.eof_token());
        if token.kind != TokenKind::Eof {
            self.position += 1;
            self.last_end = token.span.end;
        }
        token
    }

    fn eat(&mut self, kind: &TokenKind) -> Option<Span> {
        if self.at(kind) { Some(self.advance().span) } else { None }
    }

    /// Consumes `kind` or fails with "expected `what`, found ...".
    fn expect(&mut self, kind: &TokenKind, what: &str) -> ParseResult<Span> {
        match self.eat(kind) {
            Some(span) => Ok(span),
            None => Err(self.error_expected(what)),
        }
    }

    fn token_text(&self, token: &Token) -> &'a str {
        self.text.get(token.span.range()).unwrap_or("")
    }

    /// The word of the current token if it is an identifier.
    fn peek_word(&self) -> Option<&'a str> {
        self.word_at(0)
    }

    fn word_at(&self, offset: usize) -> Option<&'a str> {
        let token = self.peek_at(offset);
        match token.kind {
            TokenKind::Ident => Some(self.token_text(token)),
            _ => None,
        }
    }

    fn at_word(&self, word: &str) -> bool {
        self.peek_word() == Some(word)
    }

    fn eat_word(&mut self, word: &str) -> Option<Span> {
        if self.at_word(word) {
            Some(self.advance().span)
        } else {
            None
        }
    }

    fn expect_word(&mut self, word: &str) -> ParseResult<Span> {
        match self.eat_word(word) {
            Some(span) => Ok(span),
            None => Err(self.error_expected(&format!("'{word}'"))),
        }
    }

    /// True when token `offset` starts exactly where token `offset - 1` ends.
    fn adjacent(&self, offset: usize) -> bool {
        offset > 0 && self.peek_at(offset).span.start == self.peek_at(offset - 1).span.end
    }

    /// Span from `start` to the end of the last consumed token.
    fn span_from(&self, start: Span) -> Span {
        Span {
            start: start.start,
            end: self.last_end.max(start.start),
        }
    }

    fn error_at(&self, span: Span, message: impl Into<String>) -> ParseError {
        ParseError::new(self.text, span, message)
    }

    /// "expected `what`, found <current token>".
    fn error_expected(&self, what: &str) -> ParseError {
        let token = self.peek();
        self.error_at(
            token.span,
            format!("expected {what}, found {}", token.describe(self.text)),
        )
    }

    /// Guards recursion; pair with [`Parser::leave`].
    fn enter(&mut self) -> ParseResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_at(
                self.peek().span,
                format!(
                    "query is nested too deeply (more than {MAX_DEPTH} levels of parentheses, calls or subqueries)"
                ),
            ));
        }
        self.deepen()
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.tree_depth = self.tree_depth.saturating_sub(1);
    }

    /// One more level of the tree being built: a nesting, or one link of a chain of
    /// operators. The caller puts `tree_depth` back when its chain ends.
    fn deepen(&mut self) -> ParseResult<()> {
        self.tree_depth += 1;
        if self.tree_depth > MAX_TREE_DEPTH {
            return Err(self.error_at(
                self.peek().span,
                format!(
                    "query is too long: more than {MAX_TREE_DEPTH} operators in a row or nested; \
                     split it (for example with 'let') or use 'in (...)' for long lists of alternatives"
                ),
            ));
        }
        Ok(())
    }

    /// Parses `item (, item)*`, allowing no trailing comma.
    fn comma_separated<T>(&mut self, mut item: impl FnMut(&mut Self) -> ParseResult<T>) -> ParseResult<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat(&TokenKind::Comma).is_some() {
            items.push(item(self)?);
        }
        Ok(items)
    }
}
