//! Chunks (Parquet row groups) classified by their statistics against a query's filters:
//! skipped when no row can pass, *full* when every row passes, *partial* otherwise.
//!
//! A full chunk is read without evaluating the filters, and without the columns only the
//! filters need: `where isnotempty(body) | count` over log segments reads no column at all,
//! and `where isnotempty(body) | summarize count() by severity_text` reads `severity_text`
//! only. The proof comes from DataFusion's own row-group pruning
//! ([`RowGroupAccessPlanFilter`]), which marks a group fully matched when the inverted
//! predicate (with every referenced column possibly null) is pruned by the statistics.
//! The predicate work (simplifying, building pruning predicates) is done once per set of
//! segment columns ([`Classifier`]); per segment only its cached footer is read.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, UInt64Array};
use datafusion::arrow::compute::concat;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::datasource::physical_plan::parquet::ParquetAccessPlan;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, lit};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use trawl_catalog::{ColumnInfo, SegmentMeta};

use crate::schema::table_schema;
use datafusion::parquet::arrow::arrow_reader::RowSelection;
use datafusion::parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use datafusion::parquet::file::metadata::RowGroupMetaData;
use datafusion::parquet::schema::types::SchemaDescriptor;

/// How a segment's chunks stand against the filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chunks {
    /// No row can pass: the segment is not read.
    None,
    /// Every row of every chunk passes.
    AllFull,
    /// Chunks by index: `full` ones pass entirely (`full_rows` rows in all), `partial` ones
    /// need the filters.
    Some {
        count: usize,
        full: Vec<usize>,
        full_rows: u64,
        partial: Vec<usize>,
    },
    /// Nothing is known: read everything with the filters.
    Unknown,
}

/// What a predicate says about segments with one set of columns, worked out once for all
/// segments with that set (most of a table's segments share it).
#[derive(Debug, Clone)]
pub(crate) enum Prepared {
    /// The predicate is decided by the columns alone (false or null when a column it needs
    /// is missing, true when it holds for any value).
    Decided(Chunks),
    /// The chunks' statistics decide: `pruning` finds chunks where some row may pass,
    /// `full_check` chunks where some row may fail.
    Statistics {
        segment_schema: SchemaRef,
        pruning: Option<Arc<PruningPredicate>>,
        full_check: Option<Arc<PruningPredicate>>,
    },
}

/// Most classifications remembered across queries.
const REMEMBERED: usize = 16_384;

/// Classifications of earlier queries, by segment id and predicate text. Segments never
/// change, so an entry stays true; dashboards that run the same filters again skip the
/// statistics work. When full, it starts over.
static REMEMBERED_CHUNKS: LazyLock<Mutex<HashMap<(String, String), Chunks>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Prepared predicates by segment column set.
#[derive(Debug, Default)]
pub(crate) struct Classifier {
    prepared: Vec<(Vec<ColumnInfo>, Prepared)>,
    /// The predicate's text, the second half of the keys of `REMEMBERED_CHUNKS`.
    predicate_text: Option<String>,
}

impl Classifier {
    /// Classifies the chunks of each of `segments` against `predicate` (over `table`'s
    /// columns), in their order. Segments with the same column set are classified together:
    /// their chunks' statistics form one list that each pruning predicate runs over once
    /// (per segment, the predicate's setup and evaluation cost more than its few chunks).
    pub(crate) async fn classify_all(
        &mut self,
        state: &dyn Session,
        table: &SchemaRef,
        segments: &[SegmentMeta],
        predicate: &Expr,
    ) -> DfResult<Vec<Chunks>> {
        let text = self.predicate_text.get_or_insert_with(|| predicate.to_string()).clone();
        let mut classified: Vec<Option<Chunks>> = match REMEMBERED_CHUNKS.lock() {
            Ok(remembered) => segments
                .iter()
                .map(|segment| remembered.get(&(segment.id.clone(), text.clone())).cloned())
                .collect(),
            Err(_) => vec![None; segments.len()],
        };
        // The segments left, by the prepared predicate of their column set.
        let mut by_columns: Vec<Vec<usize>> = Vec::new();
        for (index, segment) in segments.iter().enumerate() {
            if classified[index].is_some() {
                continue;
            }
            let at = match self
                .prepared
                .iter()
                .position(|(columns, _)| *columns == segment.columns)
            {
                Some(at) => at,
                None => {
                    let prepared = prepare(state, table, &segment.columns, predicate)?;
                    self.prepared.push((segment.columns.clone(), prepared));
                    self.prepared.len() - 1
                }
            };
            match &self.prepared[at].1 {
                Prepared::Decided(chunks) => classified[index] = Some(chunks.clone()),
                Prepared::Statistics { .. } => {
                    if by_columns.len() <= at {
                        by_columns.resize_with(at + 1, Vec::new);
                    }
                    by_columns[at].push(index);
                }
            }
        }
        let mut fresh = Vec::new();
        for (at, members) in by_columns.iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            let Prepared::Statistics {
                segment_schema,
                pruning,
                full_check,
            } = &self.prepared[at].1
            else {
                continue;
            };
            let group: Vec<&SegmentMeta> = members.iter().map(|&index| &segments[index]).collect();
            let chunks = classify_by_statistics(state, &group, segment_schema, pruning, full_check).await?;
            for (&index, chunks) in members.iter().zip(chunks) {
                fresh.push(index);
                classified[index] = Some(chunks);
            }
        }
        if !fresh.is_empty()
            && let Ok(mut remembered) = REMEMBERED_CHUNKS.lock()
        {
            if remembered.len() + fresh.len() > REMEMBERED {
                remembered.clear();
            }
            for index in fresh.into_iter().take(REMEMBERED) {
                if let Some(chunks) = &classified[index] {
                    remembered.insert((segments[index].id.clone(), text.clone()), chunks.clone());
                }
            }
        }
        Ok(classified
            .into_iter()
            .map(|chunks| chunks.unwrap_or(Chunks::Unknown))
            .collect())
    }
}

