//! Names and types a telemetry table's columns are read by beyond their own: the alternative
//! documented layout's names (`$time`, span `name`, the `status` bag, …) and the dynamic paths
//! `annotate` gives a type.

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal};

use crate::context::{Planner, Tabular};
use crate::scalar::kql_type_of_scalar;

impl Planner<'_> {
    /// `annotate path:type, ...`: the paths read as their types from here on.
    pub(crate) fn annotate(
        &mut self,
        input: Tabular,
        items: &[(KExpr, trawl_kql::ast::ScalarType)],
    ) -> Result<Tabular, TrawlError> {
        for (path, ty) in items {
            let Some(keys) = path_keys(path).filter(|(_, keys)| !keys.is_empty()) else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    path.span,
                    "annotate takes dynamic paths: column.key or column['key']",
                ));
            };
            match input.column_type(&keys.0) {
                Some(KqlType::Dynamic) => {}
                Some(other) => {
                    return Err(self.error(
                        ErrorCode::TypeMismatch,
                        path.span,
                        format!("annotate types paths of dynamic columns; '{}' is {other}", keys.0),
                    ));
                }
                None => return Err(self.unknown_column(&keys.0, path.span, &input)),
            }
            self.annotations.push((keys, kql_type_of_scalar(*ty)));
        }
        Ok(input)
    }
}

/// A name of the alternative documented layout, read from the stored columns.
pub(crate) enum LayoutAlias {
    /// The stored column of another name.
    Column(&'static str),
    /// A bag of stored columns: (key, column), for those the input has.
    Bag(Vec<(&'static str, &'static str)>),
}

impl LayoutAlias {
    pub(crate) fn to_expr(&self, span: trawl_kql::span::Span) -> KExpr {
        let name = |n: &str| KExpr::new(ExprKind::Name(trawl_kql::ast::Ident::new(n, span)), span);
        match self {
            LayoutAlias::Column(column) => name(column),
            LayoutAlias::Bag(entries) => {
                let mut args = Vec::with_capacity(entries.len() * 2);
                for (key, column) in entries {
                    args.push(KExpr::new(ExprKind::Literal(Literal::String((*key).to_string())), span));
                    args.push(name(column));
                }
                KExpr::new(
                    ExprKind::Call {
                        function: trawl_kql::ast::Ident::new("bag_pack", span),
                        args,
                    },
                    span,
                )
            }
        }
    }
}

/// The stored columns that a name of the alternative documented layout (`$time`,
/// `$time_ingest`, span `name`/`kind`, the `status` bag, the `metric` bag) stands for, when
/// `input` has no column of that name but has the stored ones.
pub(crate) fn layout_alias(name: &str, input: &Tabular) -> Option<LayoutAlias> {
    let has = |column: &str| input.column_type(column).is_some();
    let renamed = match name {
        "$time" => trawl_common::TIME_COLUMN,
        "$time_ingest" => trawl_common::INGEST_TIME_COLUMN,
        "name" => "span_name",
        "kind" => "span_kind",
        "status" => {
            let entries: Vec<_> = [("code", "status_code"), ("message", "status_description")]
                .into_iter()
                .filter(|(_, c)| has(c))
                .collect();
            return (!entries.is_empty()).then_some(LayoutAlias::Bag(entries));
        }
        "metric" => {
            let entries: Vec<_> = [
                ("name", "metric_name"),
                ("type", "metric_type"),
                ("description", "metric_description"),
                ("unit", "metric_unit"),
            ]
            .into_iter()
            .filter(|(_, c)| has(c))
            .collect();
            return (!entries.is_empty()).then_some(LayoutAlias::Bag(entries));
        }
        _ => return None,
    };
    has(renamed).then_some(LayoutAlias::Column(renamed))
}

/// The column and keys of a dynamic path (`a.b['c']`), if `e` is one.
pub(crate) fn path_keys(e: &KExpr) -> Option<(String, Vec<String>)> {
    match &e.kind {
        ExprKind::Name(ident) => Some((ident.name.clone(), Vec::new())),
        ExprKind::Member { target, member } => {
            let (root, mut keys) = path_keys(target)?;
            keys.push(member.name.clone());
            Some((root, keys))
        }
        ExprKind::Index { target, index } => match &index.kind {
            ExprKind::Literal(Literal::String(key)) => {
                let (root, mut keys) = path_keys(target)?;
                keys.push(key.clone());
                Some((root, keys))
            }
            _ => None,
        },
        _ => None,
    }
}
