//! [`TrawlTable`]: a DataFusion `TableProvider` over one table's live segments.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::empty::EmptyExec;
use trawl_catalog::{Catalog, SegmentMeta, TimeRange};
use trawl_common::TIME_COLUMN;

use crate::store::SegmentStore;

/// Where a table's segments come from.
#[derive(Debug, Clone)]
enum SegmentSource {
    /// Looked up in the catalog at scan time, narrowed by the query's time bounds.
    Catalog(Arc<dyn Catalog>),
    /// A fixed list (used by merges), scanned one segment per partition in time order, so
    /// the partitions keep the segments' time order and a sort on time becomes a streaming
    /// merge of them.
    Fixed(Vec<SegmentMeta>),
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
}

impl TrawlTable {
    /// A table whose segments are found in `catalog` when scanned.
    pub fn new(database: &str, name: &str, schema: SchemaRef, catalog: Arc<dyn Catalog>) -> TrawlTable {
        TrawlTable {
            database: database.to_string(),
            name: name.to_string(),
            schema,
            segments: SegmentSource::Catalog(catalog),
            partitions: default_partitions(),
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
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    async fn segments_for(&self, filters: &[Expr]) -> DfResult<Vec<SegmentMeta>> {
        let range = time_bounds_of_filters(filters);
        if range.is_some_and(|r| r.min > r.max) {
            return Ok(Vec::new());
        }
        match &self.segments {
            SegmentSource::Catalog(catalog) => catalog
                .live_segments(&self.database, &self.name, range)
                .await
                .map_err(|e| DataFusionError::External(Box::new(e))),
            SegmentSource::Fixed(segments) => Ok(segments
                .iter()
                .filter(|s| range.is_none_or(|r| s.max_time >= r.min && s.min_time <= r.max))
                .cloned()
                .collect()),
        }
    }
}

fn default_partitions() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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
        if segments.is_empty() {
            let projected = match projection {
                Some(indices) => Arc::new(self.schema.project(indices)?),
                None => self.schema.clone(),
            };
            return Ok(Arc::new(EmptyExec::new(projected)));
        }
        let mut source = ParquetSource::new(self.schema.clone());
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
        // Spread segments over partitions, balancing by bytes.
        let partitions = self.partitions.clamp(1, segments.len());
        let mut groups: Vec<(u64, Vec<PartitionedFile>)> = vec![(0, Vec::new()); partitions];
        let mut ordered = segments;
        ordered.sort_by_key(|s| std::cmp::Reverse(s.bytes));
        for segment in ordered {
            if let Some(group) = groups.iter_mut().min_by_key(|g| g.0) {
                group.0 += segment.bytes;
                group.1.push(PartitionedFile::new(segment.path.clone(), segment.bytes));
            }
        }
        let config = FileScanConfigBuilder::new(url, Arc::new(source))
            .with_file_groups(groups.into_iter().map(|(_, files)| FileGroup::new(files)).collect())
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }
}

/// The inclusive time range on `timestamp` implied by conjunctive filters, if any.
pub fn time_bounds_of_filters(filters: &[Expr]) -> Option<TimeRange> {
    let mut range = TimeRange {
        min: i64::MIN,
        max: i64::MAX,
    };
    let mut bounded = false;
    for filter in filters {
        bounded |= narrow(filter, &mut range);
    }
    bounded.then_some(range)
}

fn timestamp_literal(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Literal(ScalarValue::TimestampNanosecond(Some(v), _), _) => Some(*v),
        Expr::Literal(ScalarValue::TimestampMicrosecond(Some(v), _), _) => v.checked_mul(1_000),
        Expr::Literal(ScalarValue::TimestampMillisecond(Some(v), _), _) => v.checked_mul(1_000_000),
        Expr::Literal(ScalarValue::TimestampSecond(Some(v), _), _) => v.checked_mul(1_000_000_000),
        Expr::Cast(cast) => timestamp_literal(&cast.expr),
        _ => None,
    }
}

fn is_time_column(expr: &Expr) -> bool {
    match expr {
        Expr::Column(column) => column.name == TIME_COLUMN,
        Expr::Cast(cast) => is_time_column(&cast.expr),
        _ => false,
    }
}

/// Narrows `range` by `expr`; returns whether it did.
fn narrow(expr: &Expr, range: &mut TimeRange) -> bool {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::And,
            right,
        }) => {
            let l = narrow(left, range);
            let r = narrow(right, range);
            l || r
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, value) = if is_time_column(left) {
                match timestamp_literal(right) {
                    Some(v) => (*op, v),
                    None => return false,
                }
            } else if is_time_column(right) {
                match (timestamp_literal(left), op.swap()) {
                    (Some(v), Some(op)) => (op, v),
                    _ => return false,
                }
            } else {
                return false;
            };
            match op {
                Operator::Gt => range.min = range.min.max(value.saturating_add(1)),
                Operator::GtEq => range.min = range.min.max(value),
                Operator::Lt => range.max = range.max.min(value.saturating_sub(1)),
                Operator::LtEq => range.max = range.max.min(value),
                Operator::Eq => {
                    range.min = range.min.max(value);
                    range.max = range.max.min(value);
                }
                _ => return false,
            }
            true
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_time_column(expr) => match (timestamp_literal(low), timestamp_literal(high)) {
            (Some(low), Some(high)) => {
                range.min = range.min.max(low);
                range.max = range.max.min(high);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn ts(v: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(Some(v), Some("UTC".into())))
    }

    #[test]
    fn time_bounds_come_from_conjunctions() {
        let filters = vec![
            col("timestamp").gt_eq(ts(10)).and(col("timestamp").lt(ts(20))),
            col("x").eq(lit(1)),
        ];
        assert_eq!(time_bounds_of_filters(&filters), Some(TimeRange { min: 10, max: 19 }));
        let reversed = vec![ts(5).lt(col("timestamp"))];
        assert_eq!(
            time_bounds_of_filters(&reversed),
            Some(TimeRange { min: 6, max: i64::MAX })
        );
        let or = vec![col("timestamp").gt(ts(10)).or(col("timestamp").lt(ts(5)))];
        assert_eq!(time_bounds_of_filters(&or), None);
    }
}
