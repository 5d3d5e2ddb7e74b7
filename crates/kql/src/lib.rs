//! The KQL front end: lexer, parser, syntax tree, printer and diagnostics.
//!
//! - [`parse`] turns query text into a [`Query`](ast::Query), or a [`ParseError`] with
//!   [`ErrorCode::SyntaxError`](trawl_common::error::ErrorCode::SyntaxError), a message naming
//!   what was expected and what was found, and a source location.
//! - [`ast`] is the tree the planner lowers. Every node has a byte [`Span`].
//! - The printer (`Display` on every node) writes canonical KQL; `parse(&ast.to_string())`
//!   gives back the same tree, spans aside.
//!
//! This crate knows nothing of DataFusion, storage or the catalog: names are not resolved here,
//! so a table, a column and a `let` variable are all [`ExprKind::Name`](ast::ExprKind::Name).

pub mod ast;
pub mod error;
pub mod lexer;
mod parser;
mod printer;
pub mod sexp;
pub mod span;
pub mod token;

pub use error::ParseError;
pub use parser::{MAX_DEPTH, MAX_TREE_DEPTH, parse};

/// A timespan as KQL writes its literals (`30s`, `1.5h`, `00:04:00`, `1.02:00:00`, a bare number
/// of days), in nanoseconds; none for anything else.
pub fn parse_timespan(text: &str) -> Option<i64> {
    parser::parse_timespan_body(text.trim())
}
pub use span::Span;
