//! Expression parsing: literals, precedence, string and list operators.

use crate::support::{expr, parse_ok, without_spans};
use trawl_kql::ast::{BinaryOp, DynamicValue, ExprKind, ListOp, Literal, ScalarType, UnaryOp};

fn literal(text: &str) -> Literal {
    match expr(text).kind {
        ExprKind::Literal(literal) => literal,
        other => panic!("{text:?} is not a literal: {other:?}"),
    }
}

/// The tree of `text` printed fully parenthesized, to check precedence.
fn shape(text: &str) -> String {
    fn walk(expr: &trawl_kql::ast::Expr) -> String {
        match &expr.kind {
            ExprKind::Binary { op, left, right } => {
                format!("({} {} {})", walk(left), op.as_str(), walk(right))
            }
            ExprKind::Unary { op, operand } => format!("({op:?} {})", walk(operand)),
            ExprKind::List { op, operand, items } => {
                format!(
                    "({} {} [{}])",
                    walk(operand),
                    op.as_str(),
                    items.iter().map(walk).collect::<Vec<_>>().join(", ")
                )
            }
            ExprKind::Between {
                negated,
                operand,
                low,
                high,
            } => {
                format!(
                    "({} between{} {}..{})",
                    walk(operand),
                    if *negated { "!" } else { "" },
                    walk(low),
                    walk(high)
                )
            }
            _ => expr.to_string(),
        }
    }
    walk(&expr(text))
}

#[test]
fn numeric_and_bool_literals() {
    assert_eq!(literal("42"), Literal::Long(42));
    assert_eq!(literal("1.5"), Literal::Real(1.5));
    assert_eq!(literal("1e3"), Literal::Real(1000.0));
    assert_eq!(literal("true"), Literal::Bool(true));
    assert_eq!(literal("false"), Literal::Bool(false));
    assert_eq!(literal("int(7)"), Literal::Int(7));
    assert_eq!(literal("long(-7)"), Literal::Long(-7));
    assert_eq!(literal("real(2)"), Literal::Real(2.0));
    assert_eq!(literal("bool(false)"), Literal::Bool(false));
    assert_eq!(literal("int(null)"), Literal::Null(Some(ScalarType::Int)));
    assert_eq!(literal("decimal(1.25)"), Literal::Decimal("1.25".into()));
    assert!(matches!(literal("real(nan)"), Literal::Real(value) if value.is_nan()));
    assert_eq!(literal("real(-inf)"), Literal::Real(f64::NEG_INFINITY));
}

