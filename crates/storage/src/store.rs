//! The object store that holds segments, with a durable put.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::{StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use trawl_common::faults::{Faults, StoreFailure};

use crate::cache::{CachedStore, SegmentCache};
use crate::local_reads::LocalReads;
use crate::observed::ObservedStore;
use crate::read_hint::{ReadHint, ReadHints};
use crate::{Result, StorageError};

/// Segments larger than this go to object storage as a multipart upload.
const MULTIPART_THRESHOLD: usize = 64 << 20;
/// The size of each part of a multipart upload (S3 wants at least 5 MiB but the last).
const MULTIPART_PART_BYTES: usize = 16 << 20;
/// Parts of one upload in flight at once.
const MULTIPART_CONCURRENT_PARTS: usize = 4;

/// URL under which the segment store is registered with DataFusion.
pub const SEGMENT_STORE_URL: &str = "trawl-segments://store";

/// Where segments live. On a local disk, puts go through the file system with `fsync` of the
/// file and its directory before they return, so an acknowledged segment survives power loss;
/// on an S3-compatible store a completed PUT is durable.
///
/// Every request goes through [`ObservedStore`] (request metrics, and injected faults when
/// [`SegmentStore::with_faults`] installed them); with [`SegmentStore::with_cache`], reads go
/// through a local disk cache first.
#[derive(Debug, Clone)]
pub struct SegmentStore {
    object_store: Arc<dyn ObjectStore>,
    /// The backend without the wrapper, to re-wrap when faults are installed.
    backend: Arc<dyn ObjectStore>,
    local_root: Option<PathBuf>,
    faults: Option<Arc<Faults>>,
    cache: Option<Arc<SegmentCache>>,
    /// What the backend makes of read hints (a local store's page-cache read-ahead).
    backend_hint: Option<Arc<dyn ReadHint>>,
    /// Where scans say what they will read next: the cache when there is one, else the
    /// backend.
    hint: Option<Arc<dyn ReadHint>>,
}

impl SegmentStore {
    /// A store rooted at a local directory (created if missing).
    pub fn local(root: &Path) -> Result<SegmentStore> {
        std::fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let local = Arc::new(LocalFileSystem::new_with_prefix(&root)?);
        let reads = Arc::new(LocalReads::new(local));
        let backend: Arc<dyn ObjectStore> = reads.clone();
        Ok(SegmentStore::wrap(
            backend,
            Some(reads as Arc<dyn ReadHint>),
            Some(root),
            None,
            None,
        ))
    }

    /// A store over any `object_store` backend (puts are durable when they return).
    pub fn remote(object_store: Arc<dyn ObjectStore>) -> SegmentStore {
        SegmentStore::wrap(object_store, None, None, None, None)
    }

    /// The store over `backend`, which takes hints through `backend_hint` (a cache in front
    /// of it takes them instead).
    fn wrap(
        backend: Arc<dyn ObjectStore>,
        backend_hint: Option<Arc<dyn ReadHint>>,
        local_root: Option<PathBuf>,
        faults: Option<Arc<Faults>>,
        cache: Option<Arc<SegmentCache>>,
    ) -> SegmentStore {
        let observed: Arc<dyn ObjectStore> = Arc::new(ObservedStore::new(backend.clone(), faults.clone()));
        let (object_store, hint): (Arc<dyn ObjectStore>, _) = match &cache {
            Some(cache) => {
                let cached = Arc::new(CachedStore::new(observed, Arc::clone(cache)));
                (cached.clone(), Some(cached as Arc<dyn ReadHint>))
            }
            None => (observed, backend_hint.clone()),
        };
        SegmentStore {
            object_store,
            backend,
            local_root,
            faults,
            cache,
            backend_hint,
            hint,
        }
    }

    /// The same store with injected faults (`trawl serve --fault-injection`, tests).
    pub fn with_faults(self, faults: Arc<Faults>) -> SegmentStore {
        SegmentStore::wrap(
            self.backend,
            self.backend_hint,
            self.local_root,
            Some(faults),
            self.cache,
        )
    }