/// What `predicate` (over `table`'s columns) says about segments with `columns`.
fn prepare(state: &dyn Session, table: &SchemaRef, columns: &[ColumnInfo], predicate: &Expr) -> DfResult<Prepared> {
    // Columns the segment lacks read as null in it.
    let segment_schema = table_schema(columns);
    let rewritten = predicate
        .clone()
        .transform(|expr| match &expr {
            Expr::Column(column) if segment_schema.index_of(column.name()).is_err() => {
                let typed_null = table
                    .field_with_name(column.name())
                    .ok()
                    .and_then(|field| ScalarValue::try_from(field.data_type()).ok())
                    .unwrap_or(ScalarValue::Null);
                Ok(Transformed::yes(lit(typed_null)))
            }
            _ => Ok(Transformed::no(expr)),
        })?
        .data;
    let df_schema = Arc::new(DFSchema::try_from(segment_schema.as_ref().clone())?);
    let simplifier = ExprSimplifier::new(SimplifyContext::builder().with_schema(Arc::clone(&df_schema)).build());
    let simplified = match simplifier.simplify(rewritten) {
        Ok(simplified) => simplified,
        Err(_) => return Ok(Prepared::Decided(Chunks::Unknown)),
    };
    match &simplified {
        Expr::Literal(ScalarValue::Boolean(Some(true)), _) => return Ok(Prepared::Decided(Chunks::AllFull)),
        Expr::Literal(ScalarValue::Boolean(_) | ScalarValue::Null, _) => return Ok(Prepared::Decided(Chunks::None)),
        _ => {}
    }
    // A chunk is full when statistics rule out every row failing: `NOT p`, or a null in a
    // column `p` reads (which makes `p` null, and a null does not pass).
    let mut inverted = Expr::Not(Box::new(simplified.clone()));
    for column in simplified.column_refs() {
        inverted = inverted.or(Expr::Column(column.clone()).is_null());
    }
    let Ok(inverted) = simplifier.simplify(inverted) else {
        return Ok(Prepared::Decided(Chunks::Unknown));
    };
    let pruning = pruning_predicate(state, simplified, &df_schema, &segment_schema);
    let full_check = pruning_predicate(state, inverted, &df_schema, &segment_schema);
    if pruning.is_none() && full_check.is_none() {
        return Ok(Prepared::Decided(Chunks::Unknown));
    }
    Ok(Prepared::Statistics {
        segment_schema,
        pruning,
        full_check,
    })
}

