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
use datafusion::parquet::file::metadata::{ColumnChunkMetaData, PageIndexPolicy, ParquetMetaData};
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::read_hint::ReadHint;
use crate::read_metrics::{BLOOM_FILTER_BYTES, CHUNKS_PLANNED, RAW_BYTES_PLANNED};
use crate::thrift_check;

/// Bytes read from a file's end at first: most footers fit, so one request fetches the footer.
const TAIL_HINT: u64 = 64 * 1024;

/// Most bytes of later column chunks one reader hints ([`crate::read_hint`]): a scan that stops
/// early (a limit met) leaves at most this much read for nothing per segment.
const MOST_HINTED_BYTES: u64 = 64 << 20;

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
    /// Where readers say which column chunks they will read next.
    hint: Option<Arc<dyn ReadHint>>,
}

impl CheckedReaderFactory {
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        cache: Arc<FileMetadataCache>,
        hint: Option<Arc<dyn ReadHint>>,
    ) -> Self {
        let inner = DefaultParquetFileReaderFactory::new(Arc::clone(&store));
        Self {
            store,
            cache,
            inner,
            hint,
        }
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
        // The row groups read whole: the plan's `Scan`s (all without a plan). The pages of a
        // selection are not hinted: they are few, and their chunks mostly go unread.
        let whole = file.extensions.get::<ParquetAccessPlan>().map(|plan| {
            plan.inner()
                .iter()
                .map(|access| matches!(access, RowGroupAccess::Scan))
                .collect()
        });
        let read = file.extensions.get::<ParquetAccessPlan>().map(|plan| {
            plan.inner()
                .iter()
                .map(|access| !matches!(access, RowGroupAccess::Skip))
                .collect()
        });
        let counted = Counted::new(metrics, partition_index, object.location.as_ref(), read);
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
            footer: None,
            whole,
            hint: self.hint.clone(),
            bloom_starts: Vec::new(),
            counted: Some(counted),
        }))
    }
}

/// What a reader adds to its scan's metrics ([`crate::read_metrics`]).
struct Counted {
    /// Which row groups the access plan reads (all without a plan); taken when counted.
    read: Option<Option<Vec<bool>>>,
    raw_bytes: Count,
    chunks: Count,
    bloom_bytes: Count,
}

