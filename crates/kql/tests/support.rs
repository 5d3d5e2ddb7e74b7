//! Helpers shared by the test modules.

use trawl_kql::ast::{Expr, Operator, OperatorKind, Query, StatementKind};

/// Parses or fails the test with the error and its location.
pub fn parse_ok(text: &str) -> Query {
    match trawl_kql::parse(text) {
        Ok(query) => query,
        Err(error) => panic!("failed to parse {text:?}: {error} at {:?}", error.location),
    }
}

/// The error message of a query that must fail.
pub fn parse_err(text: &str) -> trawl_kql::ParseError {
    match trawl_kql::parse(text) {
        Ok(query) => panic!("expected {text:?} to fail, parsed as {query:?}"),
        Err(error) => error,
    }
}

/// The last statement's expression.
pub fn last_expr(query: &Query) -> &Expr {
    match query.statements.last().map(|statement| &statement.kind) {
        Some(StatementKind::Expr(expr)) => expr,
        other => panic!("last statement is not an expression: {other:?}"),
    }
}

/// Parses `T | <operator>` and returns the operator.
pub fn single_operator(operator_text: &str) -> OperatorKind {
    let query = parse_ok(&format!("T | {operator_text}"));
    match &last_expr(&query).kind {
        trawl_kql::ast::ExprKind::Pipeline { operators, .. } => {
            let [Operator { kind, .. }] = operators.as_slice() else {
                panic!("expected one operator in {operator_text:?}");
            };
            kind.clone()
        }
        other => panic!("not a pipeline: {other:?}"),
    }
}

/// Parses `print x = <expr>`-free: the expression alone as a statement.
pub fn expr(text: &str) -> Expr {
    last_expr(&parse_ok(text)).clone()
}

/// `Debug` of a tree with every span (`start..end`) removed, for comparing trees.
pub fn without_spans(tree: &impl std::fmt::Debug) -> String {
    let debug = format!("{tree:?}");
    let bytes = debug.as_bytes();
    let mut out = String::with_capacity(debug.len());
    let mut index = 0;
    while index < bytes.len() {
        if let Some(rest) = debug.get(index..).and_then(|rest| rest.strip_prefix("span: ")) {
            let digits_dots = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
            out.push_str("span: _");
            index += "span: ".len() + digits_dots;
            continue;
        }
        let Some(c) = debug.get(index..).and_then(|rest| rest.chars().next()) else {
            break;
        };
        out.push(c);
        index += c.len_utf8();
    }
    out
}

/// Asserts `parse(print(parse(q))) == parse(q)` ignoring spans, and that printing is stable.
pub fn assert_round_trip(text: &str) {
    let first = parse_ok(text);
    let printed = first.to_string();
    let second = match trawl_kql::parse(&printed) {
        Ok(query) => query,
        Err(error) => {
            panic!("printed form of {text:?} does not parse: {error}\n--- printed ---\n{printed}")
        }
    };
    assert_eq!(
        without_spans(&first),
        without_spans(&second),
        "round trip changed the tree of {text:?}\n--- printed ---\n{printed}"
    );
    assert_eq!(printed, second.to_string(), "printing is not stable for {text:?}");
}

/// The `query` fields of the public corpus (`tests/conformance/corpus`).
pub fn corpus_queries() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/conformance/corpus/public.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("reading {path}: {error}"));
    text.lines()
        .filter_map(|line| Some((json_field(line, "id")?, json_field(line, "query")?)))
        .collect()
}

/// Extracts a top-level string field from one JSON line (enough for the corpus format).
fn json_field(line: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\": \"");
    let start = line.find(&key)? + key.len();
    let mut value = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => match chars.next()? {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                'b' => value.push('\u{8}'),
                'f' => value.push('\u{c}'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16).ok()?;
                    if (0xD800..0xDC00).contains(&code) {
                        let rest: String = chars.by_ref().take(6).collect();
                        let low = u32::from_str_radix(rest.get(2..)?, 16).ok()?;
                        value.push(char::from_u32(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))?);
                    } else {
                        value.push(char::from_u32(code)?);
                    }
                }
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}
