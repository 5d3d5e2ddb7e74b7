//! [`TrawlTable`]: a DataFusion `TableProvider` over one table's live segments.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{DFSchema, Statistics};
use datafusion::datasource::TableType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, cast, ident, lit};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::union::UnionExec;
use trawl_catalog::{Catalog, SegmentMeta, TimeRange};
use trawl_common::TIME_COLUMN;
use trawl_common::shred::parse_shredded_column;

use crate::checked::CheckedReaderFactory;
use crate::chunks::{Chunks, Classifier, access_plan, access_plan_selected};
use crate::progress::{ScanCounters, chunks_of};
use crate::segment_scan::{LazyScans, ScanSpec, SegmentScanExec};
use crate::store::SegmentStore;
use crate::time_bounds::time_bounds_of_filters;
use crate::tokens::{Need, Selected, narrowed};

/// Where a table's segments come from.
#[derive(Debug, Clone)]
enum SegmentSource {
    /// Looked up in the catalog at scan time, narrowed by the query's time bounds.
    Catalog(Arc<dyn Catalog>),
    /// A fixed list (used by merges), scanned one segment per partition in time order, so
    /// the partitions keep the segments' time order and a sort on time becomes a streaming
    /// merge of them.
    Fixed(Vec<SegmentMeta>),
    /// Listed by a lazy scan ([`crate::SegmentScanExec`]), which hands them over when it runs:
    /// read like catalog segments.
    Assigned,
}

/// A table of Trawl: wide and sparse; a column missing from a segment reads as null.
#[derive(Debug, Clone)]
pub struct TrawlTable {
    database: String,
    name: String,
    schema: SchemaRef,
    segments: SegmentSource,
    /// Target number of scan partitions.
    partitions: usize,
    /// Where scans count what they decide, for the query's progress.
    counters: Option<Arc<ScanCounters>>,
    /// Segments listed from the catalog, by time range (a table lives for one query).
    listed: Arc<Mutex<Vec<Listing>>>,
}

/// Segments listed for a time range.
type Listing = (Option<TimeRange>, Arc<Vec<SegmentMeta>>);

/// Listings a table remembers.
const REMEMBERED_LISTINGS: usize = 8;

impl TrawlTable {
    /// A table whose segments are found in `catalog` when scanned.
    pub fn new(database: &str, name: &str, schema: SchemaRef, catalog: Arc<dyn Catalog>) -> TrawlTable {
        TrawlTable {
            database: database.to_string(),
            name: name.to_string(),
            schema,
            segments: SegmentSource::Catalog(catalog),
            partitions: default_partitions(),
            counters: None,
            listed: Arc::default(),
        }
    }

    /// A table over exactly these segments.
    pub fn with_segments(schema: SchemaRef, segments: Vec<SegmentMeta>) -> TrawlTable {
        let (database, name) = segments
            .first()
            .map(|s| (s.database.clone(), s.table.clone()))
            .unwrap_or_default();
        TrawlTable {
            database,
            name,
            schema,
            segments: SegmentSource::Fixed(segments),
            partitions: 1,
            counters: None,
            listed: Arc::default(),
        }
    }

