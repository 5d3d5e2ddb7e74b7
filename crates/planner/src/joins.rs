//! `join`, `lookup` and `union`.
//!
//! Join output: the left columns, then the right columns; a right column whose name is taken
//! gets a `1` suffix (`key1`), as Kusto does. Kinds: `innerunique` (the default: one left row
//! per key, then inner), `inner`, `leftouter`, `rightouter`, `fullouter`, `leftanti`,
//! `rightanti`, `leftsemi`, `rightsemi`. `lookup` is a left outer (or inner) join that adds
//! the right side's non-key columns only.

use datafusion::common::{Column, JoinType};
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{BinaryOp, Expr as KExpr, ExprKind, Join, OperatorParam, Union};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, column, internal};
use crate::scalar::null_of;

const LEFT: &str = "__trawl_left";
const RIGHT: &str = "__trawl_right";

fn side(qualifier: &str, name: &str) -> Expr {
    Expr::Column(Column::new(Some(qualifier), name))
}

/// The word value of an operator option (`kind=inner`), lowercased.
pub fn param_word(params: &[OperatorParam], name: &str) -> Option<String> {
    params
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .and_then(|p| match &p.value.kind {
            ExprKind::Name(ident) => Some(ident.name.to_ascii_lowercase()),
            ExprKind::Literal(trawl_kql::ast::Literal::String(s)) => Some(s.to_ascii_lowercase()),
            ExprKind::Literal(trawl_kql::ast::Literal::Bool(b)) => Some(b.to_string()),
            _ => None,
        })
}

/// Appends the right side's `added` columns (read under `qualifier`) to a join's output: a
/// name already taken gets a `1` suffix (`key1`, then `key2`), as Kusto does.
pub fn append_right<'c>(
    exprs: &mut Vec<Expr>,
    columns: &mut Vec<(String, KqlType)>,
    added: impl Iterator<Item = &'c (String, KqlType)>,
    qualifier: &str,
) {
    for (name, kql_type) in added {
        let mut output = name.clone();
        let mut suffix = 1;
        while columns.iter().any(|(n, _)| *n == output) {
            output = format!("{name}{suffix}");
            suffix += 1;
        }
        exprs.push(side(qualifier, name).alias(&output));
        columns.push((output, *kql_type));
    }
}

