//! The object store every segment read and write goes through: it records each request's
//! latency and failures (`trawl_storage_request_*`), and, when fault injection is on, fails or
//! delays requests as the shared [`Faults`] say.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use trawl_common::faults::{Faults, StoreFailure};
use trawl_common::metrics::{METRICS, label, seconds_since};

/// Wraps a store with request metrics and optional injected faults.
#[derive(Debug)]
pub struct ObservedStore {
    inner: Arc<dyn ObjectStore>,
    faults: Option<Arc<Faults>>,
}

impl ObservedStore {
    pub fn new(inner: Arc<dyn ObjectStore>, faults: Option<Arc<Faults>>) -> ObservedStore {
        ObservedStore { inner, faults }
    }
}

impl fmt::Display for ObservedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Observed({})", self.inner)
    }
}

/// The object store error of an injected failure.
pub(crate) fn injected(failure: StoreFailure) -> object_store::Error {
    object_store::Error::Generic {
        store: "trawl-segments",
        source: Box::new(failure.to_io_error()),
    }
}

/// Records one finished request.
fn record<T>(operation: &'static str, started: Instant, result: &Result<T>) {
    METRICS
        .storage_request_seconds
        .get_or_create(&label("operation", operation))
        .observe(seconds_since(started));
    if result.is_err() {
        METRICS
            .storage_request_errors
            .get_or_create(&label("operation", operation))
            .inc();
    }
}

impl ObservedStore {
    /// Fails a non-put request when the store is "down".
    fn check(&self) -> Result<()> {
        match self.faults.as_ref().and_then(|f| f.on_store_call()) {
            Some(failure) => Err(injected(failure)),
            None => Ok(()),
        }
    }

    /// Delays and fails a put as the faults say.
    async fn check_put(&self) -> Result<()> {
        let Some(faults) = &self.faults else {
            return Ok(());
        };
        let (delay, failure) = faults.on_put();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match failure {
            Some(failure) => Err(injected(failure)),
            None => Ok(()),
        }
    }
}

#[async_trait]
impl ObjectStore for ObservedStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        let started = Instant::now();
        let result = match self.check_put().await {
            Ok(()) => self.inner.put_opts(location, payload, opts).await,
            Err(e) => Err(e),
        };
        record("put", started, &result);
        result
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        let started = Instant::now();
        let result = match self.check_put().await {
            Ok(()) => self.inner.put_multipart_opts(location, opts).await,
            Err(e) => Err(e),
        };
        record("put", started, &result);
        result
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let started = Instant::now();
        let operation = if options.head { "head" } else { "get" };
        let result = match self.check() {
            Ok(()) => self.inner.get_opts(location, options).await,
            Err(e) => Err(e),
        };
        record(operation, started, &result);
        result
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let started = Instant::now();
        let result = match self.check() {
            Ok(()) => self.inner.get_ranges(location, ranges).await,
            Err(e) => Err(e),
        };
        record("get", started, &result);
        result
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        if let Err(e) = self.check() {
            record::<()>("delete", Instant::now(), &Err(injected(StoreFailure::Down)));
            return futures::stream::once(async move { Err(e) }).boxed();
        }
        self.inner
            .delete_stream(locations)
            .map(|result| {
                record("delete", Instant::now(), &result);
                result
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        if let Err(e) = self.check() {
            record::<()>("list", Instant::now(), &Err(injected(StoreFailure::Down)));
            return futures::stream::once(async move { Err(e) }).boxed();
        }
        record::<()>("list", Instant::now(), &Ok(()));
        self.inner.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        if let Err(e) = self.check() {
            record::<()>("list", Instant::now(), &Err(injected(StoreFailure::Down)));
            return futures::stream::once(async move { Err(e) }).boxed();
        }
        record::<()>("list", Instant::now(), &Ok(()));
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let started = Instant::now();
        let result = match self.check() {
            Ok(()) => self.inner.list_with_delimiter(prefix).await,
            Err(e) => Err(e),
        };
        record("list", started, &result);
        result
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let started = Instant::now();
        let result = match self.check() {
            Ok(()) => self.inner.copy_opts(from, to, options).await,
            Err(e) => Err(e),
        };
        record("copy", started, &result);
        result
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let started = Instant::now();
        let result = match self.check() {
            Ok(()) => self.inner.rename_opts(from, to, options).await,
            Err(e) => Err(e),
        };
        record("rename", started, &result);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;
    use trawl_common::faults::FaultSpec;

    #[tokio::test]
    async fn faults_fail_requests_until_they_end() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let faults = Arc::new(Faults::new());
        let store = ObservedStore::new(Arc::new(InMemory::new()), Some(faults.clone()));
        let path = Path::from("a/b");
        store.put(&path, Bytes::from_static(b"x").into()).await?;
        faults.apply(&FaultSpec {
            store_down_secs: Some(60),
            ..FaultSpec::default()
        });
        assert!(store.get(&path).await.is_err());
        assert!(store.put(&path, Bytes::from_static(b"y").into()).await.is_err());
        assert!(store.list(None).next().await.is_some_and(|r| r.is_err()));
        faults.apply(&FaultSpec {
            clear: true,
            store_failed_puts: Some(1),
            ..FaultSpec::default()
        });
        assert_eq!(store.get(&path).await?.bytes().await?.as_ref(), b"x");
        let refused = store.put(&path, Bytes::from_static(b"y").into()).await;
        assert!(refused.is_err_and(|e| e.to_string().contains("injected")));
        store.put(&path, Bytes::from_static(b"y").into()).await?;
        assert_eq!(store.get(&path).await?.bytes().await?.as_ref(), b"y");
        Ok(())
    }
}
