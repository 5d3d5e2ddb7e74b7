//! `__autocluster(values, weight, size_weight, num_seeds)`: the aggregate behind `evaluate
//! autocluster`, a seed-and-expand search for a few patterns that each cover much of the data
//! and fix many of its dimensions.
//!
//! A pattern's score is the weighted geometric mean of its coverage (its rows' share of the
//! total weight) and its informativeness (the share of the dimensions it fixes), with weights
//! `size_weight` and `1 - size_weight`. The search starts from the `num_seeds` heaviest
//! single values (a dimension holding a value), each taken as a pattern, and moves to the best-scoring neighbour (one
//! value dropped, or one free dimension fixed to its most common value among the pattern's
//! rows) until no neighbour scores higher. The local optima, best first, are kept unless one
//! of them holds every value of another already kept (or the other way round); patterns
//! covering less than 1% of the weight, or a weight below 2 (one row), are not kept. The result is a dynamic array of
//! `{id, count, percent, values}`.

use std::collections::BTreeSet;

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use serde_json::{Value, json};

use super::rows::{Mine, Miner, Pattern, comparable, percent, values};
use crate::udaf::RowAgg;

/// The most moves one seed's search makes (each adds or drops a value).
const MAX_MOVES: usize = 64;

/// The smallest share of the weight a kept pattern covers.
const MIN_COVERAGE: f64 = 0.01;

/// The least weight a kept pattern covers: a pattern of one row is not shared by any others.
const MIN_ROWS: f64 = 2.0;

#[derive(Debug)]
pub(crate) struct Autocluster;

type AutoclusterAgg = Miner<Autocluster>;

impl Mine for Autocluster {
    const PLUGIN: &'static str = "autocluster";
    const PARAMS_AT: usize = 2;

    fn result(miner: &AutoclusterAgg) -> Value {
        miner.patterns()
    }
}

impl AutoclusterAgg {
    fn score(&self, coverage: f64, fixed: usize, width: usize, size_weight: f64) -> f64 {
        if coverage <= 0.0 || fixed == 0 || width == 0 {
            return 0.0;
        }
        let informativeness = fixed as f64 / width as f64;
        coverage.powf(size_weight) * informativeness.powf(1.0 - size_weight)
    }

    /// The local optimum the search reaches from `seed`, with its score and support.
    fn climb(&self, seed: Pattern, total: f64, size_weight: f64) -> (Pattern, f64, f64) {
        let width = self.rows.width();
        let rate = |pattern: &Pattern| {
            let support = self.rows.support(pattern)[0];
            (self.score(support / total, pattern.len(), width, size_weight), support)
        };
        let mut current = seed;
        let (mut score, mut support) = rate(&current);
        for _ in 0..MAX_MOVES {
            let mut neighbours: Vec<Pattern> = (0..current.len())
                .map(|skip| {
                    let mut smaller = current.clone();
                    smaller.remove(skip);
                    smaller
                })
                .collect();
            for item in self.rows.best_extensions(&current) {
                let mut larger = current.clone();
                larger.push(item);
                larger.sort();
                neighbours.push(larger);
            }
            let best = neighbours
                .into_iter()
                .map(|pattern| {
                    let (s, w) = rate(&pattern);
                    (pattern, s, w)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)));
            match best {
                Some((pattern, s, w)) if s > score + 1e-12 => {
                    current = pattern;
                    score = s;
                    support = w;
                }
                _ => break,
            }
        }
        (current, score, support)
    }

    fn clusters(&self) -> (Vec<(Pattern, f64)>, f64) {
        let total = self.rows.totals()[0];
        if total <= 0.0 {
            return (Vec::new(), total);
        }
        let size_weight = self.params.real.unwrap_or(0.5).clamp(0.0, 1.0);
        let num_seeds = self.params.whole.unwrap_or(25).clamp(1, 1000);
        // Seeds: the heaviest single values.
        let mut singles: Vec<(Pattern, f64)> = self
            .rows
            .apriori(1, |_| true)
            .into_iter()
            .map(|(pattern, support)| (pattern, support[0]))
            .collect();
        singles.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let seeds = singles.into_iter().take(num_seeds).map(|(pattern, _)| pattern);
        let mut optima: Vec<(Pattern, f64, f64)> = Vec::new();
        let mut seen: BTreeSet<Pattern> = BTreeSet::new();
        for seed in seeds {
            let (pattern, score, support) = self.climb(seed, total, size_weight);
            if !pattern.is_empty() && seen.insert(pattern.clone()) {
                optima.push((pattern, score, support));
            }
        }
        optima.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut kept: Vec<(Pattern, f64)> = Vec::new();
        for (pattern, _, support) in optima {
            let shared = support >= MIN_ROWS && support / total >= MIN_COVERAGE;
            if shared && !kept.iter().any(|(k, _)| comparable(k, &pattern)) {
                kept.push((pattern, support));
            }
        }
        (kept, total)
    }

    /// The patterns as the aggregate returns them.
    fn patterns(&self) -> Value {
        let width = self.rows.width();
        let (clusters, total) = self.clusters();
        let out: Vec<Value> = clusters
            .iter()
            .enumerate()
            .map(|(id, (pattern, support))| {
                json!({
                    "id": id,
                    "count": support,
                    "percent": percent(*support, total),
                    "values": values(pattern, width),
                })
            })
            .collect();
        Value::Array(out)
    }
}

