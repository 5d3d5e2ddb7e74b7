//! Functions the planner lowers itself rather than through the UDF registry
//! (`trawl_functions::registry`): their value depends on what planning knows — constants, the
//! input's columns, the query's window and database, the types of their arguments — or they
//! lower to other calls. One entry per function (or per names sharing a lowering) in
//! [`PLANNER_FUNCTIONS`]; its lowering is the function of the same name below.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::{Expr, cast, lit, try_cast, when};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Ident, Literal};

use crate::context::{Planner, Tabular, Typed};
use crate::scalar::{datetime_literal, to_string};
use crate::scalar_functions::auto_bin_size;

/// A call being lowered.
#[derive(Clone, Copy)]
pub(crate) struct Call<'a> {
    pub(crate) name: &'a str,
    pub(crate) function: &'a Ident,
    pub(crate) args: &'a [KExpr],
    pub(crate) e: &'a KExpr,
    pub(crate) input: &'a Tabular,
}

type Lower = fn(&mut Planner<'_>, &Call<'_>) -> Result<Typed, TrawlError>;

/// A function the planner lowers: the names it answers to and how.
pub(crate) struct PlannerFunction {
    pub(crate) names: &'static [&'static str],
    pub(crate) lower: Lower,
}

/// Every function the planner lowers itself, sorted by first name.
pub(crate) static PLANNER_FUNCTIONS: &[PlannerFunction] = &[
    PlannerFunction {
        names: &["ago"],
        lower: ago,
    },
    PlannerFunction {
        names: &["assert"],
        lower: assert,
    },
    PlannerFunction {
        names: &["bag_pack_columns"],
        lower: bag_pack_columns,
    },
    PlannerFunction {
        names: &["bin", "floor"],
        lower: bin,
    },
    PlannerFunction {
        names: &["bin_auto"],
        lower: bin_auto,
    },
    PlannerFunction {
        names: &["case"],
        lower: case,
    },
    PlannerFunction {
        names: &["coalesce"],
        lower: coalesce,
    },
    PlannerFunction {
        names: &["column_ifexists"],
        lower: column_ifexists,
    },
    PlannerFunction {
        names: &["column_names_of"],
        lower: column_names_of,
    },
    PlannerFunction {
        names: &["current_database"],
        lower: current_database,
    },
    PlannerFunction {
        names: &["current_principal"],
        lower: current_principal,
    },
    PlannerFunction {
        names: &["current_principal_details"],
        lower: current_principal_details,
    },
    PlannerFunction {
        names: &["extract"],
        lower: extract,
    },
    PlannerFunction {
        names: &["extract_json"],
        lower: extract_json,
    },
    PlannerFunction {
        names: &["gettype"],
        lower: gettype,
    },
    PlannerFunction {
        names: &["iff", "iif"],
        lower: iff,
    },
    PlannerFunction {
        names: &["ingestion_time"],
        lower: ingestion_time,
    },
    PlannerFunction {
        names: &["isempty", "isnotempty"],
        lower: isempty,
    },
    PlannerFunction {
        names: &["isnull", "isnotnull"],
        lower: isnull,
    },
    PlannerFunction {
        names: &["now"],
        lower: now,
    },
    PlannerFunction {
        names: &["pack_all"],
        lower: pack_all,
    },
    PlannerFunction {
        names: &["replace"],
        lower: replace,
    },
    PlannerFunction {
        names: &["strcat"],
        lower: strcat,
    },
    PlannerFunction {
        names: &["strlen"],
        lower: strlen,
    },
    PlannerFunction {
        names: &["tobool", "toboolean"],
        lower: tobool,
    },
    PlannerFunction {
        names: &["toint", "tolong", "toreal", "todouble"],
        lower: toint,
    },
    PlannerFunction {
        names: &["tolower", "toupper"],
        lower: tolower,
    },
    PlannerFunction {
        names: &["tostring"],
        lower: tostring,
    },
];

/// The planner's own function called `name`, if any.
pub(crate) fn lookup(name: &str) -> Option<&'static PlannerFunction> {
    PLANNER_FUNCTIONS.iter().find(|f| f.names.contains(&name))
}

/// Every name the planner lowers itself.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    PLANNER_FUNCTIONS.iter().flat_map(|f| f.names.iter().copied())
}

/// That the call has `n` arguments.
fn arity(p: &Planner<'_>, c: &Call<'_>, n: usize) -> Result<(), TrawlError> {
    if c.args.len() == n {
        return Ok(());
    }
    Err(p.error(
        ErrorCode::BadRequest,
        c.e.span,
        format!("'{}()' takes {n} argument(s), found {}", c.name, c.args.len()),
    ))
}

