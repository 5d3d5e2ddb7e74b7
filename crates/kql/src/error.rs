//! Diagnostics: the one error type of this crate.

use trawl_common::error::{ErrorCode, Location, TrawlError};

use crate::span::Span;

/// A syntax error: what was expected, what was found, and where.
///
/// The message is lowercase and names both sides, e.g.
/// `expected an expression after '==', found end of query`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// Human-readable description, without the location.
    pub message: String,
    /// Bytes of the offending token (empty at the end of the query).
    pub span: Span,
    /// Lines and columns of `span`, computed against the query text.
    pub location: Location,
}

impl ParseError {
    /// Builds an error for `span` of `text`.
    pub fn new(text: &str, span: Span, message: impl Into<String>) -> ParseError {
        let location = Location::from_byte_range(text, span.start as usize, span.end as usize);
        ParseError {
            message: message.into(),
            span,
            location,
        }
    }

    /// Always [`ErrorCode::SyntaxError`].
    pub fn code(&self) -> ErrorCode {
        ErrorCode::SyntaxError
    }
}

impl From<ParseError> for TrawlError {
    fn from(error: ParseError) -> TrawlError {
        let location = error.location;
        TrawlError::new(ErrorCode::SyntaxError, error.message).at(location)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_to_trawl_error_with_location() {
        let text = "T\n| where x ==";
        let error = ParseError::new(text, Span::new(4, 9), "expected something");
        let trawl: TrawlError = error.into();
        assert_eq!(trawl.code, ErrorCode::SyntaxError);
        let location = trawl.location.unwrap_or_default();
        assert_eq!((location.start_line, location.start_column), (2, 3));
    }
}
