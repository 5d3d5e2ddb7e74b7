//! Expressions, scalar and tabular.

use super::{Ident, Literal, Operator, ScalarType};
use crate::span::Span;

/// An expression with its span. See [`ExprKind`] for the forms.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    /// This scalar expression with every node `replace` gives a replacement for replaced (top
    /// down: a replaced node's children are not visited); tabular parts are kept as they are.
    pub fn rewritten(&self, replace: &mut dyn FnMut(&Expr) -> Option<Expr>) -> Expr {
        if let Some(replacement) = replace(self) {
            return replacement;
        }
        let mut again = |e: &Expr| Box::new(e.rewritten(replace));
        let kind = match &self.kind {
            ExprKind::Member { target, member } => ExprKind::Member {
                target: again(target),
                member: member.clone(),
            },
            ExprKind::Index { target, index } => {
                let target = again(target);
                ExprKind::Index {
                    target,
                    index: again(index),
                }
            }
            ExprKind::Call { function, args } => ExprKind::Call {
                function: function.clone(),
                args: args.iter().map(|a| *again(a)).collect(),
            },
            ExprKind::NamedArgument { name, value } => ExprKind::NamedArgument {
                name: name.clone(),
                value: again(value),
            },
            ExprKind::Unary { op, operand } => ExprKind::Unary {
                op: *op,
                operand: again(operand),
            },
            ExprKind::Binary { op, left, right } => {
                let left = again(left);
                ExprKind::Binary {
                    op: *op,
                    left,
                    right: again(right),
                }
            }
            ExprKind::List { op, operand, items } => {
                let operand = again(operand);
                ExprKind::List {
                    op: *op,
                    operand,
                    items: items.iter().map(|i| *again(i)).collect(),
                }
            }
            ExprKind::Between {
                negated,
                operand,
                low,
                high,
            } => {
                let operand = again(operand);
                let low = again(low);
                ExprKind::Between {
                    negated: *negated,
                    operand,
                    low,
                    high: again(high),
                }
            }
            other => other.clone(),
        };
        Expr::new(kind, self.span)
    }
}

/// The forms of an expression. Parentheses leave no node: precedence is in the tree shape.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ExprKind {
    /// A literal value.
    Literal(Literal),
    /// A column, table, `let` variable or function parameter (`x`, `['a b']`, `$left`).
    Name(Ident),
    /// `*` as an argument (`take_any(*)`, `arg_max(t, *)`) or in `distinct *`.
    Star,
    /// Dotted member access `target.member` (`a.b`, `$left.id`).
    Member { target: Box<Expr>, member: Ident },
    /// Bracket access `target[index]` (`bag['service.name']`, `arr[0]`).
    Index { target: Box<Expr>, index: Box<Expr> },
    /// A function call `function(args)`, including aggregates (`count()`, `dcount(x)`) and
    /// tabular functions (`materialize(T)`, `toscalar(T | count)`).
    Call { function: Ident, args: Vec<Expr> },
    /// `name = value`, only as a call argument (`bag_unpack(d, ignoredProperties = ...)`).
    NamedArgument { name: Ident, value: Box<Expr> },
    /// A prefix operator: `-x`, `+x`, `not(x)`.
    Unary { op: UnaryOp, operand: Box<Expr> },
    /// An infix operator, arithmetic, comparison, logical or string.
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `operand in (items)` and its variants. `items` are expressions; a single item may be a
    /// dynamic array or a tabular subquery.
    List {
        op: ListOp,
        operand: Box<Expr>,
        items: Vec<Expr>,
    },
    /// `operand between (low .. high)`, or `!between` when `negated`.
    Between {
        negated: bool,
        operand: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
    },
    /// `typeof(long)`.
    TypeOf(ScalarType),
    /// `source | op1 | op2 ...`; `operators` is never empty.
    Pipeline {
        source: Box<Expr>,
        operators: Vec<Operator>,
    },
    /// An operator that produces rows without piped input: `print`, `range`, `datatable`,
    /// `union`, `evaluate`, `search`, ...
    TabularOperator(Box<Operator>),
}

/// Prefix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `not(x)` — a function in KQL syntax, kept as an operator here.
    Not,
}

/// List operators of [`ExprKind::List`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListOp {
    /// `in`
    In,
    /// `!in`
    NotIn,
    /// `in~` (case-insensitive)
    InCi,
    /// `!in~`
    NotInCi,
    /// `has_any`
    HasAny,
    /// `has_all`
    HasAll,
}

impl ListOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            ListOp::In => "in",
            ListOp::NotIn => "!in",
            ListOp::InCi => "in~",
            ListOp::NotInCi => "!in~",
            ListOp::HasAny => "has_any",
            ListOp::HasAll => "has_all",
        }
    }
}

/// Binding strength of infix operators; higher binds tighter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Precedence {
    Or = 1,
    And = 2,
    /// `==`, `!=`, `=~`, string operators, `in`, `between`.
    Equality = 3,
    /// `<`, `<=`, `>`, `>=`.
    Relational = 4,
    Additive = 5,
    Multiplicative = 6,
    Unary = 7,
}

