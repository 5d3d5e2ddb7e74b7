//! User-defined functions (`let f = (a:long, b:string = "x") { body }`), expanded inline at
//! each call: arguments are bound to the parameters in a new scope, the body's `let`s run in
//! that scope, and its last expression is lowered in the caller's row context.

use std::rc::Rc;

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, FunctionDef, LetValue, Literal, ParamType, StatementKind};
use trawl_kql::span::Span;

use crate::context::{Binding, Planner, Tabular, Typed};
use crate::scalar::kql_type_of_scalar;

/// Deepest nesting of user function calls (guards against recursion).
pub(crate) const MAX_CALL_DEPTH: usize = 64;

impl Planner<'_> {
    /// The value of a declared query parameter: the request's (`Parameters`, text read as a
    /// literal of the declared type; a string parameter also takes plain text), else the
    /// declared default; a parameter with neither is an error.
    pub(crate) fn query_parameter(&mut self, param: &trawl_kql::ast::Param) -> Result<Binding, TrawlError> {
        let name = &param.name.name;
        let ParamType::Scalar(ty) = &param.ty else {
            return Err(self.error(
                ErrorCode::BadRequest,
                param.span,
                format!("query parameter '{name}' must have a scalar type"),
            ));
        };
        let target = kql_type_of_scalar(*ty);
        let empty = self.empty_tabular()?;
        let given = self.options.parameters.get(name).cloned();
        let value = match (given, &param.default) {
            (Some(text), _) => self.parameter_value(name, &text, target, param.span)?,
            (None, Some(default)) => {
                let value = self.scalar(default, &empty)?;
                Typed::new(self.convert(value, target, default)?, target)
            }
            (None, None) => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    param.span,
                    format!("query parameter '{name}' has no value: the request's Parameters do not give one and it declares no default"),
                ));
            }
        };
        Ok(Binding::Scalar(value))
    }

    /// `text`, a parameter's value as the request gives it, read as a `target` literal.
    fn parameter_value(
        &mut self,
        name: &str,
        text: &str,
        target: KqlType,
        span: trawl_kql::Span,
    ) -> Result<Typed, TrawlError> {
        let refused = |planner: &Self| {
            planner.error(
                ErrorCode::BadRequest,
                span,
                format!("query parameter '{name}': '{text}' is not a {target} value"),
            )
        };
        // A literal in KQL syntax (`42`, `datetime(2024-01-01)`, `'text'`, `1h`), else, for
        // strings, the plain text; for datetimes and timespans, the text inside the literal.
        let candidates: Vec<String> = match target {
            KqlType::String => vec![text.to_string()],
            KqlType::DateTime => vec![text.to_string(), format!("datetime({text})")],
            KqlType::Timespan => vec![text.to_string(), format!("time({text})")],
            _ => vec![text.to_string()],
        };
        let empty = self.empty_tabular()?;
        for candidate in &candidates {
            let Ok(query) = trawl_kql::parse(&format!("print {candidate}")) else {
                continue;
            };
            let Some(expr) = single_print_value(&query) else {
                continue;
            };
            if !matches!(
                expr.kind,
                ExprKind::Literal(_) | ExprKind::Call { .. } | ExprKind::Unary { .. }
            ) {
                continue;
            }
            let Ok(value) = self.scalar(&expr, &empty) else {
                continue;
            };
            if value.kql_type != target && !(value.kql_type.is_numeric() && target.is_numeric()) {
                continue;
            }
            return Ok(Typed::new(self.convert(value, target, &expr)?, target));
        }
        if target == KqlType::String {
            return Ok(Typed::new(
                datafusion::logical_expr::lit(text.to_string()),
                KqlType::String,
            ));
        }
        Err(refused(self))
    }
}

