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