impl Counted {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize, file: &str, read: Option<Vec<bool>>) -> Counted {
        let per_file = || MetricBuilder::new(metrics).with_new_label("filename", file.to_string());
        Counted {
            read: Some(read),
            raw_bytes: per_file().counter(RAW_BYTES_PLANNED, partition),
            chunks: per_file().counter(CHUNKS_PLANNED, partition),
            bloom_bytes: MetricBuilder::new(metrics).counter(BLOOM_FILTER_BYTES, partition),
        }
    }

    /// Counts the chunks the reader reads of the file whose footer is `footer`, once.
    fn planned(&mut self, footer: &ParquetMetaData) {
        let Some(read) = self.read.take() else {
            return;
        };
        let (mut raw, mut chunks) = (0u64, 0usize);
        for (index, group) in footer.row_groups().iter().enumerate() {
            if read.as_ref().is_none_or(|read| read.get(index).copied().unwrap_or(false)) {
                raw = raw.saturating_add(u64::try_from(group.total_byte_size()).unwrap_or(0));
                chunks += 1;
            }
        }
        self.raw_bytes.add(usize::try_from(raw).unwrap_or(usize::MAX));
        self.chunks.add(chunks);
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
    /// The footer, once fetched through this reader.
    footer: Option<Arc<ParquetMetaData>>,
    /// Which row groups the scan reads whole, when its access plan says.
    whole: Option<Vec<bool>>,
    /// Told once, at the first read of column chunks, which the later row groups will take
    /// ([`crate::read_hint`]); taken then.
    hint: Option<Arc<dyn ReadHint>>,
    /// Where the file's Parquet bloom filters start, sorted (known once the footer is).
    bloom_starts: Vec<u64>,
    /// What the reader counts into its scan's metrics; `None` for readers made without.
    counted: Option<Counted>,
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
            footer: None,
            whole: None,
            hint: None,
            bloom_starts: Vec::new(),
            counted: None,
        }
    }

    /// Counts the reads of whole bloom filters among `ranges` into the scan's metrics.
    fn count_blooms(&self, ranges: &[Range<u64>]) {
        let Some(counted) = &self.counted else {
            return;
        };
        if self.bloom_starts.is_empty() {
            return;
        }
        for range in ranges {
            if self.bloom_starts.binary_search(&range.start).is_ok() {
                let len = range.end.saturating_sub(range.start);
                counted.bloom_bytes.add(usize::try_from(len).unwrap_or(usize::MAX));
            }
        }
    }

    /// At the first read of whole column chunks, tells the store the same columns' chunks in
    /// the later row groups the scan reads whole.
    fn hint_later(&mut self, ranges: &[Range<u64>]) {
        let (Some(footer), Some(_)) = (&self.footer, &self.hint) else {
            return;
        };
        let Some(later) = later_chunks(footer, self.whole.as_deref(), ranges) else {
            return;
        };
        if let Some(hint) = self.hint.take()
            && !later.is_empty()
        {
            hint.will_read(&self.object.location, later);
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

/// The offsets at which the file's Parquet bloom filters start, sorted (empty for most
/// segments: only a few columns have them).
fn bloom_starts(footer: &ParquetMetaData) -> Vec<u64> {
    let mut starts: Vec<u64> = footer
        .row_groups()
        .iter()
        .flat_map(|group| group.columns())
        .filter_map(|column| column.bloom_filter_offset())
        .filter_map(|offset| u64::try_from(offset).ok())
        .collect();
    starts.sort_unstable();
    starts
}

/// The byte ranges of the same columns as `ranges` (whole column chunks of one row group) in
/// the row groups after theirs that `whole` marks (all of them when `None`), in file order,
/// up to [`MOST_HINTED_BYTES`]; `None` when `ranges` are not whole chunks of one row group.
fn later_chunks(footer: &ParquetMetaData, whole: Option<&[bool]>, ranges: &[Range<u64>]) -> Option<Vec<Range<u64>>> {
    let first = ranges.first()?;
    let group = footer
        .row_groups()
        .iter()
        .position(|group| group.columns().iter().any(|c| chunk_range(c) == *first))?;
    let chunks = footer.row_group(group).columns();
    let columns: Vec<usize> = ranges
        .iter()
        .map(|range| chunks.iter().position(|c| chunk_range(c) == *range))
        .collect::<Option<_>>()?;
    let mut later = Vec::new();
    let mut bytes = 0u64;
    for (g, row_group) in footer.row_groups().iter().enumerate().skip(group + 1) {
        if whole.is_some_and(|whole| !whole.get(g).copied().unwrap_or(false)) {
            continue;
        }
        for range in columns
            .iter()
            .filter_map(|&c| row_group.columns().get(c).map(chunk_range))
        {
            bytes = bytes.saturating_add(range.end.saturating_sub(range.start));
            if bytes > MOST_HINTED_BYTES {
                return Some(later);
            }
            later.push(range);
        }
    }
    Some(later)
}

/// The bytes of a column chunk in its file.
pub(crate) fn chunk_range(column: &ColumnChunkMetaData) -> Range<u64> {
    let (start, len) = column.byte_range();
    start..start.saturating_add(len)
}

impl AsyncFileReader for CheckedReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, datafusion::parquet::errors::Result<Bytes>> {
        self.count_blooms(std::slice::from_ref(&range));
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
        self.hint_later(&ranges);
        self.count_blooms(&ranges);
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
            self.bloom_starts = bloom_starts(&footer);
            if let Some(counted) = &mut self.counted {
                counted.planned(&footer);
            }
            self.footer = Some(Arc::clone(&footer));
            Ok(footer)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::execution::runtime_env::RuntimeEnv;
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::arrow::ProjectionMask;
    use datafusion::parquet::arrow::arrow_reader::{RowSelection, RowSelector};
    use datafusion::parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
    use datafusion::parquet::file::properties::WriterProperties;
    use futures::TryStreamExt;
    use object_store::memory::InMemory;
    use object_store::path::Path;

    use super::*;
    use crate::read_hint::Told;

    /// A segment of 5 row groups of 100 rows and 3 columns in a store.
    async fn segment() -> Result<(Arc<dyn ObjectStore>, ObjectMeta, Arc<ParquetMetaData>), Box<dyn std::error::Error>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Utf8, false),
            Field::new("c", DataType::Int64, false),
        ]));
        let rows = 500i64;
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter_values((0..rows).map(|i| format!("row {i}")))),
                Arc::new(Int64Array::from_iter_values((0..rows).map(|i| i * 7))),
            ],
        )?;
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(properties))?;
        writer.write(&batch)?;
        writer.close()?;
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let location = Path::from("segments/s.parquet");
        store.put(&location, Bytes::from(bytes).into()).await?;
        let object = store.head(&location).await?;
        let footer = checked_footer(store.as_ref(), &object, None, None).await?;
        assert_eq!(footer.num_row_groups(), 5);
        Ok((store, object, footer))
    }

    /// Reads columns `a` and `c` of `groups` through a checked reader that tells `told`.
    async fn read(
        store: &Arc<dyn ObjectStore>,
        object: &ObjectMeta,
        plan: Option<ParquetAccessPlan>,
        groups: Vec<usize>,
        told: &Arc<Told>,
    ) -> Result<usize, Box<dyn std::error::Error>> {
        let cache = RuntimeEnv::default().cache_manager.get_file_metadata_cache();
        let hint: Arc<dyn ReadHint> = Arc::clone(told) as Arc<dyn ReadHint>;
        let factory = CheckedReaderFactory::new(Arc::clone(store), cache, Some(hint));
        let mut file = PartitionedFile::from(object.clone());
        if let Some(plan) = plan {
            file = file.with_extension(plan);
        }
        let reader = Reader(factory.create_reader(0, file, None, &ExecutionPlanMetricsSet::new())?);
        let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
        let projection = ProjectionMask::roots(builder.parquet_schema(), [0, 2]);
        let stream = builder.with_projection(projection).with_row_groups(groups).build()?;
        let batches: Vec<RecordBatch> = stream.try_collect().await?;
        Ok(batches.iter().map(RecordBatch::num_rows).sum())
    }

    /// The factory's reader, as the Parquet stream takes it.
    struct Reader(Box<dyn AsyncFileReader + Send>);

    impl AsyncFileReader for Reader {
        fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, datafusion::parquet::errors::Result<Bytes>> {
            self.0.get_bytes(range)
        }

        fn get_byte_ranges(
            &mut self,
            ranges: Vec<Range<u64>>,
        ) -> BoxFuture<'_, datafusion::parquet::errors::Result<Vec<Bytes>>> {
            self.0.get_byte_ranges(ranges)
        }

        fn get_metadata<'a>(
            &'a mut self,
            options: Option<&'a ArrowReaderOptions>,
        ) -> BoxFuture<'a, datafusion::parquet::errors::Result<Arc<ParquetMetaData>>> {
            self.0.get_metadata(options)
        }
    }

    fn chunks(footer: &ParquetMetaData, groups: &[usize]) -> Vec<Range<u64>> {
        groups
            .iter()
            .flat_map(|&g| [0, 2].map(|c| chunk_range(footer.row_group(g).column(c))))
            .collect()
    }

    #[tokio::test]
    async fn a_reader_hints_the_later_chunks_of_its_columns_once() -> Result<(), Box<dyn std::error::Error>> {
        let (store, object, footer) = segment().await?;
        // Without an access plan, every later row group's chunks of the read columns.
        let told = Arc::new(Told::default());
        assert_eq!(read(&store, &object, None, vec![0, 1, 2, 3, 4], &told).await?, 500);
        let hints = told.hints();
        assert_eq!(hints, vec![(object.location.clone(), chunks(&footer, &[1, 2, 3, 4]))]);

        // With one: only the row groups it reads whole, not those skipped or read in part.
        let mut plan = ParquetAccessPlan::new_all(5);
        plan.skip(0);
        plan.skip(2);
        plan.scan_selection(
            3,
            RowSelection::from(vec![RowSelector::select(10), RowSelector::skip(90)]),
        );
        let told = Arc::new(Told::default());
        assert_eq!(read(&store, &object, Some(plan), vec![1, 4], &told).await?, 200);
        let hints = told.hints();
        assert_eq!(hints, vec![(object.location.clone(), chunks(&footer, &[4]))]);

        // Reading the last row group first: nothing later to hint.
        let told = Arc::new(Told::default());
        assert_eq!(read(&store, &object, None, vec![4], &told).await?, 100);
        assert!(told.hints().is_empty());
        Ok(())
    }

    #[tokio::test]
    async fn a_reader_counts_the_raw_bytes_of_its_chunks_and_the_bloom_filters_it_reads()
    -> Result<(), Box<dyn std::error::Error>> {
        let (store, object, footer) = segment().await?;
        let cache = RuntimeEnv::default().cache_manager.get_file_metadata_cache();
        let factory = CheckedReaderFactory::new(Arc::clone(&store), cache, None);
        let mut plan = ParquetAccessPlan::new_all(5);
        plan.skip(0);
        plan.skip(2);
        let file = PartitionedFile::from(object.clone()).with_extension(plan);
        let metrics = ExecutionPlanMetricsSet::new();
        let reader = Reader(factory.create_reader(0, file, None, &metrics)?);
        let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
        let stream = builder.with_row_groups(vec![1, 3, 4]).build()?;
        let batches: Vec<RecordBatch> = stream.try_collect().await?;
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 300);
        let raw: i64 = [1, 3, 4].iter().map(|&g| footer.row_group(g).total_byte_size()).sum();
        let totals = crate::read_metrics::read_totals(&metrics.clone_inner());
        assert_eq!(totals.raw_bytes, u64::try_from(raw)?);
        assert_eq!(totals.bloom_filter_bytes, 0, "the file has no bloom filters");

        // A file with a bloom filter on a column: reading it counts its bytes.
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(StringArray::from_iter_values((0..100).map(|i| format!("id{i}"))))],
        )?;
        let properties = WriterProperties::builder().set_bloom_filter_enabled(true).build();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(properties))?;
        writer.write(&batch)?;
        writer.close()?;
        let location = Path::from("segments/blooms.parquet");
        store.put(&location, Bytes::from(bytes).into()).await?;
        let object = store.head(&location).await?;
        let metrics = ExecutionPlanMetricsSet::new();
        let reader = Reader(factory.create_reader(0, PartitionedFile::from(object), None, &metrics)?);
        let mut builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
        let length = builder.metadata().row_group(0).column(0).bloom_filter_length().ok_or("no length")?;
        let filter = builder.get_row_group_column_bloom_filter(0, 0).await?.ok_or("no filter")?;
        assert!(filter.check(&"id7"));
        let totals = crate::read_metrics::read_totals(&metrics.clone_inner());
        assert_eq!(totals.bloom_filter_bytes, u64::try_from(length)?);
        Ok(())
    }

    #[tokio::test]
    async fn only_whole_chunks_of_one_row_group_say_what_comes_next() -> Result<(), Box<dyn std::error::Error>> {
        let (_, _, footer) = segment().await?;
        let first = chunks(&footer, &[0]);
        assert_eq!(
            later_chunks(&footer, None, &first),
            Some(chunks(&footer, &[1, 2, 3, 4]))
        );
        // Part of a chunk (a page), or chunks of two row groups: no hint.
        let part = first[0].start..first[0].end - 1;
        assert_eq!(later_chunks(&footer, None, std::slice::from_ref(&part)), None);
        let mixed = [first[0].clone(), chunk_range(footer.row_group(1).column(2))];
        assert_eq!(later_chunks(&footer, None, &mixed), None);
        assert_eq!(later_chunks(&footer, None, &[]), None);
        // A plan shorter than the file: the row groups it does not name are not hinted.
        assert_eq!(
            later_chunks(&footer, Some(&[true, true]), &first),
            Some(chunks(&footer, &[1]))
        );
        Ok(())
    }
}
