//! Segment reads that check the file's Thrift structures before the Parquet decoder sees them
//! (see [`crate::thrift_check`] for why): the footer and page index when a footer is fetched,
//! and the page headers in every column chunk or page a scan reads.
//!
//! Every scan reads through [`CheckedReaderFactory`]; footers for planning come from
//! [`checked_footer`]. Both share DataFusion's footer cache, so a footer is fetched and checked
//! once, and a scan after planning finds it there.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
use datafusion::datasource::physical_plan::parquet::{
    DefaultParquetFileReaderFactory, ParquetAccessPlan, RowGroupAccess,
};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::thrift_check;

/// Bytes read from a file's end at first: most footers fit, so one request fetches the footer.
const TAIL_HINT: u64 = 64 * 1024;

/// A segment file whose structure is damaged: what is wrong, as a sentence's end ("its footer
/// does not decode: ...").
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SegmentDamage(pub String);

fn damaged(message: String) -> DataFusionError {
    DataFusionError::External(Box::new(SegmentDamage(message)))
}

/// The footer of `object`, its Thrift structures checked before they are decoded, with its
/// page index when `policy` asks for it (DataFusion's default when `None`), from and into
/// `cache`.
pub(crate) async fn checked_footer(
    store: &dyn ObjectStore,
    object: &ObjectMeta,
    cache: Option<Arc<FileMetadataCache>>,
    policy: Option<PageIndexPolicy>,
) -> DfResult<Arc<ParquetMetaData>> {
    let cached = cache
        .as_ref()
        .and_then(|cache| cache.get(&object.location))
        .is_some_and(|entry| entry.is_valid_for(object));
    if !cached {
        check_tail(store, object).await?;
    }
    let footer = fetch(store, object, &cache, PageIndexPolicy::Skip).await?;
    let policy = policy.unwrap_or(if cache.is_some() {
        PageIndexPolicy::Optional
    } else {
        PageIndexPolicy::Skip
    });
    if policy == PageIndexPolicy::Skip || has_page_index(&footer) {
        return Ok(footer);
    }
    let ranges = thrift_check::page_index_ranges(&footer, object.size).map_err(damaged)?;
    if !ranges.is_empty() {
        let bytes = store.get_ranges(&object.location, &ranges).await?;
        thrift_check::check_page_index(&ranges, &bytes).map_err(damaged)?;
    }
    fetch(store, object, &cache, policy).await
}

async fn fetch(
    store: &dyn ObjectStore,
    object: &ObjectMeta,
    cache: &Option<Arc<FileMetadataCache>>,
    policy: PageIndexPolicy,
) -> DfResult<Arc<ParquetMetaData>> {
    DFParquetMetadata::new(store, object)
        .with_file_metadata_cache(cache.clone())
        .with_page_index_policy(Some(policy))
        .fetch_metadata()
        .await
}

fn has_page_index(footer: &ParquetMetaData) -> bool {
    footer.column_index().is_some() && footer.offset_index().is_some()
}

/// Checks the footer at the end of `object`: one request for its last bytes, a second when
/// the footer is longer than those.
async fn check_tail(store: &dyn ObjectStore, object: &ObjectMeta) -> DfResult<()> {
    let size = object.size;
    let first = size.min(TAIL_HINT);
    let mut tail = store.get_range(&object.location, size - first..size).await?;
    let footer_len = thrift_check::footer_len(&tail).map_err(damaged)?;
    let needed = footer_len + 8;
    if needed > size {
        return Err(damaged(format!(
            "its footer claims {footer_len} bytes, more than the file holds"
        )));
    }
    if needed > first {
        tail = store.get_range(&object.location, size - needed..size).await?;
    }
    let start = usize::try_from(first.max(needed) - needed).map_err(|e| damaged(e.to_string()))?;
    let footer = tail
        .get(start..tail.len().saturating_sub(8))
        .ok_or_else(|| damaged("its footer is shorter than it claims".to_string()))?;
    thrift_check::check_footer(footer).map_err(damaged)
}

/// Makes the readers of every segment scan: DataFusion's, with the footer fetched through
/// [`checked_footer`] and each read column chunk's page headers checked.
#[derive(Debug)]
pub(crate) struct CheckedReaderFactory {
    store: Arc<dyn ObjectStore>,
    cache: Arc<FileMetadataCache>,
    inner: DefaultParquetFileReaderFactory,
}

impl CheckedReaderFactory {
    pub(crate) fn new(store: Arc<dyn ObjectStore>, cache: Arc<FileMetadataCache>) -> Self {
        let inner = DefaultParquetFileReaderFactory::new(Arc::clone(&store));
        Self { store, cache, inner }
    }
}

