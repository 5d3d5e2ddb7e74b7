//! Typed literals whose bodies are not ordinary tokens (`datetime(...)`, `guid(...)`,
//! `time(...)`, `int(...)`, ...) and the JSON-like body of `dynamic(...)`.

use trawl_common::time::parse_datetime;

use super::{ParseResult, Parser};
use crate::ast::{DynamicValue, Expr, ExprKind, Literal, ScalarType};
use crate::lexer::{scale_timespan, timespan_unit_nanos};
use crate::span::Span;
use crate::token::TokenKind;

impl Parser<'_> {
    /// With the current token `(` after `word`: parses a typed literal if `word` names one.
    pub(super) fn parse_typed_literal(&mut self, word: &str, start: Span) -> ParseResult<Option<Expr>> {
        let literal = match word {
            "dynamic" => {
                self.advance();
                let value = self.parse_dynamic_value()?;
                self.expect(&TokenKind::RParen, "')' after the dynamic value")?;
                Literal::Dynamic(value)
            }
            "typeof" => {
                self.advance();
                let ty = self.parse_scalar_type()?;
                self.expect(&TokenKind::RParen, "')' after the type")?;
                return Ok(Some(Expr::new(ExprKind::TypeOf(ty), self.span_from(start))));
            }
            _ => {
                let Some(ty) = ScalarType::from_name(word).filter(|ty| *ty != ScalarType::String) else {
                    return Ok(None);
                };
                let (body, body_span) = self.raw_literal_body(word)?;
                // `datetime(2017 - 08 - 01)`: Kusto reads a date with spaces around its dashes.
                let spaced = || {
                    (ty == ScalarType::DateTime)
                        .then(|| body.split(" - ").map(str::trim).collect::<Vec<_>>().join("-"))
                        .and_then(|joined| typed_literal(ty, joined.trim()))
                };
                match typed_literal(ty, body.trim()).or_else(spaced) {
                    Some(literal) => literal,
                    None => {
                        let message = format!("invalid {} literal '{}({})'", ty.name(), word, body.trim());
                        return Err(self.error_at(body_span, message));
                    }
                }
            }
        };
        Ok(Some(Expr::new(ExprKind::Literal(literal), self.span_from(start))))
    }

    /// Reads the text between `(` (the current token) and the next `)`, skipping the tokens
    /// the lexer made of it. A body that is one quoted string yields the string's value.
    fn raw_literal_body(&mut self, word: &str) -> ParseResult<(String, Span)> {
        let open = self.advance().span;
        if let TokenKind::String(value) = &self.peek().kind
            && self.peek_at(1).kind == TokenKind::RParen
        {
            let value = value.clone();
            let body_span = self.advance().span;
            self.advance();
            return Ok((value, body_span));
        }
        let body_start = open.end as usize;
        let Some(close) = self.text.get(body_start..).and_then(|rest| rest.find(')')) else {
            let span = Span::new(body_start, self.text.len());
            return Err(self.error_at(span, format!("expected ')' to close '{word}(', found end of query")));
        };
        let close = body_start + close;
        while !self.at_eof() && (self.peek().span.start as usize) < close {
            if self.peek().span.end as usize > close {
                let span = self.peek().span;
                return Err(self.error_at(span, format!("malformed '{word}(...)' literal")));
            }
            self.advance();
        }
        self.expect(&TokenKind::RParen, &format!("')' to close '{word}('"))?;
        let body = self.text.get(body_start..close).unwrap_or("").to_string();
        Ok((body, Span::new(body_start, close)))
    }

    /// The body of `dynamic(...)`: null, bool, number, string, array, object, or a KQL
    /// datetime / timespan / guid literal.
    fn parse_dynamic_value(&mut self) -> ParseResult<DynamicValue> {
        self.enter()?;
        let result = self.parse_dynamic_inner();
        self.leave();
        result
    }

    fn parse_dynamic_inner(&mut self) -> ParseResult<DynamicValue> {
        let token = self.peek().clone();
        let value = match &token.kind {
            TokenKind::LBracket => {
                self.advance();
                let mut items = Vec::new();
                while self.eat(&TokenKind::RBracket).is_none() {
                    items.push(self.parse_dynamic_value()?);
                    if self.eat(&TokenKind::Comma).is_none() {
                        self.expect(&TokenKind::RBracket, "',' or ']' in dynamic array")?;
                        break;
                    }
                }
                return Ok(DynamicValue::Array(items));
            }
            TokenKind::LBrace => {
                self.advance();
                let mut entries = Vec::new();
                while self.eat(&TokenKind::RBrace).is_none() {
                    let key = match self.peek().kind.clone() {
                        TokenKind::String(key) => key,
                        TokenKind::Ident => self.token_text(&self.peek().clone()).to_string(),
                        _ => return Err(self.error_expected("a property name in dynamic object")),
                    };
                    self.advance();
                    self.expect(&TokenKind::Colon, "':' after property name")?;
                    entries.push((key, self.parse_dynamic_value()?));
                    if self.eat(&TokenKind::Comma).is_none() {
                        self.expect(&TokenKind::RBrace, "',' or '}' in dynamic object")?;
                        break;
                    }
                }
                return Ok(DynamicValue::Object(entries));
            }
            TokenKind::Minus | TokenKind::Plus => {
                let negative = token.kind == TokenKind::Minus;
                self.advance();
                let sign = if negative { -1 } else { 1 };
                let value = match self.peek().kind {
                    TokenKind::Long(value) => DynamicValue::Long(value.wrapping_mul(sign)),
                    TokenKind::Real(value) => DynamicValue::Real(value * sign as f64),
                    TokenKind::Timespan(value) => DynamicValue::Timespan(value.wrapping_mul(sign)),
                    _ => return Err(self.error_expected("a number after the sign")),
                };
                self.advance();
                return Ok(value);
            }
            TokenKind::Long(value) => DynamicValue::Long(*value),
            TokenKind::Real(value) => DynamicValue::Real(*value),
            TokenKind::Timespan(value) => DynamicValue::Timespan(*value),
            TokenKind::String(value) => DynamicValue::String(value.clone()),
            TokenKind::Ident => {
                let word = self.token_text(&token);
                match word {
                    "null" => DynamicValue::Null,
                    "true" => DynamicValue::Bool(true),
                    "false" => DynamicValue::Bool(false),
                    _ if self.peek_at(1).kind == TokenKind::LParen => {
                        self.advance();
                        let expr = self.parse_typed_literal(word, token.span)?;
                        return match expr.map(|expr| expr.kind) {
                            Some(ExprKind::Literal(literal)) => literal_to_dynamic(literal).ok_or_else(|| {
                                self.error_at(token.span, format!("'{word}(...)' is not allowed in a dynamic value"))
                            }),
                            _ => Err(self.error_at(token.span, format!("expected a dynamic value, found '{word}('"))),
                        };
                    }
                    _ => {
                        return Err(
                            self.error_expected("a dynamic value (null, true, false, number, string, [...], {...})")
                        );
                    }
                }
            }
            _ => return Err(self.error_expected("a dynamic value")),
        };
        self.advance();
        Ok(value)
    }
}

