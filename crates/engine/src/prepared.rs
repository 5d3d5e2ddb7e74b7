//! A query parsed once. The engine parses a request's text into a [`Prepared`] query, plans
//! from its syntax tree (again only when planning needs discovered columns), and from then on
//! rewrites the plan it has: time slices narrow the table's scans (`slices::narrow`), the
//! summarize budget thins groups (`trawl_planner::budget::keep_groups`). The text is never
//! parsed twice.

use std::sync::Arc;

use trawl_common::TrawlError;
use trawl_kql::ast::Query;

use crate::slices::Sliced;

/// A parsed query and what its shape allows.
pub(crate) struct Prepared {
    text: Arc<str>,
    /// Always `Some` until dropped (taken by `Drop`, to drop it on a stack of its own).
    query: Option<Query>,
    /// The time-sliced shape of the query, if it has one.
    pub(crate) sliced: Option<Sliced>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("text", &self.text)
            .field("sliced", &self.sliced)
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// Parses `text` (on the caller's stack: call it off the runtime, on a grown stack).
    pub(crate) fn parse(text: &str) -> Result<Prepared, TrawlError> {
        let query = trawl_kql::parse(text)?;
        let sliced = crate::slices::sliceable(&query);
        Ok(Prepared {
            text: Arc::from(text),
            query: Some(query),
            sliced,
        })
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn query(&self) -> Result<&Query, TrawlError> {
        self.query
            .as_ref()
            .ok_or_else(|| TrawlError::internal("the parsed query was dropped"))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // A syntax tree may be as deep as the parser allows; dropping it recurses once per
        // level, so it is dropped on a stack segment of its own.
        if let Some(query) = self.query.take() {
            stacker::grow(trawl_planner::limits::STACK_SEGMENT, move || drop(query));
        }
    }
}