impl Planner<'_> {
    /// The (left, right) key column names of `on` conditions.
    fn join_keys(&self, on: &[KExpr], left: &Tabular, right: &Tabular) -> Result<Vec<(String, String)>, TrawlError> {
        let mut keys = Vec::with_capacity(on.len());
        for condition in on {
            let (l, r) = match &condition.kind {
                ExprKind::Name(ident) => (ident.name.clone(), ident.name.clone()),
                ExprKind::Binary {
                    op: BinaryOp::Eq,
                    left: a,
                    right: b,
                } => {
                    let side_of = |e: &KExpr| match &e.kind {
                        ExprKind::Member { target, member } => match &target.kind {
                            ExprKind::Name(t) if t.name == "$left" => Some((true, member.name.clone())),
                            ExprKind::Name(t) if t.name == "$right" => Some((false, member.name.clone())),
                            _ => None,
                        },
                        _ => None,
                    };
                    match (side_of(a), side_of(b)) {
                        (Some((true, l)), Some((false, r))) | (Some((false, r)), Some((true, l))) => (l, r),
                        _ => {
                            return Err(self.error(
                                ErrorCode::BadRequest,
                                condition.span,
                                "a join condition is a column name or '$left.a == $right.b'",
                            ));
                        }
                    }
                }
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        condition.span,
                        "a join condition is a column name or '$left.a == $right.b'",
                    ));
                }
            };
            let Some(left_type) = left.column_type(&l) else {
                return Err(self.error(
                    ErrorCode::UnknownColumn,
                    condition.span,
                    format!("unknown column '{l}' on the left side"),
                ));
            };
            let Some(right_type) = right.column_type(&r) else {
                return Err(self.error(
                    ErrorCode::UnknownColumn,
                    condition.span,
                    format!("unknown column '{r}' on the right side"),
                ));
            };
            let compatible = left_type == right_type || (left_type.is_numeric() && right_type.is_numeric());
            if !compatible {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    condition.span,
                    format!("join keys '{l}' ({left_type}) and '{r}' ({right_type}) have different types"),
                ));
            }
            keys.push((l, r));
        }
        if keys.is_empty() {
            return Err(self.error(ErrorCode::BadRequest, Span::default(), "a join needs 'on' conditions"));
        }
        Ok(keys)
    }

    pub fn join(&mut self, left: Tabular, join: &Join, span: Span, lookup: bool) -> Result<Tabular, TrawlError> {
        let right = self.tabular(&join.right)?;
        let keys = self.join_keys(&join.on, &left, &right)?;
        let kind = param_word(&join.params, "kind").unwrap_or_else(|| {
            if lookup {
                "leftouter".into()
            } else {
                "innerunique".into()
            }
        });
        let join_type = match kind.as_str() {
            "innerunique" | "inner" => JoinType::Inner,
            "leftouter" => JoinType::Left,
            "rightouter" => JoinType::Right,
            "fullouter" | "outer" => JoinType::Full,
            "leftanti" | "anti" | "leftantisemi" => JoinType::LeftAnti,
            "rightanti" | "rightantisemi" => JoinType::RightAnti,
            "leftsemi" | "semi" => JoinType::LeftSemi,
            "rightsemi" => JoinType::RightSemi,
            other => return Err(self.error(ErrorCode::BadRequest, span, format!("unknown join kind '{other}'"))),
        };
        if lookup && !matches!(join_type, JoinType::Left | JoinType::Inner) {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "lookup supports kind=leftouter or kind=inner",
            ));
        }
        let mut left_builder = left.builder();
        if kind == "innerunique" {
            // One left row per key.
            let on: Vec<Expr> = keys.iter().map(|(l, _)| column(l)).collect();
            let select: Vec<Expr> = left.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
            left_builder = left_builder.distinct_on(on, select, None).map_err(|e| internal(&e))?;
        }
        let left_plan = left_builder
            .alias(LEFT)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let right_plan = right
            .builder()
            .alias(RIGHT)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let left_keys: Vec<Column> = keys.iter().map(|(l, _)| Column::new(Some(LEFT), l)).collect();
        let right_keys: Vec<Column> = keys.iter().map(|(_, r)| Column::new(Some(RIGHT), r)).collect();
        let joined = LogicalPlanBuilder::from(left_plan)
            .join(right_plan, join_type, (left_keys, right_keys), None)
            .map_err(|e| internal(&e))?;

        let mut exprs = Vec::new();
        let mut columns: Vec<(String, KqlType)> = Vec::new();
        let keep_left = !matches!(join_type, JoinType::RightAnti | JoinType::RightSemi);
        let keep_right = !matches!(join_type, JoinType::LeftAnti | JoinType::LeftSemi);
        if keep_left {
            for (name, kql_type) in &left.columns {
                // lookup and Kusto's equal-name keys of a right outer join read the key from
                // whichever side has it.
                // lookup reads an equal-name key from whichever side has it.
                let value = match keys.iter().find(|(l, r)| l == name && r == name) {
                    Some(_) if lookup => {
                        datafusion::functions::expr_fn::coalesce(vec![side(LEFT, name), side(RIGHT, name)])
                    }
                    _ => side(LEFT, name),
                };
                exprs.push(value.alias(name));
                columns.push((name.clone(), *kql_type));
            }
        }
        if keep_right {
            let added = right
                .columns
                .iter()
                .filter(|(name, _)| !(lookup && keys.iter().any(|(_, r)| r == name)));
            append_right(&mut exprs, &mut columns, added, RIGHT);
        }
        let plan = joined
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// `union [kind=outer|inner] [withsource=col] T1, T2, ...` (as a pipe, the input is first).
    pub fn union(&mut self, input: Option<Tabular>, union: &Union, span: Span) -> Result<Tabular, TrawlError> {
        let mut legs: Vec<(String, Tabular)> = Vec::new();
        if let Some(input) = input {
            legs.push((String::new(), input));
        }
        let fuzzy = param_word(&union.params, "isfuzzy").as_deref() == Some("true");
        for table in &union.tables {
            // `Prefix*`: every visible table (or view) whose name matches, in name order.
            if let ExprKind::Name(ident) = &table.kind
                && ident.name.contains('*')
            {
                let mut names: Vec<String> = self
                    .tables
                    .table_names()
                    .into_iter()
                    .filter(|t| crate::names::matches_pattern(&ident.name, t) && self.is_visible(t))
                    .collect();
                names.sort();
                if names.is_empty() && !fuzzy {
                    return Err(self.error(
                        ErrorCode::UnknownTable,
                        ident.span,
                        format!("no table matches '{}' (isfuzzy=true allows none)", ident.name),
                    ));
                }
                for name in names {
                    let tabular = self.table_reference(&name, ident.span)?;
                    legs.push((name, tabular));
                }
                continue;
            }
            let label = match &table.kind {
                ExprKind::Name(ident) => ident.name.clone(),
                // A leg that ends in `| as name` is labeled by that name.
                ExprKind::Pipeline { operators, .. } => match operators.last().map(|o| &o.kind) {
                    Some(trawl_kql::ast::OperatorKind::As(binding)) => binding.name.name.clone(),
                    _ => format!("union_arg{}", legs.len()),
                },
                _ => format!("union_arg{}", legs.len()),
            };
            legs.push((label, self.tabular(table)?));
        }
        if legs.is_empty() {
            return Err(self.error(ErrorCode::BadRequest, span, "union needs at least one table"));
        }
        let inner = param_word(&union.params, "kind").as_deref() == Some("inner");
        let source_column = union
            .params
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case("withsource"))
            .and_then(|p| match &p.value.kind {
                ExprKind::Name(ident) => Some(ident.name.clone()),
                _ => None,
            });
        // Output columns: by name across the legs (outer: all; inner: common to every leg). A
        // name whose type differs between legs becomes one column per type: `x_long`, `x_int`.
        let mut columns: Vec<(String, KqlType)> = Vec::new();
        let mut sources: Vec<(String, KqlType)> = Vec::new();
        for (_, leg) in &legs {
            for (name, kql_type) in &leg.columns {
                let conflicting = legs
                    .iter()
                    .any(|(_, other)| other.column_type(name).is_some_and(|t| t != *kql_type));
                let output = if conflicting && !inner {
                    format!("{name}_{}", kql_type.as_str())
                } else {
                    name.clone()
                };
                if !columns.iter().any(|(n, _)| *n == output) {
                    columns.push((output, *kql_type));
                    sources.push((name.clone(), *kql_type));
                }
            }
        }
        if inner {
            let keep: Vec<bool> = columns
                .iter()
                .map(|(name, _)| legs.iter().all(|(_, leg)| leg.column_type(name).is_some()))
                .collect();
            let mut index = 0;
            columns.retain(|_| {
                index += 1;
                keep[index - 1]
            });
            let mut index = 0;
            sources.retain(|_| {
                index += 1;
                keep[index - 1]
            });
        }
        let mut plans = Vec::with_capacity(legs.len());
        for (label, leg) in &legs {
            let mut exprs = Vec::with_capacity(columns.len() + 1);
            if let Some(source) = &source_column {
                exprs.push(datafusion::logical_expr::lit(label.clone()).alias(source));
            }
            for ((output, kql_type), (name, source_type)) in columns.iter().zip(&sources) {
                let data_type = trawl_functions::types::arrow_type(*kql_type);
                let leg_type = leg
                    .column_type(name)
                    .filter(|t| inner || *output == *name || t == source_type);
                let value = match leg_type {
                    Some(t) if t == *kql_type => datafusion::logical_expr::cast(column(name), data_type),
                    Some(_) if *kql_type == KqlType::Dynamic => crate::scalar::to_dynamic(crate::context::Typed::new(
                        column(name),
                        leg.column_type(name).unwrap_or(KqlType::Dynamic),
                    )),
                    Some(_) => datafusion::logical_expr::cast(column(name), data_type),
                    None => null_of(*kql_type),
                };
                exprs.push(value.alias(output));
            }
            plans.push(
                leg.builder()
                    .project(exprs)
                    .and_then(|b| b.build())
                    .map_err(|e| internal(&e))?,
            );
        }
        let mut plans = plans.into_iter();
        let Some(first) = plans.next() else {
            return Err(self.error(ErrorCode::BadRequest, span, "union needs at least one table"));
        };
        let mut builder = LogicalPlanBuilder::from(first);
        for plan in plans {
            builder = builder.union(plan).map_err(|e| internal(&e))?;
        }
        let plan = builder.build().map_err(|e| internal(&e))?;
        if let Some(source) = source_column {
            columns.insert(0, (source, KqlType::String));
        }
        Ok(Tabular { plan, columns })
    }
}
