//! Tokens produced by the [lexer](crate::lexer).

use crate::span::Span;

/// One token. Identifier and keyword text is read back from the query text through `span`.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// What a token is. KQL keywords are contextual, so words are all [`TokenKind::Ident`].
#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// A word: letters, digits, `_`, optionally starting with `$` (`$left`, `$time`).
    Ident,
    /// An integer literal (`42`, `0x1F`).
    Long(i64),
    /// A real literal (`1.5`, `1e3`).
    Real(f64),
    /// A timespan literal (`1d`, `30m`, `1.5h`), in nanoseconds.
    Timespan(i64),
    /// A string literal, already unescaped.
    String(String),
    Pipe,
    Semicolon,
    Comma,
    Dot,
    DotDot,
    Colon,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    /// `=`
    Assign,
    /// `=>`
    Arrow,
    EqEq,
    /// `!=`
    NotEq,
    /// `<>`
    LtGt,
    Lt,
    Le,
    Gt,
    Ge,
    /// `=~`
    EqTilde,
    /// `!~`
    BangTilde,
    Bang,
    Tilde,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Question,
    /// Text the lexer could not read; the parser reports the message if it reaches it.
    Error(String),
    /// End of the query text.
    Eof,
}

impl TokenKind {
    /// The fixed text of a punctuation token, for messages and printing.
    pub fn punctuation(&self) -> Option<&'static str> {
        Some(match self {
            TokenKind::Pipe => "|",
            TokenKind::Semicolon => ";",
            TokenKind::Comma => ",",
            TokenKind::Dot => ".",
            TokenKind::DotDot => "..",
            TokenKind::Colon => ":",
            TokenKind::LParen => "(",
            TokenKind::RParen => ")",
            TokenKind::LBracket => "[",
            TokenKind::RBracket => "]",
            TokenKind::LBrace => "{",
            TokenKind::RBrace => "}",
            TokenKind::Assign => "=",
            TokenKind::Arrow => "=>",
            TokenKind::EqEq => "==",
            TokenKind::NotEq => "!=",
            TokenKind::LtGt => "<>",
            TokenKind::Lt => "<",
            TokenKind::Le => "<=",
            TokenKind::Gt => ">",
            TokenKind::Ge => ">=",
            TokenKind::EqTilde => "=~",
            TokenKind::BangTilde => "!~",
            TokenKind::Bang => "!",
            TokenKind::Tilde => "~",
            TokenKind::Plus => "+",
            TokenKind::Minus => "-",
            TokenKind::Star => "*",
            TokenKind::Slash => "/",
            TokenKind::Percent => "%",
            TokenKind::Question => "?",
            _ => return None,
        })
    }
}

impl Token {
    /// How the token reads in an error message: `'|'`, `identifier 'x'`, `end of query`.
    pub fn describe(&self, text: &str) -> String {
        let source = text.get(self.span.range()).unwrap_or("");
        let shortened: String = source.chars().take(40).collect();
        match &self.kind {
            TokenKind::Eof => "end of query".to_string(),
            TokenKind::Ident => format!("'{shortened}'"),
            TokenKind::Long(_) | TokenKind::Real(_) => format!("number {shortened}"),
            TokenKind::Timespan(_) => format!("timespan {shortened}"),
            TokenKind::String(_) => format!("string {shortened}"),
            TokenKind::Error(message) => message.clone(),
            other => format!("'{}'", other.punctuation().unwrap_or("?")),
        }
    }
}
