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
pub use parser::{MAX_DEPTH, MAX_TREE_DEPTH, SEARCH_COLUMN, parse};

/// A timespan as KQL writes its literals (`30s`, `1.5h`, `00:04:00`, `1.02:00:00`, a bare number
/// of days), in nanoseconds; none for anything else.
pub fn parse_timespan(text: &str) -> Option<i64> {
    parser::parse_timespan_body(text.trim())
}

/// A client's time limit: a KQL timespan (`30s`, `00:00:30`, `1.00:00:01`), or a Python
/// `timedelta` as `str()` writes it (`1 day, 0:00:01`, what azure-kusto-data sends); none when
/// it is neither or is negative.
pub fn parse_time_limit(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let (days, clock) = match text.split_once(',') {
        Some((days, clock)) => {
            let days = days.trim();
            let count = days
                .strip_suffix("days")
                .or_else(|| days.strip_suffix("day"))?
                .trim()
                .parse::<u64>()
                .ok()?;
            (count, clock.trim())
        }
        None => (0, text),
    };
    let nanos = u64::try_from(parse_timespan(clock)?).ok()?;
    let day_nanos = days.checked_mul(86_400 * 1_000_000_000)?;
    Some(std::time::Duration::from_nanos(nanos.checked_add(day_nanos)?))
}
pub use span::Span;
