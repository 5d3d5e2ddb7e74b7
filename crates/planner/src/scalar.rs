//! Scalar expressions: literals, names, dynamic access, unary and binary operators (the text
//! operators are in `text_operators.rs`), lists and ranges. Every lowering returns the
//! expression's KQL type with it.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Between, Expr, ScalarUDF, cast, lit, try_cast, when};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_functions::dynamic::DynamicToStringUdf;
use trawl_functions::memo::DistinctValuesUdf;
use trawl_functions::strings::HasUdf;
use trawl_kql::ast::{BinaryOp, DynamicValue, Expr as KExpr, ExprKind, ListOp, Literal, ScalarType, UnaryOp};

use crate::context::{Binding, Planner, Tabular, Typed, column, internal};

/// A datetime literal (nanoseconds since the epoch, UTC).
pub fn datetime_literal(nanos: i64) -> Expr {
    lit(ScalarValue::TimestampNanosecond(
        Some(nanos),
        Some(trawl_functions::types::UTC.into()),
    ))
}

/// A timespan literal (nanoseconds).
pub fn timespan_literal(nanos: i64) -> Expr {
    lit(ScalarValue::DurationNanosecond(Some(nanos)))
}

pub fn kql_type_of_scalar(t: ScalarType) -> KqlType {
    match t {
        ScalarType::Bool => KqlType::Bool,
        ScalarType::Int => KqlType::Int,
        ScalarType::Long => KqlType::Long,
        ScalarType::Real => KqlType::Real,
        ScalarType::Decimal => KqlType::Decimal,
        ScalarType::String => KqlType::String,
        ScalarType::DateTime => KqlType::DateTime,
        ScalarType::Timespan => KqlType::Timespan,
        ScalarType::Guid => KqlType::Guid,
        ScalarType::Dynamic => KqlType::Dynamic,
    }
}

/// A typed null of a KQL type.
pub fn null_of(kql_type: KqlType) -> Expr {
    let data_type = trawl_functions::types::arrow_type(kql_type);
    lit(ScalarValue::try_from(&data_type).unwrap_or(ScalarValue::Null))
}

/// JSON of a `dynamic(...)` literal body.
pub fn dynamic_json(value: &DynamicValue) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        DynamicValue::Null => J::Null,
        DynamicValue::Bool(b) => J::Bool(*b),
        DynamicValue::Long(n) => J::from(*n),
        DynamicValue::Real(x) => serde_json::Number::from_f64(*x).map_or(J::Null, J::Number),
        DynamicValue::String(s) | DynamicValue::Guid(s) => J::String(s.clone()),
        DynamicValue::DateTime(n) => J::String(trawl_common::time::format_datetime(*n)),
        DynamicValue::Timespan(n) => J::String(trawl_common::time::format_timespan(*n)),
        DynamicValue::Array(items) => J::Array(items.iter().map(dynamic_json).collect()),
        DynamicValue::Object(entries) => J::Object(entries.iter().map(|(k, v)| (k.clone(), dynamic_json(v))).collect()),
    }
}

/// Name of the function call at the top of `expr`, if it is a scalar function call.
fn call_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::ScalarFunction(call) => Some(call.func.name()),
        _ => None,
    }
}

pub(crate) fn udf_call(udf: Arc<ScalarUDF>, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(udf, args))
}

/// `json_get_json(base, path...)` extended by one more key.
fn dynamic_path(base: Expr, key: Expr) -> Expr {
    if call_name(&base) == Some("json_get_json")
        && let Expr::ScalarFunction(call) = base
    {
        let mut args = call.args;
        args.push(key);
        return udf_call(datafusion_functions_json::udfs::json_get_json_udf(), args);
    }
    udf_call(datafusion_functions_json::udfs::json_get_json_udf(), vec![base, key])
}

