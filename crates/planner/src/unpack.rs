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
use trawl_kql::ast::{DynamicValue, Evaluate, Expr as KExpr, ExprKind, Literal};
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
}
