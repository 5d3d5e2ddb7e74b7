//! `summarize count() by s` over chunks read without filters, for a string column `s`: the
//! chunks' Parquet dictionary indices are counted instead of building and hashing every
//! string. Low-cardinality columns (severity, service, status) are dictionary-encoded, so this
//! is a count of small integers per chunk, then one string lookup per distinct index.
//!
//! [`CountByDictionary`] is a physical optimizer rule: it replaces a partial `count()`
//! aggregation grouped by one string column, whose input is a plain Parquet scan of that
//! column alone (no filter of its own), with a [`CountByDictionaryExec`] that reads the same
//! files and chunks and emits the same partial state, one row per distinct value.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, PrimitiveArray, StringViewArray};
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::config::ConfigOptions;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::{ParquetAccessPlan, RowGroupAccessPlanFilter};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::cache::cache_manager::FileMetadataCache;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
#[allow(deprecated)]
use datafusion::parquet::arrow::async_reader::ParquetObjectReader;
use datafusion::parquet::arrow::async_reader::ParquetRecordBatchStreamBuilder;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;

use crate::checked::{CheckedReader, checked_footer, chunk_range};
use crate::read_ahead::ReadAhead;
use crate::read_hint::ReadHint;
use object_store::path::Path as ObjectPath;

/// Rows per batch when counting: only small integers are decoded.
const COUNT_BATCH_ROWS: usize = 64 * 1024;
/// Most bytes of a column fetched at once (several chunks' worth of a low-cardinality column).
const READ_AHEAD_BYTES: u64 = 8 * 1024 * 1024;

/// The rule; see the module documentation.
#[derive(Debug, Default)]
pub struct CountByDictionary;

impl PhysicalOptimizerRule for CountByDictionary {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match CountByDictionaryExec::replacing(&node) {
            Some(replacement) => Ok(Transformed::yes(Arc::new(replacement) as Arc<dyn ExecutionPlan>)),
            None => Ok(Transformed::no(node)),
        })
        .data()
    }

    fn name(&self) -> &str {
        "count_by_dictionary"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Counts the rows of each value of one string column over a set of files and chunks.
#[derive(Debug)]
pub struct CountByDictionaryExec {
    column: String,
    url: ObjectStoreUrl,
    partitions: Vec<Vec<PartitionedFile>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl CountByDictionaryExec {
    /// The replacement for `node` when it is a partial `count()` by one string column over a
    /// plain Parquet scan of that column.
    fn replacing(node: &Arc<dyn ExecutionPlan>) -> Option<CountByDictionaryExec> {
        let aggregate = node.downcast_ref::<AggregateExec>()?;
        if *aggregate.mode() != AggregateMode::Partial
            || !aggregate.group_expr().is_single()
            || aggregate.group_expr().expr().len() != 1
            || aggregate.aggr_expr().len() != 1
            || aggregate.filter_expr().iter().any(Option::is_some)
            || aggregate.limit_options().is_some()
        {
            return None;
        }
        let count = &aggregate.aggr_expr()[0];
        let counts_rows = count.fun().name() == "count"
            && !count.is_distinct()
            && count.expressions().iter().all(|e| is_non_null_literal(e.as_ref()));
        if !counts_rows {
            return None;
        }
        let column = aggregate.group_expr().expr()[0].0.downcast_ref::<Column>()?;
        let scan = aggregate.input().downcast_ref::<DataSourceExec>()?;
        let config = scan.data_source().downcast_ref::<FileScanConfig>()?;
        let source = config.file_source().downcast_ref::<ParquetSource>()?;
        let scan_schema = scan.schema();
        let only_this_column = scan_schema.fields().len() == 1
            && scan_schema.field(0).name() == column.name()
            && matches!(scan_schema.field(0).data_type(), DataType::Utf8View | DataType::Utf8);
        if !only_this_column || source.filter().is_some() || config.limit.is_some() {
            return None;
        }
        let schema = aggregate.schema();
        if schema.fields().len() != 2 || schema.field(1).data_type() != &DataType::Int64 {
            return None;
        }
        let partitions: Vec<Vec<PartitionedFile>> =
            config.file_groups.iter().map(|group| group.files().to_vec()).collect();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(partitions.len().max(1)),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Some(CountByDictionaryExec {
            column: column.name().to_string(),
            url: config.object_store_url.clone(),
            partitions,
            schema,
            properties: Arc::new(properties),
        })
    }
}

fn is_non_null_literal(expr: &dyn PhysicalExpr) -> bool {
    expr.downcast_ref::<Literal>().is_some_and(|l| !l.value().is_null())
}

impl DisplayAs for CountByDictionaryExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let files: usize = self.partitions.iter().map(Vec::len).sum();
        write!(f, "CountByDictionaryExec: column={}, files={files}", self.column)
    }
}

