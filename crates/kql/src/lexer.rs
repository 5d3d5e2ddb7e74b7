//! The hand-written lexer: query text to [`Token`]s.
//!
//! The lexer never fails: text it cannot read becomes a [`TokenKind::Error`] token, which the
//! parser reports only if it reaches it. That lets the parser read the raw bodies of
//! `datetime(...)` and `guid(...)` literals, which are not made of ordinary tokens.

use crate::span::Span;
use crate::token::{Token, TokenKind};

/// Splits `text` into tokens; the last token is always [`TokenKind::Eof`].
/// Whitespace and `//` comments are skipped.
pub fn tokenize(text: &str) -> Vec<Token> {
    let mut lexer = Lexer { text, pos: 0 };
    let mut tokens = Vec::new();
    loop {
        lexer.skip_trivia();
        let start = lexer.pos;
        let Some(first) = lexer.peek_char() else {
            tokens.push(Token {
                kind: TokenKind::Eof,
                span: Span::new(start, start),
            });
            return tokens;
        };
        let kind = lexer.token(first);
        debug_assert!(lexer.pos > start, "the lexer must always make progress");
        tokens.push(Token {
            kind,
            span: Span::new(start, lexer.pos),
        });
    }
}

/// Nanoseconds in one unit of a timespan suffix (`d`, `h`, `ms`, `tick`, ...).
pub fn timespan_unit_nanos(unit: &str) -> Option<i64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "d" | "day" | "days" => 86_400_000_000_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
        "microsecond" | "microseconds" => 1_000,
        "tick" | "ticks" => 100,
        _ => return None,
    })
}

