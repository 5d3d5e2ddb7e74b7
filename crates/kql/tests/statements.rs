//! Statements: `let`, functions, `set`, several statements.

use crate::support::{assert_round_trip, parse_ok};
use trawl_kql::ast::{ExprKind, LetValue, ParamType, ScalarType, StatementKind};

#[test]
fn lets_then_query() {
    let query =
        parse_ok("let threshold = 5;\nlet recent = T | where timestamp > ago(1h);\nrecent | where n > threshold");
    assert_eq!(query.statements.len(), 3);
    let StatementKind::Let(first) = &query.statements[0].kind else {
        panic!()
    };
    assert_eq!(first.name.name, "threshold");
    assert!(matches!(&first.value, LetValue::Expr(expr) if matches!(expr.kind, ExprKind::Literal(_))));
    let StatementKind::Let(second) = &query.statements[1].kind else {
        panic!()
    };
    assert!(matches!(&second.value, LetValue::Expr(expr) if matches!(expr.kind, ExprKind::Pipeline { .. })));
    assert!(matches!(query.statements[2].kind, StatementKind::Expr(_)));
}

#[test]
fn function_with_typed_params_and_defaults() {
    let query =
        parse_ok("let f = (a:long, b:string = \"x\", T:(*), U:(c:int, *)) { let y = a * 2; T | where c > y };\nf(1)");
    let StatementKind::Let(definition) = &query.statements[0].kind else {
        panic!()
    };
    let LetValue::Function(function) = &definition.value else {
        panic!("not a function")
    };
    assert_eq!(function.params.len(), 4);
    assert_eq!(function.params[0].ty, ParamType::Scalar(ScalarType::Long));
    assert!(function.params[1].default.is_some());
    assert!(matches!(&function.params[2].ty, ParamType::Tabular { columns, open: true } if columns.is_empty()));
    assert!(matches!(&function.params[3].ty, ParamType::Tabular { columns, open: true } if columns.len() == 1));
    assert_eq!(function.body.len(), 2);
    let query = parse_ok("let g = () { 42 }; g()");
    assert_eq!(query.statements.len(), 2);
}

#[test]
fn comments_semicolons_and_set() {
    let query = parse_ok("// leading comment\nset querytrace;\nT // trailing\n| count;;\n");
    assert_eq!(query.statements.len(), 2);
    assert!(matches!(&query.statements[0].kind, StatementKind::Set(option) if option.name == "querytrace"));
}

#[test]
fn statement_spans() {
    let text = "let x = 1; T | take x";
    let query = parse_ok(text);
    assert_eq!(&text[query.statements[0].span.range()], "let x = 1");
    assert_eq!(&text[query.statements[1].span.range()], "T | take x");
}

#[test]
fn declare_query_parameters_parses_and_prints() {
    let text = "declare query_parameters(n:long, s:string = 'x'); print n, s";
    let query = trawl_kql::parse(text).unwrap_or_else(|e| panic!("{e:?}"));
    let StatementKind::DeclareParameters(params) = &query.statements[0].kind else {
        panic!("not a declaration: {:?}", query.statements[0].kind);
    };
    let names: Vec<&str> = params.iter().map(|p| p.name.name.as_str()).collect();
    assert_eq!(names, vec!["n", "s"]);
    assert!(params[1].default.is_some());
    let printed = query.statements[0].to_string();
    assert_eq!(printed, "declare query_parameters(n:long, s:string = \"x\")");
    let again = trawl_kql::parse(&format!("{printed}; print n")).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(matches!(again.statements[0].kind, StatementKind::DeclareParameters(_)));
    // A table named `declare` still reads as one.
    assert!(matches!(
        trawl_kql::parse("declare | take 1").map(|q| q.statements.len()),
        Ok(1)
    ));
}

#[test]
fn declare_pattern_parses_and_prints() {
    let text = r#"declare pattern country = (name:string)[state:string]
        { ("USA").["New York"] = { print Capital = "Albany" }; ("Canada").["Alberta"] = { let c = "Edmonton"; print Capital = c }; };
        country("Canada").Alberta"#;
    let query = trawl_kql::parse(text).unwrap_or_else(|e| panic!("{e:?}"));
    let StatementKind::DeclarePattern(pattern) = &query.statements[0].kind else {
        panic!("not a pattern: {:?}", query.statements[0].kind);
    };
    assert_eq!(pattern.name.name, "country");
    assert_eq!(pattern.params.len(), 1);
    assert!(pattern.path.is_some());
    assert_eq!(pattern.rules.len(), 2);
    assert_eq!(pattern.rules[1].body.len(), 2);
    let printed = query.statements[0].to_string();
    let again = trawl_kql::parse(&format!("{printed}; country('USA').['New York']"))
        .unwrap_or_else(|e| panic!("{printed}: {e:?}"));
    assert_eq!(again.statements[0].to_string(), printed);
    assert!(matches!(&again.statements[0].kind, StatementKind::DeclarePattern(p) if p.rules.len() == 2));
    // Declared without rules, or without a path.
    assert!(trawl_kql::parse("declare pattern p; p('x')").is_ok());
    assert!(trawl_kql::parse("declare pattern p = (a:string) { ('x') = { print 1 }; }; p('x')").is_ok());
    assert!(trawl_kql::parse("declare pattern p = (a:string) { ('x') = { }; }; p('x')").is_err());
}

#[test]
fn restrict_access_lists_names_patterns_and_database_members() {
    let text = "let V = view () { T }; restrict access to (V, Logs*, database().Events); V | count";
    let query = parse_ok(text);
    let StatementKind::Restrict(entities) = &query.statements[1].kind else {
        panic!("a restrict statement: {:?}", query.statements[1].kind)
    };
    assert_eq!(entities.len(), 3);
    assert_round_trip(text);
    assert!(trawl_kql::parse("restrict access (T); T").is_err());
    assert!(trawl_kql::parse("restrict access to T; T").is_err());
}
