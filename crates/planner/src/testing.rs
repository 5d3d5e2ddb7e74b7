//! Test helpers: a table lookup with no tables, for queries over `datatable`, `range` and
//! `let` values only.

use std::sync::Arc;

use datafusion::catalog::TableProvider;

/// A [`crate::TableLookup`] that knows no table.
pub struct NoTables;

impl crate::TableLookup for NoTables {
    fn table(&self, _: &str) -> Option<Arc<dyn TableProvider>> {
        None
    }
}

/// The result columns of `text` planned over no tables.
pub fn columns_of(text: &str) -> Result<Vec<String>, trawl_common::TrawlError> {
    let planned = crate::plan_text(text, &NoTables, crate::PlanOptions::default())?;
    Ok(planned.results[0].columns.iter().map(|(n, _)| n.clone()).collect())
}

/// The error code planning `text` fails with, if it fails.
pub fn error_code(text: &str) -> Option<trawl_common::ErrorCode> {
    columns_of(text).err().map(|e| e.code)
}
