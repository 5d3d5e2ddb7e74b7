//! Syntax errors: messages name what was expected and what was found, with locations.

use crate::support::parse_err;
use trawl_common::error::{ErrorCode, TrawlError};

#[test]
fn missing_operand_after_operator() {
    let error = parse_err("T | where x ==");
    assert_eq!(error.message, "expected an expression after '==', found end of query");
    assert_eq!(error.code(), ErrorCode::SyntaxError);
    assert_eq!((error.location.start_line, error.location.start_column), (1, 15));
}

#[test]
fn locations_point_at_the_bad_token() {
    let error = parse_err("T\n| where a and\n| take 5");
    assert_eq!(error.message, "expected an expression after 'and', found '|'");
    assert_eq!((error.location.start_line, error.location.start_column), (3, 1));
    let trawl: TrawlError = error.into();
    assert_eq!(trawl.code, ErrorCode::SyntaxError);
    assert!(trawl.location.is_some());
}

#[test]
fn messages_for_common_mistakes() {
    let cases = [
        (
            "T | frobnicate",
            "expected an operator name after '|', found unknown operator 'frobnicate'",
        ),
        ("T |", "expected an operator name after '|', found end of query"),
        ("T | sort x", "expected 'by' after 'sort', found 'x'"),
        ("T | where", "expected an expression after 'where', found end of query"),
        (
            "T | project a = ",
            "expected an expression after 'a =', found end of query",
        ),
        (
            "T | where f(1, 2",
            "expected ',' or ')' in the arguments of 'f', found end of query",
        ),
        (
            "T | where x between (1, 2)",
            "expected '..' between the bounds of 'between', found ','",
        ),
        (
            "T | where t == datetime(2024-13-45)",
            "invalid datetime literal 'datetime(2024-13-45)'",
        ),
        (
            "T | where x == 'open",
            "expected an expression after '==', found unterminated string literal",
        ),
        ("let = 5", "expected a name after 'let', found '='"),
        ("T T", "expected ';', '|' or end of query after statement, found 'T'"),
        ("", "expected a query, found end of query"),
        (
            "T | top 5",
            "expected 'by' after the row count of 'top', found end of query",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_err(text).message, expected, "query {text:?}");
    }
}