    /// The same store, reading through `cache` (a store on the local disk gains nothing from
    /// one; `trawl serve` gives one to a store on object storage).
    pub fn with_cache(self, cache: Arc<SegmentCache>) -> SegmentStore {
        SegmentStore::wrap(
            self.backend,
            self.backend_hint,
            self.local_root,
            self.faults,
            Some(cache),
        )
    }

    /// The local cache reads go through, if any.
    pub fn cache(&self) -> Option<Arc<SegmentCache>> {
        self.cache.clone()
    }

    /// What the engine's sessions carry so that scans can say what they will read next
    /// ([`crate::read_hint`]); `None` when this store takes no hints.
    pub fn read_hints(&self) -> Option<ReadHints> {
        self.hint.clone().map(ReadHints)
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
                        write_and_sync(&target, &bytes, Some(StoreFailure::DiskFull.to_io_error()))
                    }
                    Some(other) => Err(other.to_io_error()),
                    None => write_and_sync(&target, &bytes, None),
                })
                .await
                .map_err(|e| StorageError::Invalid(format!("write task failed: {e}")))?;
                crate::observed::record("put", started, &result);
                result?;
            }
            None if bytes.len() > MULTIPART_THRESHOLD => {
                // Large segments go up in parts: a failed part is retried alone, and no
                // single request carries the whole object. The object appears only when the
                // upload completes; a failed upload is aborted so its parts are not kept.
                let mut upload = self.object_store.put_multipart(&ObjectPath::from(path)).await?;
                let parts: Vec<_> = (0..bytes.len())
                    .step_by(MULTIPART_PART_BYTES)
                    .map(|start| {
                        upload.put_part(
                            bytes
                                .slice(start..(start + MULTIPART_PART_BYTES).min(bytes.len()))
                                .into(),
                        )
                    })
                    .collect();
                let sent = futures::stream::iter(parts)
                    .buffer_unordered(MULTIPART_CONCURRENT_PARTS)
                    .try_collect::<Vec<()>>()
                    .await;
                let completed = match sent {
                    Ok(_) => upload.complete().await.map(|_| ()),
                    Err(error) => Err(error),
                };
                if let Err(error) = completed {
                    if let Err(abort) = upload.abort().await {
                        tracing::warn!(%path, error = %abort, "cannot abort a failed multipart upload; its parts stay until the bucket's lifecycle removes them");
                    }
                    return Err(error.into());
                }
            }
            None => {
                self.object_store.put(&ObjectPath::from(path), bytes.into()).await?;
            }
        }
        Ok(())
    }

    /// Removes the temporary files that writes interrupted by a crash left in a local store,
    /// returning how many. Call it only while no write is in progress (at start-up, before
    /// ingest starts); a store on object storage has none.
    pub async fn sweep_partial(&self) -> Result<usize> {
        let Some(root) = self.local_root.clone() else {
            return Ok(0);
        };
        tokio::task::spawn_blocking(move || sweep_partial_files(&root))
            .await
            .map_err(|e| StorageError::Invalid(format!("sweep task failed: {e}")))
    }

    /// Lists the store's root once, so that a wrong bucket, endpoint or credentials are
    /// reported at start-up instead of on the first write.
    pub async fn check_reachable(&self) -> Result<()> {
        if self.local_root.is_some() {
            return Ok(());
        }
        self.object_store.list_with_delimiter(None).await?;
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

/// The extension of a segment's temporary sibling while it is written.
const PARTIAL: &str = "partial";

/// Writes to a temporary sibling, fsyncs it, renames it into place and fsyncs the directory.
/// A write that fails removes its temporary file (a full disk is not left fuller); only a
/// crash leaves one behind, and [`SegmentStore::sweep_partial`] removes those at start-up.
/// `injected` fails the write half-way through, as a full disk does.
fn write_and_sync(target: &Path, bytes: &[u8], injected: Option<std::io::Error>) -> std::io::Result<()> {
    let directory = target
        .parent()
        .ok_or_else(|| std::io::Error::other("segment path has no parent"))?;
    std::fs::create_dir_all(directory)?;
    let temporary = target.with_extension(PARTIAL);
    if let Err(error) = write_temporary(&temporary, bytes, injected) {
        if let Err(cleanup) = std::fs::remove_file(&temporary)
            && cleanup.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %temporary.display(), error = %cleanup, "cannot remove a partial segment file");
        }
        return Err(error);
    }
    std::fs::rename(&temporary, target)?;
    std::fs::File::open(directory)?.sync_all()?;
    Ok(())
}

