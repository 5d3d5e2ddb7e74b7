//! Start-up warming: a query node that starts reads the footers and token indexes of the
//! newest live segments into their caches before it takes queries, so the first queries after
//! a restart do not each wait for the footers and indexes of every segment they touch (each
//! is a small read, but a query over a day touches hundreds, and a cold store answers each in
//! milliseconds).

use std::time::Instant;

use trawl_common::TrawlError;
use trawl_storage::Warmed;

use crate::Engine;

impl Engine {
    /// Reads the footers of the live segments of every table, newest first, into the footer
    /// cache, up to half its size, then their token indexes into the index cache, up to half
    /// of it. Callers bound the time it may take.
    pub async fn warm_footers(&self) -> Result<Warmed, TrawlError> {
        let started = Instant::now();
        let mut segments = Vec::new();
        for database in self.catalog.databases().await? {
            for table in self.catalog.tables(&database).await? {
                segments.extend(self.catalog.live_segments(&database, &table.name, None).await?);
            }
        }
        segments.sort_by_key(|segment| std::cmp::Reverse(segment.max_time));
        let live = segments.len();
        let warmed = trawl_storage::warm_footers(&self.context.state(), segments).await;
        tracing::info!(
            footers = warmed.segments,
            live_segments = live,
            cached_mib = warmed.bytes >> 20,
            token_indexes = warmed.indexes,
            token_index_mib = warmed.index_bytes >> 20,
            millis = started.elapsed().as_millis() as u64,
            "footer cache warmed"
        );
        Ok(warmed)
    }
}