    /// The table a lazy scan plans its segments with when it runs.
    pub(crate) fn assigned(spec: &ScanSpec, counters: Arc<ScanCounters>) -> TrawlTable {
        TrawlTable {
            database: spec.database.clone(),
            name: spec.table.clone(),
            schema: Arc::clone(&spec.schema),
            segments: SegmentSource::Assigned,
            partitions: 1,
            counters: Some(counters),
            listed: Arc::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// This table, counting what its scans decide into `counters`.
    pub fn with_counters(mut self, counters: Arc<ScanCounters>) -> TrawlTable {
        self.counters = Some(counters);
        self
    }

    fn count(&self, f: impl FnOnce(&ScanCounters)) {
        if let Some(counters) = &self.counters {
            f(counters);
        }
    }

    /// The segments and bytes a scan with `filters` would list.
    pub async fn listed_size(&self, filters: &[Expr]) -> DfResult<(usize, u64)> {
        let segments = self.segments_for(filters).await?;
        Ok((segments.len(), segments.iter().map(|s| s.bytes).sum()))
    }

    async fn segments_for(&self, filters: &[Expr]) -> DfResult<Vec<SegmentMeta>> {
        let range = time_bounds_of_filters(filters);
        if range.is_some_and(|r| r.min > r.max) {
            return Ok(Vec::new());
        }
        match &self.segments {
            SegmentSource::Catalog(catalog) => {
                // Listed once per time range: deciding where a query runs lists its segments
                // before the scan does.
                if let Ok(listed) = self.listed.lock()
                    && let Some((_, segments)) = listed.iter().find(|(r, _)| *r == range)
                {
                    return Ok(segments.as_ref().clone());
                }
                let segments = catalog
                    .live_segments(&self.database, &self.name, range)
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                if let Ok(mut listed) = self.listed.lock() {
                    if listed.len() >= REMEMBERED_LISTINGS {
                        listed.clear();
                    }
                    listed.push((range, Arc::new(segments.clone())));
                }
                Ok(segments)
            }
            SegmentSource::Fixed(segments) => Ok(segments
                .iter()
                .filter(|s| range.is_none_or(|r| s.max_time >= r.min && s.min_time <= r.max))
                .cloned()
                .collect()),
            SegmentSource::Assigned => Ok(Vec::new()),
        }
    }
}

impl TrawlTable {
    /// Spreads files over the scan partitions, balancing by bytes.
    fn file_groups(&self, files: Vec<(u64, PartitionedFile)>) -> Vec<FileGroup> {
        let partitions = self.partitions.clamp(1, files.len().max(1));
        crate::segment_scan::balanced(files, partitions)
            .into_iter()
            .map(|files| {
                let rows = exact_rows(files.iter());
                let group = FileGroup::new(files);
                match rows {
                    Some(rows) => group.with_statistics(Arc::new(self.statistics_of(rows))),
                    None => group,
                }
            })
            .collect()
    }

    /// Statistics that know only the row count, exactly.
    fn statistics_of(&self, rows: usize) -> Statistics {
        let mut statistics = Statistics::new_unknown(&self.schema);
        statistics.num_rows = Precision::Exact(rows);
        statistics
    }

    /// `file` with its exact row count: `count()` over full chunks is then answered from
    /// the statistics, without reading the chunks at all.
    fn with_row_count(&self, file: PartitionedFile, rows: u64) -> PartitionedFile {
        let rows = usize::try_from(rows).unwrap_or(usize::MAX);
        file.with_statistics(Arc::new(self.statistics_of(rows)))
    }

    /// Reads `files` with the filters applied: inside the scan (pruning, and row filtering
    /// with `pushdown_filters`) and again above it, so the answer is exact whatever the scan
    /// could push down. Columns only the filters need are dropped after filtering.
    fn filtered_scan(
        &self,
        state: &dyn Session,
        url: ObjectStoreUrl,
        source: ParquetSource,
        files: Vec<(u64, PartitionedFile)>,
        predicate: &Expr,
        wanted: &[usize],
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mut read = wanted.to_vec();
        for column in predicate.column_refs() {
            let index = self.schema.index_of(column.name())?;
            if !read.contains(&index) {
                read.push(index);
            }
        }
        let config = FileScanConfigBuilder::new(url, Arc::new(source))
            .with_file_groups(self.file_groups(files))
            .with_projection_indices(Some(read.clone()))?
            .build();
        let scan = DataSourceExec::from_data_source(config);
        let read_schema = DFSchema::try_from(self.schema.project(&read)?)?;
        let filter = Arc::new(FilterExec::try_new(
            state.create_physical_expr(predicate.clone(), &read_schema)?,
            scan,
        )?);
        self.leading_columns(filter, read.len(), wanted)
    }

    /// `plan`, whose `width` columns start with `wanted`, cut to those.
    fn leading_columns(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        width: usize,
        wanted: &[usize],
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if width == wanted.len() {
            return Ok(plan);
        }
        let columns: Vec<(Arc<dyn PhysicalExpr>, String)> = wanted
            .iter()
            .enumerate()
            .map(|(position, &index)| {
                let name = self.schema.field(index).name().clone();
                (Arc::new(Column::new(&name, position)) as Arc<dyn PhysicalExpr>, name)
            })
            .collect();
        Ok(Arc::new(ProjectionExec::try_new(columns, plan)?))
    }
}

/// `parts` as one plan (empty: no rows of `schema`), at most `limit` rows.
fn combined(
    mut parts: Vec<Arc<dyn ExecutionPlan>>,
    schema: SchemaRef,
    limit: Option<usize>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let plan: Arc<dyn ExecutionPlan> = match parts.len() {
        0 => Arc::new(EmptyExec::new(schema)),
        1 => parts.remove(0),
        _ => UnionExec::try_new(parts)?,
    };
    Ok(match limit {
        Some(fetch) => Arc::new(GlobalLimitExec::new(
            Arc::new(CoalescePartitionsExec::new(plan)),
            0,
            Some(fetch),
        )),
        None => plan,
    })
}

/// The sum of the files' exact row counts, if every file has one.
fn exact_rows<'a>(mut files: impl Iterator<Item = &'a PartitionedFile>) -> Option<usize> {
    files.try_fold(0usize, |sum, file| match file.statistics.as_deref()?.num_rows {
        Precision::Exact(rows) => sum.checked_add(rows),
        _ => None,
    })
}

/// Whether `filter` is built only from columns, literals, comparisons, null tests, boolean
/// logic, `IN`, `BETWEEN`, `LIKE` and casts: what row-group statistics can prove true or
/// false for a whole chunk.
fn statistics_can_decide(filter: &Expr) -> bool {
    !filter
        .exists(|expr| {
            Ok(!matches!(
                expr,
                Expr::Column(_)
                    | Expr::Literal(..)
                    | Expr::BinaryExpr(_)
                    | Expr::Not(_)
                    | Expr::IsNull(_)
                    | Expr::IsNotNull(_)
                    | Expr::IsTrue(_)
                    | Expr::IsFalse(_)
                    | Expr::IsNotTrue(_)
                    | Expr::IsNotFalse(_)
                    | Expr::Between(_)
                    | Expr::InList(_)
                    | Expr::Like(_)
                    | Expr::Cast(_)
                    | Expr::TryCast(_)
                    | Expr::Negative(_)
                    | Expr::Alias(_)
            ))
        })
        .unwrap_or(true)
}

/// The source of a scan without filters of its own. Filters that reach it later, such as the
/// threshold of a `top N by x` (a dynamic filter), run inside the reader, so the other columns
/// are decoded only for rows that pass. Scans with the query's filters keep them in a filter
/// above the reader instead: row-level filtering in the reader is slower for filters that
/// most rows pass or that are costly (text search, JSON), measured on the benchmark queries.
fn unfiltered_source(state: &dyn Session, schema: &SchemaRef) -> DfResult<ParquetSource> {
    Ok(segment_source(state, schema)?.with_pushdown_filters(true))
}

/// A Parquet source over segments: read through [`CheckedReaderFactory`], which checks the
/// files' structures and shares the footer cache that planning filled.
fn segment_source(state: &dyn Session, schema: &SchemaRef) -> DfResult<ParquetSource> {
    let url = SegmentStore::url().map_err(|e| DataFusionError::External(Box::new(e)))?;
    let store = state.runtime_env().object_store(url)?;
    let cache = state.runtime_env().cache_manager.get_file_metadata_cache();
    let hint = crate::ReadHints::of(state.config());
    let factory = CheckedReaderFactory::new(store, cache, hint);
    Ok(ParquetSource::new(schema.clone()).with_parquet_file_reader_factory(Arc::new(factory)))
}

/// `source` reading the bloom filters of the chunks only when `filters` test a column that
/// has them ([`crate::segment::BLOOM_COLUMNS`]): otherwise looking for them costs a few percent
/// of a query's CPU for nothing (3% of "top services by errors").
fn blooms_for(source: ParquetSource, filters: &[Expr]) -> ParquetSource {
    let tests_ids = filters.iter().any(|filter| {
        filter
            .column_refs()
            .iter()
            .any(|column| crate::segment::BLOOM_COLUMNS.contains(&column.name.as_str()))
    });
    source.with_bloom_filter_on_read(tests_ids)
}

/// The machine's parallelism, asked once (the standard library reads the cgroup files on
/// every call).
fn default_partitions() -> usize {
    static PARALLELISM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PARALLELISM.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[async_trait]
impl datafusion::catalog::TableProvider for TrawlTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let segments = self.segments_for(filters).await?;
        self.count(|c| c.listed(segments.len() as u64, segments.iter().map(|s| chunks_of(s.rows)).sum()));
        let wanted: Vec<usize> = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let lazy = state.config().get_extension::<LazyScans>();
        if let Some(lazy) = lazy
            && matches!(self.segments, SegmentSource::Catalog(_))
        {
            let spec = ScanSpec {
                database: self.database.clone(),
                table: self.name.clone(),
                schema: Arc::clone(&self.schema),
                projection: wanted,
                filters: filters.to_vec(),
                limit,
                query: lazy.query.clone(),
            };
            let partitions = state.config().target_partitions();
            return Ok(Arc::new(SegmentScanExec::new(spec, segments, partitions)?));
        }
        self.plan_listed(state, segments, &wanted, filters, limit).await
    }

