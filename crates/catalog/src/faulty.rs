//! A catalog with injected faults (`trawl serve --fault-injection`): while "down" every call
//! fails; a commit can fail before it writes, or go through and then report a lost connection
//! (the case a retry must not turn into a duplicate). See `trawl_common::faults`.

use std::sync::Arc;

use async_trait::async_trait;
use trawl_common::faults::{CommitFault, Faults};

use crate::model::{ColumnInfo, SegmentMeta, TableInfo, TimeRange};
use crate::{Catalog, CatalogError, Result};

#[derive(Debug)]
pub struct FaultyCatalog {
    inner: Arc<dyn Catalog>,
    faults: Arc<Faults>,
}

impl FaultyCatalog {
    pub fn new(inner: Arc<dyn Catalog>, faults: Arc<Faults>) -> FaultyCatalog {
        FaultyCatalog { inner, faults }
    }

    fn check(&self) -> Result<()> {
        if self.faults.catalog_down() {
            return Err(CatalogError::Unavailable(
                "its database is unreachable (injected fault)".into(),
            ));
        }
        Ok(())
    }

    /// Runs a commit as the faults say.
    async fn commit<F>(&self, commit: F) -> Result<()>
    where
        F: std::future::Future<Output = Result<()>> + Send,
    {
        match self.faults.on_commit() {
            CommitFault::None => {
                commit.await?;
                let delay = self.faults.commit_delay();
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Ok(())
            }
            CommitFault::FailBefore => Err(CatalogError::Unavailable("the commit failed (injected fault)".into())),
            CommitFault::LoseAfter => {
                commit.await?;
                Err(CatalogError::Unavailable(
                    "the connection was lost during the commit (injected fault)".into(),
                ))
            }
        }
    }
}

#[async_trait]
impl Catalog for FaultyCatalog {
    async fn commit_segments(&self, added: &[SegmentMeta], tombstoned: &[String]) -> Result<()> {
        self.commit(self.inner.commit_segments(added, tombstoned)).await
    }

    async fn commit_ingest(&self, segment: &SegmentMeta, requests: &[String]) -> Result<()> {
        self.commit(self.inner.commit_ingest(segment, requests)).await
    }

    async fn request_committed(&self, key: &str) -> Result<bool> {
        self.check()?;
        self.inner.request_committed(key).await
    }

    async fn requests_since(&self, since_nanos: i64) -> Result<Vec<(String, i64)>> {
        self.check()?;
        self.inner.requests_since(since_nanos).await
    }

    async fn forget_requests_before(&self, before_nanos: i64) -> Result<u64> {
        self.check()?;
        self.inner.forget_requests_before(before_nanos).await
    }

    async fn live_segments(&self, database: &str, table: &str, range: Option<TimeRange>) -> Result<Vec<SegmentMeta>> {
        self.check()?;
        self.inner.live_segments(database, table, range).await
    }

    async fn ensure_table(&self, database: &str, table: &str, columns: &[ColumnInfo]) -> Result<()> {
        self.check()?;
        self.inner.ensure_table(database, table, columns).await
    }

    async fn databases(&self) -> Result<Vec<String>> {
        self.check()?;
        self.inner.databases().await
    }

    async fn tables(&self, database: &str) -> Result<Vec<TableInfo>> {
        self.check()?;
        self.inner.tables(database).await
    }

    async fn views(&self, database: &str) -> Result<Vec<(String, Vec<String>)>> {
        self.check()?;
        self.inner.views(database).await
    }

    async fn table(&self, database: &str, table: &str) -> Result<Option<TableInfo>> {
        self.check()?;
        self.inner.table(database, table).await
    }

    async fn tombstoned_before(&self, before_nanos: i64) -> Result<Vec<SegmentMeta>> {
        self.check()?;
        self.inner.tombstoned_before(before_nanos).await
    }

    async fn forget_segments(&self, ids: &[String]) -> Result<()> {
        self.check()?;
        self.inner.forget_segments(ids).await
    }

    async fn segment_paths(&self) -> Result<Vec<String>> {
        self.check()?;
        self.inner.segment_paths().await
    }

    async fn take_lease(&self, name: &str, holder: &str, now: i64, ttl_nanos: i64) -> Result<bool> {
        self.check()?;
        self.inner.take_lease(name, holder, now, ttl_nanos).await
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        self.check()?;
        self.inner.release_lease(name, holder).await
    }

    async fn record_operation(&self, operation: &crate::OperationRecord) -> Result<()> {
        self.check()?;
        self.inner.record_operation(operation).await
    }

    async fn operations(&self, since: i64, limit: usize) -> Result<Vec<crate::OperationRecord>> {
        self.check()?;
        self.inner.operations(since, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqlCatalog;
    use crate::model::SegmentState;
    use trawl_common::faults::FaultSpec;

    fn segment(id: &str) -> SegmentMeta {
        SegmentMeta {
            id: id.into(),
            database: "db".into(),
            table: "t".into(),
            path: format!("db/t/{id}.parquet"),
            min_time: 1,
            max_time: 2,
            rows: 3,
            bytes: 4,
            columns: Vec::new(),
            merge_level: 0,
            state: SegmentState::Live,
            created_at: 5,
            tombstoned_at: None,
            signal: None,
        }
    }

    #[tokio::test]
    async fn a_lost_commit_went_through_and_its_retry_changes_nothing() -> Result<()> {
        let faults = Arc::new(Faults::new());
        let catalog = FaultyCatalog::new(Arc::new(SqlCatalog::in_memory().await?), faults.clone());
        faults.apply(&FaultSpec {
            catalog_lost_commits: Some(1),
            ..FaultSpec::default()
        });
        let keys = vec!["a".repeat(32)];
        assert!(catalog.commit_ingest(&segment("s1"), &keys).await.is_err());
        // The retry finds the segment registered: one segment, one key.
        catalog.commit_ingest(&segment("s1"), &keys).await?;
        assert_eq!(catalog.live_segments("db", "t", None).await?.len(), 1);
        assert_eq!(catalog.requests_since(0).await?.len(), 1);
        assert!(catalog.request_committed(&keys[0]).await?);
        assert!(!catalog.request_committed(&"b".repeat(32)).await?);

        faults.apply(&FaultSpec {
            catalog_failed_commits: Some(1),
            ..FaultSpec::default()
        });
        assert!(catalog.commit_ingest(&segment("s2"), &[]).await.is_err());
        assert_eq!(catalog.live_segments("db", "t", None).await?.len(), 1);
        catalog.commit_ingest(&segment("s2"), &[]).await?;
        assert_eq!(catalog.live_segments("db", "t", None).await?.len(), 2);

        faults.apply(&FaultSpec {
            catalog_down_secs: Some(60),
            ..FaultSpec::default()
        });
        let down = catalog.live_segments("db", "t", None).await;
        assert!(down.is_err_and(|e| e.to_string().contains("catalog is unavailable")));
        faults.apply(&FaultSpec {
            clear: true,
            ..FaultSpec::default()
        });
        assert_eq!(catalog.forget_requests_before(i64::MAX).await?, 1);
        assert!(catalog.requests_since(0).await?.is_empty());
        Ok(())
    }
}
