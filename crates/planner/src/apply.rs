//! `mv-apply items on (sub-pipeline)`: each input row's expanded items form a small table,
//! the sub-pipeline runs on it, and its rows are joined back to the input row (rows whose
//! sub-pipeline yields nothing are dropped).
//!
//! Lowering: the input rows are numbered, expanded once, and the sub-pipeline runs on all
//! rows at once with every operator confined to its row: row-local operators (`where`,
//! `extend`, `project`, …) as they are; `summarize`, `count` and `sort` grouped by the row
//! number; `take` and `top` through row numbers within each row's items. `with_itemindex=`
//! adds the item's position.

use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, JoinType, LogicalPlanBuilder, SortExpr, cast, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Ident, MvApply, MvExpand, NamedExpr, Operator, OperatorKind, Summarize};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, column, internal};

const ROW: &str = "__trawl_apply_row";

fn name_expr(name: &str, span: Span) -> KExpr {
    KExpr::new(ExprKind::Name(Ident::new(name, span)), span)
}

impl Planner<'_> {
    pub fn mv_apply(&mut self, input: Tabular, apply: &MvApply, span: Span) -> Result<Tabular, TrawlError> {
        // Number the input rows.
        let numbered_exprs: Vec<Expr> = input
            .columns
            .iter()
            .map(|(n, _)| column(n).alias(n))
            .chain(std::iter::once(
                cast(row_number(), datafusion::arrow::datatypes::DataType::Int64).alias(ROW),
            ))
            .collect();
        let numbered_plan = crate::windows::with_windows(&input, &numbered_exprs)?
            .project(numbered_exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let mut numbered_columns = input.columns.clone();
        numbered_columns.push((ROW.to_string(), KqlType::Long));
        let numbered = Tabular {
            plan: numbered_plan,
            columns: numbered_columns,
        };

        // Expand, keep only the row number and the expanded columns.
        let expand = MvExpand {
            params: Vec::new(),
            items: apply.items.clone(),
            limit: None,
        };
        let expanded = self.mv_expand(numbered.clone(), &expand)?;
        let item_names: Vec<String> = apply
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| match (item.expr.name(), &item.expr.expr.kind) {
                (Some(ident), _) => ident.name.clone(),
                (None, ExprKind::Name(ident)) => ident.name.clone(),
                (None, _) => crate::names::default_name(&item.expr.expr, i + 1),
            })
            .collect();
        let mut sub_columns: Vec<(String, KqlType)> = vec![(ROW.to_string(), KqlType::Long)];
        let mut sub_exprs = vec![column(ROW).alias(ROW)];
        for name in &item_names {
            let kql_type = expanded.column_type(name).unwrap_or(KqlType::Dynamic);
            sub_exprs.push(column(name).alias(name));
            sub_columns.push((name.clone(), kql_type));
        }
        if let Some(index_name) = crate::expand::item_index_name(&apply.params) {
            let position = row_number()
                .partition_by(vec![column(ROW)])
                .build()
                .map_err(|e| internal(&e))?;
            sub_exprs
                .push((cast(position, datafusion::arrow::datatypes::DataType::Int64) - lit(1i64)).alias(&index_name));
            sub_columns.push((index_name, KqlType::Long));
        }
        let sub_plan = crate::windows::with_windows(&expanded, &sub_exprs)?
            .project(sub_exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let mut current = Tabular {
            plan: sub_plan,
            columns: sub_columns,
        };

        // The sub-pipeline, confined to each row.
        for operator in &apply.subquery {
            current = self.per_row_operator(current, operator)?;
        }
        if current.column_type(ROW).is_none() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "the mv-apply sub-pipeline must keep its rows' identity",
            ));
        }

        // Join back: the input's columns (those expanded in place left out), then the results.
        let outputs: Vec<(String, KqlType)> = current.columns.iter().filter(|(n, _)| n != ROW).cloned().collect();
        let left = numbered
            .builder()
            .alias("__trawl_apply_input")
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let right = current
            .builder()
            .alias("__trawl_apply_output")
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let joined = LogicalPlanBuilder::from(left)
            .join(
                right,
                JoinType::Inner,
                (
                    vec![datafusion::common::Column::new(Some("__trawl_apply_input"), ROW)],
                    vec![datafusion::common::Column::new(Some("__trawl_apply_output"), ROW)],
                ),
                None,
            )
            .map_err(|e| internal(&e))?;
        let side = |q: &str, n: &str| Expr::Column(datafusion::common::Column::new(Some(q), n));
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        for (name, kql_type) in &input.columns {
            // A column expanded under its own name belongs to the sub-pipeline: it is in the
            // output only if the sub-pipeline keeps it.
            if outputs.iter().any(|(n, _)| n == name) || item_names.iter().any(|n| n == name) {
                continue;
            }
            exprs.push(side("__trawl_apply_input", name).alias(name));
            columns.push((name.clone(), *kql_type));
        }
        for (name, kql_type) in &outputs {
            exprs.push(side("__trawl_apply_output", name).alias(name));
            columns.push((name.clone(), *kql_type));
        }
        // Keep the input order: by row number.
        let plan = joined
            .sort(vec![SortExpr::new(side("__trawl_apply_input", ROW), true, false)])
            .and_then(|b| b.project(exprs))
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// One operator of an `mv-apply` sub-pipeline, confined to each input row.
    fn per_row_operator(&mut self, input: Tabular, operator: &Operator) -> Result<Tabular, TrawlError> {
        let span = operator.span;
        let row = || NamedExpr {
            names: Vec::new(),
            expr: name_expr(ROW, span),
            span,
        };
        let rewritten = match &operator.kind {
            OperatorKind::Summarize(summarize) => {
                let mut by = vec![row()];
                by.extend(summarize.by.iter().cloned());
                OperatorKind::Summarize(Summarize {
                    params: summarize.params.clone(),
                    aggregates: summarize.aggregates.clone(),
                    by,
                })
            }
            OperatorKind::Count => {
                let count = KExpr::new(
                    ExprKind::Call {
                        function: Ident::new("count", span),
                        args: Vec::new(),
                    },
                    span,
                );
                OperatorKind::Summarize(Summarize {
                    params: Vec::new(),
                    aggregates: vec![NamedExpr {
                        names: vec![Ident::new("Count", span)],
                        expr: count,
                        span,
                    }],
                    by: vec![row()],
                })
            }
            OperatorKind::Project(items) => {
                let mut with_row = vec![row()];
                with_row.extend(items.iter().cloned());
                OperatorKind::Project(with_row)
            }
            OperatorKind::Take(count) => return self.first_per_row(input, count, None),
            OperatorKind::Top(top) => return self.first_per_row(input, &top.count, Some(&top.by)),
            OperatorKind::Sort(sort) => {
                let mut sort = sort.clone();
                sort.keys.insert(
                    0,
                    trawl_kql::ast::SortKey {
                        expr: name_expr(ROW, span),
                        order: Some(trawl_kql::ast::SortOrder::Asc),
                        nulls: None,
                        span,
                    },
                );
                OperatorKind::Sort(sort)
            }
            OperatorKind::Where(_)
            | OperatorKind::Extend(_)
            | OperatorKind::ProjectRename(_)
            | OperatorKind::Serialize(_)
            | OperatorKind::Parse(_)
            | OperatorKind::MvExpand(_) => operator.kind.clone(),
            other => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    span,
                    format!("'{}' is not supported inside mv-apply yet", other.name()),
                ));
            }
        };
        self.operator(input, &Operator { kind: rewritten, span })
    }

    /// The first `count` items of each row (by `key` when given, as `top` orders).
    fn first_per_row(
        &mut self,
        input: Tabular,
        count: &KExpr,
        key: Option<&trawl_kql::ast::SortKey>,
    ) -> Result<Tabular, TrawlError> {
        let n = i64::try_from(self.row_count(count)?).unwrap_or(i64::MAX);
        let mut numbering = row_number().partition_by(vec![column(ROW)]);
        let mut order = Vec::new();
        if let Some(key) = key {
            let value = self.scalar(&key.expr, &input)?;
            let ascending = key.order == Some(trawl_kql::ast::SortOrder::Asc);
            order.push(SortExpr::new(value.expr, ascending, ascending));
            numbering = numbering.order_by(order.clone());
        }
        let numbering = numbering.build().map_err(|e| internal(&e))?;
        let rank = "__trawl_apply_rank";
        let mut exprs: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        exprs.push(numbering.alias(rank));
        let ranked = crate::windows::with_windows(&input, &exprs)?
            .project(exprs)
            .map_err(|e| internal(&e))?;
        let mut sort = vec![SortExpr::new(column(ROW), true, false)];
        sort.extend(order);
        let keep: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        let plan = ranked
            .filter(column(rank).lt_eq(lit(n as u64)))
            .and_then(|b| b.sort(sort))
            .and_then(|b| b.project(keep))
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: input.columns,
        })
    }
}
