//! `mv-expand`: one row per item of a dynamic array (or entry of a bag). Several items are
//! expanded side by side, padded with nulls to the longest. A column expanded in place keeps
//! its position; `name = expr` adds a column at the end. `to typeof(T)` converts the items.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Column;
use datafusion::logical_expr::ScalarUDF;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, cast, lit};
use std::sync::Arc;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_functions::lists::JsonItemsUdf;
use trawl_kql::ast::{ExprKind, MvExpand};

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::names::default_name;
use crate::scalar::{kql_type_of_scalar, to_dynamic};

/// The row number and item position columns that put expanded rows back in order.
const ROW: &str = "__trawl_expand_row";
const ITEM: &str = "__trawl_expand_item";

impl Planner<'_> {
    pub fn mv_expand(&mut self, input: Tabular, expand: &MvExpand) -> Result<Tabular, TrawlError> {
        if expand.items.is_empty() {
            return Err(self.error(
                ErrorCode::BadRequest,
                trawl_kql::Span::default(),
                "mv-expand needs a column to expand",
            ));
        }
        let items_udf = Arc::new(ScalarUDF::from(JsonItemsUdf::new()));
        // `bagexpansion=array` (or `kind=array`): a bag's entries as `[key, value]` arrays.
        let bags_as_arrays = expand.params.iter().any(|p| {
            (p.name.eq_ignore_ascii_case("bagexpansion") || p.name.eq_ignore_ascii_case("kind"))
                && matches!(&p.value.kind, ExprKind::Name(ident) if ident.name.eq_ignore_ascii_case("array"))
        });
        // Stage 1: every input column, plus one list column per expanded item.
        let mut stage: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        let mut targets = Vec::with_capacity(expand.items.len());
        for (index, item) in expand.items.iter().enumerate() {
            let value = self.scalar(&item.expr.expr, &input)?;
            if !matches!(value.kql_type, KqlType::Dynamic | KqlType::String) {
                return Err(self.error(
                    ErrorCode::TypeMismatch,
                    item.span,
                    format!("mv-expand needs a dynamic value, found {}", value.kql_type),
                ));
            }
            let name = match (item.expr.name(), &item.expr.expr.kind) {
                (Some(ident), _) => ident.name.clone(),
                (None, ExprKind::Name(ident)) => ident.name.clone(),
                (None, _) => default_name(&item.expr.expr, index + 1),
            };
            let list_name = format!("__trawl_expand_{index}");
            let json = to_dynamic(value);
            stage.push(
                Expr::ScalarFunction(ScalarFunction::new_udf(
                    items_udf.clone(),
                    vec![json, lit(bags_as_arrays)],
                ))
                .alias(&list_name),
            );
            let target = item.to_type.map_or(KqlType::Dynamic, kql_type_of_scalar);
            targets.push((name, list_name, target));
        }
        let lists: Vec<Column> = targets
            .iter()
            .map(|(_, list, _)| Column::new_unqualified(list))
            .collect();
        // Rows sorted before the expansion stay in that order, each row's items in theirs: the
        // unnest does not keep the order, so rows are numbered (a window tied to the sort keys)
        // with their items, and sorted back by both.
        let mut base = input.builder();
        let mut sequence = None;
        let serial = crate::context::serial_order(&input.plan).is_some();
        if serial {
            let number = crate::windows::in_serial_order(datafusion::functions_window::expr_fn::row_number(), &input);
            let windowed =
                LogicalPlanBuilder::window_plan(input.plan.clone(), vec![number]).map_err(|e| internal(&e))?;
            let schema = windowed.schema().clone();
            stage.push(Expr::Column(Column::from(schema.qualified_field(schema.fields().len() - 1))).alias(ROW));
            base = LogicalPlanBuilder::from(windowed);
            sequence = Some(vec![column(ROW).sort(true, false), column(ITEM).sort(true, false)]);
        }
        // Each item's position in its row's list: for the serial order, `with_itemindex` and
        // `limit`.
        let index_name = item_index_name(&expand.params);
        let limit = match &expand.limit {
            Some(limit) => {
                let value = self.scalar(limit, &input)?;
                if !matches!(value.kql_type, KqlType::Int | KqlType::Long) {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        limit.span,
                        "mv-expand's limit is a whole number",
                    ));
                }
                Some(value.expr)
            }
            None => None,
        };
        let numbered = serial || index_name.is_some() || limit.is_some();
        if numbered {
            let lengths: Vec<Expr> = targets
                .iter()
                .map(|(_, list, _)| {
                    let list = stage
                        .iter()
                        .find(|e| e.schema_name().to_string() == *list)
                        .map(|e| e.clone().unalias())
                        .unwrap_or_else(|| column(list));
                    datafusion::functions_nested::expr_fn::cardinality(list)
                })
                .collect();
            let longest = if lengths.len() == 1 {
                lengths.into_iter().next().unwrap_or_else(|| lit(0u64))
            } else {
                datafusion::functions::expr_fn::greatest(lengths)
            };
            stage.push(
                datafusion::functions_nested::expr_fn::range(
                    lit(0i64),
                    cast(
                        datafusion::functions::expr_fn::coalesce(vec![longest, lit(0u64)]),
                        DataType::Int64,
                    ),
                    lit(1i64),
                )
                .alias(ITEM),
            );
        }
        let mut lists = lists;
        if numbered {
            lists.push(Column::new_unqualified(ITEM));
        }
        let mut unnested = base
            .project(stage)
            .and_then(|b| b.unnest_columns_with_options(lists, Default::default()))
            .map_err(|e| internal(&e))?;
        if let Some(limit) = limit {
            unnested = unnested.filter(column(ITEM).lt(limit)).map_err(|e| internal(&e))?;
        }
        if let Some(keys) = sequence {
            unnested = unnested.sort(keys).map_err(|e| internal(&e))?;
        }
        // Stage 2: put each expanded value in its column, converted as asked.
        let mut columns: Vec<(String, KqlType)> = input.columns.clone();
        for (name, _, target) in &targets {
            match columns.iter_mut().find(|(n, _)| n == name) {
                Some(existing) => existing.1 = *target,
                None => columns.push((name.clone(), *target)),
            }
        }
        if let Some(index_name) = &index_name {
            columns.retain(|(n, _)| n != index_name);
            columns.push((index_name.clone(), KqlType::Long));
        }
        let mut exprs = Vec::with_capacity(columns.len());
        for (name, kql_type) in &columns {
            let value = match targets.iter().find(|(n, _, _)| n == name) {
                _ if Some(name) == index_name.as_ref() => column(ITEM),
                Some((_, list, target)) => self.dynamic_as(Typed::new(column(list), KqlType::Dynamic), *target),
                None => column(name),
            };
            exprs.push(value.alias(name));
            let _ = kql_type;
        }
        let plan = unnested
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// A dynamic value converted to `target` (as `to typeof(...)` does).
    pub fn dynamic_as(&self, value: Typed, target: KqlType) -> Expr {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::try_cast;
        if target == KqlType::Dynamic {
            return value.expr;
        }
        let text = crate::scalar::to_string(value);
        let data_type = trawl_functions::types::arrow_type(target);
        match target {
            KqlType::String | KqlType::Guid => text,
            KqlType::DateTime => match trawl_functions::registry::lookup("todatetime") {
                Some(todatetime) => Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
                    std::sync::Arc::new((todatetime.udf)()),
                    vec![text],
                )),
                None => try_cast(text, data_type),
            },
            KqlType::Int | KqlType::Long => datafusion::functions::expr_fn::coalesce(vec![
                try_cast(text.clone(), data_type.clone()),
                try_cast(try_cast(text, DataType::Float64), data_type),
            ]),
            _ => try_cast(text, data_type),
        }
    }
}

/// The column `with_itemindex = name` asks for, if it does.
pub(crate) fn item_index_name(params: &[trawl_kql::ast::OperatorParam]) -> Option<String> {
    params
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case("with_itemindex"))
        .map(|p| match &p.value.kind {
            ExprKind::Name(ident) => ident.name.clone(),
            _ => "index".to_string(),
        })
}