/// Classifies the chunks of `segments` (of one column set) by their statistics: each
/// predicate is evaluated once over the chunks of all of them.
async fn classify_by_statistics(
    state: &dyn Session,
    segments: &[&SegmentMeta],
    segment_schema: &SchemaRef,
    pruning: &Option<Arc<PruningPredicate>>,
    full_check: &Option<Arc<PruningPredicate>>,
) -> DfResult<Vec<Chunks>> {
    let mut footers = Vec::with_capacity(segments.len());
    for segment in segments {
        footers.push(crate::probe::footer(state, segment).await?);
    }
    let statistics = ChunkStatistics {
        schema: segment_schema.as_ref(),
        segments: footers
            .iter()
            .map(|footer| (footer.file_metadata().schema_descr(), footer.row_groups()))
            .collect(),
    };
    let containers = statistics.num_containers();
    // Whether each chunk may hold a row that passes, and one that fails; when statistics
    // cannot tell, it may.
    let may = |predicate: &Option<Arc<PruningPredicate>>| match predicate {
        Some(predicate) => predicate
            .prune(&statistics)
            .ok()
            .filter(|values| values.len() == containers)
            .unwrap_or_else(|| vec![true; containers]),
        None => vec![true; containers],
    };
    let may_pass = may(pruning);
    let may_fail = may(full_check);
    let mut classified = Vec::with_capacity(segments.len());
    let mut at = 0;
    for (_, groups) in &statistics.segments {
        let (mut full, mut partial) = (Vec::new(), Vec::new());
        let mut full_rows = 0u64;
        for (index, group) in groups.iter().enumerate() {
            if !may_pass[at + index] {
                continue;
            }
            if may_fail[at + index] {
                partial.push(index);
            } else {
                full.push(index);
                full_rows += u64::try_from(group.num_rows()).unwrap_or(0);
            }
        }
        at += groups.len();
        classified.push(Chunks::Some {
            count: groups.len(),
            full,
            full_rows,
            partial,
        });
    }
    Ok(classified)
}

/// The chunks of several segments with one column set as one list of containers for a
/// pruning predicate, in segment order.
struct ChunkStatistics<'a> {
    schema: &'a Schema,
    segments: Vec<(&'a SchemaDescriptor, &'a [RowGroupMetaData])>,
}

impl ChunkStatistics<'_> {
    /// One statistic of `column` over every chunk: each segment's, joined (none when a
    /// segment's cannot be read).
    fn joined(
        &self,
        column: &Column,
        statistic: impl Fn(&StatisticsConverter<'_>, &[RowGroupMetaData]) -> datafusion::parquet::errors::Result<ArrayRef>,
    ) -> Option<ArrayRef> {
        let mut parts = Vec::with_capacity(self.segments.len());
        for (descriptor, groups) in &self.segments {
            // (parquet-rs leaves out null counts of zero: a missing one counts as zero, as
            // DataFusion's own row-group pruning takes it.)
            let converter = StatisticsConverter::try_new(&column.name, self.schema, descriptor)
                .ok()?
                .with_missing_null_counts_as_zero(true);
            parts.push(statistic(&converter, groups).ok()?);
        }
        match parts.len() {
            1 => parts.pop(),
            _ => {
                let arrays: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                concat(&arrays).ok()
            }
        }
    }
}

impl PruningStatistics for ChunkStatistics<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.joined(column, |converter, groups| converter.row_group_mins(groups.iter()))
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.joined(column, |converter, groups| converter.row_group_maxes(groups.iter()))
    }

    fn num_containers(&self) -> usize {
        self.segments.iter().map(|(_, groups)| groups.len()).sum()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.joined(column, |converter, groups| {
            converter
                .row_group_null_counts(groups.iter())
                .map(|counts| Arc::new(counts) as ArrayRef)
        })
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let counts: UInt64Array = self
            .segments
            .iter()
            .flat_map(|(_, groups)| groups.iter())
            .map(|group| u64::try_from(group.num_rows()).ok())
            .collect();
        Some(Arc::new(counts))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// A pruning predicate for `expr` over a segment, if statistics can decide anything about it.
fn pruning_predicate(
    state: &dyn Session,
    expr: Expr,
    df_schema: &DFSchema,
    segment_schema: &SchemaRef,
) -> Option<Arc<PruningPredicate>> {
    let physical = state.create_physical_expr(expr, df_schema).ok()?;
    PruningPredicateBuilder::new()
        .with_file_schema(Arc::clone(segment_schema))
        .build(physical)
}

/// An access plan reading only `chunks` of a segment of `count` chunks.
pub(crate) fn access_plan(count: usize, chunks: &[usize]) -> ParquetAccessPlan {
    access_plan_selected(count, chunks, &[])
}

/// An access plan reading only `chunks` of a segment of `count` chunks, those of them with a
/// row selection in `selections` only its rows.
pub(crate) fn access_plan_selected(
    count: usize,
    chunks: &[usize],
    selections: &[(usize, RowSelection)],
) -> ParquetAccessPlan {
    let mut plan = ParquetAccessPlan::new_none(count);
    for &chunk in chunks {
        plan.scan(chunk);
        // (A selection narrows a chunk that is scanned; on a skipped one it does nothing.)
        if let Some((_, selection)) = selections.iter().find(|(c, _)| *c == chunk) {
            plan.scan_selection(chunk, selection.clone());
        }
    }
    plan
}