    /// `supports_filters_pushdown` answers `Exact` for filters statistics can decide (see
    /// `scan_stored`): the scan applies them itself and leaves them out for chunks proven to
    /// pass. The others (functions, JSON, text search) are `Inexact`: used for pruning, applied
    /// by DataFusion above.
    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|filter| {
                // A fixed segment list (a merge) is read as it is, filters only prune.
                let classified = !matches!(self.segments, SegmentSource::Fixed(_));
                if classified && statistics_can_decide(filter) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }
}

impl TrawlTable {
    /// Plans the reading of `segments` (listed for the query): the columns `wanted`, the
    /// filters applied, at most `limit` rows.
    pub(crate) async fn plan_listed(
        &self,
        state: &dyn Session,
        segments: Vec<SegmentMeta>,
        wanted: &[usize],
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection = Some(wanted.to_vec());
        let projection = projection.as_ref();
        let wanted = wanted.to_vec();
        let needed = self.needed_columns(&wanted, filters)?;
        self.count(|c| c.footers_in(&state.runtime_env().cache_manager.get_file_metadata_cache()));
        // A scan that reads no column and applies no filter counts rows from the catalog and
        // opens no segment; a scan with only a row limit (`take`) opens segments until it has
        // its rows, and fetching every footer first would cost it a request per segment.
        // Every other scan reads footers first, and leaves out what it cannot read.
        let opens_few = filters.is_empty() && (needed.is_empty() || limit.is_some());
        let segments = if segments.is_empty() || opens_few {
            segments
        } else {
            let (readable, unreadable) = crate::probe::readable(state, segments).await?;
            if !unreadable.is_empty() {
                self.count(|c| c.unreadable(unreadable));
            }
            readable
        };
        if segments.is_empty() {
            return Ok(Arc::new(EmptyExec::new(Arc::new(self.schema.project(&wanted)?))));
        }
        let (legacy, stored): (Vec<SegmentMeta>, Vec<SegmentMeta>) = segments
            .into_iter()
            .partition(|s| lacks_shredded(s, &self.schema, &needed));
        if legacy.is_empty() {
            return self.scan_stored(state, stored, projection, filters, limit).await;
        }
        let mut parts = Vec::new();
        if !stored.is_empty() {
            parts.push(self.scan_stored(state, stored, projection, filters, limit).await?);
        }
        for segment in &legacy {
            self.count(|c| {
                c.classified();
                c.planned(segment, chunks_of(segment.rows));
            });
        }
        parts.push(self.computed_scan(state, legacy, &wanted, &needed, filters)?);
        combined(parts, Arc::new(self.schema.project(&wanted)?), limit)
    }
}

