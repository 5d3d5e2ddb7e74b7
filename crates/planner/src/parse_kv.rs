//! `parse-kv source as (col:type, ...) [with (option = value, ...)]`: the text is split into
//! key/value pairs by `trawl_functions::kv` and each declared column reads its key.

use std::sync::Arc;

use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ScalarUDF, lit};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_functions::kv::ParseKvUdf;
use trawl_kql::ast::{ExprKind, Literal, ParseKv};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, Typed, column, internal};
use crate::scalar::{kql_type_of_scalar, to_string};

impl Planner<'_> {
    pub fn parse_kv(&mut self, input: Tabular, parse: &ParseKv, span: Span) -> Result<Tabular, TrawlError> {
        let source = self.scalar(&parse.source, &input)?;
        let mut options = serde_json::Map::new();
        for option in &parse.options {
            let Some(name) = option.name() else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    option.span,
                    "parse-kv options are written name=value",
                ));
            };
            let value = match &option.expr.kind {
                ExprKind::Literal(Literal::String(s)) => serde_json::Value::String(s.clone()),
                ExprKind::Literal(Literal::Bool(b)) => serde_json::Value::Bool(*b),
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        option.expr.span,
                        "a parse-kv option is a string or bool literal",
                    ));
                }
            };
            let name = name.name.to_ascii_lowercase();
            // `quote` and `escape` may repeat: each adds a pair of quotes or an escape character.
            if matches!(name.as_str(), "quote" | "escape") {
                let listed = options
                    .entry(name)
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                if let serde_json::Value::Array(items) = listed {
                    items.push(value);
                }
            } else {
                options.insert(name, value);
            }
        }
        if parse.columns.is_empty() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "parse-kv needs columns: as (name:type, ...)",
            ));
        }
        let udf = Arc::new(ScalarUDF::from(ParseKvUdf::new()));
        let bag_name = "__trawl_parse_kv";
        let mut stage: Vec<Expr> = input.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
        let call = Expr::ScalarFunction(ScalarFunction::new_udf(
            udf,
            vec![to_string(source), lit(serde_json::Value::Object(options).to_string())],
        ));
        stage.push(call.alias(bag_name));
        let builder = input.builder().project(stage).map_err(|e| internal(&e))?;
        let mut columns = input.columns.clone();
        let mut outputs = Vec::with_capacity(parse.columns.len());
        for declared in &parse.columns {
            let kql_type = kql_type_of_scalar(declared.ty);
            let bag = Typed::new(column(bag_name), KqlType::Dynamic);
            let value = datafusion::logical_expr::Expr::ScalarFunction(ScalarFunction::new_udf(
                datafusion_functions_json::udfs::json_get_json_udf(),
                vec![bag.expr, lit(declared.name.name.clone())],
            ));
            outputs.push((
                declared.name.name.clone(),
                self.dynamic_as(Typed::new(value, KqlType::Dynamic), kql_type),
            ));
            match columns.iter_mut().find(|(n, _)| *n == declared.name.name) {
                Some(existing) => existing.1 = kql_type,
                None => columns.push((declared.name.name.clone(), kql_type)),
            }
        }
        let exprs: Vec<Expr> = columns
            .iter()
            .map(|(name, _)| match outputs.iter().find(|(n, _)| n == name) {
                Some((_, value)) => value.clone().alias(name),
                None => column(name).alias(name),
            })
            .collect();
        let plan = builder
            .project(exprs)
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular { plan, columns })
    }
}
