//! The syntax tree. Every node carries a [`Span`] of the query text it was read from.
//!
//! Shape, from the top:
//! - [`Query`]: statements separated by `;`.
//! - [`Statement`]: `let` ([`Let`]), `set` ([`SetOption`]) or a query expression.
//! - [`Expr`]: one type for scalar *and* tabular expressions, as in Kusto. A table name is an
//!   [`ExprKind::Name`]; `T | where x | count` is an [`ExprKind::Pipeline`] whose `source` is
//!   the name `T` and whose `operators` are the piped [`Operator`]s in order. Operators that
//!   start a pipeline without input (`print`, `range`, `datatable`, `union`, ...) are
//!   [`ExprKind::TabularOperator`]. The planner decides, by binding, which expressions are
//!   tabular.
//! - [`Operator`]: one variant of [`OperatorKind`] per KQL tabular operator, each with its own
//!   struct when it has more than one part.
//!
//! Identifiers keep their spelling; keywords that have synonyms (`filter`/`where`,
//! `limit`/`take`, `order`/`sort`) are normalized to one variant.

mod expr;
mod literal;
mod operator;
mod operator_parts;

pub use expr::*;
pub use literal::*;
pub use operator::*;
pub use operator_parts::*;

use crate::span::Span;

/// A name as written: a plain identifier, or a bracketed one (`['service.name']`).
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// The name itself (for bracketed names, without brackets and quotes).
    pub name: String,
    /// Written as `['...']` / `["..."]`.
    pub bracketed: bool,
    pub span: Span,
}

impl Ident {
    /// A plain identifier with the given name.
    pub fn new(name: impl Into<String>, span: Span) -> Ident {
        Ident {
            name: name.into(),
            bracketed: false,
            span,
        }
    }
}

/// A whole query: statements separated by `;`. The last statement is usually the query
/// expression whose result is returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub statements: Vec<Statement>,
    pub span: Span,
}

/// One statement of a [`Query`] or of a function body.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub kind: StatementKind,
    pub span: Span,
}

/// What a [`Statement`] is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StatementKind {
    /// `let name = ...`
    Let(Let),
    /// `set name [= value]` — a request option.
    Set(SetOption),
    /// `declare query_parameters(name:type [= default], ...)`: names whose values the request
    /// gives (its `Parameters` property), else their defaults.
    DeclareParameters(Vec<Param>),
    /// `declare pattern name [= (params)[path] { rules }]`.
    DeclarePattern(PatternDecl),
    /// `restrict access to (entities)`: only the named tables, views and `let` names (or
    /// those matching a `*` pattern) stay visible to the statements after it.
    Restrict(Vec<Expr>),
    /// A scalar or tabular expression, usually the query itself.
    Expr(Expr),
}

/// `declare pattern name = (arg:string, ...)[path:string] { (values).[path] = { body }; ... }`:
/// named tabular expressions chosen by the values a query invokes the pattern with
/// (`name("a").b`). A pattern declared without rules (`declare pattern name`) has none.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternDecl {
    pub name: Ident,
    pub params: Vec<Param>,
    pub path: Option<Param>,
    pub rules: Vec<PatternRule>,
}

/// One rule of a pattern: `(values).[path] = { body }`.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternRule {
    pub args: Vec<Expr>,
    pub path: Option<Expr>,
    pub body: Vec<Statement>,
    pub span: Span,
}

/// `let name = value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Let {
    pub name: Ident,
    pub value: LetValue,
}

/// The right-hand side of a `let`.
#[derive(Debug, Clone, PartialEq)]
pub enum LetValue {
    /// A scalar or tabular expression: `let x = 5`, `let t = T | where y`.
    Expr(Expr),
    /// A user function: `let f = (a:long, b:string = "x") { body }`.
    Function(FunctionDef),
}

/// A user-defined function: typed parameters and a body of statements.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionDef {
    pub params: Vec<Param>,
    /// Zero or more `let` statements followed by the result expression.
    pub body: Vec<Statement>,
    pub span: Span,
}

/// One function parameter: `name:type [= default]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: ParamType,
    pub default: Option<Expr>,
    pub span: Span,
}

/// The declared type of a function parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamType {
    /// `x:long`
    Scalar(ScalarType),
    /// `T:(*)`, `T:(a:long, b:string)`, `T:(a:long, *)`. `open` is true when `*` is present.
    Tabular { columns: Vec<ColumnDecl>, open: bool },
}

/// A column declaration `name:type` (function parameters, `datatable`, `parse`).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDecl {
    pub name: Ident,
    pub ty: ScalarType,
    pub span: Span,
}

/// `set name [= value]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SetOption {
    /// The option name, possibly dotted (`query_results_cache_max_age`).
    pub name: String,
    pub value: Option<Expr>,
}
