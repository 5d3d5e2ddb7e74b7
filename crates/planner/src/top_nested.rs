//! `top-nested [N] of key by [name =] aggregate [asc|desc], ...`: a hierarchy of top groups.
//! Level k groups by the keys of levels 1..k, keeps its rows under the parents kept by level
//! k-1, and within each parent the N best by its aggregate (descending unless `asc`).
//! Output: `key1, aggregate1, key2, aggregate2, …` (an unnamed aggregate is
//! `aggregated_<key>`). `with others` is not supported yet.

use datafusion::common::{Column, JoinType};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, LogicalPlanBuilder, SortExpr, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{ExprKind, NamedExpr, SortOrder, TopNestedLevel};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, column, internal};
use crate::names::default_name;

impl Planner<'_> {
    pub fn top_nested(&mut self, input: Tabular, levels: &[TopNestedLevel], span: Span) -> Result<Tabular, TrawlError> {
        let mut keys: Vec<(String, KqlType, Expr)> = Vec::new();
        let mut result: Option<Tabular> = None;
        for (depth, level) in levels.iter().enumerate() {
            if level.with_others.is_some() {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    span,
                    "top-nested 'with others' is not supported yet",
                ));
            }
            let limit = match level.count.as_ref().map(|c| &c.kind) {
                None => None,
                Some(ExprKind::Literal(trawl_kql::ast::Literal::Long(n))) if *n >= 0 => Some(*n as u64),
                Some(ExprKind::Literal(trawl_kql::ast::Literal::Int(n))) if *n >= 0 => Some(*n as u64),
                Some(_) => {
                    return Err(self.error(ErrorCode::BadRequest, span, "top-nested takes a whole number of rows"));
                }
            };
            let key_value = self.scalar(&level.of.expr, &input)?;
            let key_name = level
                .of
                .name()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| default_name(&level.of.expr, depth + 1));
            keys.push((key_name.clone(), key_value.kql_type, key_value.expr));
            let aggregate_name = level
                .by
                .name()
                .map(|i| i.name.clone())
                .unwrap_or_else(|| format!("aggregated_{key_name}"));
            let by = NamedExpr {
                names: Vec::new(),
                expr: level.by.expr.clone(),
                span: level.by.span,
            };
            let output = self.one_aggregate_output(
                &by,
                &input,
                &[],
                (level.by.span, "top-nested needs an aggregate with one result"),
            )?;
            // This level: aggregate by all keys so far.
            let group: Vec<Expr> = keys.iter().map(|(n, _, e)| e.clone().alias(n)).collect();
            let aggregated = input
                .builder()
                .aggregate(group, vec![output.aggregate.alias(&aggregate_name)])
                .and_then(|b| {
                    b.project(
                        keys.iter()
                            .map(|(n, _, _)| column(n).alias(n))
                            .chain(std::iter::once(
                                output.finish.apply(column(&aggregate_name)).alias(&aggregate_name),
                            ))
                            .collect::<Vec<_>>(),
                    )
                })
                .and_then(|b| b.build())
                .map_err(|e| internal(&e))?;
            let mut level_columns: Vec<(String, KqlType)> = keys.iter().map(|(n, t, _)| (n.clone(), *t)).collect();
            level_columns.push((aggregate_name.clone(), output.kql_type));
            // Under the kept parents, with their aggregates.
            let (plan, columns) = match &result {
                None => (aggregated, level_columns),
                Some(parent) => {
                    let parent_keys: Vec<String> = keys[..keys.len() - 1].iter().map(|(n, _, _)| n.clone()).collect();
                    let left = LogicalPlanBuilder::from(parent.plan.clone())
                        .alias("__trawl_parent")
                        .and_then(|b| b.build())
                        .map_err(|e| internal(&e))?;
                    let right = LogicalPlanBuilder::from(aggregated)
                        .alias("__trawl_level")
                        .and_then(|b| b.build())
                        .map_err(|e| internal(&e))?;
                    let joined = LogicalPlanBuilder::from(left)
                        .join(
                            right,
                            JoinType::Inner,
                            (
                                parent_keys
                                    .iter()
                                    .map(|k| Column::new(Some("__trawl_parent"), k))
                                    .collect::<Vec<_>>(),
                                parent_keys
                                    .iter()
                                    .map(|k| Column::new(Some("__trawl_level"), k))
                                    .collect::<Vec<_>>(),
                            ),
                            None,
                        )
                        .map_err(|e| internal(&e))?;
                    let mut exprs = Vec::new();
                    let mut columns = Vec::new();
                    for (name, kql_type) in &parent.columns {
                        exprs.push(Expr::Column(Column::new(Some("__trawl_parent"), name)).alias(name));
                        columns.push((name.clone(), *kql_type));
                    }
                    exprs.push(Expr::Column(Column::new(Some("__trawl_level"), &key_name)).alias(&key_name));
                    columns.push((key_name.clone(), key_value.kql_type));
                    exprs
                        .push(Expr::Column(Column::new(Some("__trawl_level"), &aggregate_name)).alias(&aggregate_name));
                    columns.push((aggregate_name.clone(), output.kql_type));
                    (
                        joined
                            .project(exprs)
                            .and_then(|b| b.build())
                            .map_err(|e| internal(&e))?,
                        columns,
                    )
                }
            };
            // The N best within each parent.
            let plan = match limit {
                None => plan,
                Some(n) => {
                    let parents: Vec<Expr> = keys[..keys.len() - 1].iter().map(|(k, _, _)| column(k)).collect();
                    let ascending = level.order == Some(SortOrder::Asc);
                    let mut rank =
                        row_number().order_by(vec![SortExpr::new(column(&aggregate_name), ascending, !ascending)]);
                    if !parents.is_empty() {
                        rank = rank.partition_by(parents);
                    }
                    let rank = rank.build().map_err(|e| internal(&e))?;
                    let mut exprs: Vec<Expr> = columns.iter().map(|(n, _)| column(n).alias(n)).collect();
                    exprs.push(rank.alias("__trawl_rank"));
                    let current = Tabular {
                        plan,
                        columns: columns.clone(),
                    };
                    crate::windows::with_windows(&current, &exprs)?
                        .project(exprs)
                        .and_then(|b| b.filter(column("__trawl_rank").lt_eq(lit(n))))
                        .and_then(|b| b.project(columns.iter().map(|(c, _)| column(c).alias(c)).collect::<Vec<_>>()))
                        .and_then(|b| b.build())
                        .map_err(|e| internal(&e))?
                }
            };
            result = Some(Tabular { plan, columns });
        }
        result.ok_or_else(|| self.error(ErrorCode::BadRequest, span, "top-nested needs at least one level"))
    }
}
