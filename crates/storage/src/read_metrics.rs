//! What the Parquet readers of a scan report beside DataFusion's own metrics, and the totals
//! of both that progress reports use.
//!
//! Every segment reader ([`crate::checked::CheckedReaderFactory`]) adds to the metrics of
//! the scan it reads for, once it has the file's footer: the uncompressed size of the
//! chunks its access plan reads ([`RAW_BYTES_PLANNED`], the row groups' `total_byte_size`)
//! and how many those are ([`CHUNKS_PLANNED`]), both labelled with the file, as DataFusion
//! labels its per-file metrics; and the bytes of Parquet bloom filters it fetched to prune
//! chunks ([`BLOOM_FILTER_BYTES`]).

use std::collections::HashMap;

use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::{MetricValue, MetricsSet};

/// Uncompressed bytes of the chunks a reader's access plan reads, per file.
pub const RAW_BYTES_PLANNED: &str = "trawl_chunk_raw_bytes_planned";
/// Chunks a reader's access plan reads, per file.
pub const CHUNKS_PLANNED: &str = "trawl_chunks_planned";
/// Bytes of Parquet bloom filters a reader fetched (and DataFusion evaluated).
pub const BLOOM_FILTER_BYTES: &str = "trawl_bloom_filter_bytes";

/// What the readers of one Parquet scan (a `DataSourceExec`) read, from its metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadTotals {
    /// Uncompressed bytes of the chunks read: those the readers planned, less the share of
    /// each file's chunks the reader then pruned (by statistics or bloom filters).
    pub raw_bytes: u64,
    /// Uncompressed bytes of the chunks the readers pruned (that share).
    pub pruned_raw_bytes: u64,
    /// Bytes of Parquet bloom filters fetched and evaluated.
    pub bloom_filter_bytes: u64,
    /// Rows the filters evaluated inside the readers were evaluated on (each filter counts
    /// the rows it was given).
    pub pushdown_checks: u64,
}

/// The totals of the reader metrics among `metrics` (a `DataSourceExec`'s).
pub fn read_totals(metrics: &MetricsSet) -> ReadTotals {
    // Per file: raw bytes planned, chunks planned, chunks pruned.
    let mut files: HashMap<&str, (u64, u64, u64)> = HashMap::new();
    let mut totals = ReadTotals::default();
    for metric in metrics.iter() {
        let file = metric
            .labels()
            .iter()
            .find(|label| label.name() == "filename")
            .map(|label| label.value());
        match metric.value() {
            MetricValue::Count { name, count } => {
                let value = count.value() as u64;
                match (name.as_ref(), file) {
                    (RAW_BYTES_PLANNED, Some(file)) => files.entry(file).or_default().0 += value,
                    (CHUNKS_PLANNED, Some(file)) => files.entry(file).or_default().1 += value,
                    (BLOOM_FILTER_BYTES, _) => totals.bloom_filter_bytes += value,
                    ("pushdown_rows_pruned" | "pushdown_rows_matched", _) => totals.pushdown_checks += value,
                    _ => {}
                }
            }
            MetricValue::PruningMetrics { name, pruning_metrics } => {
                if let (Some(file), "row_groups_pruned_statistics" | "row_groups_pruned_bloom_filter") =
                    (file, name.as_ref())
                {
                    files.entry(file).or_default().2 += pruning_metrics.pruned() as u64;
                }
            }
            _ => {}
        }
    }
    for (raw, planned, pruned) in files.into_values() {
        let pruned_raw = match planned {
            0 => 0,
            _ => (u128::from(raw) * u128::from(pruned.min(planned)) / u128::from(planned)) as u64,
        };
        totals.raw_bytes += raw - pruned_raw;
        totals.pruned_raw_bytes += pruned_raw;
    }
    totals
}

/// Rows the filters of `plan` (a filter operator, or a scan filtering in its reader) were
/// evaluated on, not counting its inputs.
pub fn predicate_checks(plan: &dyn ExecutionPlan) -> u64 {
    if plan.name() == "FilterExec" {
        return plan
            .children()
            .iter()
            .map(|child| child.metrics().and_then(|m| m.output_rows()).unwrap_or(0) as u64)
            .sum();
    }
    if plan.name() == "DataSourceExec" {
        return plan.metrics().map_or(0, |m| read_totals(&m).pushdown_checks);
    }
    0
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, Label, MetricBuilder};

    use super::*;

    #[test]
    fn pruned_chunks_take_their_file_s_share_of_the_raw_bytes() {
        let metrics = ExecutionPlanMetricsSet::new();
        let per_file = |file: &str, name: &'static str, value: usize| {
            MetricBuilder::new(&metrics)
                .with_label(Label::new("filename", Arc::<str>::from(file)))
                .counter(name, 0)
                .add(value);
        };
        per_file("a", RAW_BYTES_PLANNED, 4_000);
        per_file("a", CHUNKS_PLANNED, 4);
        per_file("b", RAW_BYTES_PLANNED, 500);
        per_file("b", CHUNKS_PLANNED, 1);
        let pruned = MetricBuilder::new(&metrics)
            .with_label(Label::new("filename", Arc::<str>::from("a")))
            .pruning_metrics("row_groups_pruned_statistics", 0);
        pruned.add_pruned(1);
        pruned.add_matched(3);
        MetricBuilder::new(&metrics).counter(BLOOM_FILTER_BYTES, 0).add(64);
        MetricBuilder::new(&metrics).counter("pushdown_rows_matched", 0).add(7);
        MetricBuilder::new(&metrics).counter("pushdown_rows_pruned", 0).add(3);
        let totals = read_totals(&metrics.clone_inner());
        assert_eq!(
            totals,
            ReadTotals {
                raw_bytes: 3_500,
                pruned_raw_bytes: 1_000,
                bloom_filter_bytes: 64,
                pushdown_checks: 10,
            }
        );
    }
}
