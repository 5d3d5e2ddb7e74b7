//! `materialize(expr)`: the tabular value computed once per query and read by every reference
//! to it. The first planning round plans `expr` and asks the engine to run it (a
//! [`Materialization`](crate::Materialization), keyed by where the call is and what it
//! plans); the engine keeps the rows and plans again, and from then on the call reads the
//! kept rows. So `rand()`, `new_guid()` or `sample` inside it give one answer to all of its
//! readers, and its input is read once.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::datasource::{MemTable, provider_as_source};
use datafusion::logical_expr::LogicalPlanBuilder;
use trawl_common::TrawlError;
use trawl_kql::ast::Expr as KExpr;

use crate::context::{Planner, Tabular, internal};

impl Planner<'_> {
    pub(crate) fn materialize(&mut self, inner: &KExpr) -> Result<Tabular, TrawlError> {
        let planned = crate::shredded::visible(self.tabular(inner)?)?;
        let plan = crate::shredded::read_shredded(planned.plan)?;
        // Each call planned is a value of its own (a `let` plans its call once for all its
        // readers; a function plans one per call): calls are numbered in planning order,
        // which is the same in every round, and the key holds what the call plans.
        let number = self.materialize_calls;
        self.materialize_calls += 1;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        format!("{}", plan.display_indent_schema()).hash(&mut hasher);
        let key = format!("materialize#{number}@{}:{:016x}", inner.span.start, hasher.finish());
        if let Some(kept) = self.options.materialized.get(&key) {
            let table =
                MemTable::try_new(Arc::clone(&kept.schema), vec![kept.batches.clone()]).map_err(|e| internal(&e))?;
            let plan = LogicalPlanBuilder::scan("materialized", provider_as_source(Arc::new(table)), None)
                .and_then(|b| b.build())
                .map_err(|e| internal(&e))?;
            return Ok(Tabular {
                plan,
                columns: planned.columns,
            });
        }
        if !self.materializations.iter().any(|m| m.key == key) {
            self.materializations.push(crate::Materialization {
                key,
                plan: plan.clone(),
            });
        }
        Ok(Tabular {
            plan,
            columns: planned.columns,
        })
    }
}