/// `__autocluster(values, weight, size_weight, num_seeds)`.
pub fn make_autocluster(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(AutoclusterAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mining::rows::Params;
    use crate::udaf::RowAgg;

    fn row(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| json!(v).to_string()).collect()
    }

    fn clusters_of(agg: &AutoclusterAgg) -> Vec<(Vec<Value>, f64)> {
        super::super::rows::counted(agg.evaluate())
    }

    #[test]
    fn finds_the_shared_values_of_large_groups() -> Result<()> {
        let mut agg = AutoclusterAgg::default();
        // 60 rows share (hail, no) across states; 30 rows are texas with damage; 10 noise.
        for i in 0..60 {
            let state = ["kansas", "iowa", "ohio", "utah"][i % 4];
            agg.rows.add("autocluster", row(&[state, "hail", "no"]), 0, 1.0)?;
        }
        for i in 0..30 {
            let event = ["flood", "wind", "snow"][i % 3];
            agg.rows.add("autocluster", row(&["texas", event, "yes"]), 0, 1.0)?;
        }
        for i in 0..10 {
            agg.rows
                .add("autocluster", row(&[&format!("s{i}"), &format!("e{i}"), "yes"]), 0, 1.0)?;
        }
        let clusters = clusters_of(&agg);
        assert_eq!(clusters[0], (vec![Value::Null, json!("hail"), json!("no")], 60.0));
        assert!(
            clusters.contains(&(vec![json!("texas"), Value::Null, json!("yes")], 30.0)),
            "{clusters:?}"
        );
        // No kept pattern holds every value of another.
        for (i, a) in clusters.iter().enumerate() {
            for b in &clusters[i + 1..] {
                let fixed = |v: &Vec<Value>| v.iter().filter(|x| !x.is_null()).count();
                let shared = a.0.iter().zip(&b.0).filter(|(x, y)| !x.is_null() && x == y).count();
                assert!(shared < fixed(&a.0).min(fixed(&b.0)), "{a:?} {b:?}");
            }
        }
        // A state merge gives the same clusters.
        let mut merged = AutoclusterAgg::default();
        merged.merge(&agg.state())?;
        assert_eq!(clusters_of(&merged), clusters);
        Ok(())
    }

    #[test]
    fn a_larger_size_weight_prefers_coverage() -> Result<()> {
        let mut specific = AutoclusterAgg {
            params: Params {
                real: Some(0.1),
                whole: None,
            },
            ..AutoclusterAgg::default()
        };
        let mut generic = AutoclusterAgg {
            params: Params {
                real: Some(0.9),
                whole: None,
            },
            ..AutoclusterAgg::default()
        };
        for i in 0..100 {
            let values = row(&["api", ["GET", "POST"][i % 2], ["200", "500", "404", "302"][i % 4]]);
            specific.rows.add("autocluster", values.clone(), 0, 1.0)?;
            generic.rows.add("autocluster", values, 0, 1.0)?;
        }
        let fixed = |agg: &AutoclusterAgg| clusters_of(agg)[0].0.iter().filter(|v| !v.is_null()).count();
        assert_eq!(fixed(&generic), 1);
        assert_eq!(fixed(&specific), 3);
        Ok(())
    }
}