impl ExecutionPlan for CountByDictionaryExec {
    fn name(&self) -> &str {
        "CountByDictionaryExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let files = self.partitions.get(partition).cloned().unwrap_or_default();
        let store = context.runtime_env().object_store(&self.url)?;
        let cache = context.runtime_env().cache_manager.get_file_metadata_cache();
        let hint = crate::ReadHints::of(context.session_config());
        let column = self.column.clone();
        let schema = Arc::clone(&self.schema);
        let output = Arc::clone(&schema);
        let stream = futures::stream::once(async move {
            let mut counts: HashMap<Option<String>, i64> = HashMap::new();
            for file in files {
                let source = Source {
                    store: &store,
                    cache: Some(Arc::clone(&cache)),
                    hint: hint.as_deref(),
                };
                count_file(&source, &file, &column, &mut counts).await?;
            }
            counts_batch(output, counts)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// Where [`count_file`] reads segments from.
struct Source<'a> {
    store: &'a Arc<dyn object_store::ObjectStore>,
    /// The footer cache the scan's planning filled.
    cache: Option<Arc<FileMetadataCache>>,
    /// Told the column chunks a file's count will read ([`crate::read_hint`]).
    hint: Option<&'a dyn ReadHint>,
}

/// Adds the counts of `column`'s values in the chunks of `file` its access plan selects.
async fn count_file(
    source: &Source<'_>,
    file: &PartitionedFile,
    column: &str,
    counts: &mut HashMap<Option<String>, i64>,
) -> Result<()> {
    let store = source.store;
    // The footer, from the cache the scan planning filled (checked when it was fetched).
    let footer = checked_footer(store.as_ref(), &file.object_meta, source.cache.clone(), None).await?;
    #[allow(deprecated)] // the object_store reader of parquet 59; DataFusion 55 reads the same way
    let reader = ParquetObjectReader::new(Arc::clone(store), ObjectPath::from(file.object_meta.location.as_ref()))
        .with_file_size(file.object_meta.size);
    let metadata = ArrowReaderMetadata::try_new(Arc::clone(&footer), ArrowReaderOptions::new())?;
    // The chunks this file part reads: those of its access plan, and when the scan split the
    // file into byte ranges, those starting in its range (as DataFusion's reader decides).
    let groups = metadata.metadata().row_groups();
    let plan = file
        .extensions
        .get::<ParquetAccessPlan>()
        .cloned()
        .unwrap_or_else(|| ParquetAccessPlan::new_all(groups.len()));
    if plan.len() != groups.len() {
        return Err(DataFusionError::Internal(format!(
            "access plan of {} chunks for a file of {}",
            plan.len(),
            groups.len()
        )));
    }
    let mut filter = RowGroupAccessPlanFilter::new(plan);
    if let Some(range) = &file.range {
        filter.prune_by_range(groups, range);
    }
    let chunks: Vec<usize> = filter.row_group_indexes().collect();
    let Some((index, _)) = metadata.schema().column_with_name(column) else {
        // The column is absent from this segment: every selected row has no value.
        let rows: i64 = chunks
            .iter()
            .filter_map(|&chunk| metadata.metadata().row_groups().get(chunk))
            .map(|group| group.num_rows())
            .sum();
        *counts.entry(None).or_default() += rows;
        return Ok(());
    };
    // Read the column as a dictionary: its indices, and the chunk's dictionary of values.
    let fields: Vec<Field> = metadata
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let data_type = if i == index {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            } else {
                field.data_type().clone()
            };
            Field::new(field.name(), data_type, field.is_nullable())
        })
        .collect();
    // The column's bytes in the chunks read, fetched several chunks at a time.
    let leaves = metadata.metadata().file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..leaves.num_columns())
        .filter(|&leaf| leaves.get_column_root_idx(leaf) == index)
        .collect();
    let ranges = chunks
        .iter()
        .filter_map(|&chunk| groups.get(chunk))
        .flat_map(|group| leaves.iter().filter_map(|&leaf| group.columns().get(leaf)))
        .map(chunk_range)
        .collect::<Vec<_>>();
    if let Some(hint) = source.hint {
        hint.will_read(&file.object_meta.location, ranges.clone());
    }
    let reader = ReadAhead::new(Box::new(reader), ranges, READ_AHEAD_BYTES);
    let reader = CheckedReader::with_footer(Box::new(reader), file.object_meta.clone(), &footer);
    let options = ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields)));
    let metadata = ArrowReaderMetadata::try_new(Arc::clone(metadata.metadata()), options)?;
    let mask = ProjectionMask::roots(metadata.parquet_schema(), [index]);
    let mut stream = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
        .with_projection(mask)
        .with_row_groups(chunks)
        .with_batch_size(COUNT_BATCH_ROWS)
        .build()?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let Some(values) = batch.columns().first() else {
            continue;
        };
        count_batch(values, counts)?;
    }
    Ok(())
}