/// The one value of `print value`.
fn single_print_value(query: &trawl_kql::ast::Query) -> Option<KExpr> {
    let [statement] = query.statements.as_slice() else {
        return None;
    };
    let StatementKind::Expr(expr) = &statement.kind else {
        return None;
    };
    let ExprKind::TabularOperator(operator) = &expr.kind else {
        return None;
    };
    match &operator.kind {
        trawl_kql::ast::OperatorKind::Print(items) if items.len() == 1 => Some(items[0].expr.clone()),
        _ => None,
    }
}

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
        // Arguments are evaluated in the caller's scope; `name = value` arguments go to the
        // parameter of that name, the others in order to the parameters left.
        let mut positional = args
            .iter()
            .filter(|a| !matches!(a.kind, ExprKind::NamedArgument { .. }));
        let named = |param: &str| {
            args.iter().find_map(|a| match &a.kind {
                ExprKind::NamedArgument { name, value } if name.name == param => Some(value.as_ref()),
                _ => None,
            })
        };
        let mut bound = Vec::with_capacity(def.params.len());
        for param in &def.params {
            let arg = named(&param.name.name)
                .or_else(|| positional.next())
                .or(param.default.as_ref());
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

    /// `T | invoke f(args)`: `f` called with `T` as its first (tabular) argument.
    pub fn invoke(&mut self, input: Tabular, call: &KExpr) -> Result<Tabular, TrawlError> {
        let ExprKind::Call { function, args } = &call.kind else {
            return Err(self.error(ErrorCode::BadRequest, call.span, "invoke takes a function call"));
        };
        let Some(Binding::Function(def)) = self.bindings.get(&function.name) else {
            return Err(self.error(
                ErrorCode::UnknownFunction,
                function.span,
                format!("unknown function '{}'", function.name),
            ));
        };
        let def = def.clone();
        let Some(first) = def.params.first() else {
            return Err(self.error(
                ErrorCode::BadRequest,
                call.span,
                format!("'{}' takes no table to invoke with", function.name),
            ));
        };
        // Bind the piped table under a private name, then call with it as the first argument.
        let piped = "__trawl_invoke_input".to_string();
        let saved = self.bindings.get(&piped).cloned();
        self.bindings.insert(piped.clone(), Binding::Tabular(input));
        let mut full_args = vec![KExpr::new(
            ExprKind::Name(trawl_kql::ast::Ident::new(piped.clone(), first.span)),
            call.span,
        )];
        full_args.extend(args.iter().cloned());
        let result = self.call_tabular_function(&function.name, &def, &full_args, call.span);
        match saved {
            Some(binding) => {
                self.bindings.insert(piped, binding);
            }
            None => {
                self.bindings.remove(&piped);
            }
        }
        result
    }

    /// `getschema`: one row per column: ColumnName, ColumnOrdinal, DataType, ColumnType.
    pub fn getschema(&mut self, input: &Tabular) -> Result<Tabular, TrawlError> {
        use trawl_kql::ast::{ColumnDecl, Datatable, Ident, ScalarType};
        let dotnet = |t: KqlType| match t {
            KqlType::Bool => "System.Boolean",
            KqlType::Int => "System.Int32",
            KqlType::Long => "System.Int64",
            KqlType::Real => "System.Double",
            KqlType::Decimal => "System.Data.SqlTypes.SqlDecimal",
            KqlType::String => "System.String",
            KqlType::DateTime => "System.DateTime",
            KqlType::Timespan => "System.TimeSpan",
            KqlType::Guid => "System.Guid",
            KqlType::Dynamic => "System.Object",
        };
        let mut values = Vec::with_capacity(input.columns.len() * 4);
        for (ordinal, (name, kql_type)) in input.columns.iter().enumerate() {
            for literal in [
                Literal::String(name.clone()),
                Literal::Int(ordinal as i32),
                Literal::String(dotnet(*kql_type).to_string()),
                Literal::String(kql_type.as_str().to_string()),
            ] {
                values.push(KExpr::new(ExprKind::Literal(literal), Span::default()));
            }
        }
        let declare = |name: &str, ty: ScalarType| ColumnDecl {
            name: Ident::new(name, Span::default()),
            ty,
            span: Span::default(),
        };
        let table = Datatable {
            columns: vec![
                declare("ColumnName", ScalarType::String),
                declare("ColumnOrdinal", ScalarType::Int),
                declare("DataType", ScalarType::String),
                declare("ColumnType", ScalarType::String),
            ],
            values,
        };
        self.datatable(&table, Span::default())
    }
}