fn extract(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call {
        function,
        args,
        e,
        input,
        ..
    } = *c;
    if let [regex, group, text, last] = args
        && let ExprKind::TypeOf(ty) = &last.kind
    {
        let call = KExpr::new(
            ExprKind::Call {
                function: function.clone(),
                args: vec![regex.clone(), group.clone(), text.clone()],
            },
            e.span,
        );
        let captured = p.scalar(&call, input)?;
        let target = crate::scalar::kql_type_of_scalar(*ty);
        let captured = Typed::new(crate::scalar::to_dynamic(captured), KqlType::Dynamic);
        return Ok(Typed::new(p.dynamic_as(captured, target), target));
    }
    p.registered_or_unknown(c)
}

fn extract_json(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call {
        function,
        args,
        e,
        input,
        ..
    } = *c;
    if let [path, text, last] = args
        && let ExprKind::TypeOf(ty) = &last.kind
    {
        let call = KExpr::new(
            ExprKind::Call {
                function: function.clone(),
                args: vec![path.clone(), text.clone()],
            },
            e.span,
        );
        let element = p.scalar(&call, input)?;
        let target = crate::scalar::kql_type_of_scalar(*ty);
        if target == KqlType::String {
            return Ok(element);
        }
        // The element's text read as a JSON value, then converted.
        let json = crate::scalar::to_dynamic(element);
        let parsed = Typed::new(json, KqlType::Dynamic);
        return Ok(Typed::new(p.dynamic_as(parsed, target), target));
    }
    p.registered_or_unknown(c)
}

fn bag_pack_columns(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call {
        function,
        args,
        e,
        input,
        ..
    } = *c;
    let mut pairs = Vec::with_capacity(args.len() * 2);
    for arg in args {
        let ExprKind::Name(column) = &arg.kind else {
            return Err(p.error(
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
    p.call(&Ident::new("bag_pack", function.span), &pairs, e, input)
}

fn ingestion_time(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, input, .. } = *c;
    if !args.is_empty() {
        return Err(p.error(ErrorCode::BadRequest, e.span, "'ingestion_time()' takes no argument"));
    }
    let known = input
        .columns
        .iter()
        .any(|(column, kql_type)| column == "ingest_time" && *kql_type == KqlType::DateTime);
    let value = match known {
        true => crate::context::column("ingest_time"),
        false => crate::scalar::null_of(KqlType::DateTime),
    };
    Ok(Typed::new(value, KqlType::DateTime))
}

fn assert(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, .. } = *c;
    let [condition, message] = args else {
        return Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            "'assert()' takes a condition and a message",
        ));
    };
    let empty = p.empty_tabular()?;
    let holds = p
        .scalar(condition, &empty)
        .ok()
        .and_then(|v| crate::sources::constant_value(&v.expr));
    let text = p
        .scalar(message, &empty)
        .ok()
        .and_then(|v| crate::sources::constant_value(&v.expr));
    let message = match text {
        Some(ScalarValue::Utf8(Some(t)) | ScalarValue::Utf8View(Some(t)) | ScalarValue::LargeUtf8(Some(t))) => t,
        _ => String::new(),
    };
    match holds {
        Some(ScalarValue::Boolean(Some(true))) => Ok(Typed::new(datafusion::logical_expr::lit(true), KqlType::Bool)),
        Some(ScalarValue::Boolean(Some(false))) => Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            format!("assert() has failed with message: '{message}'"),
        )),
        _ => Err(p.error(
            ErrorCode::BadRequest,
            condition.span,
            "the condition of 'assert()' must be a constant bool, known before the query runs",
        )),
    }
}

fn current_database(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, .. } = *c;
    if !args.is_empty() {
        return Err(p.error(ErrorCode::BadRequest, e.span, "'current_database()' takes no argument"));
    }
    let database = datafusion::logical_expr::lit(p.options.database.clone());
    Ok(Typed::new(database, KqlType::String))
}

/// `current_principal()`: the caller's name as the gateway authenticated it.
fn current_principal(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, .. } = *c;
    if !args.is_empty() {
        return Err(p.error(ErrorCode::BadRequest, e.span, "'current_principal()' takes no argument"));
    }
    let principal = datafusion::logical_expr::lit(p.options.principal.clone());
    Ok(Typed::new(principal, KqlType::String))
}

/// `current_principal_details()`: a bag with the caller's name (`UserPrincipalName`,
/// `DisplayName`) and how it signed in (`IdentityProvider`: the gateway).
fn current_principal_details(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, .. } = *c;
    if !args.is_empty() {
        return Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            "'current_principal_details()' takes no argument",
        ));
    }
    let name = &p.options.principal;
    let details = serde_json::json!({
        "UserPrincipalName": name,
        "DisplayName": name,
        "IdentityProvider": "trawl-gateway",
    });
    let text = datafusion::logical_expr::lit(details.to_string());
    Ok(Typed::new(text, KqlType::Dynamic))
}