#[test]
fn string_literal_forms() {
    assert_eq!(literal(r#""a\"b\\c""#), Literal::String("a\"b\\c".into()));
    assert_eq!(literal(r"'it\'s'"), Literal::String("it's".into()));
    assert_eq!(literal(r#"@"C:\temp""#), Literal::String("C:\\temp".into()));
    assert_eq!(literal(r"@'a''b'"), Literal::String("a'b".into()));
    assert_eq!(literal("```line1\nline2```"), Literal::String("line1\nline2".into()));
    assert_eq!(literal(r#"h"secret""#), Literal::String("secret".into()));
    assert_eq!(literal(r#"h'secret'"#), Literal::String("secret".into()));
    assert_eq!(literal(r#""ab" 'cd' @"ef""#), Literal::String("abcdef".into()));
}

#[test]
fn timespan_literals() {
    let second = 1_000_000_000;
    assert_eq!(literal("1d"), Literal::Timespan(86_400 * second));
    assert_eq!(literal("2h"), Literal::Timespan(7_200 * second));
    assert_eq!(literal("30m"), Literal::Timespan(1_800 * second));
    assert_eq!(literal("10s"), Literal::Timespan(10 * second));
    assert_eq!(literal("100ms"), Literal::Timespan(100_000_000));
    assert_eq!(literal("5microsecond"), Literal::Timespan(5_000));
    assert_eq!(literal("1tick"), Literal::Timespan(100));
    assert_eq!(literal("1.5h"), Literal::Timespan(5_400 * second));
    assert_eq!(literal("time(1d)"), Literal::Timespan(86_400 * second));
    assert_eq!(literal("timespan(00:30:00)"), Literal::Timespan(1_800 * second));
    assert_eq!(literal("time(null)"), Literal::Null(Some(ScalarType::Timespan)));
}

#[test]
fn datetime_and_guid_literals() {
    assert_eq!(
        literal("datetime(2024-01-01)"),
        Literal::DateTime(1_704_067_200_000_000_000)
    );
    assert_eq!(
        literal("datetime(2024-01-01T10:00:00Z)"),
        Literal::DateTime(1_704_103_200_000_000_000)
    );
    assert_eq!(
        literal("datetime(2024-01-01 10:00:00.5)"),
        Literal::DateTime(1_704_103_200_500_000_000)
    );
    assert_eq!(literal("datetime(null)"), Literal::Null(Some(ScalarType::DateTime)));
    // Spaces around the dashes, as documentation examples write them.
    assert_eq!(
        literal("datetime(2024 - 01 - 01)"),
        Literal::DateTime(1_704_067_200_000_000_000)
    );
    assert_eq!(
        literal("guid(74be27de-1e4e-49d9-b579-fe0b331d3642)"),
        Literal::Guid("74be27de-1e4e-49d9-b579-fe0b331d3642".into())
    );
}

#[test]
fn dynamic_literals() {
    assert_eq!(literal("dynamic(null)"), Literal::Dynamic(DynamicValue::Null));
    assert_eq!(literal("dynamic(5)"), Literal::Dynamic(DynamicValue::Long(5)));
    assert_eq!(
        literal(r#"dynamic({"a": [1, -2.5, "x", true, null], 'b': {}})"#),
        Literal::Dynamic(DynamicValue::Object(vec![
            (
                "a".into(),
                DynamicValue::Array(vec![
                    DynamicValue::Long(1),
                    DynamicValue::Real(-2.5),
                    DynamicValue::String("x".into()),
                    DynamicValue::Bool(true),
                    DynamicValue::Null,
                ])
            ),
            ("b".into(), DynamicValue::Object(vec![])),
        ]))
    );
    assert_eq!(
        literal("dynamic([datetime(1970-01-01), 1h,])"),
        Literal::Dynamic(DynamicValue::Array(vec![
            DynamicValue::DateTime(0),
            DynamicValue::Timespan(3_600_000_000_000)
        ]))
    );
}

#[test]
fn typeof_and_names() {
    assert_eq!(expr("typeof(long)").kind, ExprKind::TypeOf(ScalarType::Long));
    let ExprKind::Name(ident) = expr("['service name']").kind else {
        panic!("not a name")
    };
    assert_eq!(ident.name, "service name");
    assert!(ident.bracketed);
    let ExprKind::Name(ident) = expr("CamelCase_1").kind else {
        panic!("not a name")
    };
    assert_eq!(ident.name, "CamelCase_1");
}

#[test]
fn member_index_and_calls() {
    assert_eq!(shape("resource['service.name']"), r#"resource["service.name"]"#);
    assert_eq!(shape("a.b.c"), "a.b.c");
    assert_eq!(shape("arr[0]"), "arr[0]");
    let ExprKind::Member { target, member } = expr("a.b.c").kind else {
        panic!("not member")
    };
    assert_eq!(member.name, "c");
    assert!(matches!(target.kind, ExprKind::Member { .. }));
    let ExprKind::Call { function, args } = expr("bin(timestamp, 5m)").kind else {
        panic!("not call")
    };
    assert_eq!(function.name, "bin");
    assert_eq!(args.len(), 2);
    let ExprKind::Call { args, .. } = expr("count()").kind else {
        panic!("not call")
    };
    assert!(args.is_empty());
    let ExprKind::Call { args, .. } = expr("bag_unpack(d, ignoredProperties = dynamic(['a']))").kind else {
        panic!("not call")
    };
    assert!(matches!(args[1].kind, ExprKind::NamedArgument { .. }));
}

#[test]
fn precedence_follows_kusto() {
    assert_eq!(shape("1 + 2 * 3"), "(1 + (2 * 3))");
    assert_eq!(shape("1 - 2 - 3"), "((1 - 2) - 3)");
    assert_eq!(shape("a < b == c"), "((a < b) == c)");
    assert_eq!(shape("a == 1 and b == 2 or c"), "(((a == 1) and (b == 2)) or c)");
    assert_eq!(shape("a or b and c"), "(a or (b and c))");
    assert_eq!(shape("x + 1 > y * 2"), "((x + 1) > (y * 2))");
    assert_eq!(shape("-a * b"), "((Neg a) * b)");
    assert_eq!(
        shape("a has 'x' and b !contains 'y'"),
        r#"((a has "x") and (b !contains "y"))"#
    );
    assert_eq!(shape("(a or b) and c"), "((a or b) and c)");
}

#[test]
fn unary_and_not() {
    assert!(matches!(expr("-x").kind, ExprKind::Unary { op: UnaryOp::Neg, .. }));
    assert!(matches!(
        expr("not(a == b)").kind,
        ExprKind::Unary { op: UnaryOp::Not, .. }
    ));
    assert_eq!(shape("not(isempty(x)) and y"), "((Not isempty(x)) and y)");
}

#[test]
fn every_string_operator() {
    let cases = [
        ("==", BinaryOp::Eq),
        ("!=", BinaryOp::NotEq),
        ("<>", BinaryOp::NotEq),
        ("=~", BinaryOp::EqCi),
        ("!~", BinaryOp::NotEqCi),
        ("has", BinaryOp::Has),
        ("!has", BinaryOp::NotHas),
        ("has_cs", BinaryOp::HasCs),
        ("!has_cs", BinaryOp::NotHasCs),
        ("contains", BinaryOp::Contains),
        ("!contains", BinaryOp::NotContains),
        ("notcontains", BinaryOp::NotContains),
        ("contains_cs", BinaryOp::ContainsCs),
        ("!contains_cs", BinaryOp::NotContainsCs),
        ("startswith", BinaryOp::StartsWith),
        ("!startswith", BinaryOp::NotStartsWith),
        ("startswith_cs", BinaryOp::StartsWithCs),
        ("!startswith_cs", BinaryOp::NotStartsWithCs),
        ("endswith", BinaryOp::EndsWith),
        ("!endswith", BinaryOp::NotEndsWith),
        ("endswith_cs", BinaryOp::EndsWithCs),
        ("!endswith_cs", BinaryOp::NotEndsWithCs),
        ("hasprefix", BinaryOp::HasPrefix),
        ("!hasprefix", BinaryOp::NotHasPrefix),
        ("hasprefix_cs", BinaryOp::HasPrefixCs),
        ("!hasprefix_cs", BinaryOp::NotHasPrefixCs),
        ("hassuffix", BinaryOp::HasSuffix),
        ("!hassuffix", BinaryOp::NotHasSuffix),
        ("hassuffix_cs", BinaryOp::HasSuffixCs),
        ("!hassuffix_cs", BinaryOp::NotHasSuffixCs),
        ("like", BinaryOp::Like),
        ("notlike", BinaryOp::NotLike),
        ("matches regex", BinaryOp::MatchesRegex),
    ];
    for (text, expected) in cases {
        let ExprKind::Binary { op, .. } = expr(&format!("a {text} 'x'")).kind else {
            panic!("{text} did not parse as binary");
        };
        assert_eq!(op, expected, "operator {text}");
    }
}

#[test]
fn in_lists_and_between() {
    let cases = [
        ("in", ListOp::In),
        ("!in", ListOp::NotIn),
        ("in~", ListOp::InCi),
        ("!in~", ListOp::NotInCi),
        ("has_any", ListOp::HasAny),
    ];
    for (text, expected) in cases {
        let ExprKind::List { op, items, .. } = expr(&format!("a {text} ('x', 'y')")).kind else {
            panic!("{text} did not parse as a list");
        };
        assert_eq!((op, items.len()), (expected, 2), "operator {text}");
    }
    assert_eq!(shape("x between (1 .. 10)"), "(x between 1..10)");
    assert_eq!(shape("x !between (1..10) and y"), "((x between! 1..10) and y)");
    let ExprKind::List { items, .. } = expr("x in (T | project y)").kind else {
        panic!("not a list")
    };
    assert!(matches!(items[0].kind, ExprKind::Pipeline { .. }));
}

#[test]
fn spans_cover_their_text() {
    let text = "T | where a + b * 2 > 3";
    let query = parse_ok(text);
    let printed = without_spans(&query);
    assert!(!printed.contains("..2"), "spans must be stripped: {printed}");
    let ExprKind::Pipeline { operators, source } = &crate::support::last_expr(&query).kind else {
        panic!()
    };
    assert_eq!(&text[source.span.range()], "T");
    assert_eq!(&text[operators[0].span.range()], "where a + b * 2 > 3");
    let trawl_kql::ast::OperatorKind::Where(predicate) = &operators[0].kind else {
        panic!()
    };
    assert_eq!(&text[predicate.span.range()], "a + b * 2 > 3");
    let ExprKind::Binary { left, .. } = &predicate.kind else {
        panic!()
    };
    assert_eq!(&text[left.span.range()], "a + b * 2");
}

#[test]
fn timespans_parse_as_literals_do_for_client_time_limits() {
    const SECOND: i64 = 1_000_000_000;
    assert_eq!(trawl_kql::parse_timespan("00:04:00"), Some(240 * SECOND));
    assert_eq!(trawl_kql::parse_timespan("0:00:30.5"), Some(30_500_000_000));
    assert_eq!(trawl_kql::parse_timespan("1.02:00:00"), Some(26 * 3_600 * SECOND));
    assert_eq!(trawl_kql::parse_timespan(" 30s "), Some(30 * SECOND));
    assert_eq!(trawl_kql::parse_timespan("100ms"), Some(SECOND / 10));
    for bad in ["", "soon", "00:61:00", "00:00:60", "a:b:c", "1:2:3:4", "00:-1:00"] {
        assert_eq!(trawl_kql::parse_timespan(bad), None, "{bad}");
    }
}

#[test]
fn time_limits_as_clients_write_them() {
    let cases = [
        ("30s", Some(std::time::Duration::from_secs(30))),
        ("00:04:00", Some(std::time::Duration::from_secs(240))),
        ("1.00:00:01", Some(std::time::Duration::from_secs(86_401))),
        // Python's str(timedelta), as azure-kusto-data sends it.
        ("0:00:30", Some(std::time::Duration::from_secs(30))),
        ("1 day, 0:00:01", Some(std::time::Duration::from_secs(86_401))),
        (
            "2 days, 1:00:00.500000",
            Some(std::time::Duration::from_millis(2 * 86_400_000 + 3_600_500)),
        ),
        ("-1 day, 23:59:59", None),
        ("00:00:-5", None),
        ("soon", None),
        ("99999999999999 days, 0:00:00", None),
    ];
    for (text, expected) in cases {
        assert_eq!(trawl_kql::parse_time_limit(text), expected, "{text}");
    }
}
