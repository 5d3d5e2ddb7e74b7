//! Filters evaluated inside the Parquet reader, joined by the columns they read.
//!
//! When a scan filters inside the reader (the token index kept few rows, see
//! [`crate::tokens::Selected::filtering_in_reader`]), the reader makes one filter of each
//! conjunct of the scan's predicate and evaluates them in turn, each on the rows the ones
//! before it kept. Every filter decodes its columns anew, with a fresh reader (and, for a
//! compressed column, a fresh codec) per chunk. So conjuncts that read the same columns cost
//! a decoding each: `body has "x"` is `isnotnull(body) AND has(body, "x")`, and DataFusion
//! pushes the filter above the scan into it once more, so a needle search decoded every page
//! of bodies it read four times (410 column readers for the benchmark's 105 chunks, each
//! making a zstd codec; now 105).
//!
//! [`JoinRowFilters`] rewrites the predicate of such scans: identical conjuncts are kept
//! once, and conjuncts that read the same columns become one,
//! `CASE WHEN a THEN b ELSE false END`, which evaluates `b` only where `a` holds (as the
//! reader's chain would) on one decoding. Conjuncts over different columns stay apart, so
//! the reader still decodes a second column only for the rows the first kept. Dynamic
//! filters (from a `top` or a join, updated as the query runs) are left as they are.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder, FileSource, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::physical_expr::expressions::{CaseExpr, DynamicFilterPhysicalExpr, lit};
use datafusion::physical_expr::utils::{collect_columns, conjunction, split_conjunction};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};

/// The rule; see the module documentation.
#[derive(Debug, Default)]
pub struct JoinRowFilters;

impl PhysicalOptimizerRule for JoinRowFilters {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match joined_scan(&node)? {
            Some(replacement) => Ok(Transformed::yes(replacement)),
            None => Ok(Transformed::no(node)),
        })
        .data()
    }

    fn name(&self) -> &str {
        "join_row_filters"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `node` with its reader's filters joined, when it is a Parquet scan that filters in the
/// reader and has conjuncts to join.
fn joined_scan(node: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(scan) = node.downcast_ref::<DataSourceExec>() else {
        return Ok(None);
    };
    let Some(config) = scan.data_source().downcast_ref::<FileScanConfig>() else {
        return Ok(None);
    };
    let Some(source) = config.file_source().downcast_ref::<ParquetSource>() else {
        return Ok(None);
    };
    if !source.table_parquet_options().global.pushdown_filters {
        return Ok(None);
    }
    let Some(predicate) = FileSource::filter(source) else {
        return Ok(None);
    };
    let Some(joined) = join_conjuncts(&predicate)? else {
        return Ok(None);
    };
    let source = source.with_predicate(joined);
    let config = FileScanConfigBuilder::from(config.clone())
        .with_source(Arc::new(source))
        .build();
    Ok(Some(DataSourceExec::from_data_source(config)))
}

/// Conjuncts that read the same columns (named by name and index, sorted).
type Group = (Vec<String>, Vec<Arc<dyn PhysicalExpr>>);

/// `predicate` with identical conjuncts kept once and those over the same columns joined;
/// `None` when there is nothing to join.
pub(crate) fn join_conjuncts(predicate: &Arc<dyn PhysicalExpr>) -> Result<Option<Arc<dyn PhysicalExpr>>> {
    let conjuncts = split_conjunction(predicate);
    let mut groups: Vec<Group> = Vec::with_capacity(conjuncts.len());
    let mut apart: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
    let mut changed = false;
    for conjunct in conjuncts {
        if is_dynamic(conjunct) {
            apart.push(Arc::clone(conjunct));
            continue;
        }
        let mut columns: Vec<String> = collect_columns(conjunct)
            .into_iter()
            .map(|c| format!("{}#{}", c.name(), c.index()))
            .collect();
        columns.sort_unstable();
        match groups.iter_mut().find(|(read, _)| *read == columns) {
            Some((_, members)) => {
                changed = true;
                if !members.iter().any(|member| member.as_ref() == conjunct.as_ref()) {
                    members.push(Arc::clone(conjunct));
                }
            }
            None => groups.push((columns, vec![Arc::clone(conjunct)])),
        }
    }
    if !changed {
        return Ok(None);
    }
    let mut joined: Vec<Arc<dyn PhysicalExpr>> = Vec::with_capacity(groups.len() + apart.len());
    for (_, members) in groups {
        let mut members = members.into_iter().rev();
        let Some(mut expr) = members.next() else {
            continue;
        };
        for before in members {
            expr = Arc::new(CaseExpr::try_new(None, vec![(before, expr)], Some(lit(false)))?);
        }
        joined.push(expr);
    }
    joined.extend(apart);
    Ok(Some(conjunction(joined)))
}

/// Whether `expr` holds a dynamic filter (one updated while the query runs).
fn is_dynamic(expr: &Arc<dyn PhysicalExpr>) -> bool {
    expr.exists(|e| Ok(e.downcast_ref::<DynamicFilterPhysicalExpr>().is_some()))
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, BooleanArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{BinaryExpr, Column, IsNotNullExpr};

    fn column(name: &str, index: usize) -> Arc<dyn PhysicalExpr> {
        Arc::new(Column::new(name, index))
    }

    fn binary(l: Arc<dyn PhysicalExpr>, op: Operator, r: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(l, op, r))
    }

    fn evaluate(expr: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<Vec<Option<bool>>> {
        let values = expr.evaluate(batch)?.into_array(batch.num_rows())?;
        let values = values
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| datafusion::error::DataFusionError::Internal("not boolean".into()))?
            .clone();
        Ok((0..values.len())
            .map(|i| values.is_valid(i).then(|| values.value(i)))
            .collect())
    }

    #[test]
    fn conjuncts_over_one_column_become_one_and_filter_the_same_rows() -> Result<()> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("body", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(vec![Some("a"), None, Some("b"), Some("a"), None])),
                Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(9), Some(1)])),
            ],
        )?;
        let body_present: Arc<dyn PhysicalExpr> = Arc::new(IsNotNullExpr::new(column("body", 0)));
        let body_is_a = binary(column("body", 0), Operator::Eq, lit("a"));
        let n_small = binary(column("n", 1), Operator::Lt, lit(5i64));
        // The same conjunct twice (a filter pushed into the scan again), one over another column.
        let parts = [&body_present, &body_is_a, &n_small, &body_present, &body_is_a];
        let predicate = parts.iter().skip(1).fold(Arc::clone(parts[0]), |acc, part| {
            binary(acc, Operator::And, Arc::clone(part))
        });

        let joined = join_conjuncts(&predicate)?
            .ok_or_else(|| datafusion::error::DataFusionError::Internal("not joined".into()))?;
        let conjuncts = split_conjunction(&joined);
        assert_eq!(conjuncts.len(), 2, "{joined}");
        assert!(conjuncts[0].downcast_ref::<CaseExpr>().is_some(), "{joined}");
        // A row passes the joined predicate exactly when it passes the original one.
        let pass = |values: Vec<Option<bool>>| values.into_iter().map(|v| v == Some(true)).collect::<Vec<_>>();
        assert_eq!(pass(evaluate(&joined, &batch)?), pass(evaluate(&predicate, &batch)?));
        assert_eq!(pass(evaluate(&joined, &batch)?), vec![true, false, false, false, false]);

        // Nothing to join: left alone.
        let apart = binary(Arc::clone(&body_is_a), Operator::And, Arc::clone(&n_small));
        assert!(join_conjuncts(&apart)?.is_none());
        Ok(())
    }
}