fn column_names_of(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, .. } = *c;
    // The column names of a tabular expression, known while planning.
    let [table] = args else {
        return Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            "'column_names_of()' takes one tabular expression",
        ));
    };
    let tabular = p.tabular(table)?;
    let names: Vec<serde_json::Value> = tabular
        .columns
        .iter()
        .map(|(column, _)| serde_json::Value::String(column.clone()))
        .collect();
    let text = serde_json::Value::Array(names).to_string();
    Ok(Typed::new(datafusion::logical_expr::lit(text), KqlType::Dynamic))
}

fn isempty(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { name, args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
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

fn isnull(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { name, args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
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

fn tostring(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
    Ok(Typed::new(to_string(value), KqlType::String))
}

fn toint(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { name, args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
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
        KqlType::DateTime | KqlType::Timespan => try_cast(cast(value.expr, DataType::Int64) / lit(100i64), target),
        _ => try_cast(value.expr, target),
    };
    Ok(Typed::new(expr, kql_type))
}

fn tobool(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
    let expr = match value.kql_type {
        KqlType::Bool => value.expr,
        KqlType::String | KqlType::Dynamic => try_cast(f::lower(to_string(value)), DataType::Boolean),
        _ => try_cast(value.expr, DataType::Boolean),
    };
    Ok(Typed::new(expr, KqlType::Bool))
}

/// `gettype(value)`: a typed value's type is known here (`int`, `guid`, `decimal` included);
/// a dynamic value's is read from the value (`__gettype_dynamic`).
fn gettype(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, e, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
    if value.kql_type == KqlType::Dynamic {
        let call = KExpr::new(
            ExprKind::Call {
                function: Ident::new("__gettype_dynamic", e.span),
                args: args.to_vec(),
            },
            e.span,
        );
        return p.scalar(&call, input);
    }
    Ok(Typed::new(lit(value.kql_type.as_str()), KqlType::String))
}

fn strlen(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = p.scalar(&args[0], input)?;
    Ok(Typed::new(
        cast(f::character_length(to_string(value)), DataType::Int64),
        KqlType::Long,
    ))
}

fn tolower(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { name, args, input, .. } = *c;
    arity(p, c, 1)?;
    let value = to_string(p.scalar(&args[0], input)?);
    let expr = if name == "tolower" {
        f::lower(value)
    } else {
        f::upper(value)
    };
    Ok(Typed::new(expr, KqlType::String))
}

fn strcat(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    let mut parts = Vec::with_capacity(args.len());
    for arg in args {
        parts.push(to_string(p.scalar(arg, input)?));
    }
    // Metered: `concat` builds a whole batch's strings at once (`trawl_functions::strcat`).
    Ok(Typed::new(trawl_functions::strcat::udf().call(parts), KqlType::String))
}

fn now(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, .. } = *c;
    let now = p.options.now;
    match args {
        [] => Ok(Typed::new(datetime_literal(now), KqlType::DateTime)),
        [offset] => {
            let offset = p.timespan_constant(offset)?;
            Ok(Typed::new(
                datetime_literal(now.saturating_add(offset)),
                KqlType::DateTime,
            ))
        }
        _ => Err(p.error(ErrorCode::BadRequest, e.span, "'now()' takes at most one argument")),
    }
}

fn ago(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, .. } = *c;
    arity(p, c, 1)?;
    let offset = p.timespan_constant(&args[0])?;
    Ok(Typed::new(
        datetime_literal(p.options.now.saturating_sub(offset)),
        KqlType::DateTime,
    ))
}

fn iff(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    arity(p, c, 3)?;
    let condition = p.scalar(&args[0], input)?;
    let condition = p.boolean(condition, &args[0])?;
    let then = p.scalar(&args[1], input)?;
    let otherwise = p.scalar(&args[2], input)?;
    let kql_type = then.kql_type;
    let expr = when(condition, then.expr)
        .otherwise(otherwise.expr)
        .map_err(|e| crate::context::internal(&e))?;
    Ok(Typed::new(expr, kql_type))
}

fn bin_auto(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let call = bin_auto_equivalent(p, c.function, c.args, c.e, c.input)?;
    p.scalar(&call, c.input)
}

/// The `bin` or `bin_at` call that `bin_auto(args)` (the call `e`) stands for.
pub(crate) fn bin_auto_equivalent(
    p: &mut Planner<'_>,
    function: &Ident,
    args: &[KExpr],
    e: &KExpr,
    input: &Tabular,
) -> Result<KExpr, TrawlError> {
    // With `set query_bin_auto_size`: bin_at(value, size, query_bin_auto_at), or bin(value,
    // size) without a fixed point.
    if let (Some(size), [value]) = (p.bin_auto_size.clone(), args) {
        let mut bin_args = vec![value.clone(), size];
        let name = match p.bin_auto_at.clone() {
            Some(at) => {
                bin_args.push(at);
                "bin_at"
            }
            None => "bin",
        };
        return Ok(KExpr::new(
            ExprKind::Call {
                function: trawl_kql::ast::Ident::new(name, function.span),
                args: bin_args,
            },
            e.span,
        ));
    }
    // Else bin(ts, size) with a size from a ladder of round intervals giving 750–1,500
    // bins over the query window (one day when the query has no start).
    let (Some(value), 1..=2) = (args.first(), args.len()) else {
        return Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            "expected bin_auto(timestamp[, min_size])",
        ));
    };
    let floor = match args.get(1) {
        None => 0,
        Some(arg) => {
            let empty = p.empty_tabular()?;
            let typed = p.scalar(arg, &empty)?;
            match (typed.kql_type, crate::sources::constant_value(&typed.expr)) {
                (KqlType::Timespan, Some(datafusion::common::ScalarValue::DurationNanosecond(Some(n)))) => n,
                _ => {
                    return Err(p.error(
                        ErrorCode::BadRequest,
                        arg.span,
                        "bin_auto's smallest bin size must be a constant timespan",
                    ));
                }
            }
        }
    };
    let window = match p.options.since {
        Some(since) => p.options.until.unwrap_or(p.options.now).saturating_sub(since),
        None => 86_400_000_000_000,
    };
    let size = auto_bin_size(window).max(floor);
    let typed = p.scalar(value, input)?;
    if typed.kql_type != KqlType::DateTime {
        return Err(p.error(
            ErrorCode::TypeMismatch,
            value.span,
            format!("bin_auto() takes a datetime, found {}", typed.kql_type),
        ));
    }
    Ok(KExpr::new(
        ExprKind::Call {
            function: trawl_kql::ast::Ident::new("bin", function.span),
            args: vec![
                value.clone(),
                KExpr::new(ExprKind::Literal(Literal::Timespan(size)), e.span),
            ],
        },
        e.span,
    ))
}

