//! Operators beyond the first milestone: sources, joins, expansion, parsing, series.

use crate::support::{assert_round_trip, last_expr, parse_ok, single_operator};
use trawl_kql::ast::{ExprKind, OperatorKind, ParsePart, ScalarType, SeriesRange};

fn source_operator(text: &str) -> OperatorKind {
    let query = parse_ok(text);
    let expr = last_expr(&query);
    let source = match &expr.kind {
        ExprKind::Pipeline { source, .. } => source.as_ref(),
        _ => expr,
    };
    match &source.kind {
        ExprKind::TabularOperator(operator) => operator.kind.clone(),
        other => panic!("{text:?} does not start with a source operator: {other:?}"),
    }
}

/// Queries for the later operators; each must parse and round-trip.
pub const QUERIES: &[&str] = &[
    "print 1",
    "print x = 1, y = 'a' | extend z = x + 1",
    "print ['timespan'] = make_timespan(1, 2)",
    "datatable(a:long, b:string) [1, 'x', 2, 'y',]",
    "datatable(d:dynamic) [dynamic({\"a\": 1}), dynamic([1, 2])] | evaluate bag_unpack(d)",
    "range x from 1 to 10 step 2 | where x > 3",
    "range t from ago(1h) to now() step 5m",
    "union T1, T2",
    "union withsource=t Log*, (T | take 1), *Events",
    "union *",
    "union kind=outer withsource=SourceTable isfuzzy=true T1, (T2 | where x > 1)",
    "T | union U, V",
    "T | join kind=inner (U | where y > 1) on id",
    "T | join kind=leftouter hint.strategy=broadcast U on $left.a == $right.b, c",
    "T | join U on $left.a == $right.b and $left.c == $right.d",
    "T | lookup kind=leftouter (Dim) on key",
    "T | as hint.materialized=true X | count",
    "T | mv-expand tags",
    "T | mv-expand bagexpansion=array with_itemindex=i x = arr to typeof(long), y limit 100",
    "T | mv-apply v = values to typeof(long) on (top 2 by v | summarize sum(v))",
    "T | parse msg with * 'id=' id:long ', name=' name *",
    "T | parse kind=regex flags=Ui msg with @'(\\d+)' n:int",
    "T | parse-where msg with 'a' rest",
    "T | parse-kv msg as (a:long, b:string) with (pair_delimiter = ',', kv_delimiter = '=')",
    "T | make-series n = count() default = 0 on timestamp from ago(1d) to now() step 1h by service",
    "T | make-series kind=nonempty avg(x) on t in range(datetime(2024-01-01), datetime(2024-01-02), 1h)",
    "T | make-series sum(x) on t step 1d",
    "T | render timechart",
    "T | render columnchart with (title = 'x', ytitle = \"count\")",
    "T | getschema",
    "T | serialize",
    "T | serialize rn = row_number()",
    "T | top-nested 3 of country with others = 'other' by total = sum(x) desc, top-nested 2 of city by count()",
    "T | top-nested of a by max(b)",
    "evaluate python(typeof(long), 'code')",
    "T | evaluate hint.distribution=per_node bag_unpack(d)",
    "T | invoke f(1, 'a')",
    "search 'error'",
    "search in (T1, T2) message has 'error'",
    "T | search kind=case_sensitive 'x'",
    "find 'error'",
    "find withsource=Src in (T1, C*, (U | take 5)) where level == 'Error' and msg has 'x' project msg, code:long, pack_all()",
    "find in (T1) x > 1 project-smart",
    "find where * has 'x' project pack_all()",
    "T | fork (where x > 1 | count) named = (take 5)",
    "T | partition hint.strategy=native by key (top 1 by t desc)",
    "T | scan declare (total:long = 0) with (step s1 output=last: x > 1 => total = s1.total + x; step s2: true;)",
    "T | scan with_match_id=m with (step a: x == 1;)",
    "T | sample 10",
    "T | sample-distinct 5 of city",
    "T | top-hitters 5 of word by weight",
    "T | project-by-names dynamic(['a', 'b']), column_names_of(U)",
    "T | reduce by message with characters = 'Z'",
    "T | evaluate bag_unpack(d) : (*, Name:string, Age:long)",
    "let m = materialize(T | summarize count() by k); m | join (m) on k",
];

