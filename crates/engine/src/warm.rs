//! Start-up warming: a query node that starts reads the footers and token indexes of the
//! newest live segments into their caches before it takes queries, so the first queries after
//! a restart do not each wait for the footers and indexes of every segment they touch (each
//! is a small read, but a query over a day touches hundreds, and a cold store answers each in
//! milliseconds).

use std::time::Instant;

use trawl_catalog::{SegmentMeta, TableInfo};
use trawl_common::{KqlType, TrawlError};
use trawl_storage::Warmed;

use crate::{Engine, QueryRequest, QueryWindow, RunOptions};

impl Engine {
    /// Reads the footers of the live segments of every table, newest first, into the footer
    /// cache, up to half its size, then their token indexes into the index cache, up to half
    /// of it. Callers bound the time it may take.
    pub async fn warm_footers(&self) -> Result<Warmed, TrawlError> {
        let started = Instant::now();
        let (_, segments) = self.every_live_segment().await?;
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

    /// Every live table, and the live segments of them all, newest first.
    async fn every_live_segment(&self) -> Result<(Vec<TableInfo>, Vec<SegmentMeta>), TrawlError> {
        let mut tables = Vec::new();
        let mut segments = Vec::new();
        for database in self.catalog.databases().await? {
            for table in self.catalog.tables(&database).await? {
                segments.extend(self.catalog.live_segments(&database, &table.name, None).await?);
                tables.push(table);
            }
        }
        segments.sort_by_key(|segment| std::cmp::Reverse(segment.max_time));
        Ok((tables, segments))
    }
}

/// The principal and face warm-up queries run as (`.show queries` lists them under it).
const WARM_UP: &str = "warm-up";

impl Engine {
    /// Runs a few small queries of the common shapes (a filter, a count, a summarize by a
    /// column and by time bins, a top, a take) over the newest segment of the table written
    /// last, so that the first queries users send after a restart do not each pay for what
    /// a process does once: the planner's and DataFusion's first use of their rules and
    /// functions, the catalog connections' prepared statements, and the first touch of the
    /// code of each operator. The queries read only rows of that segment past its newest
    /// time (a few rows at most). Returns how many ran; a failure is logged and skipped.
    pub async fn warm_queries(&self) -> Result<usize, TrawlError> {
        let started = Instant::now();
        let (tables, segments) = self.every_live_segment().await?;
        let newest = segments.first();
        let mut texts = vec!["print warm = 1 | extend text = strcat('a', tostring(warm))".to_string()];
        let mut window = QueryWindow::default();
        let mut database = trawl_common::DEFAULT_DATABASE.to_string();
        if let Some(segment) = newest
            && let Some(table) = tables
                .iter()
                .find(|t| t.database == segment.database && t.name == segment.table)
        {
            database = segment.database.clone();
            window.since = Some(segment.max_time);
            texts.extend(warm_up_texts(table));
        }
        let mut ran = 0;
        for text in texts {
            let request = QueryRequest {
                text,
                database: database.clone(),
                window,
                parameters: Default::default(),
            };
            let options = RunOptions {
                face: WARM_UP,
                principal: WARM_UP.to_string(),
                ..RunOptions::default()
            };
            match self.execute_with(&request, options).await {
                Ok(_) => ran += 1,
                Err(error) => tracing::debug!(%error, query = %request.text, "a warm-up query failed"),
            }
        }
        tracing::info!(
            queries = ran,
            millis = started.elapsed().as_millis() as u64,
            "query path warmed"
        );
        Ok(ran)
    }
}

/// The warm-up queries over `table`: the common shapes, over its first text column when it
/// has one.
fn warm_up_texts(table: &TableInfo) -> Vec<String> {
    let name = trawl_planner::bracketed(&table.name);
    let time = trawl_planner::bracketed(trawl_common::TIME_COLUMN);
    let mut texts = vec![
        format!("{name} | take 1"),
        format!("{name} | count"),
        format!("{name} | summarize count() by bin({time}, 5m) | order by {time} asc"),
    ];
    if let Some(column) = table.visible_columns().find(|c| c.kql_type == KqlType::String) {
        let column = trawl_planner::bracketed(&column.name);
        texts.extend([
            format!("{name} | where isnotempty({column}) | count"),
            format!("{name} | where {column} == 'warm' or {column} has 'warm' | count"),
            format!("{name} | summarize n = count() by {column} | top 10 by n desc"),
        ]);
    }
    texts
}