fn write_temporary(temporary: &Path, bytes: &[u8], injected: Option<std::io::Error>) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(temporary)?;
    if let Some(error) = injected {
        file.write_all(&bytes[..bytes.len() / 2])?;
        return Err(error);
    }
    file.write_all(bytes)?;
    file.sync_all()
}

/// Removes every `*.partial` file under `root`, returning how many; directories it cannot read
/// are skipped with a warning.
fn sweep_partial_files(root: &Path) -> usize {
    let mut removed = 0;
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let entries = match std::fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(path = %directory.display(), %error, "cannot list a segment directory");
                continue;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(path),
                Ok(kind) if kind.is_file() && path.extension().is_some_and(|e| e == PARTIAL) => {
                    match std::fs::remove_file(&path) {
                        Ok(()) => removed += 1,
                        Err(error) => {
                            tracing::warn!(path = %path.display(), %error, "cannot remove a partial segment file")
                        }
                    }
                }
                _ => {}
            }
        }
    }
    removed
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

    #[tokio::test]
    async fn a_large_segment_goes_up_in_parts_and_reads_back_whole() -> Result<()> {
        let backend = Arc::new(object_store::memory::InMemory::new());
        let store = SegmentStore::remote(backend.clone());
        // Two full parts and a short last one.
        let bytes: Vec<u8> = (0..MULTIPART_THRESHOLD + MULTIPART_PART_BYTES + 12_345)
            .map(|i| (i % 251) as u8)
            .collect();
        store
            .put_durable("db/t/big.parquet", Bytes::from(bytes.clone()))
            .await?;
        store
            .put_durable("db/t/small.parquet", Bytes::from_static(b"small"))
            .await?;
        assert_eq!(store.get("db/t/big.parquet").await?.as_ref(), bytes.as_slice());
        assert_eq!(store.get("db/t/small.parquet").await?.as_ref(), b"small");
        let listed = backend.list_with_delimiter(Some(&ObjectPath::from("db/t"))).await?;
        assert_eq!(listed.objects.len(), 2);
        store.check_reachable().await?;
        Ok(())
    }

    #[tokio::test]
    async fn a_failed_write_removes_its_partial_file() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let target = dir.path().join("db/t/x.parquet");
        let refused = write_and_sync(&target, b"abcdef", Some(StoreFailure::DiskFull.to_io_error()));
        assert!(refused.is_err());
        assert!(!target.exists());
        assert!(!target.with_extension(PARTIAL).exists());
        Ok(())
    }

    #[tokio::test]
    async fn the_sweep_removes_partial_files_left_by_a_crash() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let store = SegmentStore::local(dir.path())?;
        store
            .put_durable("db/t/2024/01/01/kept.parquet", Bytes::from_static(b"abc"))
            .await?;
        for left in ["db/t/2024/01/01/a.partial", "db/u/2024/01/02/b.partial"] {
            let path = dir.path().join(left);
            std::fs::create_dir_all(path.parent().ok_or(StorageError::Invalid("no parent".into()))?)?;
            std::fs::write(path, b"half")?;
        }
        assert_eq!(store.sweep_partial().await?, 2);
        assert_eq!(store.sweep_partial().await?, 0);
        assert_eq!(store.get("db/t/2024/01/01/kept.parquet").await?.as_ref(), b"abc");
        assert!(!dir.path().join("db/t/2024/01/01/a.partial").exists());
        Ok(())
    }
}