/// Whether `segment` holds a bag but not one of the `needed` hidden columns of its keys: it
/// was written before the key was shredded, so the column is computed from the bag.
fn lacks_shredded(segment: &SegmentMeta, schema: &SchemaRef, needed: &[usize]) -> bool {
    let has = |name: &str| segment.columns.iter().any(|c| c.name == name);
    needed.iter().any(|&index| {
        let name = schema.field(index).name();
        parse_shredded_column(name).is_some_and(|(bag, _)| has(bag) && !has(name))
    })
}

impl TrawlTable {
    /// Counts the uncompressed bytes of the chunks of `segment` not among `read` (sorted
    /// indices; none read when empty) as skipped, from the footer planning fetched (found in
    /// the footer cache). Progress only: a footer that cannot be had is not counted.
    async fn count_skipped_raw(&self, state: &dyn Session, segment: &SegmentMeta, read: &[usize]) {
        let Some(counters) = &self.counters else {
            return;
        };
        let Ok(footer) = crate::probe::footer(state, segment).await else {
            return;
        };
        let raw: u64 = footer
            .row_groups()
            .iter()
            .enumerate()
            .filter(|(index, _)| read.binary_search(index).is_err())
            .map(|(_, group)| u64::try_from(group.total_byte_size()).unwrap_or(0))
            .sum();
        counters.skipped_raw(raw);
    }

