//! Printing expressions with the parentheses precedence requires.

use std::fmt::{self, Display, Formatter};

use super::write_list;
use crate::ast::{Expr, ExprKind, NamedExpr, Precedence, UnaryOp};

/// Precedence of a pipeline: it needs parentheses everywhere but at the top of a statement,
/// a `let`, a call argument or a list item.
const PIPELINE: u8 = 0;
/// Precedence of primaries (names, literals, calls, member access).
const PRIMARY: u8 = 8;

/// An expression to print where an expression of at least precedence `min` is expected.
pub(crate) struct ExprContext<'a> {
    expr: &'a Expr,
    min: u8,
}

impl<'a> ExprContext<'a> {
    /// Where a pipeline may appear bare (statements, `let`, call arguments, list items).
    pub(crate) fn full(expr: &'a Expr) -> Self {
        ExprContext { expr, min: PIPELINE }
    }

    /// Where a scalar expression is parsed (operator arguments): pipelines get parentheses.
    pub(crate) fn scalar(expr: &'a Expr) -> Self {
        ExprContext {
            expr,
            min: Precedence::Or as u8,
        }
    }

    /// Where only a primary may appear (before `.member` or `[index]`).
    pub(crate) fn primary(expr: &'a Expr) -> Self {
        ExprContext { expr, min: PRIMARY }
    }

    /// Where an operand at equality precedence is parsed (`join ... on`).
    pub(crate) fn at_equality(expr: &'a Expr) -> Self {
        ExprContext {
            expr,
            min: Precedence::Equality as u8,
        }
    }

    /// Where an operand above equality precedence is parsed (`make-series ... on`).
    pub(crate) fn at_relational(expr: &'a Expr) -> Self {
        ExprContext {
            expr,
            min: Precedence::Relational as u8,
        }
    }

    fn at(expr: &'a Expr, min: u8) -> Self {
        ExprContext { expr, min }
    }
}

fn precedence_of(expr: &Expr) -> u8 {
    match &expr.kind {
        ExprKind::Binary { op, .. } => op.precedence() as u8,
        ExprKind::List { .. } | ExprKind::Between { .. } => Precedence::Equality as u8,
        ExprKind::Unary {
            op: UnaryOp::Neg | UnaryOp::Plus,
            ..
        } => Precedence::Unary as u8,
        ExprKind::Pipeline { .. } | ExprKind::TabularOperator(_) => PIPELINE,
        _ => PRIMARY,
    }
}

impl Display for ExprContext<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if precedence_of(self.expr) < self.min {
            write!(f, "({})", ExprContext::full(self.expr))
        } else {
            write_expr(f, self.expr)
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ExprContext::full(self))
    }
}

impl Display for NamedExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.names.as_slice() {
            [] => {}
            [name] => write!(f, "{name} = ")?,
            names => {
                f.write_str("(")?;
                write_list(f, names, |f, name| write!(f, "{name}"))?;
                f.write_str(") = ")?;
            }
        }
        write!(f, "{}", ExprContext::scalar(&self.expr))
    }
}

fn write_expr(f: &mut Formatter<'_>, expr: &Expr) -> fmt::Result {
    match &expr.kind {
        ExprKind::Literal(literal) => write!(f, "{literal}"),
        ExprKind::Name(ident) => write!(f, "{ident}"),
        ExprKind::Star => f.write_str("*"),
        ExprKind::Member { target, member } => {
            write!(f, "{}.{member}", ExprContext::primary(target))
        }
        ExprKind::Index { target, index } => {
            write!(f, "{}[{}]", ExprContext::primary(target), ExprContext::scalar(index))
        }
        ExprKind::Call { function, args } => {
            write!(f, "{function}(")?;
            write_list(f, args, |f, arg| write!(f, "{}", ExprContext::full(arg)))?;
            f.write_str(")")
        }
        ExprKind::NamedArgument { name, value } => {
            write!(f, "{name} = {}", ExprContext::scalar(value))
        }
        ExprKind::Unary {
            op: UnaryOp::Not,
            operand,
        } => write!(f, "not({})", ExprContext::scalar(operand)),
        ExprKind::Unary { op, operand } => {
            let sign = if *op == UnaryOp::Neg { "-" } else { "+" };
            write!(f, "{sign}{}", ExprContext::at(operand, Precedence::Unary as u8))
        }
        ExprKind::Binary { op, left, right } => {
            let precedence = op.precedence() as u8;
            write!(
                f,
                "{} {} {}",
                ExprContext::at(left, precedence),
                op.as_str(),
                ExprContext::at(right, precedence + 1)
            )
        }
        ExprKind::List { op, operand, items } => {
            write!(
                f,
                "{} {} (",
                ExprContext::at(operand, Precedence::Equality as u8),
                op.as_str()
            )?;
            write_list(f, items, |f, item| write!(f, "{}", ExprContext::full(item)))?;
            f.write_str(")")
        }
        ExprKind::Between {
            negated,
            operand,
            low,
            high,
        } => {
            let keyword = if *negated { "!between" } else { "between" };
            write!(
                f,
                "{} {keyword} ({} .. {})",
                ExprContext::at(operand, Precedence::Equality as u8),
                ExprContext::scalar(low),
                ExprContext::scalar(high)
            )
        }
        ExprKind::TypeOf(ty) => write!(f, "typeof({})", ty.name()),
        ExprKind::Pipeline { source, operators } => {
            match &source.kind {
                ExprKind::TabularOperator(_) => write!(f, "{}", ExprContext::full(source))?,
                _ => write!(f, "{}", ExprContext::scalar(source))?,
            }
            for operator in operators {
                write!(f, "\n| {operator}")?;
            }
            Ok(())
        }
        ExprKind::TabularOperator(operator) => write!(f, "{operator}"),
    }
}