fn literal_to_dynamic(literal: Literal) -> Option<DynamicValue> {
    Some(match literal {
        Literal::Null(_) => DynamicValue::Null,
        Literal::Bool(value) => DynamicValue::Bool(value),
        Literal::Int(value) => DynamicValue::Long(i64::from(value)),
        Literal::Long(value) => DynamicValue::Long(value),
        Literal::Real(value) => DynamicValue::Real(value),
        Literal::String(value) => DynamicValue::String(value),
        Literal::DateTime(value) => DynamicValue::DateTime(value),
        Literal::Timespan(value) => DynamicValue::Timespan(value),
        Literal::Guid(value) => DynamicValue::Guid(value),
        Literal::Dynamic(value) => value,
        Literal::Decimal(_) => return None,
    })
}

/// Reads the body of `type(body)`; `None` when the body is not a valid value of `ty`.
pub(crate) fn typed_literal(ty: ScalarType, body: &str) -> Option<Literal> {
    if body == "null" {
        return Some(Literal::Null(Some(ty)));
    }
    Some(match ty {
        ScalarType::Bool => match body.to_ascii_lowercase().as_str() {
            "true" => Literal::Bool(true),
            "false" => Literal::Bool(false),
            _ => return None,
        },
        ScalarType::Int => Literal::Int(body.trim_start_matches('+').parse().ok()?),
        ScalarType::Long => Literal::Long(body.trim_start_matches('+').parse().ok()?),
        ScalarType::Real => Literal::Real(parse_real(body)?),
        ScalarType::Decimal => {
            parse_real(body)?;
            Literal::Decimal(body.to_string())
        }
        ScalarType::String => Literal::String(body.to_string()),
        ScalarType::DateTime => Literal::DateTime(parse_datetime(body)?.div_euclid(100).checked_mul(100)?),
        ScalarType::Timespan => Literal::Timespan(parse_timespan_body(body)?),
        ScalarType::Guid => Literal::Guid(parse_guid(body)?),
        ScalarType::Dynamic => return None,
    })
}