/// KQL `tostring()` of any typed expression; never null.
pub fn to_string(value: Typed) -> Expr {
    match value.kql_type {
        KqlType::String | KqlType::Guid => f::coalesce(vec![value.expr, lit("")]),
        KqlType::Dynamic => {
            // A path read gives the string content directly.
            if call_name(&value.expr) == Some("json_get_json")
                && let Expr::ScalarFunction(call) = value.expr
            {
                let json_as_text = datafusion_functions_json::udfs::json_as_text_udf();
                let per_distinct = Arc::new(ScalarUDF::from(DistinctValuesUdf::new(json_as_text)));
                let text = udf_call(per_distinct, call.args);
                return f::coalesce(vec![text, lit("")]);
            }
            udf_call(Arc::new(ScalarUDF::from(DynamicToStringUdf::new())), vec![value.expr])
        }
        KqlType::DateTime | KqlType::Timespan | KqlType::Real | KqlType::Decimal => udf_call(
            Arc::new(ScalarUDF::from(trawl_functions::dynamic::FormatValueUdf::new())),
            vec![value.expr],
        ),
        _ => f::coalesce(vec![cast(value.expr, DataType::Utf8), lit("")]),
    }
}

/// A value as a dynamic (JSON text) value.
pub fn to_dynamic(value: Typed) -> Expr {
    match value.kql_type {
        KqlType::Dynamic => value.expr,
        KqlType::String | KqlType::Guid => udf_call(
            Arc::new(ScalarUDF::from(trawl_functions::dynamic::ToJsonStringUdf::new())),
            vec![to_string(value)],
        ),
        KqlType::DateTime | KqlType::Timespan => {
            // Unlike strings, an absent datetime or timespan stays null.
            let present = value.expr.clone().is_not_null();
            let text = udf_call(
                Arc::new(ScalarUDF::from(trawl_functions::dynamic::ToJsonStringUdf::new())),
                vec![to_string(value)],
            );
            datafusion::logical_expr::when(present, text)
                .end()
                .unwrap_or_else(|_| lit(ScalarValue::Null))
        }
        KqlType::Bool | KqlType::Int | KqlType::Long | KqlType::Real | KqlType::Decimal => {
            // Numbers and bools print as their JSON text; NaN and infinities are not JSON.
            cast(value.expr, DataType::Utf8)
        }
    }
}

/// A string view of a value for text operators: strings as they are, dynamic values as
/// their string form, other types through `tostring`.
pub(crate) fn as_text(value: Typed) -> Expr {
    match value.kql_type {
        KqlType::String | KqlType::Guid => value.expr,
        _ => to_string(value),
    }
}

/// A numeric view of a dynamic value, for comparisons and arithmetic.
pub fn dynamic_as_real(value: Typed) -> Expr {
    try_cast(to_string(value), DataType::Float64)
}

pub(crate) fn string_literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Literal(
            ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s)),
            _,
        ) => Some(s.as_str()),
        _ => None,
    }
}

/// `a == "text"` (or `"text" == a`) on strings, where an absent `a` reads as "": written
/// without `coalesce`, so the scan can prune chunks by statistics and bloom filters. The result
/// is never null, as with `coalesce`.
fn string_equals_literal(left: &Expr, right: &Expr, negated: bool) -> Option<Expr> {
    let (value, text) = match (string_literal(left), string_literal(right)) {
        (None, Some(text)) => (left, text),
        (Some(text), None) => (right, text),
        _ => return None,
    };
    let value = value.clone();
    let equal = if text.is_empty() {
        value.clone().is_null().or(value.eq(lit("")))
    } else {
        value.clone().is_not_null().and(value.eq(lit(text)))
    };
    Some(if negated { Expr::Not(Box::new(equal)) } else { equal })
}

