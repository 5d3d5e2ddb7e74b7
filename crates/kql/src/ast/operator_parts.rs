//! The parts of the operators beyond filtering and projection: sources (`print`, `range`,
//! `datatable`, `union`), joins, expansion, parsing, series and sub-pipelines.

use super::{ColumnDecl, Expr, Ident, NamedExpr, Operator, OperatorParam, Param, ScalarType, SortOrder};
use crate::span::Span;

/// `datatable(a:long, b:string) [1, "x", 2, "y"]`: values row-major, `columns.len()` per row.
#[derive(Debug, Clone, PartialEq)]
pub struct Datatable {
    pub columns: Vec<ColumnDecl>,
    pub values: Vec<Expr>,
}

/// `range column from start to stop step step`.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub column: Ident,
    pub from: Expr,
    pub to: Expr,
    pub step: Expr,
}

/// `union [kind=inner|outer] [withsource=col] [isfuzzy=bool] T1, (T2 | ...)`. As a piped
/// operator the input is the first leg.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    pub params: Vec<OperatorParam>,
    /// Table names, calls (`table("x")`) or parenthesized pipelines.
    pub tables: Vec<Expr>,
}

/// `join [kind=...] [hint.*=...] right on conditions`, and `lookup` with the same shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    pub params: Vec<OperatorParam>,
    /// A table name or a parenthesized pipeline.
    pub right: Expr,
    /// Column names (same name on both sides) or `$left.a == $right.b` comparisons, joined by
    /// `,` or `and`.
    pub on: Vec<Expr>,
}

/// `as [hint.materialized=true] name`.
#[derive(Debug, Clone, PartialEq)]
pub struct As {
    pub params: Vec<OperatorParam>,
    pub name: Ident,
}

/// `mv-expand [params] [name =] expr [to typeof(type)], ... [limit n]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MvExpand {
    pub params: Vec<OperatorParam>,
    pub items: Vec<ExpandItem>,
    pub limit: Option<Expr>,
}

/// One expanded column of `mv-expand` / `mv-apply`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpandItem {
    pub expr: NamedExpr,
    /// `to typeof(type)`.
    pub to_type: Option<ScalarType>,
    pub span: Span,
}

/// `mv-apply [params] items [limit n] on (operators)`.
#[derive(Debug, Clone, PartialEq)]
pub struct MvApply {
    pub params: Vec<OperatorParam>,
    pub items: Vec<ExpandItem>,
    pub limit: Option<Expr>,
    /// The sub-pipeline applied to each row's expanded values (it has no source).
    pub subquery: Vec<Operator>,
}

/// `parse [kind=...] [flags=...] source with pattern` (also `parse-where`).
#[derive(Debug, Clone, PartialEq)]
pub struct Parse {
    pub params: Vec<OperatorParam>,
    pub source: Expr,
    pub pattern: Vec<ParsePart>,
}

/// One element of a `parse` pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsePart {
    /// A string to match (or, for `kind=regex`, a regular expression).
    Text { text: String, span: Span },
    /// `*`: skip any text.
    Wildcard { span: Span },
    /// A column to extract, optionally typed (`col:long`).
    Column {
        name: Ident,
        ty: Option<ScalarType>,
        span: Span,
    },
}

/// `parse-kv source as (col:type, ...) [with (option = value, ...)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseKv {
    pub source: Expr,
    pub columns: Vec<ColumnDecl>,
    pub options: Vec<NamedExpr>,
}

/// `make-series [params] aggregates on axis (from/to/step | in range(...)) [by groups]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MakeSeries {
    pub params: Vec<OperatorParam>,
    pub aggregates: Vec<SeriesAggregate>,
    pub on: Expr,
    pub range: SeriesRange,
    pub by: Vec<NamedExpr>,
}

/// `[name =] agg(...) [default = value]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesAggregate {
    pub aggregate: NamedExpr,
    pub default: Option<Expr>,
    pub span: Span,
}

/// The axis of `make-series`.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesRange {
    /// `[from start] [to end] step step`.
    FromTo {
        from: Option<Expr>,
        to: Option<Expr>,
        step: Expr,
    },
    /// `in range(start, stop, step)`.
    InRange { start: Expr, stop: Expr, step: Expr },
}

/// `render chart [with (property = value, ...)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Render {
    pub chart: Ident,
    pub properties: Vec<NamedExpr>,
}

/// One level of `top-nested [n] of expr [with others = v] by aggregate [asc|desc]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopNestedLevel {
    pub count: Option<Expr>,
    pub of: NamedExpr,
    pub with_others: Option<Expr>,
    pub by: NamedExpr,
    pub order: Option<SortOrder>,
    pub span: Span,
}

/// `evaluate [params] plugin(args) [: (schema)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluate {
    pub params: Vec<OperatorParam>,
    /// The plugin call, an [`ExprKind::Call`](super::ExprKind::Call).
    pub call: Expr,
    /// The declared output schema `: (*, a:long)`, if given.
    pub output_schema: Option<TabularSchema>,
}

/// A declared table schema: columns, and `open` when `*` allows further columns.
#[derive(Debug, Clone, PartialEq)]
pub struct TabularSchema {
    pub columns: Vec<ColumnDecl>,
    pub open: bool,
}

/// `reduce [kind=source] by column [with option = value, ...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reduce {
    pub params: Vec<OperatorParam>,
    pub by: Expr,
    pub options: Vec<NamedExpr>,
}

/// `search [kind=...] [in (tables)] predicate`.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    pub params: Vec<OperatorParam>,
    /// `in (T1, T2)`; empty means every table (or the piped input).
    pub tables: Vec<Expr>,
    pub predicate: Expr,
}