/// `number` (digits with an optional fraction) times `unit_nanos`, rounded to whole 100 ns
/// ticks, KQL's precision. `None` on overflow.
pub fn scale_timespan(number: &str, unit_nanos: i64) -> Option<i64> {
    if let Ok(whole) = number.parse::<i64>() {
        return whole.checked_mul(unit_nanos);
    }
    let value: f64 = number.parse().ok()?;
    let nanos = value * unit_nanos as f64;
    if !nanos.is_finite() || nanos.abs() > i64::MAX as f64 {
        return None;
    }
    Some(((nanos / 100.0).round() as i64) * 100)
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn peek_char(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn char_at(&self, offset: usize) -> Option<char> {
        self.text.get(self.pos + offset..).and_then(|rest| rest.chars().next())
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_trivia(&mut self) {
        loop {
            match self.peek_char() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('/') if self.rest().starts_with("//") => {
                    let line_end = self.rest().find('\n').unwrap_or(self.rest().len());
                    self.pos += line_end;
                }
                _ => return,
            }
        }
    }

    fn token(&mut self, first: char) -> TokenKind {
        if first.is_ascii_digit() {
            return self.number();
        }
        if first == '"' || first == '\'' {
            return self.string_literal();
        }
        if first == '`' && self.rest().starts_with("```") {
            return self.multiline_string();
        }
        if first == '@' && matches!(self.char_at(1), Some('"' | '\'')) {
            self.bump();
            return self.verbatim_string();
        }
        if (first == 'h' || first == 'H') && self.obfuscated_string_follows() {
            self.bump();
            return self.token(self.peek_char().unwrap_or(' '));
        }
        if is_ident_start(first) || (first == '$' && self.char_at(1).is_some_and(is_ident_start)) {
            self.bump();
            while self.peek_char().is_some_and(is_ident_continue) {
                self.bump();
            }
            return TokenKind::Ident;
        }
        self.punctuation(first)
    }

    /// `h"..."`, `h'...'`, `h@"..."`, `h```...```` — an obfuscated string literal.
    fn obfuscated_string_follows(&self) -> bool {
        let after = &self.rest()[1..];
        after.starts_with('"')
            || after.starts_with('\'')
            || after.starts_with("@\"")
            || after.starts_with("@'")
            || after.starts_with("```")
    }

    fn punctuation(&mut self, first: char) -> TokenKind {
        let two = self.rest().get(..2).unwrap_or("");
        let (kind, length) = match two {
            ".." => (TokenKind::DotDot, 2),
            "=>" => (TokenKind::Arrow, 2),
            "==" => (TokenKind::EqEq, 2),
            "!=" => (TokenKind::NotEq, 2),
            "<>" => (TokenKind::LtGt, 2),
            "<=" => (TokenKind::Le, 2),
            ">=" => (TokenKind::Ge, 2),
            "=~" => (TokenKind::EqTilde, 2),
            "!~" => (TokenKind::BangTilde, 2),
            _ => {
                let kind = match first {
                    '|' => TokenKind::Pipe,
                    ';' => TokenKind::Semicolon,
                    ',' => TokenKind::Comma,
                    '.' => TokenKind::Dot,
                    ':' => TokenKind::Colon,
                    '(' => TokenKind::LParen,
                    ')' => TokenKind::RParen,
                    '[' => TokenKind::LBracket,
                    ']' => TokenKind::RBracket,
                    '{' => TokenKind::LBrace,
                    '}' => TokenKind::RBrace,
                    '=' => TokenKind::Assign,
                    '<' => TokenKind::Lt,
                    '>' => TokenKind::Gt,
                    '!' => TokenKind::Bang,
                    '~' => TokenKind::Tilde,
                    '+' => TokenKind::Plus,
                    '-' => TokenKind::Minus,
                    '*' => TokenKind::Star,
                    '/' => TokenKind::Slash,
                    '%' => TokenKind::Percent,
                    '?' => TokenKind::Question,
                    other => {
                        self.bump();
                        return TokenKind::Error(format!("unexpected character '{other}'"));
                    }
                };
                (kind, 1)
            }
        };
        self.pos += length;
        kind
    }

    fn digits(&mut self) {
        while self.peek_char().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
    }

    fn number(&mut self) -> TokenKind {
        let start = self.pos;
        if self.rest().starts_with("0x") || self.rest().starts_with("0X") {
            self.pos += 2;
            let digits_start = self.pos;
            while self.peek_char().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.bump();
            }
            let digits = &self.text[digits_start..self.pos];
            return match u64::from_str_radix(digits, 16) {
                Ok(value) => TokenKind::Long(value as i64),
                Err(_) => TokenKind::Error(format!("invalid hexadecimal number '{}'", &self.text[start..self.pos])),
            };
        }
        self.digits();
        let mut is_real = false;
        if self.peek_char() == Some('.') && self.char_at(1) != Some('.') {
            is_real = true;
            self.bump();
            self.digits();
        }
        let number_end = self.pos;
        if matches!(self.peek_char(), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.char_at(1), Some('+' | '-')));
            if self.char_at(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                is_real = true;
                self.pos += 1 + sign;
                self.digits();
            }
        }
        let number_text = &self.text[start..self.pos];
        if self.pos == number_end && self.peek_char().is_some_and(is_ident_start) {
            let unit_start = self.pos;
            while self.peek_char().is_some_and(is_ident_continue) {
                self.bump();
            }
            let unit = &self.text[unit_start..self.pos];
            return match timespan_unit_nanos(unit).and_then(|nanos| scale_timespan(number_text, nanos)) {
                Some(nanos) => TokenKind::Timespan(nanos),
                None => TokenKind::Error(format!("invalid number '{}'", &self.text[start..self.pos])),
            };
        }
        if is_real {
            return match number_text.parse::<f64>() {
                Ok(value) => TokenKind::Real(value),
                Err(_) => TokenKind::Error(format!("invalid number '{number_text}'")),
            };
        }
        match number_text.parse::<i64>() {
            Ok(value) => TokenKind::Long(value),
            Err(_) => TokenKind::Error(format!("integer '{number_text}' is out of range")),
        }
    }

    fn string_literal(&mut self) -> TokenKind {
        let Some(quote) = self.bump() else {
            return TokenKind::Error("unterminated string".to_string());
        };
        let mut value = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => {
                    return TokenKind::Error("unterminated string literal".to_string());
                }
                Some(c) if c == quote => return TokenKind::String(value),
                Some('\\') => match self.bump() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some('r') => value.push('\r'),
                    Some('0') => value.push('\0'),
                    Some('u') => match self.unicode_escape() {
                        Some(c) => value.push(c),
                        None => {
                            return TokenKind::Error("invalid \\u escape in string".to_string());
                        }
                    },
                    Some(other) => value.push(other),
                    None => return TokenKind::Error("unterminated string literal".to_string()),
                },
                Some(c) => value.push(c),
            }
        }
    }

    fn unicode_escape(&mut self) -> Option<char> {
        let hex = self.rest().get(..4)?;
        let code = u32::from_str_radix(hex, 16).ok()?;
        self.pos += 4;
        char::from_u32(code)
    }

    /// `@"..."` / `@'...'` (the `@` already consumed): no escapes, a doubled quote is a quote.
    fn verbatim_string(&mut self) -> TokenKind {
        let Some(quote) = self.bump() else {
            return TokenKind::Error("unterminated string".to_string());
        };
        let mut value = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => {
                    return TokenKind::Error("unterminated verbatim string literal".to_string());
                }
                Some(c) if c == quote => {
                    if self.peek_char() == Some(quote) {
                        self.bump();
                        value.push(quote);
                    } else {
                        return TokenKind::String(value);
                    }
                }
                Some(c) => value.push(c),
            }
        }
    }

    fn multiline_string(&mut self) -> TokenKind {
        self.pos += 3;
        match self.rest().find("```") {
            Some(end) => {
                let value = self.rest()[..end].to_string();
                self.pos += end + 3;
                TokenKind::String(value)
            }
            None => {
                self.pos = self.text.len();
                TokenKind::Error("unterminated multi-line string literal".to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind> {
        tokenize(text).into_iter().map(|token| token.kind).collect()
    }

    #[test]
    fn numbers_and_timespans() {
        assert_eq!(
            kinds("42 1.5 1e3 0x1F 1d 100ms 1.5h 5microsecond 1tick"),
            vec![
                TokenKind::Long(42),
                TokenKind::Real(1.5),
                TokenKind::Real(1000.0),
                TokenKind::Long(31),
                TokenKind::Timespan(86_400_000_000_000),
                TokenKind::Timespan(100_000_000),
                TokenKind::Timespan(5_400_000_000_000),
                TokenKind::Timespan(5_000),
                TokenKind::Timespan(100),
                TokenKind::Eof,
            ]
        );
    }

    #[test]
    fn range_dots_do_not_make_reals() {
        assert_eq!(
            kinds("1..10"),
            vec![
                TokenKind::Long(1),
                TokenKind::DotDot,
                TokenKind::Long(10),
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn string_forms() {
        let strings = kinds(
            r#"'a\'b' "c\n" @"x\y""z" @'q' h"secret" ```multi
line```"#,
        );
        assert_eq!(
            strings,
            vec![
                TokenKind::String("a'b".into()),
                TokenKind::String("c\n".into()),
                TokenKind::String("x\\y\"z".into()),
                TokenKind::String("q".into()),
                TokenKind::String("secret".into()),
                TokenKind::String("multi\nline".into()),
                TokenKind::Eof,
            ]
        );
    }

    #[test]
    fn operators_and_comments() {
        assert_eq!(
            kinds("a =~ b // comment\n!~ != <> <= .. $left"),
            vec![
                TokenKind::Ident,
                TokenKind::EqTilde,
                TokenKind::Ident,
                TokenKind::BangTilde,
                TokenKind::NotEq,
                TokenKind::LtGt,
                TokenKind::Le,
                TokenKind::DotDot,
                TokenKind::Ident,
                TokenKind::Eof,
            ]
        );
    }

    #[test]
    fn bad_input_becomes_error_tokens() {
        assert!(matches!(kinds("'open")[0], TokenKind::Error(_)));
        assert!(matches!(kinds("12abc")[0], TokenKind::Error(_)));
        assert!(matches!(kinds("#")[0], TokenKind::Error(_)));
        assert!(matches!(kinds("99999999999999999999")[0], TokenKind::Error(_)));
    }
}