fn count_batch(values: &ArrayRef, counts: &mut HashMap<Option<String>, i64>) -> Result<()> {
    let Some(dictionary) = values.as_dictionary_opt::<Int32Type>() else {
        return Err(DataFusionError::Internal("expected a dictionary column".into()));
    };
    let words = dictionary.values().as_string::<i32>();
    let (per_key, nulls) = count_keys(dictionary.keys(), words.len());
    for (key, count) in per_key.into_iter().enumerate() {
        if count > 0 {
            let word = (!words.is_null(key)).then(|| words.value(key).to_string());
            *counts.entry(word).or_default() += count;
        }
    }
    if nulls > 0 {
        *counts.entry(None).or_default() += nulls;
    }
    Ok(())
}

/// How many times each of `words` dictionary keys occurs in `keys`, and how many keys are
/// null or point past the dictionary. A column of few values repeats the same key row after
/// row; four histograms, filled in turn, keep one increment from waiting for the last.
fn count_keys(keys: &PrimitiveArray<Int32Type>, words: usize) -> (Vec<i64>, i64) {
    let mut lanes = [
        vec![0i64; words],
        vec![0i64; words],
        vec![0i64; words],
        vec![0i64; words],
    ];
    let mut outside = 0i64;
    let mut count = |lane: &mut Vec<i64>, key: i32| match usize::try_from(key).ok().and_then(|k| lane.get_mut(k)) {
        Some(count) => *count += 1,
        None => outside += 1,
    };
    let mut nulls = 0i64;
    if keys.null_count() == 0 {
        let values = keys.values();
        let mut quads = values.chunks_exact(4);
        for quad in &mut quads {
            let [a, b, c, d] = &mut lanes;
            count(a, quad[0]);
            count(b, quad[1]);
            count(c, quad[2]);
            count(d, quad[3]);
        }
        for &key in quads.remainder() {
            count(&mut lanes[0], key);
        }
    } else {
        for key in keys.iter() {
            match key {
                Some(key) => count(&mut lanes[0], key),
                None => nulls += 1,
            }
        }
    }
    let [mut total, b, c, d] = lanes;
    for (i, slot) in total.iter_mut().enumerate() {
        *slot += b[i] + c[i] + d[i];
    }
    (total, nulls + outside)
}