fn column_ifexists(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    arity(p, c, 2)?;
    // The name must be known while planning: a literal, or a parameter bound to one.
    let name_value = p.scalar(&args[0], input)?;
    let Some(
        datafusion::common::ScalarValue::Utf8(Some(column_name))
        | datafusion::common::ScalarValue::Utf8View(Some(column_name)),
    ) = crate::sources::constant_value(&name_value.expr)
    else {
        return Err(p.error(
            ErrorCode::BadRequest,
            args[0].span,
            "column_ifexists() takes a constant column name",
        ));
    };
    let column_name = &column_name;
    match input.column_type(column_name) {
        Some(kql_type) => Ok(Typed::new(crate::context::column(column_name), kql_type)),
        None => p.scalar(&args[1], input),
    }
}

fn pack_all(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call {
        function,
        args,
        e,
        input,
        ..
    } = *c;
    // A bag of every column of the row; `pack_all(true)` leaves out null and empty values.
    let dense = match args.first() {
        None => false,
        Some(arg) => match &arg.kind {
            ExprKind::Literal(Literal::Bool(dense)) => *dense,
            _ => {
                return Err(p.error(
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
    p.scalar(&call, input)
}

fn case(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, input, .. } = *c;
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            "'case()' takes condition, value pairs and an else value",
        ));
    }
    let mut otherwise = p.scalar(&args[args.len() - 1], input)?;
    let kql_type = otherwise.kql_type;
    let mut pairs = Vec::new();
    for pair in args[..args.len() - 1].chunks(2) {
        let condition = p.scalar(&pair[0], input)?;
        let condition = p.boolean(condition, &pair[0])?;
        let value = p.scalar(&pair[1], input)?;
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

fn coalesce(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, e, input, .. } = *c;
    if args.is_empty() {
        return Err(p.error(
            ErrorCode::BadRequest,
            e.span,
            "'coalesce()' needs at least one argument",
        ));
    }
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(p.scalar(arg, input)?);
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

fn bin(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    let Call { args, input, .. } = *c;
    arity(p, c, 2)?;
    let value = p.scalar(&args[0], input)?;
    p.bin(value, &args[1], input)
}

/// `replace(regex, rewrite, text)`, the deprecated form of `replace_regex(text, regex, rewrite)`.
fn replace(p: &mut Planner<'_>, c: &Call<'_>) -> Result<Typed, TrawlError> {
    arity(p, c, 3)?;
    let Call {
        args,
        e,
        input,
        function,
        ..
    } = *c;
    let reordered = vec![args[2].clone(), args[0].clone(), args[1].clone()];
    p.call(&Ident::new("replace_regex", function.span), &reordered, e, input)
}

#[cfg(test)]
#[path = "planner_functions_tests.rs"]
mod tests;
