//! Statements: `let`, `set`, query expressions, and user function definitions.

use super::{ParseResult, Parser};
use crate::ast::{
    ColumnDecl, FunctionDef, Ident, Let, LetValue, Param, ParamType, PatternDecl, PatternRule, Query, ScalarType,
    SetOption, Statement, StatementKind,
};
use crate::token::TokenKind;

impl Parser<'_> {
    pub(super) fn parse_query(&mut self) -> ParseResult<Query> {
        let start = self.peek().span;
        let statements = self.parse_statements(&TokenKind::Eof)?;
        if statements.is_empty() {
            return Err(self.error_expected("a query"));
        }
        Ok(Query {
            statements,
            span: self.span_from(start),
        })
    }

    /// Statements separated by `;` up to (not including) `terminator`.
    fn parse_statements(&mut self, terminator: &TokenKind) -> ParseResult<Vec<Statement>> {
        let mut statements = Vec::new();
        loop {
            while self.eat(&TokenKind::Semicolon).is_some() {}
            if self.at(terminator) {
                return Ok(statements);
            }
            statements.push(self.parse_statement()?);
            if self.at(terminator) {
                return Ok(statements);
            }
            if self.eat(&TokenKind::Semicolon).is_none() {
                let wanted = match terminator {
                    TokenKind::RBrace => "';' or '}' after statement",
                    _ => "';', '|' or end of query after statement",
                };
                return Err(self.error_expected(wanted));
            }
        }
    }

    fn parse_statement(&mut self) -> ParseResult<Statement> {
        let start = self.peek().span;
        let starts_name = |parser: &Self| matches!(parser.peek_at(1).kind, TokenKind::Ident | TokenKind::LBracket);
        let kind = if self.at_word("let") {
            self.advance();
            StatementKind::Let(self.parse_let()?)
        } else if self.at_word("set") && starts_name(self) {
            self.advance();
            StatementKind::Set(self.parse_set()?)
        } else if self.at_word("declare") && self.word_at(1) == Some("query_parameters") {
            self.advance();
            self.advance();
            self.expect(&TokenKind::LParen, "'(' after 'declare query_parameters'")?;
            let mut params = Vec::new();
            if self.eat(&TokenKind::RParen).is_none() {
                params = self.comma_separated(Self::parse_param)?;
                self.expect(&TokenKind::RParen, "',' or ')' after a query parameter")?;
            }
            StatementKind::DeclareParameters(params)
        } else if self.at_word("declare") && self.word_at(1) == Some("pattern") {
            self.advance();
            self.advance();
            StatementKind::DeclarePattern(self.parse_pattern()?)
        } else if self.at_word("restrict") && self.word_at(1) == Some("access") {
            self.advance();
            self.advance();
            self.expect_word("to")
                .map_err(|_| self.error_expected("'to' after 'restrict access'"))?;
            self.expect(&TokenKind::LParen, "'(' and the entities after 'restrict access to'")?;
            let entities = self.comma_separated(Self::parse_table_or_pattern)?;
            self.expect(&TokenKind::RParen, "',' or ')' after an entity of 'restrict access to'")?;
            StatementKind::Restrict(entities)
        } else {
            StatementKind::Expr(self.parse_pipeline_expr()?)
        };
        Ok(Statement {
            kind,
            span: self.span_from(start),
        })
    }

    /// After `declare pattern`: `name [= (params)[path] { rules }]`.
    fn parse_pattern(&mut self) -> ParseResult<PatternDecl> {
        let name = self.parse_ident("a name after 'declare pattern'")?;
        let mut decl = PatternDecl {
            name,
            params: Vec::new(),
            path: None,
            rules: Vec::new(),
        };
        if self.eat(&TokenKind::Assign).is_none() {
            return Ok(decl);
        }
        self.expect(&TokenKind::LParen, "'(' before the pattern's arguments")?;
        decl.params = self.comma_separated(Self::parse_param)?;
        self.expect(&TokenKind::RParen, "',' or ')' after a pattern argument")?;
        if self.eat(&TokenKind::LBracket).is_some() {
            decl.path = Some(self.parse_param()?);
            self.expect(&TokenKind::RBracket, "']' after the pattern's path")?;
        }
        self.expect(&TokenKind::LBrace, "'{' before the pattern's rules")?;
        loop {
            while self.eat(&TokenKind::Semicolon).is_some() {}
            if self.eat(&TokenKind::RBrace).is_some() {
                return Ok(decl);
            }
            let start = self.expect(&TokenKind::LParen, "'(' before a pattern rule's values or '}'")?;
            let args = self.comma_separated(Self::parse_expr)?;
            self.expect(&TokenKind::RParen, "',' or ')' after a pattern rule's values")?;
            let path = if self.eat(&TokenKind::Dot).is_some() {
                self.expect(&TokenKind::LBracket, "'[' after '.' in a pattern rule")?;
                let path = self.parse_expr()?;
                self.expect(&TokenKind::RBracket, "']' after a pattern rule's path")?;
                Some(path)
            } else {
                None
            };
            self.expect(&TokenKind::Assign, "'=' before a pattern rule's body")?;
            self.expect(&TokenKind::LBrace, "'{' to start a pattern rule's body")?;
            self.enter()?;
            let body = self.parse_statements(&TokenKind::RBrace)?;
            self.leave();
            if body.is_empty() {
                return Err(self.error_expected("a pattern rule's body"));
            }
            self.expect(&TokenKind::RBrace, "'}' to end a pattern rule's body")?;
            decl.rules.push(PatternRule {
                args,
                path,
                body,
                span: self.span_from(start),
            });
        }
    }

    fn parse_let(&mut self) -> ParseResult<Let> {
        let name = self.parse_ident("a name after 'let'")?;
        self.expect(&TokenKind::Assign, &format!("'=' after 'let {}'", name.name))?;
        if self.at_word("view") && self.peek_at(1).kind == TokenKind::LParen {
            self.advance();
        }
        let value = if self.function_definition_follows() {
            LetValue::Function(self.parse_function_def()?)
        } else {
            if !self.can_start_expr() {
                return Err(self.error_expected(&format!("an expression after 'let {} ='", name.name)));
            }
            LetValue::Expr(self.parse_pipeline_expr()?)
        };
        Ok(Let { name, value })
    }

    /// `(` `)` `{`, or `(` name `:` — a parameter list rather than a parenthesized expression.
    fn function_definition_follows(&self) -> bool {
        if self.peek().kind != TokenKind::LParen {
            return false;
        }
        match self.peek_at(1).kind {
            TokenKind::RParen => self.peek_at(2).kind == TokenKind::LBrace,
            TokenKind::Ident => self.peek_at(2).kind == TokenKind::Colon,
            TokenKind::LBracket => self.peek_at(4).kind == TokenKind::Colon,
            _ => false,
        }
    }

    fn parse_function_def(&mut self) -> ParseResult<FunctionDef> {
        let start = self.expect(&TokenKind::LParen, "'('")?;
        let mut params = Vec::new();
        if self.eat(&TokenKind::RParen).is_none() {
            params = self.comma_separated(Self::parse_param)?;
            self.expect(&TokenKind::RParen, "',' or ')' after function parameter")?;
        }
        self.expect(&TokenKind::LBrace, "'{' to start the function body")?;
        self.enter()?;
        let body = self.parse_statements(&TokenKind::RBrace)?;
        self.leave();
        if body.is_empty() {
            return Err(self.error_expected("a function body"));
        }
        self.expect(&TokenKind::RBrace, "'}' to end the function body")?;
        Ok(FunctionDef {
            params,
            body,
            span: self.span_from(start),
        })
    }

    pub(super) fn parse_param(&mut self) -> ParseResult<Param> {
        let start = self.peek().span;
        let name = self.parse_ident("a parameter name")?;
        self.expect(
            &TokenKind::Colon,
            &format!("':' and a type after parameter '{}'", name.name),
        )?;
        let ty = if self.eat(&TokenKind::LParen).is_some() {
            let (columns, open) = self.parse_schema_columns()?;
            ParamType::Tabular { columns, open }
        } else {
            ParamType::Scalar(self.parse_scalar_type()?)
        };
        let default = match self.eat(&TokenKind::Assign) {
            Some(_) => Some(self.parse_expr()?),
            None => None,
        };
        Ok(Param {
            name,
            ty,
            default,
            span: self.span_from(start),
        })
    }

    /// After `(`: `name:type, ..., [*]` and `)`. Returns the columns and whether `*` was present.
    pub(super) fn parse_schema_columns(&mut self) -> ParseResult<(Vec<ColumnDecl>, bool)> {
        let mut columns = Vec::new();
        let mut open = false;
        loop {
            if self.eat(&TokenKind::Star).is_some() {
                open = true;
            } else {
                columns.push(self.parse_column_decl()?);
            }
            if self.eat(&TokenKind::Comma).is_none() {
                break;
            }
        }
        self.expect(&TokenKind::RParen, "',' or ')' after the schema")?;
        Ok((columns, open))
    }

    /// `name:type`.
    pub(super) fn parse_column_decl(&mut self) -> ParseResult<ColumnDecl> {
        let start = self.peek().span;
        let name = self.parse_ident("a column name")?;
        self.expect(
            &TokenKind::Colon,
            &format!("':' and a type after column '{}'", name.name),
        )?;
        let ty = self.parse_scalar_type()?;
        Ok(ColumnDecl {
            name,
            ty,
            span: self.span_from(start),
        })
    }

    pub(crate) fn parse_scalar_type(&mut self) -> ParseResult<ScalarType> {
        match self.peek_word().and_then(ScalarType::from_name) {
            Some(ty) => {
                self.advance();
                Ok(ty)
            }
            None => Err(self.error_expected("a type name (bool, int, long, real, string, datetime, ...)")),
        }
    }

    fn parse_set(&mut self) -> ParseResult<SetOption> {
        let mut name = self.parse_ident("an option name")?.name;
        while self.peek().kind == TokenKind::Dot && self.peek_at(1).kind == TokenKind::Ident {
            self.advance();
            let part = self.advance();
            name.push('.');
            name.push_str(self.token_text(&part));
        }
        let value = match self.eat(&TokenKind::Assign) {
            Some(_) => Some(self.parse_expr()?),
            None => None,
        };
        Ok(SetOption { name, value })
    }

    /// An identifier or a bracketed name `['...']`; `what` names it in the error message.
    pub(super) fn parse_ident(&mut self, what: &str) -> ParseResult<Ident> {
        if let Some(ident) = self.eat_bracketed_name() {
            return Ok(ident);
        }
        if self.peek().kind == TokenKind::Ident {
            let token = self.advance();
            return Ok(Ident::new(self.token_text(&token), token.span));
        }
        Err(self.error_expected(what))
    }

    /// `['name']` or `["name"]`, if present.
    pub(super) fn eat_bracketed_name(&mut self) -> Option<Ident> {
        if self.peek().kind != TokenKind::LBracket || self.peek_at(2).kind != TokenKind::RBracket {
            return None;
        }
        let TokenKind::String(name) = self.peek_at(1).kind.clone() else {
            return None;
        };
        let start = self.advance().span;
        self.advance();
        let end = self.advance().span;
        Some(Ident {
            name,
            bracketed: true,
            span: start.to(end),
        })
    }

    /// True when the next tokens are a name (plain or bracketed) followed by `=`.
    pub(super) fn assignment_follows(&self) -> bool {
        match self.peek().kind {
            TokenKind::Ident => self.peek_at(1).kind == TokenKind::Assign,
            TokenKind::LBracket => {
                matches!(self.peek_at(1).kind, TokenKind::String(_))
                    && self.peek_at(2).kind == TokenKind::RBracket
                    && self.peek_at(3).kind == TokenKind::Assign
            }
            _ => false,
        }
    }
}
