//! `evaluate bag_unpack(bag [, prefix] [, columnsConflict=...] [, ignoredProperties=...])
//! [: (schema)]`: one column per key of a dynamic bag column.
//!
//! Which keys exist depends on the data, so without a declared output schema the planner
//! asks for a [`Discovery`](crate::Discovery): the engine runs the input once, collects the
//! keys with their value types (`long`, `real`, `string`, `bool`, else `dynamic`), and plans
//! again. Unpacked columns come after the input's other columns, sorted by key.

use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{DynamicValue, Evaluate, Expr as KExpr, ExprKind, Ident, Literal, NamedExpr};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::scalar::{kql_type_of_scalar, to_dynamic};

impl Planner<'_> {
    pub fn evaluate(&mut self, input: Tabular, evaluate: &Evaluate, span: Span) -> Result<Tabular, TrawlError> {
        let ExprKind::Call { function, args } = &evaluate.call.kind else {
            return Err(self.error(
                ErrorCode::BadRequest,
                evaluate.call.span,
                "evaluate takes a plugin call",
            ));
        };
        match function.name.as_str() {
            "bag_unpack" => self.bag_unpack(input, args, evaluate, span),
            "active_users_count" => self.active_users_count(input, args, span),
            "activity_counts_metrics" => self.activity_counts_metrics(input, args, span),
            "activity_engagement" => self.activity_engagement(input, args, span),
            "activity_metrics" => self.activity_metrics(input, args, span),
            "autocluster" => self.autocluster(input, args, span),
            "basket" => self.basket(input, args, span),
            "dcount_intersect" => self.dcount_intersect(input, args, span),
            "diffpatterns" => self.diffpatterns(input, args, span),
            "funnel_sequence" => Err(self.error(
                ErrorCode::BadRequest,
                function.span,
                "funnel_sequence returns three tables: it ends its query (no operator after it)",
            )),
            "funnel_sequence_completion" => self.funnel_sequence_completion(input, args, span),
            "preview" => Err(self.error(
                ErrorCode::BadRequest,
                function.span,
                "preview returns two tables: it ends its query (no operator after it)",
            )),
            "geo_line_lookup" => self.geo_lookup(input, args, span, crate::geo_lookup::GeoLookup::Line),
            "geo_polygon_lookup" => self.geo_lookup(input, args, span, crate::geo_lookup::GeoLookup::Polygon),
            "ipv4_lookup" => self.ip_lookup(input, args, span, false),
            "ipv6_lookup" => self.ip_lookup(input, args, span, true),
            "narrow" => self.narrow(input, span),
            "new_activity_metrics" => self.new_activity_metrics(input, args, span),
            "pivot" => self.pivot(input, args, span),
            "rolling_percentile" => self.rolling_percentile(input, args, span),
            "rows_near" => self.rows_near(input, args, span),
            "sequence_detect" => self.sequence_detect(input, args, span),
            "session_count" => self.session_count(input, args, span),
            "sliding_window_counts" => self.sliding_window_counts(input, args, span),
            other => Err(self.error(
                ErrorCode::BadRequest,
                function.span,
                format!("the plugin '{other}' is not supported yet"),
            )),
        }
    }

    fn bag_unpack(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        evaluate: &Evaluate,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let mut positional = Vec::new();
        let mut conflict = "error".to_string();
        let mut ignored: Vec<String> = Vec::new();
        for arg in args {
            match &arg.kind {
                ExprKind::NamedArgument { name, value } => match (name.name.to_ascii_lowercase().as_str(), &value.kind)
                {
                    ("columnsconflict", ExprKind::Literal(Literal::String(s))) => conflict = s.to_ascii_lowercase(),
                    ("ignoredproperties", ExprKind::Literal(Literal::Dynamic(DynamicValue::Array(items)))) => {
                        ignored = items
                            .iter()
                            .filter_map(|i| match i {
                                DynamicValue::String(s) => Some(s.clone()),
                                _ => None,
                            })
                            .collect();
                    }
                    ("outputcolumnprefix", ExprKind::Literal(Literal::String(_))) => positional.push(value.as_ref()),
                    _ => {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            arg.span,
                            format!("bag_unpack has no option '{}'", name.name),
                        ));
                    }
                },
                _ => positional.push(arg),
            }
        }
        let Some(bag_arg) = positional.first() else {
            return Err(self.error(ErrorCode::BadRequest, span, "bag_unpack needs the bag column"));
        };
        let prefix = match positional.get(1).map(|a| &a.kind) {
            Some(ExprKind::Literal(Literal::String(p))) => p.clone(),
            Some(_) => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    positional[1].span,
                    "the column prefix must be a string",
                ));
            }
            None => String::new(),
        };
        let bag = self.scalar(bag_arg, &input)?;
        let bag_column = match &bag_arg.kind {
            ExprKind::Name(ident) => Some(ident.name.clone()),
            _ => None,
        };
        let bag_json = to_dynamic(bag);
        let kept: Vec<(String, KqlType)> = input
            .columns
            .iter()
            .filter(|(n, _)| Some(n) != bag_column.as_ref())
            .cloned()
            .collect();

        // The keys: declared, discovered, or to be discovered.
        let keys: Vec<(String, KqlType)> = match &evaluate.output_schema {
            Some(schema) => schema
                .columns
                .iter()
                .filter(|c| !kept.iter().any(|(n, _)| *n == c.name.name))
                .map(|c| (c.name.name.clone(), kql_type_of_scalar(c.ty)))
                .collect(),
            None => {
                let probe = input
                    .builder()
                    .project(vec![bag_json.clone().alias("bag")])
                    .and_then(|b| b.build())
                    .map_err(|e| internal(&e))?;
                let key = format!("bag_unpack\n{}", probe.display_indent());
                match self.options.discovered.get(&key) {
                    Some(found) => found.clone(),
                    None => {
                        self.discoveries.push(crate::Discovery { key, plan: probe });
                        Vec::new()
                    }
                }
            }
        };
        let mut columns = kept.clone();
        let mut exprs: Vec<Expr> = kept.iter().map(|(n, _)| column(n).alias(n)).collect();
        let mut keys: Vec<(String, KqlType)> = keys.into_iter().filter(|(k, _)| !ignored.contains(k)).collect();
        if evaluate.output_schema.is_none() {
            keys.sort_by(|a, b| a.0.cmp(&b.0));
        }
        for (key, kql_type) in keys {
            let name = format!("{prefix}{key}");
            let value = Expr::ScalarFunction(ScalarFunction::new_udf(
                datafusion_functions_json::udfs::json_get_json_udf(),
                vec![bag_json.clone(), lit(key.clone())],
            ));
            let value = self
                .dynamic_as(Typed::new(value, KqlType::Dynamic), kql_type)
                .alias(&name);
            match columns.iter().position(|(n, _)| *n == name) {
                Some(index) => match conflict.as_str() {
                    "replace_source" => {
                        exprs[index] = value;
                        columns[index].1 = kql_type;
                    }
                    "keep_source" => {}
                    _ => {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            span,
                            format!(
                                "bag_unpack: the key '{key}' collides with the column '{name}'; use columnsConflict"
                            ),
                        ));
                    }
                },
                None => {
                    exprs.push(value);
                    columns.push((name, kql_type));
                }
            }
        }
        let plan = input
            .builder()
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }

    /// `evaluate narrow()`: every cell as a row `(Row, Column, Value)`; `Row` counts from 0.
    fn narrow(&mut self, input: Tabular, span: Span) -> Result<Tabular, TrawlError> {
        use datafusion::arrow::datatypes::DataType;
        if input.columns.is_empty() {
            return Err(self.error(ErrorCode::BadRequest, span, "narrow needs at least one column"));
        }
        let number =
            datafusion::logical_expr::cast(datafusion::functions_window::expr_fn::row_number(), DataType::Int64)
                - lit(1i64);
        let mut numbered_exprs: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        numbered_exprs.push(number.alias("Row"));
        let numbered_plan = crate::windows::with_windows(&input, &numbered_exprs)?
            .project(numbered_exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let mut legs = Vec::with_capacity(input.columns.len());
        for (ordinal, (name, kql_type)) in input.columns.iter().enumerate() {
            let value = crate::scalar::to_string(Typed::new(column(name), *kql_type));
            legs.push(
                datafusion::logical_expr::LogicalPlanBuilder::from(numbered_plan.clone())
                    .project(vec![
                        column("Row").alias("Row"),
                        lit(name.clone()).alias("Column"),
                        value.alias("Value"),
                        lit(ordinal as i64).alias("__trawl_ordinal"),
                    ])
                    .and_then(|b| b.build())
                    .map_err(|e| internal(&e))?,
            );
        }
        let mut legs = legs.into_iter();
        let Some(first) = legs.next() else {
            return Err(self.error(ErrorCode::BadRequest, span, "narrow needs at least one column"));
        };
        let mut builder = datafusion::logical_expr::LogicalPlanBuilder::from(first);
        for leg in legs {
            builder = builder.union(leg).map_err(|e| internal(&e))?;
        }
        let plan = builder
            .sort(vec![
                datafusion::logical_expr::SortExpr::new(column("Row"), true, false),
                datafusion::logical_expr::SortExpr::new(column("__trawl_ordinal"), true, false),
            ])
            .and_then(|b| {
                b.project(vec![
                    column("Row").alias("Row"),
                    column("Column").alias("Column"),
                    column("Value").alias("Value"),
                ])
            })
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: vec![
                ("Row".into(), KqlType::Long),
                ("Column".into(), KqlType::String),
                ("Value".into(), KqlType::String),
            ],
        })
    }

    /// `evaluate pivot(column [, aggregate(x)] [, by1, by2, ...])`: one output column per
    /// distinct value of `column` (found by discovery), holding the aggregate (default
    /// `count()`) of the rows with that value, grouped by the `by` columns (default: every
    /// column but the pivot column and the aggregated one).
    fn pivot(&mut self, input: Tabular, args: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let Some((pivot_arg, rest)) = args.split_first() else {
            return Err(self.error(ErrorCode::BadRequest, span, "pivot needs the column to pivot"));
        };
        let ExprKind::Name(pivot_column) = &pivot_arg.kind else {
            return Err(self.error(ErrorCode::BadRequest, pivot_arg.span, "pivot takes a column name"));
        };
        let pivot_value = self.scalar(pivot_arg, &input)?;
        let (aggregate, by_args) = match rest.split_first() {
            Some((first, others)) if matches!(&first.kind, ExprKind::Call { function, .. } if crate::aggregates::is_aggregate(&function.name)) => {
                (first.clone(), others)
            }
            _ => (
                KExpr::new(
                    ExprKind::Call {
                        function: Ident::new("count", span),
                        args: Vec::new(),
                    },
                    span,
                ),
                rest,
            ),
        };
        let aggregated_columns: Vec<String> = match &aggregate.kind {
            ExprKind::Call { args, .. } => args
                .iter()
                .filter_map(|a| match &a.kind {
                    ExprKind::Name(ident) => Some(ident.name.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let by: Vec<String> = if by_args.is_empty() {
            input
                .columns
                .iter()
                .map(|(n, _)| n.clone())
                .filter(|n| *n != pivot_column.name && !aggregated_columns.contains(n))
                .collect()
        } else {
            by_args
                .iter()
                .map(|a| match &a.kind {
                    ExprKind::Name(ident) => Ok(ident.name.clone()),
                    _ => Err(self.error(ErrorCode::BadRequest, a.span, "pivot groups by column names")),
                })
                .collect::<Result<_, _>>()?
        };
        // The distinct values, by discovery: each row contributes `{"<value>": 1}`.
        let as_key = crate::scalar::to_string(pivot_value);
        let quoted = Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            std::sync::Arc::new(datafusion::logical_expr::ScalarUDF::from(
                trawl_functions::dynamic::ToJsonStringUdf::new(),
            )),
            vec![as_key],
        ));
        let bag = datafusion::functions::expr_fn::concat(vec![lit("{"), quoted, lit(":1}")]);
        let probe = input
            .builder()
            .project(vec![bag.alias("bag")])
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        let key = format!("pivot\n{}", probe.display_indent());
        let values: Vec<String> = match self.options.discovered.get(&key) {
            Some(found) => found.iter().map(|(k, _)| k.clone()).collect(),
            None => {
                // Planned again once the values are known; the input stands in until then.
                self.discoveries.push(crate::Discovery { key, plan: probe });
                return Ok(input);
            }
        };
        // summarize <value> = agg(iff(tostring(column) == "<value>", x, null)) ... by <by>
        let mut aggregates = Vec::with_capacity(values.len());
        for value in &values {
            let condition = KExpr::new(
                ExprKind::Binary {
                    op: trawl_kql::ast::BinaryOp::Eq,
                    left: Box::new(KExpr::new(
                        ExprKind::Call {
                            function: Ident::new("tostring", span),
                            args: vec![(*pivot_arg).clone()],
                        },
                        span,
                    )),
                    right: Box::new(KExpr::new(ExprKind::Literal(Literal::String(value.clone())), span)),
                },
                span,
            );
            let call = match &aggregate.kind {
                ExprKind::Call { function, args } if args.is_empty() && function.name == "count" => KExpr::new(
                    ExprKind::Call {
                        function: Ident::new("countif", span),
                        args: vec![condition],
                    },
                    span,
                ),
                ExprKind::Call { function, args } => {
                    let guarded: Vec<KExpr> = args
                        .iter()
                        .map(|a| {
                            KExpr::new(
                                ExprKind::Call {
                                    function: Ident::new("iff", span),
                                    args: vec![
                                        condition.clone(),
                                        a.clone(),
                                        KExpr::new(ExprKind::Literal(Literal::Null(None)), span),
                                    ],
                                },
                                span,
                            )
                        })
                        .collect();
                    KExpr::new(
                        ExprKind::Call {
                            function: function.clone(),
                            args: guarded,
                        },
                        span,
                    )
                }
                _ => return Err(self.error(ErrorCode::BadRequest, aggregate.span, "pivot takes an aggregate")),
            };
            aggregates.push(NamedExpr {
                names: vec![Ident::new(value.clone(), span)],
                expr: call,
                span,
            });
        }
        let by_items: Vec<NamedExpr> = by
            .iter()
            .map(|n| NamedExpr {
                names: Vec::new(),
                expr: KExpr::new(ExprKind::Name(Ident::new(n.clone(), span)), span),
                span,
            })
            .collect();
        let operator = trawl_kql::ast::Operator {
            kind: trawl_kql::ast::OperatorKind::Summarize(trawl_kql::ast::Summarize {
                params: Vec::new(),
                aggregates,
                by: by_items,
            }),
            span,
        };
        self.operator(input, &operator)
    }
}