    /// The columns `wanted` and then those only the filters read, as indices of the schema.
    fn needed_columns(&self, wanted: &[usize], filters: &[Expr]) -> DfResult<Vec<usize>> {
        let mut needed = wanted.to_vec();
        for filter in filters {
            for column in filter.column_refs() {
                let index = self.schema.index_of(column.name())?;
                if !needed.contains(&index) {
                    needed.push(index);
                }
            }
        }
        Ok(needed)
    }

    /// Reads segments that lack hidden columns the query needs: their bags are read and the
    /// hidden columns computed from them (as `json_as_text(bag, key)`, which is what they
    /// hold), then the filters apply. No pruning: such segments predate shredding.
    fn computed_scan(
        &self,
        state: &dyn Session,
        segments: Vec<SegmentMeta>,
        wanted: &[usize],
        needed: &[usize],
        filters: &[Expr],
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let stored_index = |index: usize| -> DfResult<usize> {
            match parse_shredded_column(self.schema.field(index).name()) {
                Some((bag, _)) => Ok(self.schema.index_of(bag)?),
                None => Ok(index),
            }
        };
        let mut read = Vec::new();
        for &index in needed {
            let stored = stored_index(index)?;
            if !read.contains(&stored) {
                read.push(stored);
            }
        }
        let url = SegmentStore::url().map_err(|e| DataFusionError::External(Box::new(e)))?;
        let files = segments
            .iter()
            .map(|s| (s.bytes, PartitionedFile::new(s.path.clone(), s.bytes)))
            .collect();
        let config = FileScanConfigBuilder::new(url, Arc::new(segment_source(state, &self.schema)?))
            .with_file_groups(self.file_groups(files))
            .with_projection_indices(Some(read.clone()))?
            .build();
        let scan = DataSourceExec::from_data_source(config);
        let read_schema = DFSchema::try_from(self.schema.project(&read)?)?;
        let mut columns: Vec<(Arc<dyn PhysicalExpr>, String)> = Vec::with_capacity(needed.len());
        for &index in needed {
            let field = self.schema.field(index);
            let expr = match parse_shredded_column(field.name()) {
                Some((bag, key)) => cast(
                    Expr::ScalarFunction(ScalarFunction::new_udf(
                        datafusion_functions_json::udfs::json_as_text_udf(),
                        vec![ident(bag), lit(key)],
                    )),
                    field.data_type().clone(),
                ),
                None => ident(field.name()),
            };
            columns.push((state.create_physical_expr(expr, &read_schema)?, field.name().clone()));
        }
        let mut plan: Arc<dyn ExecutionPlan> = Arc::new(ProjectionExec::try_new(columns, scan)?);
        if let Some(predicate) = conjunction(filters.to_vec()) {
            let needed_schema = DFSchema::try_from(self.schema.project(needed)?)?;
            let predicate = state.create_physical_expr(predicate, &needed_schema)?;
            plan = Arc::new(FilterExec::try_new(predicate, plan)?);
        }
        self.leading_columns(plan, needed.len(), wanted)
    }

