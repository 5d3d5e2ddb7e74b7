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

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::datasource::physical_plan::ParquetFileMetrics;
use datafusion::datasource::physical_plan::parquet::{ParquetAccessPlan, RowGroupAccessPlanFilter};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, lit};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use trawl_catalog::{ColumnInfo, SegmentMeta};

use crate::schema::table_schema;
use datafusion::parquet::arrow::arrow_reader::RowSelection;

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
    /// Classifies the chunks of `segment` against `predicate` (over `table`'s columns).
    pub(crate) async fn classify(
        &mut self,
        state: &dyn Session,
        table: &SchemaRef,
        segment: &SegmentMeta,
        predicate: &Expr,
    ) -> DfResult<Chunks> {
        let text = self.predicate_text.get_or_insert_with(|| predicate.to_string()).clone();
        let key = (segment.id.clone(), text);
        if let Some(chunks) = REMEMBERED_CHUNKS.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(chunks);
        }
        let chunks = self.classify_again(state, table, segment, predicate).await?;
        if let Ok(mut remembered) = REMEMBERED_CHUNKS.lock() {
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
            remembered.insert(key, chunks.clone());
        }
        Ok(chunks)
    }

    async fn classify_again(
        &mut self,
        state: &dyn Session,
        table: &SchemaRef,
        segment: &SegmentMeta,
        predicate: &Expr,
    ) -> DfResult<Chunks> {
        let prepared = match self.prepared.iter().find(|(columns, _)| *columns == segment.columns) {
            Some((_, prepared)) => prepared.clone(),
            None => {
                let prepared = prepare(state, table, &segment.columns, predicate)?;
                self.prepared.push((segment.columns.clone(), prepared.clone()));
                prepared
            }
        };
        match prepared {
            Prepared::Decided(chunks) => Ok(chunks),
            Prepared::Statistics {
                segment_schema,
                pruning,
                full_check,
            } => classify_by_statistics(state, segment, &segment_schema, &pruning, &full_check).await,
        }
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

/// Classifies the chunks of `segment` by their statistics.
async fn classify_by_statistics(
    state: &dyn Session,
    segment: &SegmentMeta,
    segment_schema: &SchemaRef,
    pruning: &Option<Arc<PruningPredicate>>,
    full_check: &Option<Arc<PruningPredicate>>,
) -> DfResult<Chunks> {
    let metadata = crate::probe::footer(state, segment).await?;
    let groups = metadata.row_groups();
    let schema_descr = metadata.file_metadata().schema_descr();
    let metrics = ParquetFileMetrics::new(0, &segment.path, &ExecutionPlanMetricsSet::new());
    let prune = |predicate: &Option<Arc<PruningPredicate>>| {
        let mut filter = RowGroupAccessPlanFilter::new(ParquetAccessPlan::new_all(groups.len()));
        if let Some(predicate) = predicate {
            filter.prune_by_statistics(segment_schema.as_ref(), schema_descr, groups, predicate, &metrics);
        }
        filter.build()
    };
    let may_pass = prune(pruning);
    let may_fail = prune(full_check);
    let (mut full, mut partial) = (Vec::new(), Vec::new());
    for index in may_pass.row_group_index_iter() {
        if may_fail.should_scan(index) {
            partial.push(index);
        } else {
            full.push(index);
        }
    }
    let full_rows = full
        .iter()
        .filter_map(|&index| groups.get(index))
        .map(|group| u64::try_from(group.num_rows()).unwrap_or(0))
        .sum();
    Ok(Chunks::Some {
        count: groups.len(),
        full,
        full_rows,
        partial,
    })
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
