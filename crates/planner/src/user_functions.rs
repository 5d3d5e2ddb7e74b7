//! User-defined functions (`let f = (a:long, b:string = "x") { body }`), expanded inline at
//! each call: arguments are bound to the parameters in a new scope, the body's `let`s run in
//! that scope, and its last expression is lowered in the caller's row context.

use std::rc::Rc;

use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, FunctionDef, LetValue, ParamType, StatementKind};
use trawl_kql::span::Span;

use crate::context::{Binding, Planner, Tabular, Typed};
use crate::scalar::kql_type_of_scalar;

/// Deepest nesting of user function calls (guards against recursion).
const MAX_CALL_DEPTH: usize = 64;

impl Planner<'_> {
    /// Whether a call of `def` yields a table.
    pub fn function_is_tabular(&self, def: &FunctionDef) -> bool {
        let Some(last) = def.body.last() else { return false };
        let StatementKind::Expr(expr) = &last.kind else {
            return false;
        };
        self.expr_is_tabular_in(expr, def)
    }

    fn expr_is_tabular_in(&self, expr: &KExpr, def: &FunctionDef) -> bool {
        match &expr.kind {
            ExprKind::Name(ident) => {
                if let Some(param) = def.params.iter().find(|p| p.name.name == ident.name) {
                    return matches!(param.ty, ParamType::Tabular { .. });
                }
                let local_let = def.body.iter().find_map(|statement| match &statement.kind {
                    StatementKind::Let(binding) if binding.name.name == ident.name => Some(&binding.value),
                    _ => None,
                });
                match local_let {
                    Some(LetValue::Expr(value)) => self.expr_is_tabular_in(value, def),
                    Some(LetValue::Function(_)) => false,
                    None => self.is_tabular(expr),
                }
            }
            _ => self.is_tabular(expr),
        }
    }

    /// Runs `body` with the parameters of `def` bound to `args` and the body's `let`s applied;
    /// `finish` lowers the body's result expression. Bindings are restored afterwards.
    fn in_function_scope<R>(
        &mut self,
        name: &str,
        def: &FunctionDef,
        args: &[KExpr],
        caller_input: &Tabular,
        span: Span,
        finish: impl FnOnce(&mut Self, &KExpr) -> Result<R, TrawlError>,
    ) -> Result<R, TrawlError> {
        if args.len() > def.params.len() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("'{name}' takes {} argument(s), found {}", def.params.len(), args.len()),
            ));
        }
        if self.call_depth >= MAX_CALL_DEPTH {
            return Err(self.error(ErrorCode::BadRequest, span, format!("'{name}' calls itself too deeply")));
        }
        // Arguments are evaluated in the caller's scope.
        let mut bound = Vec::with_capacity(def.params.len());
        for (index, param) in def.params.iter().enumerate() {
            let arg = args.get(index).or(param.default.as_ref());
            let Some(arg) = arg else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    span,
                    format!("'{name}' needs a value for its parameter '{}'", param.name.name),
                ));
            };
            let value = match &param.ty {
                ParamType::Tabular { .. } => Binding::Tabular(self.tabular(arg)?),
                ParamType::Scalar(ty) => {
                    let value = self.scalar(arg, caller_input)?;
                    let target = kql_type_of_scalar(*ty);
                    let expr = self.convert(value, target, arg)?;
                    Binding::Scalar(Typed::new(expr, target))
                }
            };
            bound.push((param.name.name.clone(), value));
        }
        let saved = self.bindings.clone();
        self.call_depth += 1;
        for (param, value) in bound {
            self.bindings.insert(param, value);
        }
        let result = (|| {
            let Some((last, lets)) = def.body.split_last() else {
                return Err(self.error(ErrorCode::BadRequest, span, format!("'{name}' has an empty body")));
            };
            for statement in lets {
                if let StatementKind::Let(binding) = &statement.kind {
                    let value = match &binding.value {
                        LetValue::Expr(expr) => self.bind_value(expr)?,
                        LetValue::Function(inner) => Binding::Function(Rc::new(inner.clone())),
                    };
                    self.bindings.insert(binding.name.name.clone(), value);
                }
            }
            match &last.kind {
                StatementKind::Expr(expr) => finish(self, expr),
                _ => Err(self.error(
                    ErrorCode::BadRequest,
                    last.span,
                    format!("'{name}' must end with an expression"),
                )),
            }
        })();
        self.call_depth -= 1;
        self.bindings = saved;
        result
    }

    /// A call of a user function in a row context.
    pub fn call_scalar_function(
        &mut self,
        name: &str,
        def: &FunctionDef,
        args: &[KExpr],
        input: &Tabular,
        span: Span,
    ) -> Result<Typed, TrawlError> {
        if self.function_is_tabular(def) {
            return Err(self.error(
                ErrorCode::TypeMismatch,
                span,
                format!("'{name}' returns a table, not a scalar"),
            ));
        }
        let input = input.clone();
        self.in_function_scope(name, def, args, &input, span, |planner, body| {
            planner.scalar(body, &input)
        })
    }

    /// A call of a user function as a table.
    pub fn call_tabular_function(
        &mut self,
        name: &str,
        def: &FunctionDef,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let empty = self.empty_tabular()?;
        self.in_function_scope(name, def, args, &empty, span, |planner, body| planner.tabular(body))
    }
}