impl Planner<'_> {
    /// Lowers a scalar expression evaluated against the rows of `input`.
    pub fn scalar(&mut self, e: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        self.step(1, e.span)?;
        let typed = stacker::maybe_grow(crate::limits::STACK_RED_ZONE, crate::limits::STACK_SEGMENT, || {
            self.scalar_unbounded(e, input)
        })?;
        if typed.kql_type == KqlType::Dynamic
            && !self.annotations.is_empty()
            && matches!(e.kind, ExprKind::Member { .. } | ExprKind::Index { .. })
            && let Some(path) = crate::layout::path_keys(e)
            && let Some((_, target)) = self.annotations.iter().rev().find(|(p, _)| *p == path)
        {
            let target = *target;
            return Ok(Typed::new(self.dynamic_as(typed, target), target));
        }
        Ok(typed)
    }

    fn scalar_unbounded(&mut self, e: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        match &e.kind {
            ExprKind::Literal(literal) => self.literal(literal, e),
            ExprKind::Name(ident) => {
                if let Some(kql_type) = input.column_type(&ident.name) {
                    return Ok(Typed::new(column(&ident.name), kql_type));
                }
                if ident.name == "$raw" && !self.bindings.contains_key("$raw") {
                    // The whole row as a bag (what the otel_* aggregates read).
                    let call = KExpr::new(
                        ExprKind::Call {
                            function: trawl_kql::ast::Ident::new("pack_all", ident.span),
                            args: Vec::new(),
                        },
                        e.span,
                    );
                    return self.scalar(&call, input);
                }
                if !self.bindings.contains_key(&ident.name)
                    && let Some(alias) = crate::layout::layout_alias(&ident.name, input)
                {
                    return self.scalar(&alias.to_expr(e.span), input);
                }
                match self.bindings.get(&ident.name) {
                    Some(Binding::Scalar(value)) => {
                        let value = value.clone();
                        self.inline(&value, ident.span)?;
                        Ok(value)
                    }
                    Some(Binding::Function(def)) if def.params.is_empty() => {
                        let def = def.clone();
                        self.call_scalar_function(&ident.name, &def, &[], input, ident.span)
                    }
                    Some(Binding::Function(_)) => Err(self.error(
                        ErrorCode::BadRequest,
                        ident.span,
                        format!("'{}' is a function; call it with arguments", ident.name),
                    )),
                    Some(Binding::Tabular(_)) => Err(self.error(
                        ErrorCode::TypeMismatch,
                        ident.span,
                        format!("'{}' is a table, not a scalar", ident.name),
                    )),
                    None => Err(self.unknown_column(&ident.name, ident.span, input)),
                }
            }
            ExprKind::Member { .. } => {
                // Lower the whole dotted chain at once, so advice is given once per path.
                let mut members = Vec::new();
                let mut root = e;
                while let ExprKind::Member { target, member } = &root.kind {
                    members.push(member);
                    root = target;
                }
                members.reverse();
                let base = self.scalar(root, input)?;
                if base.kql_type != KqlType::Dynamic {
                    let first = members[0];
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        first.span,
                        format!(
                            "'.{}' reads a dynamic value, but the left side is {}",
                            first.name, base.kql_type
                        ),
                    ));
                }
                self.dotted_path_advice(e);
                let mut path = base.expr;
                for member in members {
                    path = dynamic_path(path, lit(member.name.clone()));
                }
                Ok(Typed::new(path, KqlType::Dynamic))
            }
            ExprKind::Index { target, index } => {
                let base = self.scalar(target, input)?;
                if base.kql_type != KqlType::Dynamic {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        target.span,
                        format!("brackets read a dynamic value, but this is {}", base.kql_type),
                    ));
                }
                let key = self.scalar(index, input)?;
                let key = match key.kql_type {
                    KqlType::String | KqlType::Int | KqlType::Long => key.expr,
                    other => {
                        return Err(self.error(
                            ErrorCode::TypeMismatch,
                            index.span,
                            format!("an index must be a string or an integer, found {other}"),
                        ));
                    }
                };
                Ok(Typed::new(dynamic_path(base.expr, key), KqlType::Dynamic))
            }
            ExprKind::Call { function, args } => self.call(function, args, e, input),
            ExprKind::Unary { op, operand } => {
                let value = self.scalar(operand, input)?;
                match op {
                    UnaryOp::Plus => Ok(value),
                    UnaryOp::Neg => {
                        if !(value.kql_type.is_numeric() || value.kql_type == KqlType::Timespan) {
                            return Err(self.error(
                                ErrorCode::TypeMismatch,
                                operand.span,
                                format!("'-' needs a number or timespan, found {}", value.kql_type),
                            ));
                        }
                        if value.kql_type == KqlType::Timespan {
                            // DataFusion cannot negate a duration: negate its nanoseconds.
                            let nanos = Expr::Negative(Box::new(cast(value.expr, DataType::Int64)));
                            let span = cast(
                                nanos,
                                DataType::Duration(datafusion::arrow::datatypes::TimeUnit::Nanosecond),
                            );
                            return Ok(Typed::new(span, KqlType::Timespan));
                        }
                        Ok(Typed::new(Expr::Negative(Box::new(value.expr)), value.kql_type))
                    }
                    UnaryOp::Not => {
                        let value = self.boolean(value, operand)?;
                        Ok(Typed::new(Expr::Not(Box::new(value)), KqlType::Bool))
                    }
                }
            }
            ExprKind::Binary { op, left, right } => self.binary(*op, left, right, input),
            ExprKind::List { op, operand, items } => self.list(*op, operand, items, input),
            ExprKind::Between {
                negated,
                operand,
                low,
                high,
            } => {
                let value = self.scalar(operand, input)?;
                let low = self.scalar(low, input)?;
                let high = self.scalar(high, input)?;
                let value = if value.kql_type == KqlType::Dynamic {
                    dynamic_as_real(value)
                } else {
                    value.expr
                };
                Ok(Typed::new(
                    Expr::Between(Between::new(
                        Box::new(value),
                        *negated,
                        Box::new(low.expr),
                        Box::new(high.expr),
                    )),
                    KqlType::Bool,
                ))
            }
            // `typeof(long)` as an argument names a type.
            ExprKind::TypeOf(ty) => Ok(Typed::new(lit(ty.name()), KqlType::String)),
            _ => Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                "this expression is not supported here yet",
            )),
        }
    }

    /// Warns when a dotted path is read under `resource`, `scope` or `attributes`: since
    /// release 1.1.13 dots read nested objects only, so flat keys need brackets.
    fn dotted_path_advice(&mut self, e: &KExpr) {
        let mut parts = Vec::new();
        let mut current = e;
        while let ExprKind::Member { target, member } = &current.kind {
            parts.push(member.name.clone());
            current = target;
        }
        if let ExprKind::Name(root) = &current.kind
            && matches!(root.name.as_str(), "resource" | "scope" | "attributes")
        {
            parts.reverse();
            let key = parts.join(".");
            let message = format!(
                "'{}.{key}' reads nested objects only; to read the key '{key}' write {}['{key}']",
                root.name, root.name
            );
            self.warn("DottedPathAdvice", e.span, message);
        }
    }

    /// Requires a bool.
    pub fn boolean(&self, value: Typed, at: &KExpr) -> Result<Expr, TrawlError> {
        match value.kql_type {
            KqlType::Bool => Ok(value.expr),
            KqlType::Dynamic => Ok(try_cast(to_string(value), DataType::Boolean)),
            other => Err(self.error(
                ErrorCode::TypeMismatch,
                at.span,
                format!("expected a bool, found {other}"),
            )),
        }
    }

    fn literal(&self, literal: &Literal, e: &KExpr) -> Result<Typed, TrawlError> {
        Ok(match literal {
            Literal::Null(None) => Typed::new(lit(ScalarValue::Null), KqlType::Dynamic),
            Literal::Null(Some(t)) => {
                let kql_type = kql_type_of_scalar(*t);
                Typed::new(null_of(kql_type), kql_type)
            }
            Literal::Bool(b) => Typed::new(lit(*b), KqlType::Bool),
            Literal::Int(n) => Typed::new(lit(*n), KqlType::Int),
            Literal::Long(n) => Typed::new(lit(*n), KqlType::Long),
            Literal::Real(x) => Typed::new(lit(*x), KqlType::Real),
            Literal::Decimal(text) => match text.parse::<f64>() {
                Ok(x) => Typed::new(lit(x), KqlType::Real),
                Err(_) => return Err(self.error(ErrorCode::SyntaxError, e.span, format!("'{text}' is not a number"))),
            },
            Literal::String(s) => Typed::new(lit(s.clone()), KqlType::String),
            Literal::Guid(s) => Typed::new(lit(s.clone()), KqlType::Guid),
            Literal::DateTime(n) => Typed::new(datetime_literal(*n), KqlType::DateTime),
            Literal::Timespan(n) => Typed::new(timespan_literal(*n), KqlType::Timespan),
            Literal::Dynamic(value) => Typed::new(lit(dynamic_json(value).to_string()), KqlType::Dynamic),
        })
    }

    fn binary(&mut self, op: BinaryOp, left: &KExpr, right: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        use BinaryOp::*;
        let l = self.scalar(left, input)?;
        let r = self.scalar(right, input)?;
        match op {
            And | Or => {
                let l = self.boolean(l, left)?;
                let r = self.boolean(r, right)?;
                Ok(Typed::new(if op == And { l.and(r) } else { l.or(r) }, KqlType::Bool))
            }
            Add | Sub | Mul | Div | Mod => self.arithmetic(op, l, r, left, right),
            Lt | Le | Gt | Ge | Eq | NotEq => self.comparison(op, l, r, left, right),
            EqCi | NotEqCi => {
                let l = f::lower(to_string(l));
                let r = f::lower(to_string(r));
                Ok(Typed::new(
                    if op == EqCi { l.eq(r) } else { l.not_eq(r) },
                    KqlType::Bool,
                ))
            }
            _ => self.text_operator(op, l, r, right),
        }
    }

    fn arithmetic(&self, op: BinaryOp, l: Typed, r: Typed, left: &KExpr, right: &KExpr) -> Result<Typed, TrawlError> {
        use BinaryOp::*;
        use KqlType::*;
        let numeric = |t: KqlType| t.is_numeric() || t == Dynamic;
        let result_type = match (op, l.kql_type, r.kql_type) {
            (_, a, b) if numeric(a) && numeric(b) => {
                if a == Real || b == Real || a == Dynamic || b == Dynamic {
                    Real
                } else if a == Long || b == Long {
                    Long
                } else {
                    Int
                }
            }
            (Add, DateTime, Timespan) | (Add, Timespan, DateTime) | (Sub, DateTime, Timespan) => DateTime,
            (Sub, DateTime, DateTime) => Timespan,
            (Add | Sub, Timespan, Timespan) => Timespan,
            (Mul | Div, Timespan, a) if a.is_numeric() => Timespan,
            (Mul, a, Timespan) if a.is_numeric() => Timespan,
            (Div, Timespan, Timespan) => Real,
            (_, a, b) => {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    left.span.to(right.span),
                    format!("'{}' cannot combine {a} and {b}", op.as_str()),
                ));
            }
        };
        let operand = |value: Typed| match value.kql_type {
            Dynamic => dynamic_as_real(value),
            _ => value.expr,
        };
        let (le, re) = (operand(l.clone()), operand(r.clone()));
        let expr = match (op, l.kql_type, r.kql_type) {
            // A ratio of durations keeps its fraction (25ms / 1s is 0.025).
            (Div, Timespan, Timespan) => {
                cast(le, DataType::Int64).cast_to_real() / cast(re, DataType::Int64).cast_to_real()
            }
            (Mul | Div, Timespan, _) | (Mul, _, Timespan) => {
                let (span, factor) = if l.kql_type == Timespan { (le, re) } else { (re, le) };
                let nanos = cast(cast(span, DataType::Int64), DataType::Float64);
                let factor = cast(factor, DataType::Float64);
                let product = if op == Mul { nanos * factor } else { nanos / factor };
                cast(
                    cast(product, DataType::Int64),
                    DataType::Duration(datafusion::arrow::datatypes::TimeUnit::Nanosecond),
                )
            }
            _ => match op {
                Add => le + re,
                Sub => le - re,
                Mul => le * re,
                Div => le / re,
                // KQL's modulo is never negative: 0 <= n % d < abs(d) (`-14 % 12` is 10).
                _ => {
                    let remainder = le % re.clone();
                    when(remainder.clone().lt(lit(0i64)), remainder.clone() + f::abs(re))
                        .otherwise(remainder)
                        .map_err(|e| internal(&e))?
                }
            },
        };
        Ok(Typed::new(expr, result_type))
    }

    fn comparison(&self, op: BinaryOp, l: Typed, r: Typed, left: &KExpr, right: &KExpr) -> Result<Typed, TrawlError> {
        use BinaryOp::*;
        use KqlType::*;
        let stringish = |t: KqlType| matches!(t, String | Guid);
        let nullable_comparison =
            !matches!(l.kql_type, String | Guid | Dynamic) && !matches!(r.kql_type, String | Guid | Dynamic);
        if matches!(op, Eq | NotEq)
            && stringish(l.kql_type)
            && stringish(r.kql_type)
            && let Some(expr) = string_equals_literal(&l.expr, &r.expr, op == NotEq)
        {
            return Ok(Typed::new(expr, Bool));
        }
        let (le, re) = match (l.kql_type, r.kql_type) {
            (a, b) if stringish(a) && stringish(b) => {
                // Strings are never null: an absent string equals "".
                (to_string(l), to_string(r))
            }
            (Dynamic, b) if stringish(b) => (to_string(l), to_string(r)),
            (a, Dynamic) if stringish(a) => (to_string(l), to_string(r)),
            (Dynamic, b) if b.is_numeric() => (dynamic_as_real(l), r.expr),
            (a, Dynamic) if a.is_numeric() => (l.expr, dynamic_as_real(r)),
            (Dynamic, Dynamic) => (to_string(l), to_string(r)),
            (Dynamic, Bool) | (Bool, Dynamic) => (to_string(l), to_string(r)),
            (a, b) if a == b || (a.is_numeric() && b.is_numeric()) => (l.expr, r.expr),
            (a, b) => {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    left.span.to(right.span),
                    format!("'{}' cannot compare {a} with {b}", op.as_str()),
                ));
            }
        };
        let expr = match op {
            Lt => le.lt(re),
            Le => le.lt_eq(re),
            Gt => le.gt(re),
            Ge => le.gt_eq(re),
            Eq => le.eq(re),
            // KQL: a null and a non-null value are not equal (`null != 5` is true).
            _ if nullable_comparison => Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr::new(
                Box::new(le),
                datafusion::logical_expr::Operator::IsDistinctFrom,
                Box::new(re),
            )),
            _ => le.not_eq(re),
        };
        Ok(Typed::new(expr, Bool))
    }

    fn list(&mut self, op: ListOp, operand: &KExpr, items: &[KExpr], input: &Tabular) -> Result<Typed, TrawlError> {
        let value = self.scalar(operand, input)?;
        let mut lowered = Vec::with_capacity(items.len());
        for item in items {
            // A dynamic array literal stands for its elements.
            if let ExprKind::Literal(Literal::Dynamic(DynamicValue::Array(elements))) = &item.kind {
                for element in elements {
                    lowered.push(match dynamic_json(element) {
                        serde_json::Value::String(s) => Typed::new(lit(s), KqlType::String),
                        serde_json::Value::Bool(b) => Typed::new(lit(b), KqlType::Bool),
                        serde_json::Value::Number(n) => match n.as_i64() {
                            Some(i) => Typed::new(lit(i), KqlType::Long),
                            None => Typed::new(lit(n.as_f64().unwrap_or(f64::NAN)), KqlType::Real),
                        },
                        other => Typed::new(lit(other.to_string()), KqlType::Dynamic),
                    });
                }
                continue;
            }
            lowered.push(self.scalar(item, input)?);
        }
        let strings = matches!(value.kql_type, KqlType::String | KqlType::Dynamic | KqlType::Guid)
            || lowered.iter().all(|i| matches!(i.kql_type, KqlType::String));
        let case_insensitive = matches!(op, ListOp::InCi | ListOp::NotInCi);
        let negated = matches!(op, ListOp::NotIn | ListOp::NotInCi);
        match op {
            ListOp::In | ListOp::NotIn | ListOp::InCi | ListOp::NotInCi => {
                let (target, list): (Expr, Vec<Expr>) = if strings {
                    let fold = |e: Expr| if case_insensitive { f::lower(e) } else { e };
                    (
                        fold(to_string(value)),
                        lowered.into_iter().map(|i| fold(to_string(i))).collect(),
                    )
                } else if value.kql_type == KqlType::Dynamic {
                    (dynamic_as_real(value), lowered.into_iter().map(|i| i.expr).collect())
                } else {
                    (value.expr, lowered.into_iter().map(|i| i.expr).collect())
                };
                Ok(Typed::new(target.in_list(list, negated), KqlType::Bool))
            }
            ListOp::HasAny | ListOp::HasAll => {
                let udf = Arc::new(ScalarUDF::from(HasUdf::new(false)));
                let hay = match value.kql_type {
                    KqlType::String | KqlType::Dynamic => value.expr,
                    _ => to_string(value),
                };
                let checks: Vec<Expr> = lowered
                    .into_iter()
                    .map(|i| udf_call(udf.clone(), vec![hay.clone(), to_string(i)]))
                    .collect();
                let combined = checks
                    .into_iter()
                    .reduce(|a, b| if op == ListOp::HasAny { a.or(b) } else { a.and(b) });
                Ok(Typed::new(combined.unwrap_or(lit(op == ListOp::HasAll)), KqlType::Bool))
            }
        }
    }
}

trait CastToReal {
    fn cast_to_real(self) -> Expr;
}

impl CastToReal for Expr {
    fn cast_to_real(self) -> Expr {
        cast(self, DataType::Float64)
    }
}
