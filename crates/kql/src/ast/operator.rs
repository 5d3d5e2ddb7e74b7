//! Tabular operators: the `| name ...` steps of a pipeline.

use super::{
    As, Datatable, Evaluate, Expr, Facet, Find, ForkBranch, GraphMatch, GraphToTable, Ident, Join, MakeGraph,
    MakeSeries, MvApply, MvExpand, NamedExpr, Parse, ParseKv, Partition, Range, Reduce, Render, SampleDistinct,
    ScalarType, Scan, Search, TopHitters, TopNestedLevel, TraceFind, Union,
};
use crate::span::Span;

/// One tabular operator with its span (from the operator name to its last token).
#[derive(Debug, Clone, PartialEq)]
pub struct Operator {
    pub kind: OperatorKind,
    pub span: Span,
}

/// The tabular operators. New operators are added as new variants; the enum is
/// `#[non_exhaustive]` so that other crates keep compiling when that happens.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OperatorKind {
    /// `where predicate` (also `filter`).
    Where(Expr),
    /// `project a, b = expr, ...`
    Project(Vec<NamedExpr>),
    /// `extend x = expr, ...`
    Extend(Vec<NamedExpr>),
    /// `take n` (also `limit`).
    Take(Expr),
    /// `count`
    Count,
    /// `sort by key, ...` (also `order by`).
    Sort(Sort),
    /// `summarize [params] aggregates [by groups]`
    Summarize(Summarize),
    /// `top n by key`
    Top(Top),
    /// `distinct a, b` or `distinct *` (an [`ExprKind::Star`](super::ExprKind::Star)).
    Distinct(Vec<Expr>),
    /// `project-away a, b*`
    ProjectAway(Vec<ColumnPattern>),
    /// `project-keep a, b*`
    ProjectKeep(Vec<ColumnPattern>),
    /// `project-rename new = old, ...`
    ProjectRename(Vec<Rename>),
    /// `project-reorder a, b* asc, ...`
    ProjectReorder(Vec<ReorderKey>),
    /// `print [name =] expr, ...` (a source).
    Print(Vec<NamedExpr>),
    /// `datatable(schema) [values]` (a source).
    Datatable(Datatable),
    /// `range x from a to b step s` (a source).
    Range(Range),
    /// `union T1, T2` (a source, or piped: the input is the first leg).
    Union(Union),
    /// `join kind=... (right) on ...`
    Join(Join),
    /// `lookup kind=... (right) on ...`
    Lookup(Join),
    /// `as name`
    As(As),
    /// `mv-expand ...`
    MvExpand(MvExpand),
    /// `mv-apply ... on (...)`
    MvApply(MvApply),
    /// `parse source with pattern`
    Parse(Parse),
    /// `parse-where source with pattern`: like `parse`, dropping rows that do not match.
    ParseWhere(Parse),
    /// `parse-kv source as (schema) with (options)`
    ParseKv(ParseKv),
    /// `make-series ...`
    MakeSeries(MakeSeries),
    /// `render chart with (...)`
    Render(Render),
    /// `getschema`
    GetSchema,
    /// `serialize [name = expr, ...]`
    Serialize(Vec<NamedExpr>),
    /// `top-nested ..., top-nested ...`: one entry per level.
    TopNested(Vec<TopNestedLevel>),
    /// `evaluate plugin(...)` (a source, or piped).
    Evaluate(Evaluate),
    /// `search ...` (a source, or piped).
    Search(Search),
    Find(Find),
    /// `invoke function(args)`: calls a tabular function with the input as first argument.
    Invoke(Expr),
    /// `fork (...) (...)`
    Fork(Vec<ForkBranch>),
    /// `partition by column (...)`
    Partition(Partition),
    /// `scan ... with (steps)`
    Scan(Scan),
    /// `sample n`
    Sample(Expr),
    /// `sample-distinct n of column`
    SampleDistinct(SampleDistinct),
    /// `top-hitters n of column [by weight]`
    TopHitters(TopHitters),
    /// `project-by-names expr, ...`: columns named by string or dynamic-array expressions.
    ProjectByNames(Vec<Expr>),
    /// `reduce by column [with options]`
    Reduce(Reduce),
    /// `fieldstats [column, ...]`: the paths of dynamic columns with their types, distinct
    /// counts and frequencies.
    FieldStats(Vec<Expr>),
    /// `annotate path:type, ...`: later references to each dynamic path read it as the type.
    Annotate(Vec<(Expr, ScalarType)>),
    /// `trace-find {predicate} >> {predicate} ... [within timespan]`
    TraceFind(TraceFind),
    /// `otel-log-stats`: log counts, time span and templates per service and severity.
    OtelLogStats,
    /// `facet by c1, c2 [with (operators)]`: one table of value counts per column (and the
    /// `with` pipeline's table first); it ends its query.
    Facet(Facet),
    /// `consume [decodeblocks = bool]`: reads the input and returns no rows.
    Consume(Vec<OperatorParam>),
    /// `make-graph Source --> Target ...`
    MakeGraph(MakeGraph),
    /// `graph-match pattern ... project ...`
    GraphMatch(GraphMatch),
    /// `graph-shortest-paths [output = any|all] pattern ... project ...`: the shortest matches
    /// between each pair of end nodes.
    GraphShortestPaths(GraphMatch),
    /// `graph-to-table nodes|edges ...`: a graph's nodes or edges as a table.
    GraphToTable(GraphToTable),
    /// `graph-mark-components [kind = weak|strong] [with_component_id = Name]`
    GraphMarkComponents(Vec<OperatorParam>),
}