#[test]
fn later_operators_round_trip() {
    for query in QUERIES {
        assert_round_trip(query);
    }
}

#[test]
fn find_takes_tables_a_predicate_and_a_projection() {
    let OperatorKind::Find(find) =
        source_operator("find withsource=S in (A, B*) where x == 1 project a, b:long, pack_all()")
    else {
        panic!("find")
    };
    assert_eq!(find.tables.len(), 2);
    assert_eq!(find.params.len(), 1);
    let Some(project) = find.project else {
        panic!("a project list")
    };
    assert!(project.pack_all);
    assert_eq!(project.columns.len(), 2);
    assert_eq!(project.columns[1].1, Some(ScalarType::Long));
    let OperatorKind::Find(smart) = source_operator("find 'term' project-smart") else {
        panic!("find")
    };
    assert!(smart.project.is_none() && smart.tables.is_empty());
}

#[test]
fn source_operators() {
    let OperatorKind::Print(items) = source_operator("print x = 1, 2") else {
        panic!()
    };
    assert_eq!(items.len(), 2);
    let OperatorKind::Datatable(table) = source_operator("datatable(a:long, b:string) [1, 'x', 2, 'y',]") else {
        panic!()
    };
    assert_eq!((table.columns.len(), table.values.len()), (2, 4));
    assert_eq!(table.columns[1].ty, ScalarType::String);
    let OperatorKind::Range(range) = source_operator("range x from -3 to 3 step 1 | count") else {
        panic!()
    };
    assert_eq!(range.column.name, "x");
    let OperatorKind::Union(union) = source_operator("union withsource=S T1, (T2 | take 1)") else {
        panic!()
    };
    assert_eq!((union.params[0].name.as_str(), union.tables.len()), ("withsource", 2));
    assert!(matches!(source_operator("evaluate f(1)"), OperatorKind::Evaluate(_)));
}

#[test]
fn a_table_named_like_a_source_is_still_a_name() {
    let query = parse_ok("range | take 1");
    assert!(
        matches!(&last_expr(&query).kind, ExprKind::Pipeline { source, .. } if matches!(source.kind, ExprKind::Name(_)))
    );
}

#[test]
fn join_and_lookup() {
    let OperatorKind::Join(join) = single_operator("join kind=inner (U | where y) on id, $left.a == $right.b") else {
        panic!()
    };
    assert_eq!(join.params[0].name, "kind");
    assert!(matches!(join.right.kind, ExprKind::Pipeline { .. }));
    assert_eq!(join.on.len(), 2);
    assert!(matches!(single_operator("lookup Dim on k"), OperatorKind::Lookup(_)));
}

#[test]
fn parse_patterns() {
    let OperatorKind::Parse(parse) = single_operator("parse msg with * 'id=' id:long ', x=' x") else {
        panic!()
    };
    assert_eq!(parse.pattern.len(), 5);
    assert!(matches!(parse.pattern[0], ParsePart::Wildcard { .. }));
    assert!(matches!(&parse.pattern[1], ParsePart::Text { text, .. } if text == "id="));
    assert!(matches!(
        &parse.pattern[2],
        ParsePart::Column {
            ty: Some(ScalarType::Long),
            ..
        }
    ));
}

#[test]
fn make_series_ranges() {
    let OperatorKind::MakeSeries(series) = single_operator("make-series avg(x) on t in range(0, 10, 1) by k") else {
        panic!()
    };
    assert!(matches!(series.range, SeriesRange::InRange { .. }));
    assert_eq!(series.by.len(), 1);
}

#[test]
fn sub_pipelines_without_source() {
    let OperatorKind::MvApply(apply) = single_operator("mv-apply x on (where x > 1 | take 1)") else {
        panic!()
    };
    assert_eq!(apply.subquery.len(), 2);
    let OperatorKind::Fork(branches) = single_operator("fork (count) b = (take 1)") else {
        panic!()
    };
    assert_eq!(branches.len(), 2);
    assert_eq!(branches[1].name.as_ref().map(|name| name.name.as_str()), Some("b"));
}
