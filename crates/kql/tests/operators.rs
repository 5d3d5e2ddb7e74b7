//! The tabular operators after `|`.

use crate::support::{last_expr, parse_ok, single_operator};
use trawl_kql::ast::{ExprKind, NullsOrder, OperatorKind, ReorderOrder, SortOrder};

#[test]
fn where_and_filter_are_one_operator() {
    assert!(matches!(single_operator("where x > 1"), OperatorKind::Where(_)));
    assert!(matches!(single_operator("filter x > 1"), OperatorKind::Where(_)));
}

#[test]
fn project_and_extend_with_names() {
    let OperatorKind::Project(columns) = single_operator("project a, b = x + 1, ['c d'] = y") else {
        panic!()
    };
    assert_eq!(columns.len(), 3);
    assert!(columns[0].names.is_empty());
    assert_eq!(columns[1].name().map(|name| name.name.as_str()), Some("b"));
    assert_eq!(columns[2].name().map(|name| name.name.as_str()), Some("c d"));
    let OperatorKind::Extend(columns) = single_operator("extend x = 1, (lo, hi) = f(y)") else {
        panic!()
    };
    assert_eq!(columns[1].names.len(), 2);
}

#[test]
fn take_limit_count() {
    assert!(matches!(single_operator("take 10"), OperatorKind::Take(_)));
    assert!(matches!(single_operator("limit 10"), OperatorKind::Take(_)));
    assert!(matches!(single_operator("count"), OperatorKind::Count));
}

#[test]
fn sort_keys() {
    let OperatorKind::Sort(sort) = single_operator("order by a asc nulls last, b desc, c nulls first, d") else {
        panic!()
    };
    let parts: Vec<_> = sort.keys.iter().map(|key| (key.order, key.nulls)).collect();
    assert_eq!(
        parts,
        vec![
            (Some(SortOrder::Asc), Some(NullsOrder::Last)),
            (Some(SortOrder::Desc), None),
            (None, Some(NullsOrder::First)),
            (None, None),
        ]
    );
    assert!(matches!(single_operator("sort by x"), OperatorKind::Sort(_)));
}

#[test]
fn summarize_forms() {
    let OperatorKind::Summarize(summarize) = single_operator(
        "summarize count(), total = sum(x) by service = tostring(resource['service.name']), bin(timestamp, 5m)",
    ) else {
        panic!()
    };
    assert_eq!(summarize.aggregates.len(), 2);
    assert_eq!(summarize.by.len(), 2);
    assert_eq!(summarize.by[0].name().map(|name| name.name.as_str()), Some("service"));
    let OperatorKind::Summarize(summarize) = single_operator("summarize by a, b") else {
        panic!()
    };
    assert!(summarize.aggregates.is_empty());
    assert_eq!(summarize.by.len(), 2);
    let OperatorKind::Summarize(summarize) = single_operator("summarize hint.strategy=shuffle dcount(user)") else {
        panic!()
    };
    assert_eq!(summarize.params[0].name, "hint.strategy");
    assert!(summarize.by.is_empty());
}

#[test]
fn top_and_distinct() {
    let OperatorKind::Top(top) = single_operator("top 5 by duration desc nulls last") else {
        panic!()
    };
    assert_eq!(top.by.order, Some(SortOrder::Desc));
    let OperatorKind::Distinct(columns) = single_operator("distinct a, b") else {
        panic!()
    };
    assert_eq!(columns.len(), 2);
    let OperatorKind::Distinct(columns) = single_operator("distinct *") else {
        panic!()
    };
    assert_eq!(columns[0].kind, ExprKind::Star);
}

#[test]
fn project_family() {
    let OperatorKind::ProjectAway(patterns) = single_operator("project-away a, b*, ['c d']") else {
        panic!()
    };
    let texts: Vec<_> = patterns
        .iter()
        .map(|pattern| (pattern.pattern.as_str(), pattern.is_wildcard()))
        .collect();
    assert_eq!(texts, vec![("a", false), ("b*", true), ("c d", false)]);
    assert!(matches!(
        single_operator("project-keep x*"),
        OperatorKind::ProjectKeep(_)
    ));
    let OperatorKind::ProjectRename(renames) = single_operator("project-rename new = old, ['x y'] = z") else {
        panic!()
    };
    assert_eq!(
        (renames[0].new_name.name.as_str(), renames[0].old_name.name.as_str()),
        ("new", "old")
    );
    assert_eq!(renames[1].new_name.name, "x y");
    let OperatorKind::ProjectReorder(keys) = single_operator("project-reorder c, a* asc, b* granny-desc") else {
        panic!()
    };
    assert_eq!(
        keys.iter().map(|key| key.order).collect::<Vec<_>>(),
        vec![None, Some(ReorderOrder::Asc), Some(ReorderOrder::GrannyDesc)]
    );
}

#[test]
fn pipelines_chain_and_nest() {
    let query = parse_ok("['my table'] | where x | extend y = 1 | take 3");
    let ExprKind::Pipeline { source, operators } = &last_expr(&query).kind else {
        panic!()
    };
    assert!(matches!(&source.kind, ExprKind::Name(ident) if ident.name == "my table" && ident.bracketed));
    assert_eq!(operators.len(), 3);
    let query = parse_ok("(T | where x) | count");
    let ExprKind::Pipeline { source, operators } = &last_expr(&query).kind else {
        panic!()
    };
    assert!(matches!(source.kind, ExprKind::Pipeline { .. }));
    assert_eq!(operators.len(), 1);
}