/// The partial aggregation's output: one row per value, with its count.
fn counts_batch(schema: SchemaRef, counts: HashMap<Option<String>, i64>) -> Result<RecordBatch> {
    let (values, totals): (Vec<Option<String>>, Vec<i64>) = counts.into_iter().unzip();
    let values: ArrayRef = match schema.field(0).data_type() {
        DataType::Utf8 => Arc::new(datafusion::arrow::array::StringArray::from(values)),
        _ => Arc::new(StringViewArray::from(values)),
    };
    let totals: ArrayRef = Arc::new(Int64Array::from(totals));
    Ok(RecordBatch::try_new(schema, vec![values, totals])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_counted_as_one_by_one() {
        let mut state: u32 = 0x1234_5678;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for length in [0usize, 1, 3, 4, 5, 1000, 1027] {
            for with_nulls in [false, true] {
                // Keys 0..6 over a dictionary of 5 words: 5 is past its end.
                let keys: PrimitiveArray<Int32Type> = (0..length)
                    .map(|_| {
                        let r = next();
                        (!with_nulls || r % 7 != 0).then_some((r % 6) as i32)
                    })
                    .collect();
                let mut expected = vec![0i64; 5];
                let mut outside = 0i64;
                for key in keys.iter() {
                    match key.filter(|k| *k < 5) {
                        Some(k) => expected[k as usize] += 1,
                        None => outside += 1,
                    }
                }
                assert_eq!(count_keys(&keys, 5), (expected, outside), "{length} {with_nulls}");
            }
        }
    }
    use crate::read_hint::Told;
    use crate::segment::{CHUNK_ROWS, SegmentEncoder};
    use datafusion::datasource::listing::FileRange;
    use object_store::memory::InMemory;
    use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

    /// A file of three chunks holding `level` values, and its size.
    async fn three_chunk_file(store: &Arc<dyn ObjectStore>) -> std::result::Result<u64, Box<dyn std::error::Error>> {
        let rows = 2 * CHUNK_ROWS + 10;
        let levels: Vec<Option<&str>> = (0..rows)
            .map(|i| match i % 4 {
                0 => None,
                1 => Some("ERROR"),
                _ => Some("INFO"),
            })
            .collect();
        let schema = Arc::new(Schema::new(vec![Field::new("level", DataType::Utf8, true)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(datafusion::arrow::array::StringArray::from(levels))],
        )?;
        let mut encoder = SegmentEncoder::new(schema, rows)?;
        encoder.write(&batch)?;
        let bytes = encoder.finish()?;
        let size = bytes.len() as u64;
        store
            .put(&ObjectPath::from("f.parquet"), PutPayload::from(bytes))
            .await?;
        Ok(size)
    }

    #[tokio::test]
    async fn counts_each_chunk_once_across_byte_ranges() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let size = three_chunk_file(&store).await?;
        let whole = PartitionedFile::new("f.parquet", size);
        let mut counts = HashMap::new();
        let told = Told::default();
        let source = Source {
            store: &store,
            cache: None,
            hint: Some(&told),
        };
        count_file(&source, &whole, "level", &mut counts).await?;
        // The store was told the column's three chunks before they were read.
        let hints = told.hints();
        assert_eq!(hints.len(), 1);
        assert_eq!(hints[0].1.len(), 3);
        let total = (2 * CHUNK_ROWS + 10) as i64;
        assert_eq!(counts.values().sum::<i64>(), total);
        assert_eq!(counts.get(&Some("ERROR".to_string())), Some(&(total / 4 + 1)));
        // Split as a scan over partitions splits it: the parts add up to the whole.
        let mut parts = HashMap::new();
        let cut = (size / 2) as i64;
        for (start, end) in [(0, cut), (cut, size as i64)] {
            let mut part = PartitionedFile::new("f.parquet", size);
            part.range = Some(FileRange { start, end });
            count_file(&source, &part, "level", &mut parts).await?;
        }
        assert_eq!(parts, counts);
        // Each part hinted its own chunks.
        let hints = told.hints();
        assert_eq!(hints[1..].iter().map(|(_, ranges)| ranges.len()).sum::<usize>(), 3);
        // Chunks an access plan leaves out are not counted; a missing column counts as null.
        let only_first = PartitionedFile::new("f.parquet", size).with_extension(ParquetAccessPlan::new_none(3));
        let mut none = HashMap::new();
        count_file(&source, &only_first, "level", &mut none).await?;
        assert!(none.is_empty());
        let mut missing = HashMap::new();
        count_file(&source, &whole, "other", &mut missing).await?;
        assert_eq!(missing, HashMap::from([(None, total)]));
        Ok(())
    }
}
