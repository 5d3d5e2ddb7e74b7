//! `declare pattern` and its invocations: `name("a").b`, `name("a").["b"]`, `name("a")`
//! plan the body of the rule declared for exactly those values (no wildcards). An invocation
//! no rule matches is an error naming it, as Kusto reports missing pattern references.

use std::rc::Rc;

use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal, PatternDecl, StatementKind};
use trawl_kql::span::Span;

use crate::context::{Binding, Planner, Tabular};

/// An invocation of a declared pattern: the pattern, its argument expressions and the path.
pub struct Invocation<'e> {
    pattern: Rc<PatternDecl>,
    args: &'e [KExpr],
    path: Option<PathValue<'e>>,
}

enum PathValue<'e> {
    Name(&'e str),
    Expr(&'e KExpr),
}

/// The text of a pattern value: a string literal, or a bare name for the path.
fn literal_text(expr: &KExpr) -> Option<String> {
    match &expr.kind {
        ExprKind::Literal(Literal::String(s)) => Some(s.clone()),
        ExprKind::Literal(Literal::Long(n)) => Some(n.to_string()),
        ExprKind::Literal(Literal::Int(n)) => Some(n.to_string()),
        _ => None,
    }
}

impl Planner<'_> {
    /// `expr` as an invocation of a declared pattern, if it is one.
    pub(crate) fn pattern_invocation<'e>(&self, expr: &'e KExpr) -> Option<Invocation<'e>> {
        let (call, path) = match &expr.kind {
            ExprKind::Member { target, member } => (target.as_ref(), Some(PathValue::Name(&member.name))),
            ExprKind::Index { target, index } => (target.as_ref(), Some(PathValue::Expr(index))),
            ExprKind::Call { .. } => (expr, None),
            _ => return None,
        };
        let ExprKind::Call { function, args } = &call.kind else {
            return None;
        };
        let pattern = self.patterns.get(&function.name)?.clone();
        // A let or function of the same name declared later hides the pattern.
        if matches!(self.bindings.get(&function.name), Some(Binding::Function(_))) {
            return None;
        }
        Some(Invocation { pattern, args, path })
    }

    pub(crate) fn invoke_pattern(&mut self, invocation: Invocation, span: Span) -> Result<Tabular, TrawlError> {
        let pattern = invocation.pattern;
        let mut values = Vec::with_capacity(invocation.args.len());
        for arg in invocation.args {
            let Some(value) = literal_text(arg) else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    arg.span,
                    format!("the arguments of pattern '{}' are string literals", pattern.name.name),
                ));
            };
            values.push(value);
        }
        let path = match &invocation.path {
            None => None,
            Some(PathValue::Name(name)) => Some(name.to_string()),
            Some(PathValue::Expr(expr)) => match literal_text(expr) {
                Some(text) => Some(text),
                None => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        expr.span,
                        format!("the path of pattern '{}' is a string literal", pattern.name.name),
                    ));
                }
            },
        };
        let rule = pattern.rules.iter().find(|rule| {
            let args: Vec<Option<String>> = rule.args.iter().map(literal_text).collect();
            args.len() == values.len()
                && args.iter().zip(&values).all(|(a, v)| a.as_deref() == Some(v.as_str()))
                && rule.path.as_ref().and_then(literal_text) == path
        });
        let Some(rule) = rule else {
            let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
            let mut reference = format!("{}({})", pattern.name.name, quoted.join(", "));
            if let Some(path) = &path {
                reference.push_str(&format!(".['{path}']"));
            }
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!(
                    "One or more pattern references were not declared. Detected pattern references: [\"{reference}\"]"
                ),
            ));
        };
        let body = rule.body.clone();
        let Some((last, lets)) = body.split_last() else {
            return Err(self.error(ErrorCode::BadRequest, rule.span, "a pattern rule needs a body"));
        };
        if self.call_depth >= crate::user_functions::MAX_CALL_DEPTH {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("pattern '{}' invokes itself too deeply", pattern.name.name),
            ));
        }
        let saved = self.bindings.clone();
        self.call_depth += 1;
        let result = (|| {
            for statement in lets {
                if let StatementKind::Let(binding) = &statement.kind {
                    let value = match &binding.value {
                        trawl_kql::ast::LetValue::Expr(expr) => self.bind_value(expr)?,
                        trawl_kql::ast::LetValue::Function(def) => Binding::Function(Rc::new(def.clone())),
                    };
                    self.bindings.insert(binding.name.name.clone(), value);
                }
            }
            match &last.kind {
                StatementKind::Expr(expr) => self.tabular(expr),
                _ => Err(self.error(
                    ErrorCode::BadRequest,
                    last.span,
                    "a pattern rule's body ends with an expression",
                )),
            }
        })();
        self.call_depth -= 1;
        self.bindings = saved;
        result
    }
}