macro_rules! binary_ops {
    ($($variant:ident => $text:literal, $precedence:ident, $doc:literal;)*) => {
        /// Infix operators. Names ending in `Cs` are case-sensitive; `Not...` are the `!` forms.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BinaryOp {
            $(#[doc = $doc] $variant,)*
        }

        impl BinaryOp {
            /// Every operator, in declaration order.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$variant,)*];

            /// The canonical spelling (`==`, `!has`, `matches regex`).
            pub fn as_str(self) -> &'static str {
                match self { $(BinaryOp::$variant => $text,)* }
            }

            /// How tightly the operator binds.
            pub fn precedence(self) -> Precedence {
                match self { $(BinaryOp::$variant => Precedence::$precedence,)* }
            }
        }
    };
}

binary_ops! {
    Mul => "*", Multiplicative, "`*`";
    Div => "/", Multiplicative, "`/`";
    Mod => "%", Multiplicative, "`%`";
    Add => "+", Additive, "`+`";
    Sub => "-", Additive, "`-`";
    Lt => "<", Relational, "`<`";
    Le => "<=", Relational, "`<=`";
    Gt => ">", Relational, "`>`";
    Ge => ">=", Relational, "`>=`";
    Eq => "==", Equality, "`==`";
    NotEq => "!=", Equality, "`!=` (also written `<>`)";
    EqCi => "=~", Equality, "`=~`, case-insensitive equality";
    NotEqCi => "!~", Equality, "`!~`";
    Has => "has", Equality, "`has`: whole-term match, case-insensitive";
    NotHas => "!has", Equality, "`!has`";
    HasCs => "has_cs", Equality, "`has_cs`";
    NotHasCs => "!has_cs", Equality, "`!has_cs`";
    HasPrefix => "hasprefix", Equality, "`hasprefix`";
    NotHasPrefix => "!hasprefix", Equality, "`!hasprefix`";
    HasPrefixCs => "hasprefix_cs", Equality, "`hasprefix_cs`";
    NotHasPrefixCs => "!hasprefix_cs", Equality, "`!hasprefix_cs`";
    HasSuffix => "hassuffix", Equality, "`hassuffix`";
    NotHasSuffix => "!hassuffix", Equality, "`!hassuffix`";
    HasSuffixCs => "hassuffix_cs", Equality, "`hassuffix_cs`";
    NotHasSuffixCs => "!hassuffix_cs", Equality, "`!hassuffix_cs`";
    Contains => "contains", Equality, "`contains`";
    NotContains => "!contains", Equality, "`!contains` (also `notcontains`)";
    ContainsCs => "contains_cs", Equality, "`contains_cs`";
    NotContainsCs => "!contains_cs", Equality, "`!contains_cs` (also `notcontainscs`)";
    StartsWith => "startswith", Equality, "`startswith`";
    NotStartsWith => "!startswith", Equality, "`!startswith`";
    StartsWithCs => "startswith_cs", Equality, "`startswith_cs`";
    NotStartsWithCs => "!startswith_cs", Equality, "`!startswith_cs`";
    EndsWith => "endswith", Equality, "`endswith`";
    NotEndsWith => "!endswith", Equality, "`!endswith`";
    EndsWithCs => "endswith_cs", Equality, "`endswith_cs`";
    NotEndsWithCs => "!endswith_cs", Equality, "`!endswith_cs`";
    Like => "like", Equality, "`like`";
    NotLike => "notlike", Equality, "`notlike`";
    LikeCs => "likecs", Equality, "`likecs`";
    NotLikeCs => "notlikecs", Equality, "`notlikecs`";
    MatchesRegex => "matches regex", Equality, "`matches regex`";
    And => "and", And, "`and`";
    Or => "or", Or, "`or`";
}

impl BinaryOp {
    /// The operator spelled by a word (`has`, `and`) or a `!` word (`!has`), including the
    /// older spellings `notcontains` and `notcontainscs`. `matches regex` is two words and is
    /// recognized by the parser.
    pub fn from_word(word: &str) -> Option<BinaryOp> {
        match word {
            "notcontains" => return Some(BinaryOp::NotContains),
            "notcontainscs" => return Some(BinaryOp::NotContainsCs),
            "matches" => return None,
            _ => {}
        }
        BinaryOp::ALL
            .iter()
            .copied()
            .find(|op| op.as_str() == word && op.as_str().starts_with(|c: char| c.is_ascii_alphabetic() || c == '!'))
    }
}

/// An expression with optional output column names: `expr`, `name = expr` or
/// `(a, b) = expr` (a function returning several columns).
#[derive(Debug, Clone, PartialEq)]
pub struct NamedExpr {
    /// Empty when unnamed; one name for `name = expr`; several for `(a, b) = expr`.
    pub names: Vec<Ident>,
    pub expr: Expr,
    pub span: Span,
}

impl NamedExpr {
    /// The single output name, if exactly one was given.
    pub fn name(&self) -> Option<&Ident> {
        match self.names.as_slice() {
            [name] => Some(name),
            _ => None,
        }
    }
}
