//! The object store that holds segments, with a durable put.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use trawl_common::faults::{Faults, StoreFailure};

use crate::observed::ObservedStore;
use crate::{Result, StorageError};

/// URL under which the segment store is registered with DataFusion.
pub const SEGMENT_STORE_URL: &str = "trawl-segments://store";

/// Where segments live. On a local disk, puts go through the file system with `fsync` of the
/// file and its directory before they return, so an acknowledged segment survives power loss;
/// on an S3-compatible store a completed PUT is durable.
///
/// Every request goes through [`ObservedStore`] (request metrics, and injected faults when
/// [`SegmentStore::with_faults`] installed them).
#[derive(Debug, Clone)]
pub struct SegmentStore {
    object_store: Arc<dyn ObjectStore>,
    /// The backend without the wrapper, to re-wrap when faults are installed.
    backend: Arc<dyn ObjectStore>,
    local_root: Option<PathBuf>,
    faults: Option<Arc<Faults>>,
}

impl SegmentStore {
    /// A store rooted at a local directory (created if missing).
    pub fn local(root: &Path) -> Result<SegmentStore> {
        std::fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let backend: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(&root)?);
        Ok(SegmentStore::wrap(backend, Some(root), None))
    }

    /// A store over any `object_store` backend (puts are durable when they return).
    pub fn remote(object_store: Arc<dyn ObjectStore>) -> SegmentStore {
        SegmentStore::wrap(object_store, None, None)
    }

    fn wrap(backend: Arc<dyn ObjectStore>, local_root: Option<PathBuf>, faults: Option<Arc<Faults>>) -> SegmentStore {
        SegmentStore {
            object_store: Arc::new(ObservedStore::new(backend.clone(), faults.clone())),
            backend,
            local_root,
            faults,
        }
    }

    /// The same store with injected faults (`trawl serve --fault-injection`, tests).
    pub fn with_faults(self, faults: Arc<Faults>) -> SegmentStore {
        SegmentStore::wrap(self.backend, self.local_root, Some(faults))
    }

    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.object_store.clone()
    }

    pub fn url() -> Result<ObjectStoreUrl> {
        Ok(ObjectStoreUrl::parse(SEGMENT_STORE_URL)?)
    }

    /// Makes the store reachable by scans planned in `runtime`.
    pub fn register_with(&self, runtime: &RuntimeEnv) -> Result<()> {
        let url = Self::url()?;
        runtime.register_object_store(url.as_ref(), self.object_store.clone());
        Ok(())
    }

    /// Puts `bytes` at `path` and returns only once they are durable.
    pub async fn put_durable(&self, path: &str, bytes: Bytes) -> Result<()> {
        match &self.local_root {
            Some(root) => {
                let started = Instant::now();
                let target = root.join(path);
                let failure = crate::observed::put_fault(self.faults.as_deref()).await;
                let result = tokio::task::spawn_blocking(move || match failure {
                    // A full disk fails part-way through the temporary file, as a real one does.
                    Some(StoreFailure::DiskFull) => {
                        let half = bytes.slice(..bytes.len() / 2);
                        write_and_sync_failing(&target, &half, StoreFailure::DiskFull.to_io_error())
                    }
                    Some(other) => Err(other.to_io_error()),
                    None => write_and_sync(&target, &bytes),
                })
                .await
                .map_err(|e| StorageError::Invalid(format!("write task failed: {e}")))?;
                crate::observed::record("put", started, &result);
                result?;
            }
            None => {
                self.object_store.put(&ObjectPath::from(path), bytes.into()).await?;
            }
        }
        Ok(())
    }

    /// Deletes the object at `path`; a missing object is not an error.
    pub async fn delete(&self, path: &str) -> Result<()> {
        match self.object_store.delete(&ObjectPath::from(path)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads the whole object at `path`.
    pub async fn get(&self, path: &str) -> Result<Bytes> {
        Ok(self.object_store.get(&ObjectPath::from(path)).await?.bytes().await?)
    }
}

/// Writes `bytes` to the temporary sibling and then fails with `error`, leaving the partial
/// file where a crash or a full disk would: never at the segment's path.
fn write_and_sync_failing(target: &Path, bytes: &[u8], error: std::io::Error) -> std::io::Result<()> {
    use std::io::Write;
    let directory = target
        .parent()
        .ok_or_else(|| std::io::Error::other("segment path has no parent"))?;
    std::fs::create_dir_all(directory)?;
    std::fs::File::create(target.with_extension("partial"))?.write_all(bytes)?;
    Err(error)
}

/// Writes to a temporary sibling, fsyncs it, renames it into place and fsyncs the directory.
fn write_and_sync(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let directory = target
        .parent()
        .ok_or_else(|| std::io::Error::other("segment path has no parent"))?;
    std::fs::create_dir_all(directory)?;
    let temporary = target.with_extension("partial");
    {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&temporary, target)?;
    std::fs::File::open(directory)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn local_put_is_readable_and_deletable() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let store = SegmentStore::local(dir.path())?;
        store
            .put_durable("db/t/2024/01/01/x.parquet", Bytes::from_static(b"abc"))
            .await?;
        assert_eq!(store.get("db/t/2024/01/01/x.parquet").await?.as_ref(), b"abc");
        assert!(!dir.path().join("db/t/2024/01/01/x.partial").exists());
        store.delete("db/t/2024/01/01/x.parquet").await?;
        store.delete("db/t/2024/01/01/x.parquet").await?;
        assert!(store.get("db/t/2024/01/01/x.parquet").await.is_err());
        Ok(())
    }
}