/// `find [withsource=Name] [in (tables)] [where] predicate [project-smart | project c[:type], ...
/// [, pack_all()]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Find {
    pub params: Vec<OperatorParam>,
    /// `in (T1, T2, C*)`; empty means every table.
    pub tables: Vec<Expr>,
    pub predicate: Expr,
    /// `None` for `project-smart` (the default).
    pub project: Option<FindProject>,
}

/// The `project` list of `find`: columns, each with an optional type, and whether `pack_all()`
/// ends it.
#[derive(Debug, Clone, PartialEq)]
pub struct FindProject {
    pub columns: Vec<(Ident, Option<ScalarType>)>,
    pub pack_all: bool,
}

/// `partition [params] by column (operators)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    pub params: Vec<OperatorParam>,
    /// The partition column, an [`ExprKind::Name`](super::ExprKind::Name).
    pub by: Expr,
    pub subquery: Vec<Operator>,
    /// The legacy form `by Column { SubQueryWithSource }`: a tabular expression run once per
    /// value of the column, which it reads as a scalar (`subquery` is then empty).
    pub legacy: Option<Box<Expr>>,
}

/// One branch of `fork [name =] (operators) ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkBranch {
    pub name: Option<Ident>,
    pub operators: Vec<Operator>,
    pub span: Span,
}

/// `sample-distinct n of column`.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleDistinct {
    pub count: Expr,
    pub of: Expr,
}

/// `trace-find {predicate} [relation {predicate} ...] [within timespan]`: traces with spans
/// matching the first predicate and, in turn, spans related to them that match the next.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceFind {
    /// The span sets' predicates, in order.
    pub spansets: Vec<Expr>,
    /// The relation between span set `i` and `i + 1`.
    pub relations: Vec<SpanRelation>,
    pub within: Option<Expr>,
}

/// How the spans of two span sets of `trace-find` relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanRelation {
    /// `>>`: the right span descends from the left one.
    Descendant,
    /// `>`: the right span is a child of the left one.
    Child,
    /// `<<`: the right span is an ancestor of the left one.
    Ancestor,
    /// `<`: the right span is the parent of the left one.
    Parent,
    /// `~`: the spans share their parent.
    Sibling,
    /// `::`: the spans are in the same trace.
    SameTrace,
}

impl SpanRelation {
    pub fn symbol(self) -> &'static str {
        match self {
            SpanRelation::Descendant => ">>",
            SpanRelation::Child => ">",
            SpanRelation::Ancestor => "<<",
            SpanRelation::Parent => "<",
            SpanRelation::Sibling => "~",
            SpanRelation::SameTrace => "::",
        }
    }
}

/// `make-graph Source --> Target [with Nodes on Key, ...] [with_node_id = Name]`: a graph of the
/// input's rows as edges (`-->` directed, `--` both ways).
#[derive(Debug, Clone, PartialEq)]
pub struct MakeGraph {
    pub source: Ident,
    pub target: Ident,
    pub directed: bool,
    /// Node tables and their key columns.
    pub nodes: Vec<(Expr, Ident)>,
    /// With no node table: the name of the node property holding the id.
    pub node_id: Option<Ident>,
}

/// `graph-match [cycles = ...] pattern, ... [where condition] project items`.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphMatch {
    pub params: Vec<OperatorParam>,
    pub patterns: Vec<GraphPattern>,
    pub condition: Option<Expr>,
    pub project: Vec<NamedExpr>,
}

/// `(a)-[e]->(b)<-[f*1..3]-(c)`: nodes and the edges between them (`nodes.len() == edges.len()
/// + 1`); unnamed elements are `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphPattern {
    pub nodes: Vec<Option<Ident>>,
    pub edges: Vec<GraphEdge>,
}

/// One edge of a pattern: its name, direction and, for a variable-length edge, the range of
/// lengths (`*1..5`).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphEdge {
    pub name: Option<Ident>,
    pub direction: EdgeDirection,
    pub range: Option<(u32, u32)>,
}

/// `graph-to-table nodes|edges [as Name] [with_node_id = C | with_source_id = S,
/// with_target_id = T]`, one part per table.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphToTable {
    pub parts: Vec<GraphTablePart>,
}

/// One table of `graph-to-table`.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphTablePart {
    /// `nodes` or `edges`.
    pub what: Ident,
    pub alias: Option<Ident>,
    pub params: Vec<OperatorParam>,
}

/// How a pattern edge runs between the nodes on its left and right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeDirection {
    /// `-[ ]->`
    Forward,
    /// `<-[ ]-`
    Backward,
    /// `-[ ]-`
    Any,
}

/// `top-hitters n of column [by weight]`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopHitters {
    pub count: Expr,
    pub of: Expr,
    pub by: Option<Expr>,
}

/// `scan [params] [declare (name:type [= default], ...)] with (step ...; ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    pub params: Vec<OperatorParam>,
    pub declare: Vec<Param>,
    pub steps: Vec<ScanStep>,
}

/// `step name [output = all|last|none]: condition [=> col = expr, ...];`
#[derive(Debug, Clone, PartialEq)]
pub struct ScanStep {
    pub name: Ident,
    pub output: Option<Ident>,
    pub condition: Expr,
    pub assignments: Vec<NamedExpr>,
    pub span: Span,
}

/// `facet by c1, c2 [with (operators)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Facet {
    pub columns: Vec<Ident>,
    /// The `with (...)` pipeline, run over the input.
    pub with: Option<Vec<Operator>>,
}
