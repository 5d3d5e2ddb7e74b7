//! The closed set of user-facing error codes, mapped to HTTP status and gRPC code in one place.

use std::fmt;

/// A user-facing error code. The string form (`as_str`) is what callers see in `code` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    SyntaxError,
    UnknownTable,
    UnknownColumn,
    UnknownFunction,
    TypeMismatch,
    BadRequest,
    /// A body in a format or encoding the endpoint does not take.
    UnsupportedMediaType,
    PayloadTooLarge,
    /// Too many attempts (failed sign-ins); retry after the time the answer names.
    TooManyRequests,
    Unauthenticated,
    PermissionDenied,
    NotFound,
    Unavailable,
    Timeout,
    Internal,
}

/// gRPC status codes as numbers (tonic's `Code` values), so this crate stays free of tonic.
pub mod grpc_code {
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const DEADLINE_EXCEEDED: i32 = 4;
    pub const NOT_FOUND: i32 = 5;
    pub const PERMISSION_DENIED: i32 = 7;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
    pub const UNAUTHENTICATED: i32 = 16;
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SyntaxError => "SyntaxError",
            ErrorCode::UnknownTable => "UnknownTable",
            ErrorCode::UnknownColumn => "UnknownColumn",
            ErrorCode::UnknownFunction => "UnknownFunction",
            ErrorCode::TypeMismatch => "TypeMismatch",
            ErrorCode::BadRequest => "BadRequest",
            ErrorCode::UnsupportedMediaType => "UnsupportedMediaType",
            ErrorCode::PayloadTooLarge => "PayloadTooLarge",
            ErrorCode::TooManyRequests => "TooManyRequests",
            ErrorCode::Unauthenticated => "Unauthenticated",
            ErrorCode::PermissionDenied => "PermissionDenied",
            ErrorCode::NotFound => "NotFound",
            ErrorCode::Unavailable => "Unavailable",
            ErrorCode::Timeout => "Timeout",
            ErrorCode::Internal => "Internal",
        }
    }

    /// HTTP status for this code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::SyntaxError
            | ErrorCode::UnknownTable
            | ErrorCode::UnknownColumn
            | ErrorCode::UnknownFunction
            | ErrorCode::TypeMismatch
            | ErrorCode::BadRequest => 400,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::TooManyRequests => 429,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::PermissionDenied => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::Timeout => 504,
            ErrorCode::Unavailable => 503,
            ErrorCode::Internal => 500,
        }
    }

    /// gRPC status code number for this code.
    pub fn grpc_code(self) -> i32 {
        match self {
            ErrorCode::SyntaxError
            | ErrorCode::UnknownTable
            | ErrorCode::UnknownColumn
            | ErrorCode::UnknownFunction
            | ErrorCode::TypeMismatch
            | ErrorCode::BadRequest
            | ErrorCode::UnsupportedMediaType => grpc_code::INVALID_ARGUMENT,
            ErrorCode::PayloadTooLarge | ErrorCode::TooManyRequests => grpc_code::RESOURCE_EXHAUSTED,
            ErrorCode::Unauthenticated => grpc_code::UNAUTHENTICATED,
            ErrorCode::PermissionDenied => grpc_code::PERMISSION_DENIED,
            ErrorCode::NotFound => grpc_code::NOT_FOUND,
            ErrorCode::Timeout => grpc_code::DEADLINE_EXCEEDED,
            ErrorCode::Unavailable => grpc_code::UNAVAILABLE,
            ErrorCode::Internal => grpc_code::INTERNAL,
        }
    }

    /// Whether the caller should send the same request again later (with `Retry-After`).
    pub fn retryable(self) -> bool {
        matches!(self, ErrorCode::Unavailable | ErrorCode::TooManyRequests)
    }

    /// Whether sending the same request again cannot succeed (ADX's `@permanent`).
    pub fn permanent(self) -> bool {
        !matches!(
            self,
            ErrorCode::Unavailable | ErrorCode::Timeout | ErrorCode::Internal | ErrorCode::TooManyRequests
        )
    }

    /// A short human title (the query service's error message).
    pub fn title(self) -> &'static str {
        match self {
            ErrorCode::SyntaxError => "Syntax error",
            ErrorCode::UnknownTable => "Unknown table",
            ErrorCode::UnknownColumn => "Unknown column",
            ErrorCode::UnknownFunction => "Unknown function",
            ErrorCode::TypeMismatch => "Type mismatch",
            ErrorCode::BadRequest => "Bad request",
            ErrorCode::UnsupportedMediaType => "Unsupported media type",
            ErrorCode::PayloadTooLarge => "Result too large",
            ErrorCode::TooManyRequests => "Too many requests",
            ErrorCode::Unauthenticated => "Not signed in",
            ErrorCode::PermissionDenied => "Permission denied",
            ErrorCode::NotFound => "Not found",
            ErrorCode::Unavailable => "Service unavailable",
            ErrorCode::Timeout => "Query timed out",
            ErrorCode::Internal => "Internal error",
        }
    }

    /// The ADX error `code` and `@type` (the exception Kusto clients tell errors apart by).
    pub fn adx_exception(self) -> (&'static str, &'static str) {
        match self {
            ErrorCode::SyntaxError => ("General_BadRequest", "Kusto.Data.Exceptions.SyntaxException"),
            ErrorCode::UnknownTable
            | ErrorCode::UnknownColumn
            | ErrorCode::UnknownFunction
            | ErrorCode::TypeMismatch => ("General_BadRequest", "Kusto.Data.Exceptions.SemanticException"),
            ErrorCode::BadRequest
            | ErrorCode::UnsupportedMediaType
            | ErrorCode::PayloadTooLarge
            | ErrorCode::NotFound => ("General_BadRequest", "Kusto.Data.Exceptions.KustoBadRequestException"),
            ErrorCode::TooManyRequests => (
                "TooManyRequests",
                "Kusto.Data.Exceptions.KustoRequestThrottledException",
            ),
            ErrorCode::Unauthenticated => (
                "Unauthorized",
                "Kusto.Data.Exceptions.KustoClientAuthenticationException",
            ),
            ErrorCode::PermissionDenied => ("Forbidden", "Kusto.Data.Exceptions.UnauthorizedOperationException"),
            ErrorCode::Timeout => ("RequestTimeout", "Kusto.Data.Exceptions.QueryTimeoutException"),
            ErrorCode::Unavailable => (
                "ServiceUnavailable",
                "Kusto.Data.Exceptions.KustoServiceTimeoutException",
            ),
            ErrorCode::Internal => ("Internal_Error", "Kusto.Data.Exceptions.KustoServiceException"),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Byte, line and column span of a problem in query text. Lines and columns are 1-based;
/// `end_*` is exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Location {
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl Location {
    /// Computes lines and columns of the byte range `start..end` in `text`.
    pub fn from_byte_range(text: &str, start: usize, end: usize) -> Location {
        let (start_line, start_column) = line_and_column(text, start);
        let (end_line, end_column) = line_and_column(text, end);
        Location {
            start_byte: start as u32,
            end_byte: end as u32,
            start_line,
            start_column,
            end_line,
            end_column,
        }
    }
}

fn line_and_column(text: &str, byte: usize) -> (u32, u32) {
    let byte = byte.min(text.len());
    let before = &text.as_bytes()[..byte];
    let line = before.iter().filter(|b| **b == b'\n').count() as u32 + 1;
    let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    let column = text
        .get(line_start..byte)
        .map_or(byte - line_start, |s| s.chars().count()) as u32
        + 1;
    (line, column)
}

/// An error a caller can see: a code, a message, and optionally where in the query it is.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct TrawlError {
    pub code: ErrorCode,
    pub message: String,
    pub location: Option<Location>,
    /// What the query probably meant, when the error can tell (the closest column or
    /// function name, the bracket form of a path): text to put in the query's place.
    pub suggestion: Option<String>,
}

impl TrawlError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        TrawlError {
            code,
            message: message.into(),
            location: None,
            suggestion: None,
        }
    }
    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }
    /// The error with a suggestion, also named at the end of its message.
    pub fn suggesting(mut self, suggestion: impl Into<String>) -> Self {
        let suggestion = suggestion.into();
        self.message = format!("{}; did you mean '{suggestion}'?", self.message);
        self.suggestion = Some(suggestion);
        self
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, message)
    }

    /// The message, and when it has a location, the query line it is on with carets under
    /// the span:
    ///
    /// ```text
    /// unknown table 'Nope'
    ///   1 | Nope | take 1
    ///     | ^^^^
    /// ```
    pub fn annotated(&self, query: &str) -> String {
        let Some(location) = self.location else {
            return self.message.clone();
        };
        let line_number = location.start_line.max(1);
        let Some(line) = query.lines().nth(line_number as usize - 1) else {
            return self.message.clone();
        };
        let start = location.start_column.max(1) as usize;
        let width = line.chars().count();
        let end = if location.end_line == location.start_line {
            (location.end_column as usize).clamp(start + 1, width.max(start) + 1)
        } else {
            width.max(start) + 1
        };
        let gutter = line_number.to_string();
        let pad = " ".repeat(gutter.len());
        format!(
            "{}\n  {gutter} | {line}\n  {pad} | {}{}",
            self.message,
            " ".repeat(start - 1),
            "^".repeat(end - start)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_point_at_the_span() {
        let query = "T\n| where x > 1";
        let error = TrawlError::new(ErrorCode::UnknownColumn, "unknown column 'x'")
            .at(Location::from_byte_range(query, 10, 11));
        assert_eq!(
            error.annotated(query),
            "unknown column 'x'\n  2 | | where x > 1\n    |         ^"
        );
        assert_eq!(TrawlError::bad_request("plain").annotated(query), "plain");
    }

    #[test]
    fn location_counts_lines_and_columns() {
        let text = "T\n| where x ==";
        let loc = Location::from_byte_range(text, 4, 9);
        assert_eq!(
            (loc.start_line, loc.start_column, loc.end_line, loc.end_column),
            (2, 3, 2, 8)
        );
    }

    #[test]
    fn codes_map_to_http_and_grpc() {
        assert_eq!(ErrorCode::SyntaxError.http_status(), 400);
        assert_eq!(ErrorCode::Unavailable.http_status(), 503);
        assert_eq!(ErrorCode::Unauthenticated.grpc_code(), grpc_code::UNAUTHENTICATED);
    }
}
