//! Scalar function calls.

use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano};
use datafusion::common::ScalarValue;
use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::{Expr, cast, lit, try_cast, when};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Ident, Literal};

use datafusion::logical_expr::expr::ScalarFunction;
use trawl_functions::registry::{ArgKind, KqlFunction, ReturnRule};

use crate::aggregates::is_aggregate;
use crate::context::{Planner, Tabular, Typed};
use crate::scalar::{datetime_literal, to_string};

impl Planner<'_> {
    /// Lowers a scalar function call.
    pub fn call(&mut self, function: &Ident, args: &[KExpr], e: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        let name = function.name.as_str();
        if let Some(crate::context::Binding::Function(def)) = self.bindings.get(name) {
            let def = def.clone();
            return self.call_scalar_function(name, &def, args, input, e.span);
        }
        if let Some(current) = crate::aliases::current_name(name) {
            let renamed = Ident::new(current, function.span);
            return self.call(&renamed, args, e, input);
        }
        // extract(regex, group, text, typeof(T)): the capture converted to T.
        if name == "extract"
            && let [regex, group, text, last] = args
            && let ExprKind::TypeOf(ty) = &last.kind
        {
            let call = KExpr::new(
                ExprKind::Call {
                    function: function.clone(),
                    args: vec![regex.clone(), group.clone(), text.clone()],
                },
                e.span,
            );
            let captured = self.scalar(&call, input)?;
            let target = crate::scalar::kql_type_of_scalar(*ty);
            let captured = Typed::new(crate::scalar::to_dynamic(captured), KqlType::Dynamic);
            return Ok(Typed::new(self.dynamic_as(captured, target), target));
        }
        // bag_pack_columns(a, b, …): a bag of the columns under their own names.
        if name == "bag_pack_columns" {
            let mut pairs = Vec::with_capacity(args.len() * 2);
            for arg in args {
                let ExprKind::Name(column) = &arg.kind else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        arg.span,
                        "'bag_pack_columns()' takes column names",
                    ));
                };
                pairs.push(KExpr::new(
                    ExprKind::Literal(Literal::String(column.name.clone())),
                    arg.span,
                ));
                pairs.push(arg.clone());
            }
            return self.call(&Ident::new("bag_pack", function.span), &pairs, e, input);
        }
        // ingestion_time(): when the row was ingested (the stored `ingest_time` column), null
        // for rows that have none (a datatable, a computed table).
        if name == "ingestion_time" && args.is_empty() {
            let known = input
                .columns
                .iter()
                .any(|(column, kql_type)| column == "ingest_time" && *kql_type == KqlType::DateTime);
            let value = match known {
                true => crate::context::column("ingest_time"),
                false => crate::scalar::null_of(KqlType::DateTime),
            };
            return Ok(Typed::new(value, KqlType::DateTime));
        }
        // assert(condition, message): checked while planning; the condition must be constant.
        if name == "assert" {
            let [condition, message] = args else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    "'assert()' takes a condition and a message",
                ));
            };
            let empty = self.empty_tabular()?;
            let holds = self
                .scalar(condition, &empty)
                .ok()
                .and_then(|v| crate::sources::constant_value(&v.expr));
            let text = self
                .scalar(message, &empty)
                .ok()
                .and_then(|v| crate::sources::constant_value(&v.expr));
            let message = match text {
                Some(ScalarValue::Utf8(Some(t)) | ScalarValue::Utf8View(Some(t)) | ScalarValue::LargeUtf8(Some(t))) => {
                    t
                }
                _ => String::new(),
            };
            return match holds {
                Some(ScalarValue::Boolean(Some(true))) => {
                    Ok(Typed::new(datafusion::logical_expr::lit(true), KqlType::Bool))
                }
                Some(ScalarValue::Boolean(Some(false))) => Err(self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    format!("assert() has failed with message: '{message}'"),
                )),
                _ => Err(self.error(
                    ErrorCode::BadRequest,
                    condition.span,
                    "the condition of 'assert()' must be a constant bool, known before the query runs",
                )),
            };
        }
        if name == "current_database" && args.is_empty() {
            let database = datafusion::logical_expr::lit(self.options.database.clone());
            return Ok(Typed::new(database, KqlType::String));
        }
        // extract_json(path, text, typeof(T)): the element converted to T.
        if name == "extract_json"
            && let [path, text, last] = args
            && let ExprKind::TypeOf(ty) = &last.kind
        {
            let call = KExpr::new(
                ExprKind::Call {
                    function: function.clone(),
                    args: vec![path.clone(), text.clone()],
                },
                e.span,
            );
            let element = self.scalar(&call, input)?;
            let target = crate::scalar::kql_type_of_scalar(*ty);
            if target == KqlType::String {
                return Ok(element);
            }
            // The element's text read as a JSON value, then converted.
            let json = crate::scalar::to_dynamic(element);
            let parsed = Typed::new(json, KqlType::Dynamic);
            return Ok(Typed::new(self.dynamic_as(parsed, target), target));
        }
        if name == "column_names_of" {
            // The column names of a tabular expression, known while planning.
            let [table] = args else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    "'column_names_of()' takes one tabular expression",
                ));
            };
            let tabular = self.tabular(table)?;
            let names: Vec<serde_json::Value> = tabular
                .columns
                .iter()
                .map(|(column, _)| serde_json::Value::String(column.clone()))
                .collect();
            let text = serde_json::Value::Array(names).to_string();
            return Ok(Typed::new(datafusion::logical_expr::lit(text), KqlType::Dynamic));
        }
        if crate::windows::ROW_FUNCTIONS.contains(&name) {
            // Tied to the order a sort below gave the rows, so that the optimizer keeps it.
            let typed = self.row_function(name, args, e, input)?;
            return Ok(Typed::new(
                crate::windows::in_serial_order(typed.expr, input),
                typed.kql_type,
            ));
        }
        if is_aggregate(name) && trawl_functions::registry::lookup(name).is_none() {
            return Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                format!("the aggregate '{name}()' can only be used in summarize"),
            ));
        }
        let arity = |n: usize| -> Result<(), TrawlError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(self.error(
                    ErrorCode::BadRequest,
                    e.span,
                    format!("'{name}()' takes {n} argument(s), found {}", args.len()),
                ))
            }
        };
        match name {
            "isempty" | "isnotempty" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                let empty = match value.kql_type {
                    KqlType::String | KqlType::Guid => value.expr.clone().is_null().or(value.expr.eq(lit(""))),
                    // Without decoding: the JSON text of "" and of null (stored text is
                    // written by serde_json or Trawl's writers, never with extra spaces).
                    KqlType::Dynamic => {
                        let text = value.expr;
                        text.clone()
                            .is_null()
                            .or(text.clone().eq(lit("\"\"")))
                            .or(text.eq(lit("null")))
                    }
                    _ => value.expr.is_null(),
                };
                let result = if name == "isempty" {
                    empty
                } else {
                    Expr::Not(Box::new(empty))
                };
                Ok(Typed::new(result, KqlType::Bool))
            }
            "isnull" | "isnotnull" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                // Strings are never null in KQL.
                let null = match value.kql_type {
                    KqlType::String => lit(false),
                    KqlType::Dynamic => value.expr.clone().is_null().or(value.expr.eq(lit("null"))),
                    _ => value.expr.is_null(),
                };
                let result = if name == "isnull" {
                    null
                } else {
                    Expr::Not(Box::new(null))
                };
                Ok(Typed::new(result, KqlType::Bool))
            }
            "tostring" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                Ok(Typed::new(to_string(value), KqlType::String))
            }
            "toint" | "tolong" | "toreal" | "todouble" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                let (target, kql_type) = match name {
                    "toint" => (DataType::Int32, KqlType::Int),
                    "tolong" => (DataType::Int64, KqlType::Long),
                    _ => (DataType::Float64, KqlType::Real),
                };
                let expr = match value.kql_type {
                    KqlType::String | KqlType::Dynamic | KqlType::Guid => {
                        let text = to_string(value);
                        if kql_type == KqlType::Real {
                            try_cast(text, DataType::Float64)
                        } else {
                            // "12" and "12.7" both convert (the fraction is dropped).
                            f::coalesce(vec![
                                try_cast(text.clone(), target.clone()),
                                try_cast(try_cast(text, DataType::Float64), target),
                            ])
                        }
                    }
                    KqlType::DateTime | KqlType::Timespan => {
                        try_cast(cast(value.expr, DataType::Int64) / lit(100i64), target)
                    }
                    _ => try_cast(value.expr, target),
                };
                Ok(Typed::new(expr, kql_type))
            }
            "tobool" | "toboolean" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                let expr = match value.kql_type {
                    KqlType::Bool => value.expr,
                    KqlType::String | KqlType::Dynamic => try_cast(f::lower(to_string(value)), DataType::Boolean),
                    _ => try_cast(value.expr, DataType::Boolean),
                };
                Ok(Typed::new(expr, KqlType::Bool))
            }
            "strlen" => {
                arity(1)?;
                let value = self.scalar(&args[0], input)?;
                Ok(Typed::new(
                    cast(f::character_length(to_string(value)), DataType::Int64),
                    KqlType::Long,
                ))
            }
            "tolower" | "toupper" => {
                arity(1)?;
                let value = to_string(self.scalar(&args[0], input)?);
                let expr = if name == "tolower" {
                    f::lower(value)
                } else {
                    f::upper(value)
                };
                Ok(Typed::new(expr, KqlType::String))
            }
            "strcat" => {
                let mut parts = Vec::with_capacity(args.len());
                for arg in args {
                    parts.push(to_string(self.scalar(arg, input)?));
                }
                Ok(Typed::new(f::concat(parts), KqlType::String))
            }
            "now" => {
                let now = self.options.now;
                match args {
                    [] => Ok(Typed::new(datetime_literal(now), KqlType::DateTime)),
                    [offset] => {
                        let offset = self.timespan_constant(offset)?;
                        Ok(Typed::new(
                            datetime_literal(now.saturating_add(offset)),
                            KqlType::DateTime,
                        ))
                    }
                    _ => Err(self.error(ErrorCode::BadRequest, e.span, "'now()' takes at most one argument")),
                }
            }
            "ago" => {
                arity(1)?;
                let offset = self.timespan_constant(&args[0])?;
                Ok(Typed::new(
                    datetime_literal(self.options.now.saturating_sub(offset)),
                    KqlType::DateTime,
                ))
            }
            "iff" | "iif" => {
                arity(3)?;
                let condition = self.scalar(&args[0], input)?;
                let condition = self.boolean(condition, &args[0])?;
                let then = self.scalar(&args[1], input)?;
                let otherwise = self.scalar(&args[2], input)?;
                let kql_type = then.kql_type;
                let expr = when(condition, then.expr)
                    .otherwise(otherwise.expr)
                    .map_err(|e| crate::context::internal(&e))?;
                Ok(Typed::new(expr, kql_type))
            }
            "bin_auto" => {
                // bin(ts, size) with a size from a ladder of round intervals giving 750–1,500
                // bins over the query window (one day when the query has no start).
                let (Some(value), 1..=2) = (args.first(), args.len()) else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "expected bin_auto(timestamp[, min_size])",
                    ));
                };
                let floor = match args.get(1) {
                    None => 0,
                    Some(arg) => {
                        let empty = self.empty_tabular()?;
                        let typed = self.scalar(arg, &empty)?;
                        match (typed.kql_type, crate::sources::constant_value(&typed.expr)) {
                            (KqlType::Timespan, Some(datafusion::common::ScalarValue::DurationNanosecond(Some(n)))) => {
                                n
                            }
                            _ => {
                                return Err(self.error(
                                    ErrorCode::BadRequest,
                                    arg.span,
                                    "bin_auto's smallest bin size must be a constant timespan",
                                ));
                            }
                        }
                    }
                };
                let window = match self.options.since {
                    Some(since) => self.options.until.unwrap_or(self.options.now).saturating_sub(since),
                    None => 86_400_000_000_000,
                };
                let size = auto_bin_size(window).max(floor);
                let typed = self.scalar(value, input)?;
                if typed.kql_type != KqlType::DateTime {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        value.span,
                        format!("bin_auto() takes a datetime, found {}", typed.kql_type),
                    ));
                }
                let call = KExpr::new(
                    ExprKind::Call {
                        function: trawl_kql::ast::Ident::new("bin", function.span),
                        args: vec![
                            value.clone(),
                            KExpr::new(ExprKind::Literal(Literal::Timespan(size)), e.span),
                        ],
                    },
                    e.span,
                );
                self.scalar(&call, input)
            }
            "column_ifexists" => {
                arity(2)?;
                // The name must be known while planning: a literal, or a parameter bound to one.
                let name_value = self.scalar(&args[0], input)?;
                let Some(
                    datafusion::common::ScalarValue::Utf8(Some(column_name))
                    | datafusion::common::ScalarValue::Utf8View(Some(column_name)),
                ) = crate::sources::constant_value(&name_value.expr)
                else {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        args[0].span,
                        "column_ifexists() takes a constant column name",
                    ));
                };
                let column_name = &column_name;
                match input.column_type(column_name) {
                    Some(kql_type) => Ok(Typed::new(crate::context::column(column_name), kql_type)),
                    None => self.scalar(&args[1], input),
                }
            }
            "pack_all" => {
                // A bag of every column of the row; `pack_all(true)` leaves out null and empty values.
                let dense = match args.first() {
                    None => false,
                    Some(arg) => match &arg.kind {
                        ExprKind::Literal(Literal::Bool(dense)) => *dense,
                        _ => {
                            return Err(self.error(
                                ErrorCode::BadRequest,
                                arg.span,
                                "pack_all() takes a constant bool (ignore null and empty values)",
                            ));
                        }
                    },
                };
                let packer = if dense { "__bag_pack_dense" } else { "bag_pack" };
                let mut pairs = Vec::with_capacity(input.columns.len() * 2);
                for (column_name, _) in &input.columns {
                    pairs.push(KExpr::new(
                        ExprKind::Literal(Literal::String(column_name.clone())),
                        e.span,
                    ));
                    pairs.push(KExpr::new(
                        ExprKind::Name(trawl_kql::ast::Ident::new(column_name.clone(), e.span)),
                        e.span,
                    ));
                }
                let call = KExpr::new(
                    ExprKind::Call {
                        function: trawl_kql::ast::Ident::new(packer, function.span),
                        args: pairs,
                    },
                    e.span,
                );
                if input.columns.is_empty() {
                    return Ok(Typed::new(datafusion::logical_expr::lit("{}"), KqlType::Dynamic));
                }
                self.scalar(&call, input)
            }
            "case" => {
                if args.len() < 3 || args.len().is_multiple_of(2) {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "'case()' takes condition, value pairs and an else value",
                    ));
                }
                let mut otherwise = self.scalar(&args[args.len() - 1], input)?;
                let kql_type = otherwise.kql_type;
                let mut pairs = Vec::new();
                for pair in args[..args.len() - 1].chunks(2) {
                    let condition = self.scalar(&pair[0], input)?;
                    let condition = self.boolean(condition, &pair[0])?;
                    let value = self.scalar(&pair[1], input)?;
                    pairs.push((condition, value.expr));
                }
                let mut expr = otherwise.expr;
                for (condition, value) in pairs.into_iter().rev() {
                    expr = when(condition, value)
                        .otherwise(expr)
                        .map_err(|e| crate::context::internal(&e))?;
                }
                otherwise.expr = expr;
                otherwise.kql_type = kql_type;
                Ok(otherwise)
            }
            "coalesce" => {
                if args.is_empty() {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        e.span,
                        "'coalesce()' needs at least one argument",
                    ));
                }
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.scalar(arg, input)?);
                }
                let kql_type = values[0].kql_type;
                if kql_type == KqlType::String {
                    // An empty string counts as absent.
                    let mut expr = lit("");
                    for value in values.into_iter().rev() {
                        let text = to_string(value);
                        expr = when(text.clone().not_eq(lit("")), text)
                            .otherwise(expr)
                            .map_err(|e| crate::context::internal(&e))?;
                    }
                    return Ok(Typed::new(expr, KqlType::String));
                }
                Ok(Typed::new(
                    f::coalesce(values.into_iter().map(|v| v.expr).collect()),
                    kql_type,
                ))
            }
            "bin" | "floor" => {
                arity(2)?;
                let value = self.scalar(&args[0], input)?;
                self.bin(value, &args[1], input)
            }
            _ => match trawl_functions::registry::lookup(name) {
                Some(registered) => self.registered_call(registered, args, e, input),
                None => Err(self.unknown_function(name, function.span)),
            },
        }
    }

    /// A call of a function from the UDF registry: arguments converted to the declared kinds.
    fn registered_call(
        &mut self,
        function: &'static KqlFunction,
        args: &[KExpr],
        e: &KExpr,
        input: &Tabular,
    ) -> Result<Typed, TrawlError> {
        let too_many = function.max_args().is_some_and(|max| args.len() > max);
        if args.len() < function.min_args || too_many {
            let expected = match function.max_args() {
                Some(max) if max == function.min_args => format!("{max}"),
                Some(max) => format!("{} to {max}", function.min_args),
                None => format!("at least {}", function.min_args),
            };
            return Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                format!(
                    "'{}()' takes {expected} argument(s), found {}",
                    function.name,
                    args.len()
                ),
            ));
        }
        // `*` stands for every column of the row.
        let expanded: Vec<KExpr>;
        let args = if args.iter().any(|a| matches!(a.kind, ExprKind::Star)) {
            expanded = args
                .iter()
                .flat_map(|a| match a.kind {
                    ExprKind::Star => input
                        .columns
                        .iter()
                        .map(|(n, _)| KExpr::new(ExprKind::Name(trawl_kql::ast::Ident::new(n.clone(), a.span)), a.span))
                        .collect::<Vec<_>>(),
                    _ => vec![a.clone()],
                })
                .collect();
            expanded.as_slice()
        } else {
            args
        };
        let mut lowered = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for (index, arg) in args.iter().enumerate() {
            let value = self.scalar(arg, input)?;
            let kind = function.kind_of(index).unwrap_or(ArgKind::Any);
            let (expr, kql_type) = self.convert_arg(value, kind, arg, function.name)?;
            lowered.push(expr);
            types.push(kql_type);
        }
        let kql_type = match function.returns {
            ReturnRule::Fixed(t) => t,
            ReturnRule::SameAsArg(i) => types.get(i).copied().unwrap_or(KqlType::Dynamic),
        };
        let udf = std::sync::Arc::new((function.udf)());
        Ok(Typed::new(
            Expr::ScalarFunction(ScalarFunction::new_udf(udf, lowered)),
            kql_type,
        ))
    }

    /// Converts an argument to the kind a registered function declares.
    pub(crate) fn convert_arg(
        &self,
        value: Typed,
        kind: ArgKind,
        at: &KExpr,
        function: &str,
    ) -> Result<(Expr, KqlType), TrawlError> {
        let mismatch = |found: KqlType, expected: &str| {
            self.error(
                ErrorCode::TypeMismatch,
                at.span,
                format!("'{function}()' expects {expected} here, found {found}"),
            )
        };
        Ok(match kind {
            ArgKind::Any => (value.expr, value.kql_type),
            ArgKind::String => (to_string(value), KqlType::String),
            ArgKind::Dynamic => (crate::scalar::to_dynamic(value), KqlType::Dynamic),
            ArgKind::Real => match value.kql_type {
                t if t.is_numeric() => (cast(value.expr, DataType::Float64), KqlType::Real),
                KqlType::Dynamic | KqlType::String => (crate::scalar::dynamic_as_real(value), KqlType::Real),
                KqlType::Bool => (
                    cast(cast(value.expr, DataType::Int64), DataType::Float64),
                    KqlType::Real,
                ),
                other => return Err(mismatch(other, "a number")),
            },
            ArgKind::Long => match value.kql_type {
                t if t.is_numeric() => (cast(value.expr, DataType::Int64), KqlType::Long),
                KqlType::Dynamic | KqlType::String => (
                    cast(crate::scalar::dynamic_as_real(value), DataType::Int64),
                    KqlType::Long,
                ),
                KqlType::Bool => (cast(value.expr, DataType::Int64), KqlType::Long),
                other => return Err(mismatch(other, "a whole number")),
            },
            ArgKind::Bool => (self.boolean(value, at)?, KqlType::Bool),
            ArgKind::DateTime => match value.kql_type {
                KqlType::DateTime => (value.expr, KqlType::DateTime),
                KqlType::String | KqlType::Dynamic => (
                    cast(to_string(value), trawl_functions::types::arrow_type(KqlType::DateTime)),
                    KqlType::DateTime,
                ),
                other => return Err(mismatch(other, "a datetime")),
            },
            ArgKind::Timespan => match value.kql_type {
                KqlType::Timespan => (value.expr, KqlType::Timespan),
                other => return Err(mismatch(other, "a timespan")),
            },
        })
    }

    /// `bin(value, size)`: the start of the bin `value` falls in.
    pub fn bin(&mut self, value: Typed, size: &KExpr, input: &Tabular) -> Result<Typed, TrawlError> {
        match value.kql_type {
            KqlType::DateTime => {
                let nanos = self.timespan_constant(size)?;
                if nanos <= 0 {
                    return Err(self.error(ErrorCode::BadRequest, size.span, "the bin size must be positive"));
                }
                let stride = lit(ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
                    0, 0, nanos,
                ))));
                let expr = f::date_bin(stride, value.expr, datetime_literal(0));
                Ok(Typed::new(expr, KqlType::DateTime))
            }
            KqlType::Int | KqlType::Long | KqlType::Real => {
                let step = self.scalar(size, input)?;
                if !step.kql_type.is_numeric() {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        size.span,
                        format!("the bin size must be a number, found {}", step.kql_type),
                    ));
                }
                let real = f::floor(cast(value.expr, DataType::Float64) / cast(step.expr.clone(), DataType::Float64))
                    * cast(step.expr, DataType::Float64);
                let (expr, kql_type) = match (value.kql_type, step.kql_type) {
                    (KqlType::Real, _) | (_, KqlType::Real) => (real, KqlType::Real),
                    (k, _) => (
                        cast(real, DataType::Int64),
                        if k == KqlType::Int { KqlType::Long } else { k },
                    ),
                };
                Ok(Typed::new(expr, kql_type))
            }
            KqlType::Timespan => {
                let nanos = self.timespan_constant(size)?;
                if nanos <= 0 {
                    return Err(self.error(ErrorCode::BadRequest, size.span, "the bin size must be positive"));
                }
                let raw = cast(value.expr, DataType::Int64);
                let floored = cast(
                    f::floor(cast(raw, DataType::Float64) / lit(nanos as f64)) * lit(nanos as f64),
                    DataType::Int64,
                );
                Ok(Typed::new(
                    cast(
                        floored,
                        DataType::Duration(datafusion::arrow::datatypes::TimeUnit::Nanosecond),
                    ),
                    KqlType::Timespan,
                ))
            }
            other => Err(self.error(
                ErrorCode::TypeMismatch,
                size.span,
                format!("bin() needs a number, datetime or timespan, found {other}"),
            )),
        }
    }

    /// A timespan that must be known at planning time (a literal, possibly negated).
    pub fn timespan_constant(&self, e: &KExpr) -> Result<i64, TrawlError> {
        match &e.kind {
            ExprKind::Literal(Literal::Timespan(n)) => Ok(*n),
            ExprKind::Literal(Literal::Long(n)) => Ok(n.saturating_mul(86_400_000_000_000)),
            ExprKind::Unary {
                op: trawl_kql::ast::UnaryOp::Neg,
                operand,
            } => Ok(-self.timespan_constant(operand)?),
            _ => Err(self.error(
                ErrorCode::BadRequest,
                e.span,
                "expected a timespan literal such as 5m or 1h",
            )),
        }
    }
}