impl ParquetFileReaderFactory for CheckedReaderFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> DfResult<Box<dyn AsyncFileReader + Send>> {
        let object = file.object_meta.clone();
        // A read of some rows of a chunk (the token index narrowed it) fetches only their
        // pages, which takes the page index; DataFusion loads it only for page pruning.
        let selective = file.extensions.get::<ParquetAccessPlan>().is_some_and(|plan| {
            plan.inner()
                .iter()
                .any(|access| matches!(access, RowGroupAccess::Selection(_)))
        });
        let inner = self
            .inner
            .create_reader(partition_index, file, metadata_size_hint, metrics)?;
        Ok(Box::new(CheckedReader {
            inner,
            store: Some(Arc::clone(&self.store)),
            object,
            cache: Some(Arc::clone(&self.cache)),
            page_starts: None,
            selective,
        }))
    }
}

/// Reads one segment: bytes through `inner` (which counts them for the scan's metrics), the
/// footer through [`checked_footer`]; a read that starts where a column chunk or a page does
/// has its page headers checked.
pub(crate) struct CheckedReader {
    inner: Box<dyn AsyncFileReader + Send>,
    /// Where the footer is fetched from; `None` when the caller gave it.
    store: Option<Arc<dyn ObjectStore>>,
    object: ObjectMeta,
    cache: Option<Arc<FileMetadataCache>>,
    /// Where column chunks and pages start, known once the footer is.
    page_starts: Option<Vec<u64>>,
    /// The scan reads row selections: the footer comes with the page index.
    selective: bool,
}

impl CheckedReader {
    /// A reader over `inner` for a footer already fetched (and checked) by the caller.
    pub(crate) fn with_footer(
        inner: Box<dyn AsyncFileReader + Send>,
        object: ObjectMeta,
        footer: &ParquetMetaData,
    ) -> Self {
        Self {
            inner,
            store: None,
            object,
            cache: None,
            page_starts: Some(page_starts(footer)),
            selective: false,
        }
    }

    fn check(&self, ranges: &[Range<u64>], bytes: &[Bytes]) -> Result<(), ParquetError> {
        let Some(starts) = &self.page_starts else {
            return Ok(());
        };
        for (range, bytes) in ranges.iter().zip(bytes) {
            if starts.binary_search(&range.start).is_ok() {
                thrift_check::check_page_headers(range.start, bytes).map_err(|message| {
                    ParquetError::External(Box::new(SegmentDamage(format!(
                        "segment {} cannot be read: {message}",
                        self.object.location
                    ))))
                })?;
            }
        }
        Ok(())
    }
}

/// The offsets at which a column chunk or a page (by the offset index) starts, sorted.
///
/// Made on every open of a segment, so made cheaply: listed chunk by chunk, a valid file's
/// starts come out in order already, which the sort only confirms. (A hash set of them, its
/// inserts and rehashes, was 4-9 % of the CPU of a needle search, which opens every segment.)
fn page_starts(footer: &ParquetMetaData) -> Vec<u64> {
    let pages = footer.offset_index();
    let mut starts = Vec::new();
    for (g, group) in footer.row_groups().iter().enumerate() {
        for (c, column) in group.columns().iter().enumerate() {
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset());
            starts.extend(u64::try_from(start).ok());
            let locations = pages.and_then(|p| p.get(g)).and_then(|group| group.get(c));
            for page in locations.into_iter().flat_map(|index| index.page_locations()) {
                starts.extend(u64::try_from(page.offset).ok());
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

impl AsyncFileReader for CheckedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, datafusion::parquet::errors::Result<Bytes>> {
        async move {
            let bytes = self.inner.get_bytes(range.clone()).await?;
            self.check(std::slice::from_ref(&range), std::slice::from_ref(&bytes))?;
            Ok(bytes)
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<Range<u64>>,
    ) -> BoxFuture<'_, datafusion::parquet::errors::Result<Vec<Bytes>>> {
        async move {
            let bytes = self.inner.get_byte_ranges(ranges.clone()).await?;
            self.check(&ranges, &bytes)?;
            Ok(bytes)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, datafusion::parquet::errors::Result<Arc<ParquetMetaData>>> {
        let policy = match self.selective {
            true => Some(PageIndexPolicy::Optional),
            false => options.map(|o| o.column_index_policy()),
        };
        async move {
            let Some(store) = self.store.clone() else {
                return self.inner.get_metadata(options).await;
            };
            let footer = checked_footer(store.as_ref(), &self.object, self.cache.clone(), policy)
                .await
                .map_err(|e| ParquetError::External(Box::new(e)))?;
            self.page_starts = Some(page_starts(&footer));
            Ok(footer)
        }
        .boxed()
    }
}
