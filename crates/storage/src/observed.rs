//! The object store every segment read and write goes through: it records each request's
//! latency and failures (`trawl_storage_request_*`), and, when fault injection is on, fails or
//! delays requests as the shared [`Faults`] say.

use std::fmt;
use std::future::Future;
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

/// Waits out an injected put delay, then says how the put fails, if it does.
pub(crate) async fn put_fault(faults: Option<&Faults>) -> Option<StoreFailure> {
    let (delay, failure) = faults?.on_put();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    failure
}

/// Records one finished request.
pub(crate) fn record<T, E>(operation: &'static str, started: Instant, result: &std::result::Result<T, E>) {
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
        match put_fault(self.faults.as_deref()).await {
            Some(failure) => Err(injected(failure)),
            None => Ok(()),
        }
    }

    /// Runs one request after `check` let it through, and records it as `operation`.
    async fn observe<T>(
        &self,
        operation: &'static str,
        check: impl Future<Output = Result<()>>,
        request: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let started = Instant::now();
        let result = match check.await {
            Ok(()) => request.await,
            Err(e) => Err(e),
        };
        record(operation, started, &result);
        result
    }

    /// A listing, or the error of a store that is "down".
    fn listing(
        &self,
        list: impl FnOnce() -> BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let checked = self.check();
        record("list", Instant::now(), &checked);
        match checked {
            Ok(()) => list(),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }
}

#[async_trait]
impl ObjectStore for ObservedStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        let request = self.inner.put_opts(location, payload, opts);
        self.observe("put", self.check_put(), request).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        let request = self.inner.put_multipart_opts(location, opts);
        self.observe("put", self.check_put(), request).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let operation = if options.head { "head" } else { "get" };
        let request = self.inner.get_opts(location, options);
        self.observe(operation, async { self.check() }, request).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let request = self.inner.get_ranges(location, ranges);
        self.observe("get", async { self.check() }, request).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        if let Err(e) = self.check() {
            record("delete", Instant::now(), &Err::<(), _>(&e));
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
        self.listing(|| self.inner.list(prefix))
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.listing(|| self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let request = self.inner.list_with_delimiter(prefix);
        self.observe("list", async { self.check() }, request).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let request = self.inner.copy_opts(from, to, options);
        self.observe("copy", async { self.check() }, request).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        let request = self.inner.rename_opts(from, to, options);
        self.observe("rename", async { self.check() }, request).await
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