fn parse_real(body: &str) -> Option<f64> {
    match body.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "inf" | "+inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        other if other.chars().all(|c| c.is_ascii_digit() || "+-.e".contains(c)) => other.parse().ok(),
        _ => None,
    }
}

/// `1d`, `-1.5h`, `2` (days), `[-][d.]hh:mm[:ss[.fffffff]]`, in nanoseconds.
pub fn parse_timespan_body(body: &str) -> Option<i64> {
    let (negative, unsigned) = match body.strip_prefix('-') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, body),
    };
    let magnitude = if unsigned.contains(':') {
        parse_clock_timespan(unsigned)?
    } else {
        let split = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, unit) = unsigned.split_at(split);
        let unit_nanos = if unit.is_empty() {
            timespan_unit_nanos("d")?
        } else {
            timespan_unit_nanos(unit)?
        };
        if number.is_empty() {
            return None;
        }
        scale_timespan(number, unit_nanos)?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `[d.]hh:mm[:ss[.fffffff]]`.
fn parse_clock_timespan(text: &str) -> Option<i64> {
    let mut parts = text.split(':');
    let first = parts.next()?;
    let (days, hours) = match first.split_once('.') {
        Some((days, hours)) => (days.parse::<i64>().ok()?, hours.parse::<i64>().ok()?),
        None => (0, first.parse::<i64>().ok()?),
    };
    let minutes: i64 = parts.next()?.parse().ok()?;
    let (seconds, fraction_nanos) = match parts.next() {
        Some(seconds) => match seconds.split_once('.') {
            Some((whole, fraction)) => {
                if fraction.is_empty() || fraction.len() > 9 || !fraction.chars().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                let padded = format!("{fraction:0<9}");
                (whole.parse::<i64>().ok()?, padded.parse::<i64>().ok()?)
            }
            None => (seconds.parse::<i64>().ok()?, 0),
        },
        None => (0, 0),
    };
    // Each part is a plain count: a sign inside the clock ("682:-5") is not a timespan.
    let in_range = |value: i64, limit: i64| (0..limit).contains(&value);
    if parts.next().is_some() || !in_range(minutes, 60) || !in_range(seconds, 60) || days < 0 || hours < 0 {
        return None;
    }
    let total_seconds = days
        .checked_mul(86_400)?
        .checked_add(hours.checked_mul(3_600)?)?
        .checked_add(minutes * 60 + seconds)?;
    total_seconds.checked_mul(1_000_000_000)?.checked_add(fraction_nanos)
}

/// Validates `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (or 32 bare hex digits), lowercased.
fn parse_guid(body: &str) -> Option<String> {
    let hex: String = body.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let dashes_ok = !body.contains('-')
        || [8, 13, 18, 23].iter().all(|i| body.as_bytes().get(*i) == Some(&b'-')) && body.len() == 36;
    if !dashes_ok {
        return None;
    }
    let hex = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespan_bodies() {
        assert_eq!(parse_timespan_body("1d"), Some(86_400_000_000_000));
        assert_eq!(parse_timespan_body("2"), Some(2 * 86_400_000_000_000));
        assert_eq!(parse_timespan_body("-1h"), Some(-3_600_000_000_000));
        assert_eq!(parse_timespan_body("00:10:00"), Some(600_000_000_000));
        assert_eq!(
            parse_timespan_body("1.02:03:04.5"),
            Some(((86_400 + 7_384) * 1_000_000_000) + 500_000_000)
        );
        assert_eq!(parse_timespan_body("abc"), None);
        assert_eq!(parse_timespan_body("1:99"), None);
    }

    #[test]
    fn guids_and_reals() {
        assert_eq!(
            parse_guid("74BE27DE-1E4E-49D9-B579-FE0B331D3642").as_deref(),
            Some("74be27de-1e4e-49d9-b579-fe0b331d3642")
        );
        assert_eq!(parse_guid("74be27de"), None);
        assert!(parse_real("nan").is_some_and(f64::is_nan));
        assert_eq!(parse_real("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_real("1.5e3"), Some(1500.0));
        assert_eq!(parse_real("abc"), None);
    }
}
