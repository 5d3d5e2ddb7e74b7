//! Operators with nested clause structure: `make-series`, `top-nested`, `fork`, `scan`.

use super::{ParseResult, Parser};
use crate::ast::{
    ForkBranch, MakeSeries, Precedence, Scan, ScanStep, SeriesAggregate, SeriesRange, SortOrder, TopNestedLevel,
};
use crate::token::TokenKind;

const MAKE_SERIES_PARAMS: &[&str] = &["kind"];
const SCAN_PARAMS: &[&str] = &["with_match_id"];

impl Parser<'_> {
    pub(super) fn parse_make_series(&mut self) -> ParseResult<MakeSeries> {
        let params = self.parse_params(MAKE_SERIES_PARAMS)?;
        let aggregates = self.comma_separated(|parser| {
            let start = parser.peek().span;
            let aggregate = parser.parse_named_expr()?;
            let default = match parser.at_word("default") && parser.peek_at(1).kind == TokenKind::Assign {
                true => {
                    parser.advance();
                    parser.advance();
                    Some(parser.parse_required_expr("default =")?)
                }
                false => None,
            };
            Ok(SeriesAggregate {
                aggregate,
                default,
                span: parser.span_from(start),
            })
        })?;
        self.expect_word("on")
            .map_err(|_| self.error_expected("'on' and an axis column in 'make-series'"))?;
        let on = self.parse_binary(Precedence::Relational)?;
        let range = if self.eat_word("in").is_some() {
            self.expect_word("range")?;
            self.expect(&TokenKind::LParen, "'(' after 'range'")?;
            let start = self.parse_required_expr("range(")?;
            self.expect(&TokenKind::Comma, "','")?;
            let stop = self.parse_required_expr(",")?;
            self.expect(&TokenKind::Comma, "','")?;
            let step = self.parse_required_expr(",")?;
            self.expect(&TokenKind::RParen, "')' after the range")?;
            SeriesRange::InRange { start, stop, step }
        } else {
            let from = match self.eat_word("from") {
                Some(_) => Some(self.parse_required_expr("from")?),
                None => None,
            };
            let to = match self.eat_word("to") {
                Some(_) => Some(self.parse_required_expr("to")?),
                None => None,
            };
            self.expect_word("step")
                .map_err(|_| self.error_expected("'step' in 'make-series'"))?;
            SeriesRange::FromTo {
                from,
                to,
                step: self.parse_required_expr("step")?,
            }
        };
        let by = match self.eat_word("by") {
            Some(_) => self.comma_separated(Self::parse_named_expr)?,
            None => Vec::new(),
        };
        Ok(MakeSeries {
            params,
            aggregates,
            on,
            range,
            by,
        })
    }

    pub(super) fn parse_top_nested(&mut self) -> ParseResult<Vec<TopNestedLevel>> {
        let mut levels = Vec::new();
        loop {
            let start = self.peek().span;
            let count = match self.at_word("of") {
                true => None,
                false => Some(self.parse_required_expr("top-nested")?),
            };
            self.expect_word("of")
                .map_err(|_| self.error_expected("'of' in 'top-nested'"))?;
            let of = self.parse_named_expr()?;
            let mut with_others = None;
            if self.at_word("with") && self.word_at(1) == Some("others") {
                self.advance();
                self.advance();
                self.expect(&TokenKind::Assign, "'=' after 'with others'")?;
                with_others = Some(self.parse_required_expr("with others =")?);
            }
            self.expect_word("by")
                .map_err(|_| self.error_expected("'by' in 'top-nested'"))?;
            let by = self.parse_named_expr()?;
            let order = if self.eat_word("asc").is_some() {
                Some(SortOrder::Asc)
            } else if self.eat_word("desc").is_some() {
                Some(SortOrder::Desc)
            } else {
                None
            };
            levels.push(TopNestedLevel {
                count,
                of,
                with_others,
                by,
                order,
                span: self.span_from(start),
            });
            let next_level = self.peek().kind == TokenKind::Comma
                && self.word_at(1) == Some("top")
                && self.peek_at(2).kind == TokenKind::Minus
                && self.word_at(3) == Some("nested");
            if !next_level {
                return Ok(levels);
            }
            for _ in 0..4 {
                self.advance();
            }
        }
    }

    pub(super) fn parse_fork(&mut self) -> ParseResult<Vec<ForkBranch>> {
        let mut branches = Vec::new();
        while !self.at_operator_end() || branches.is_empty() {
            let start = self.peek().span;
            let name = match self.assignment_follows() {
                true => {
                    let name = self.parse_ident("a branch name")?;
                    self.advance();
                    Some(name)
                }
                false => None,
            };
            let operators = self.parse_parenthesized_operators("fork")?;
            branches.push(ForkBranch {
                name,
                operators,
                span: self.span_from(start),
            });
        }
        Ok(branches)
    }

    pub(super) fn parse_scan(&mut self) -> ParseResult<Scan> {
        let params = self.parse_params(SCAN_PARAMS)?;
        let mut declare = Vec::new();
        if self.eat_word("declare").is_some() {
            self.expect(&TokenKind::LParen, "'(' after 'declare'")?;
            declare = self.comma_separated(Self::parse_param)?;
            self.expect(&TokenKind::RParen, "',' or ')' after the declarations")?;
        }
        self.expect_word("with")
            .map_err(|_| self.error_expected("'with' and steps in 'scan'"))?;
        self.expect(&TokenKind::LParen, "'(' after 'with'")?;
        let mut steps = Vec::new();
        while self.eat(&TokenKind::RParen).is_none() {
            let start = self.expect_word("step")?;
            let name = self.parse_ident("a step name")?;
            let output = match self.at_word("output") && self.peek_at(1).kind == TokenKind::Assign {
                true => {
                    self.advance();
                    self.advance();
                    Some(self.parse_ident("all, last or none after 'output='")?)
                }
                false => None,
            };
            self.expect(&TokenKind::Colon, "':' after the step name")?;
            let condition = self.parse_required_expr(":")?;
            let assignments = match self.eat(&TokenKind::Arrow) {
                Some(_) => self.comma_separated(Self::parse_named_expr)?,
                None => Vec::new(),
            };
            steps.push(ScanStep {
                name,
                output,
                condition,
                assignments,
                span: self.span_from(start),
            });
            if self.eat(&TokenKind::Semicolon).is_none() {
                self.expect(&TokenKind::RParen, "';' or ')' after a scan step")?;
                break;
            }
        }
        Ok(Scan { params, declare, steps })
    }
}
