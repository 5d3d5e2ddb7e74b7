//! `fieldstats [column, ...]`: one row per path and type found in the dynamic columns named
//! (every dynamic column when none is): `path` (as KQL reads it, `attributes['http.method']`),
//! `type`, `count` (rows holding it), `cardinality` (distinct values, exact up to 100,000),
//! `frequency` (share of the input rows holding it), most frequent first. Lowered to KQL over
//! the `__fieldstats` aggregate.

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::names::bracketed;
use crate::rolling::INPUT;

impl Planner<'_> {
    pub(crate) fn fieldstats(&mut self, input: Tabular, columns: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let mut names: Vec<String> = Vec::new();
        for column in columns {
            let ExprKind::Name(ident) = &column.kind else {
                return Err(self.error(ErrorCode::BadRequest, column.span, "fieldstats takes column names"));
            };
            if input.column_type(&ident.name).is_none() {
                return Err(self.unknown_column(&ident.name, ident.span, &input));
            }
            names.push(ident.name.clone());
        }
        if names.is_empty() {
            names = input
                .columns
                .iter()
                .filter(|(_, t)| *t == KqlType::Dynamic)
                .map(|(n, _)| n.clone())
                .collect();
        }
        if names.is_empty() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "fieldstats needs a dynamic column: the input has none (name the columns to describe)",
            ));
        }
        let aggregates: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let literal = name.replace('\\', "\\\\").replace('\'', "\\'");
                format!("__f{i} = __fieldstats({}, '{literal}')", bracketed(name))
            })
            .collect();
        let all = (0..names.len())
            .map(|i| format!("__f{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!(
            "{INPUT} | summarize {} | project __all = array_concat({all}, dynamic([])) | mv-expand __r = __all \
             | project path = tostring(__r.path), type = tostring(__r.type), ['count'] = tolong(__r['count']), \
             cardinality = tolong(__r.cardinality), frequency = todouble(__r.frequency) \
             | order by ['count'] desc, path asc",
            aggregates.join(", ")
        );
        self.lowered(input, "fieldstats", &text, span)
    }
}