impl OperatorKind {
    /// The canonical operator name as written after `|` (`where`, `project-away`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            OperatorKind::Where(_) => "where",
            OperatorKind::Project(_) => "project",
            OperatorKind::Extend(_) => "extend",
            OperatorKind::Take(_) => "take",
            OperatorKind::Count => "count",
            OperatorKind::Sort(_) => "sort",
            OperatorKind::Summarize(_) => "summarize",
            OperatorKind::Top(_) => "top",
            OperatorKind::Distinct(_) => "distinct",
            OperatorKind::ProjectAway(_) => "project-away",
            OperatorKind::ProjectKeep(_) => "project-keep",
            OperatorKind::ProjectRename(_) => "project-rename",
            OperatorKind::ProjectReorder(_) => "project-reorder",
            OperatorKind::Print(_) => "print",
            OperatorKind::Datatable(_) => "datatable",
            OperatorKind::Range(_) => "range",
            OperatorKind::Union(_) => "union",
            OperatorKind::Join(_) => "join",
            OperatorKind::Lookup(_) => "lookup",
            OperatorKind::As(_) => "as",
            OperatorKind::MvExpand(_) => "mv-expand",
            OperatorKind::MvApply(_) => "mv-apply",
            OperatorKind::Parse(_) => "parse",
            OperatorKind::ParseWhere(_) => "parse-where",
            OperatorKind::ParseKv(_) => "parse-kv",
            OperatorKind::MakeSeries(_) => "make-series",
            OperatorKind::Render(_) => "render",
            OperatorKind::GetSchema => "getschema",
            OperatorKind::Serialize(_) => "serialize",
            OperatorKind::TopNested(_) => "top-nested",
            OperatorKind::Evaluate(_) => "evaluate",
            OperatorKind::Search(_) => "search",
            OperatorKind::Find(_) => "find",
            OperatorKind::Invoke(_) => "invoke",
            OperatorKind::Fork(_) => "fork",
            OperatorKind::Partition(_) => "partition",
            OperatorKind::Scan(_) => "scan",
            OperatorKind::Sample(_) => "sample",
            OperatorKind::SampleDistinct(_) => "sample-distinct",
            OperatorKind::TopHitters(_) => "top-hitters",
            OperatorKind::ProjectByNames(_) => "project-by-names",
            OperatorKind::Reduce(_) => "reduce",
            OperatorKind::FieldStats(_) => "fieldstats",
            OperatorKind::Annotate(_) => "annotate",
            OperatorKind::TraceFind(_) => "trace-find",
            OperatorKind::OtelLogStats => "otel-log-stats",
            OperatorKind::Facet(_) => "facet",
            OperatorKind::Consume(_) => "consume",
            OperatorKind::MakeGraph(_) => "make-graph",
            OperatorKind::GraphMatch(_) => "graph-match",
            OperatorKind::GraphShortestPaths(_) => "graph-shortest-paths",
            OperatorKind::GraphMarkComponents(_) => "graph-mark-components",
            OperatorKind::GraphToTable(_) => "graph-to-table",
        }
    }
}

/// An operator option `name=value` (`kind=inner`, `hint.strategy=shuffle`, `withsource=T`).
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorParam {
    /// The option name, dotted names joined (`hint.strategy`).
    pub name: String,
    /// A literal, or an [`ExprKind::Name`](super::ExprKind::Name) for word values (`inner`).
    pub value: Expr,
    pub span: Span,
}

/// `sort by` keys, with operator options (`hint.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sort {
    pub params: Vec<OperatorParam>,
    pub keys: Vec<SortKey>,
}

/// One sort key: `expr [asc|desc] [nulls first|nulls last]`. Unset parts are `None`; the
/// planner applies KQL's defaults (descending; nulls last when descending, first when
/// ascending).
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub order: Option<SortOrder>,
    pub nulls: Option<NullsOrder>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    Asc,
    Desc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NullsOrder {
    First,
    Last,
}

/// `summarize [params] [name =] agg(...), ... [by [name =] expr, ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Summarize {
    pub params: Vec<OperatorParam>,
    /// May be empty (`summarize by x`).
    pub aggregates: Vec<NamedExpr>,
    /// May be empty (one output row).
    pub by: Vec<NamedExpr>,
}

/// `top n by expr [asc|desc] [nulls first|last]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Top {
    pub params: Vec<OperatorParam>,
    pub count: Expr,
    pub by: SortKey,
}

/// A column name or a wildcard pattern (`prefix*`, `*suffix`).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnPattern {
    /// The name or pattern as written; `*` matches any characters.
    pub pattern: String,
    /// Written bracketed (`['a b']`).
    pub bracketed: bool,
    pub span: Span,
}

impl ColumnPattern {
    /// True when the pattern contains `*`.
    pub fn is_wildcard(&self) -> bool {
        !self.bracketed && self.pattern.contains('*')
    }
}

/// `new_name = old_name` in `project-rename`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rename {
    pub new_name: Ident,
    pub old_name: Ident,
    pub span: Span,
}

/// A `project-reorder` key: a pattern and an optional ordering of the columns it matches.
#[derive(Debug, Clone, PartialEq)]
pub struct ReorderKey {
    pub pattern: ColumnPattern,
    pub order: Option<ReorderOrder>,
    pub span: Span,
}

/// Ordering within a `project-reorder` wildcard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReorderOrder {
    Asc,
    Desc,
    GrannyAsc,
    GrannyDesc,
}

impl ReorderOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            ReorderOrder::Asc => "asc",
            ReorderOrder::Desc => "desc",
            ReorderOrder::GrannyAsc => "granny-asc",
            ReorderOrder::GrannyDesc => "granny-desc",
        }
    }
}
