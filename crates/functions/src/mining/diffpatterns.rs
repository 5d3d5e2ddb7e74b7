//! `__diffpatterns(values, weight, set, threshold, max_dimensions)`: the aggregate behind
//! `evaluate diffpatterns`, patterns whose share of the rows differs most between set A
//! (`set` 0) and set B (`set` 1).
//!
//! Every pattern of up to `max_dimensions` values holding at least `threshold` of the weight
//! of one of the sets is found by Apriori (a pattern differing by `threshold` must hold that
//! much of one set, and no larger pattern holds more); those whose shares differ by at least
//! `threshold` are taken (a pattern whose rows are those of one of its parts, one value fewer,
//! is left out for the part), the largest difference first, unless one of them holds every value
//! of another already taken (or the other way round). The result is a dynamic array of
//! `{id, count_a, count_b, percent_a, percent_b, diff, values}`.

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use serde_json::{Value, json};

use super::rows::{Mine, Miner, Pattern, Weights, comparable, percent, values};
use crate::rowfn::Val;
use crate::udaf::RowAgg;

/// The most patterns in a result.
const MAX_PATTERNS: usize = 200;

#[derive(Debug)]
pub(crate) struct DiffPatterns;

type DiffPatternsAgg = Miner<DiffPatterns>;

impl Mine for DiffPatterns {
    const PLUGIN: &'static str = "diffpatterns";
    const PARAMS_AT: usize = 3;

    fn set(row: &[Val]) -> Option<usize> {
        match row.get(2).and_then(|v| v.long()) {
            Some(set @ (0 | 1)) => Some(set as usize),
            _ => None,
        }
    }

    fn result(miner: &DiffPatternsAgg) -> Value {
        miner.patterns()
    }
}

impl DiffPatternsAgg {
    fn differences(&self) -> (Vec<(Pattern, Weights)>, Weights) {
        let totals = self.rows.totals();
        let threshold = self.params.real.unwrap_or(0.05).clamp(0.0, 1.0);
        let max_dimensions = self.params.whole.unwrap_or(usize::MAX).min(self.rows.width());
        let share = |support: Weights, side: usize| {
            if totals[side] > 0.0 {
                support[side] / totals[side]
            } else {
                0.0
            }
        };
        let found = self
            .rows
            .apriori(max_dimensions, |s| share(s, 0).max(share(s, 1)) >= threshold);
        // A value that selects no fewer rows in either set tells nothing: a pattern with
        // the same rows as one of its parts (one value fewer) is left out for that part.
        let supports: HashMap<&Pattern, Weights> = found.iter().map(|(p, s)| (p, *s)).collect();
        let minimal = |pattern: &Pattern, support: Weights| {
            pattern.len() < 2
                || (0..pattern.len()).all(|skip| {
                    let mut part = pattern.clone();
                    part.remove(skip);
                    supports.get(&part) != Some(&support)
                })
        };
        let mut candidates: Vec<(Pattern, Weights, f64)> = found
            .iter()
            .filter(|(pattern, support)| minimal(pattern, *support))
            .filter_map(|(pattern, support)| {
                let diff = (share(*support, 0) - share(*support, 1)).abs();
                (diff >= threshold && diff > 0.0).then(|| (pattern.clone(), *support, diff))
            })
            .collect();
        candidates.sort_by(|a, b| {
            b.2.total_cmp(&a.2)
                .then_with(|| a.0.len().cmp(&b.0.len()))
                .then_with(|| a.0.cmp(&b.0))
        });
        let mut kept: Vec<(Pattern, Weights)> = Vec::new();
        for (pattern, support, _) in candidates {
            if kept.len() >= MAX_PATTERNS {
                break;
            }
            if !kept.iter().any(|(k, _)| comparable(k, &pattern)) {
                kept.push((pattern, support));
            }
        }
        (kept, totals)
    }

    /// The patterns as the aggregate returns them.
    fn patterns(&self) -> Value {
        let width = self.rows.width();
        let (patterns, totals) = self.differences();
        let out: Vec<Value> = patterns
            .iter()
            .enumerate()
            .map(|(id, (pattern, support))| {
                let percent_a = percent(support[0], totals[0]);
                let percent_b = percent(support[1], totals[1]);
                let share = |side: usize| {
                    if totals[side] > 0.0 {
                        support[side] / totals[side]
                    } else {
                        0.0
                    }
                };
                json!({
                    "id": id,
                    "count_a": support[0],
                    "count_b": support[1],
                    "percent_a": percent_a,
                    "percent_b": percent_b,
                    "diff": percent((share(0) - share(1)).abs(), 1.0),
                    "values": values(pattern, width),
                })
            })
            .collect();
        Value::Array(out)
    }
}

/// `__diffpatterns(values, weight, set, threshold, max_dimensions)`.
pub fn make_diffpatterns(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(DiffPatternsAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rowfn::Out;
    use crate::udaf::RowAgg;

    fn row(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| json!(v).to_string()).collect()
    }

    #[test]
    fn finds_what_sets_one_set_apart() -> Result<()> {
        let mut agg = DiffPatternsAgg::default();
        // Set A: failures, mostly from host h1 on version 2; set B: successes spread evenly.
        for i in 0..100 {
            let (host, version) = if i < 70 {
                ("h1", "2")
            } else {
                (["h2", "h3"][i % 2], "1")
            };
            agg.rows.add("diffpatterns", row(&[host, version, "x"]), 0, 1.0)?;
        }
        for i in 0..300 {
            let host = ["h1", "h2", "h3"][i % 3];
            agg.rows
                .add("diffpatterns", row(&[host, ["1", "2"][i % 2], "x"]), 1, 1.0)?;
        }
        let Out::Str(text) = agg.evaluate()? else {
            return Err(datafusion::error::DataFusionError::Internal("a string".into()));
        };
        let patterns: Value = serde_json::from_str(&text).unwrap_or_default();
        let first = &patterns[0];
        // (h1, 2): 70% of A, 1/6 of B (h1 takes i % 3 == 0, version 2 takes odd i: i % 6 == 3).
        assert_eq!(first["values"], json!(["h1", "2", null]), "{patterns}");
        assert_eq!(first["count_a"], json!(70.0));
        assert_eq!(first["count_b"], json!(50.0));
        assert_eq!(first["percent_a"], json!(70.0));
        assert_eq!(first["percent_b"], json!(16.67));
        assert_eq!(first["diff"], json!(53.33));
        // "x" is in every row of both sets: no difference, never a pattern.
        for pattern in patterns.as_array().into_iter().flatten() {
            assert!(pattern["values"][2].is_null(), "{pattern}");
            assert!(pattern["diff"].as_f64().unwrap_or(0.0) >= 5.0);
        }
        let mut merged = DiffPatternsAgg::default();
        merged.merge(&agg.state())?;
        assert_eq!(merged.evaluate()?, agg.evaluate()?);
        Ok(())
    }
}