    /// Reads segments that hold every hidden column the query needs.
    async fn scan_stored(
        &self,
        state: &dyn Session,
        segments: Vec<SegmentMeta>,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mut source = blooms_for(segment_source(state, &self.schema)?, filters);
        if let Some(predicate) = conjunction(filters.to_vec()) {
            let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
            source = source.with_predicate(state.create_physical_expr(predicate, &df_schema)?);
        }
        let url = SegmentStore::url().map_err(|e| DataFusionError::External(Box::new(e)))?;
        if let SegmentSource::Fixed(_) = self.segments {
            let mut ordered = segments;
            ordered.sort_by_key(|s| s.min_time);
            let groups = ordered
                .iter()
                .map(|s| FileGroup::new(vec![PartitionedFile::new(s.path.clone(), s.bytes)]))
                .collect();
            let mut builder = FileScanConfigBuilder::new(url, Arc::new(source)).with_file_groups(groups);
            if let Ok(index) = self.schema.index_of(TIME_COLUMN) {
                let time =
                    PhysicalSortExpr::new(Arc::new(Column::new(TIME_COLUMN, index)), SortOptions::new(false, true));
                builder = builder.with_output_ordering(LexOrdering::new([time]).into_iter().collect());
            }
            let config = builder
                .with_projection_indices(projection.cloned())?
                .with_limit(limit)
                .build();
            return Ok(DataSourceExec::from_data_source(config));
        }
        let files: Vec<(u64, PartitionedFile)> = segments
            .iter()
            .map(|s| (s.bytes, PartitionedFile::new(s.path.clone(), s.bytes)))
            .collect();
        // The filters this scan applies itself (answered `Exact`); DataFusion applies the others
        // above it, after eliminating their common subexpressions.
        let exact: Vec<Expr> = filters.iter().filter(|f| statistics_can_decide(f)).cloned().collect();
        // What the token index can rule out (`has`, `==` on strings, ...).
        let need = Need::of_filters(filters);
        let Some(predicate) = conjunction(exact) else {
            let source = if filters.is_empty() {
                unfiltered_source(state, &self.schema)?
            } else {
                source
            };
            // Whole segments: their row counts are exact, so `count()` needs no reading. The
            // token index may narrow them to some chunks or rows (the filters apply above).
            let mut counted: Vec<(u64, PartitionedFile)> = Vec::with_capacity(segments.len());
            let mut selected = Selected::default();
            for (segment, (bytes, file)) in segments.iter().zip(files) {
                let narrowed = match &need {
                    Some(need) => narrowed(state, segment, need, Chunks::AllFull).await?,
                    None => (Chunks::AllFull, Vec::new(), 0, 0),
                };
                selected.add(&narrowed);
                let (chunks, selections, _, index_bytes) = narrowed;
                self.count(|c| {
                    c.classified();
                    c.evaluated_index(index_bytes);
                });
                match chunks {
                    Chunks::None => {
                        self.count(|c| c.skipped_by_index(chunks_of(segment.rows), bytes));
                        self.count_skipped_raw(state, segment, &[]).await;
                    }
                    Chunks::Some {
                        count, full, partial, ..
                    } => {
                        let mut read: Vec<usize> = full.into_iter().chain(partial).collect();
                        read.sort_unstable();
                        let share = |n: usize| bytes * n as u64 / count.max(1) as u64;
                        let skipped = count.saturating_sub(read.len());
                        self.count(|c| {
                            c.planned_some(segment, &read);
                            c.skipped_by_index(skipped as u64, share(skipped));
                        });
                        if skipped > 0 {
                            self.count_skipped_raw(state, segment, &read).await;
                        }
                        let plan = access_plan_selected(count, &read, &selections);
                        counted.push((share(read.len()), file.with_extension(plan)));
                    }
                    Chunks::AllFull | Chunks::Unknown => {
                        self.count(|c| c.planned(segment, chunks_of(segment.rows)));
                        counted.push((bytes, self.with_row_count(file, segment.rows)));
                    }
                }
            }
            let source = selected.filtering_in_reader(source);
            let mut builder = FileScanConfigBuilder::new(url, Arc::new(source));
            if let Some(rows) = exact_rows(counted.iter().map(|(_, file)| file)) {
                builder = builder.with_statistics(self.statistics_of(rows));
            }
            let config = builder
                .with_file_groups(self.file_groups(counted))
                .with_projection_indices(projection.cloned())?
                .with_limit(limit)
                .build();
            return Ok(DataSourceExec::from_data_source(config));
        };
        // Chunks whose statistics prove every row passes are read without the filters.
        let (mut full, mut partial) = (Vec::new(), Vec::new());
        let mut classifier = Classifier::default();
        let predicate_columns = predicate.column_refs();
        let mut selected = Selected::default();
        let classified = classifier
            .classify_all(state, &self.schema, &segments, &predicate)
            .await?;
        for ((segment, (bytes, file)), chunks) in segments.iter().zip(files).zip(classified) {
            let narrowed = match &need {
                Some(need) => narrowed(state, segment, need, chunks).await?,
                None => (chunks, Vec::new(), 0, 0),
            };
            selected.add(&narrowed);
            let (chunks, selections, ruled_out, index_bytes) = narrowed;
            self.count(|c| {
                c.classified();
                c.evaluated_index(index_bytes);
            });
            match chunks {
                Chunks::None => {
                    let lacks = |name: &str| !segment.columns.iter().any(|c| c.name == name);
                    let required = predicate_columns.iter().any(|column| lacks(column.name()));
                    let total = chunks_of(segment.rows);
                    let by_index = (ruled_out as u64).min(total);
                    let index_bytes = bytes * by_index / total.max(1);
                    self.count(|c| {
                        c.skipped_by_index(by_index, index_bytes);
                        c.skipped(total - by_index, bytes - index_bytes, required);
                    });
                    self.count_skipped_raw(state, segment, &[]).await;
                }
                Chunks::AllFull | Chunks::Unknown => {
                    self.count(|c| c.planned(segment, chunks_of(segment.rows)));
                    if chunks == Chunks::AllFull {
                        full.push((bytes, self.with_row_count(file, segment.rows)));
                    } else {
                        partial.push((bytes, file));
                    }
                }
                Chunks::Some {
                    count,
                    full: full_chunks,
                    full_rows,
                    partial: partial_chunks,
                } => {
                    let share = |n: usize| bytes * n as u64 / count.max(1) as u64;
                    let mut read: Vec<usize> = full_chunks.iter().chain(&partial_chunks).copied().collect();
                    read.sort_unstable();
                    let skipped = count.saturating_sub(read.len());
                    let by_index = ruled_out.min(skipped);
                    self.count(|c| {
                        c.planned_some(segment, &read);
                        c.skipped(
                            (skipped - by_index) as u64,
                            share(skipped).saturating_sub(share(by_index)),
                            false,
                        );
                        c.skipped_by_index(by_index as u64, share(by_index));
                    });
                    if skipped > 0 {
                        self.count_skipped_raw(state, segment, &read).await;
                    }
                    if !full_chunks.is_empty() {
                        let plan = access_plan(count, &full_chunks);
                        let counted = self.with_row_count(file.clone(), full_rows);
                        full.push((share(full_chunks.len()), counted.with_extension(plan)));
                    }
                    if !partial_chunks.is_empty() {
                        let plan = access_plan_selected(count, &partial_chunks, &selections);
                        partial.push((share(partial_chunks.len()), file.with_extension(plan)));
                    }
                }
            }
        }
        let wanted: Vec<usize> = projection
            .cloned()
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let mut parts: Vec<Arc<dyn ExecutionPlan>> = Vec::new();
        if !full.is_empty() {
            let rows = exact_rows(full.iter().map(|(_, file)| file));
            let mut builder =
                FileScanConfigBuilder::new(url.clone(), Arc::new(unfiltered_source(state, &self.schema)?));
            if let Some(rows) = rows {
                builder = builder.with_statistics(self.statistics_of(rows));
            }
            let config = builder
                .with_file_groups(self.file_groups(full))
                .with_projection_indices(Some(wanted.clone()))?
                .with_limit(limit)
                .build();
            parts.push(DataSourceExec::from_data_source(config));
        }
        if !partial.is_empty() {
            let source = selected.filtering_in_reader(source);
            parts.push(self.filtered_scan(state, url, source, partial, &predicate, &wanted)?);
        }
        combined(parts, Arc::new(self.schema.project(&wanted)?), limit)
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