/// Round bin sizes (nanoseconds), each at most twice the one before, so that one of them
/// always gives between 750 and 1,500 bins.
const BIN_LADDER: &[i64] = {
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000 * MS;
    const M: i64 = 60 * S;
    const H: i64 = 60 * M;
    const D: i64 = 24 * H;
    &[
        MS,
        2 * MS,
        4 * MS,
        5 * MS,
        10 * MS,
        20 * MS,
        40 * MS,
        50 * MS,
        100 * MS,
        200 * MS,
        250 * MS,
        500 * MS,
        S,
        2 * S,
        3 * S,
        5 * S,
        10 * S,
        15 * S,
        20 * S,
        30 * S,
        M,
        2 * M,
        3 * M,
        5 * M,
        10 * M,
        15 * M,
        20 * M,
        30 * M,
        H,
        2 * H,
        3 * H,
        4 * H,
        6 * H,
        8 * H,
        12 * H,
        D,
        2 * D,
        3 * D,
        4 * D,
        7 * D,
        14 * D,
        28 * D,
    ]
};

/// The smallest ladder size that gives at most 1,500 bins over `window` nanoseconds.
pub(crate) fn auto_bin_size(window: i64) -> i64 {
    let wanted = (window.max(1) as u64).div_ceil(1_500) as i64;
    BIN_LADDER
        .iter()
        .copied()
        .find(|size| *size >= wanted)
        .unwrap_or(BIN_LADDER[BIN_LADDER.len() - 1])
}

#[cfg(test)]
mod bin_auto_tests {
    use super::{BIN_LADDER, auto_bin_size};

    #[test]
    fn the_ladder_gives_750_to_1500_bins() {
        for pair in BIN_LADDER.windows(2) {
            assert!(pair[1] <= 2 * pair[0], "{} then {}", pair[0], pair[1]);
        }
        let hour = 3_600_000_000_000i64;
        assert_eq!(auto_bin_size(hour), 3_000_000_000, "1h → 3s (1,200 bins)");
        assert_eq!(auto_bin_size(24 * hour), 60_000_000_000, "1d → 1m (1,440 bins)");
        for window in [10_000_000_000i64, hour, 7 * 24 * hour, 90 * 24 * hour, 123_456_789_012] {
            let bins = window / auto_bin_size(window);
            assert!((750..=1_500).contains(&bins), "{window} ns gives {bins} bins");
        }
    }
}
