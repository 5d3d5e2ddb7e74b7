//! `__basket(values, weight, threshold, max_dimensions)`: the aggregate behind `evaluate
//! basket`. Each row gives its dimension values (a dynamic array, one element per dimension
//! column) and a weight; the result is every frequent pattern (an assignment of values to one
//! to `max_dimensions` dimensions held by at least `threshold` of the total weight) found by
//! Apriori over the distinct rows, as a dynamic array of `{id, count, percent, values}`
//! (`values` has null for the dimensions the pattern leaves free), most frequent first.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::RowAgg;

/// The most distinct rows kept; past it the aggregate fails rather than grow without bound.
const MAX_DISTINCT_ROWS: usize = 1_000_000;

#[derive(Debug, Default)]
struct BasketAgg {
    /// Distinct rows (dimension values as JSON texts) and their total weight.
    rows: HashMap<Vec<String>, f64>,
    threshold: Option<f64>,
    max_dimensions: Option<usize>,
}

/// A pattern: (dimension, value) pairs in dimension order.
type Pattern = Vec<(usize, String)>;

impl BasketAgg {
    fn add(&mut self, values: Vec<String>, weight: f64) -> Result<()> {
        if !self.rows.contains_key(&values) && self.rows.len() >= MAX_DISTINCT_ROWS {
            return exec_err!("basket: more than {MAX_DISTINCT_ROWS} distinct rows; project fewer or coarser columns");
        }
        *self.rows.entry(values).or_insert(0.0) += weight;
        Ok(())
    }

    fn support(&self, pattern: &Pattern) -> f64 {
        self.rows
            .iter()
            .filter(|(row, _)| pattern.iter().all(|(d, v)| row.get(*d) == Some(v)))
            .map(|(_, w)| w)
            .sum()
    }

    /// Every frequent pattern with its support.
    fn frequent(&self) -> (Vec<(Pattern, f64)>, f64) {
        let total: f64 = self.rows.values().sum();
        let minimum = self.threshold.unwrap_or(0.05).clamp(0.0, 1.0) * total;
        let max_dimensions = self.max_dimensions.unwrap_or(5).max(1);
        // Level 1: single values (nulls are not values).
        let mut singles: BTreeMap<(usize, String), f64> = BTreeMap::new();
        for (row, weight) in &self.rows {
            for (d, value) in row.iter().enumerate() {
                if value != "null" {
                    *singles.entry((d, value.clone())).or_insert(0.0) += weight;
                }
            }
        }
        let mut level: Vec<(Pattern, f64)> = singles
            .into_iter()
            .filter(|(_, s)| *s >= minimum && *s > 0.0)
            .map(|(item, s)| (vec![item], s))
            .collect();
        let mut all = level.clone();
        for _ in 1..max_dimensions {
            // Join patterns that share all but their last item, on different dimensions.
            let mut candidates: BTreeSet<Pattern> = BTreeSet::new();
            for (i, (a, _)) in level.iter().enumerate() {
                for (b, _) in &level[i + 1..] {
                    let (Some(a_last), Some(b_last)) = (a.last(), b.last()) else {
                        continue;
                    };
                    if a[..a.len() - 1] != b[..b.len() - 1] || a_last.0 == b_last.0 {
                        continue;
                    }
                    let mut joined = a.clone();
                    joined.push(b_last.clone());
                    joined.sort();
                    candidates.insert(joined);
                }
            }
            let frequent: BTreeSet<&Pattern> = level.iter().map(|(p, _)| p).collect();
            let mut next = Vec::new();
            for candidate in candidates {
                // Every pattern one item smaller must be frequent (the Apriori property).
                let subsets_frequent = (0..candidate.len()).all(|skip| {
                    let subset: Pattern = candidate
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != skip)
                        .map(|(_, item)| item.clone())
                        .collect();
                    frequent.contains(&subset)
                });
                if !subsets_frequent {
                    continue;
                }
                let support = self.support(&candidate);
                if support >= minimum {
                    next.push((candidate, support));
                }
            }
            if next.is_empty() {
                break;
            }
            all.extend(next.iter().cloned());
            level = next;
        }
        (all, total)
    }
}

impl RowAgg for BasketAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        let Some(Val::Str(text)) = row.first() else {
            return Ok(());
        };
        let weight = row.get(1).and_then(|v| v.real()).unwrap_or(1.0);
        if self.threshold.is_none() {
            self.threshold = row.get(2).and_then(|v| v.real());
        }
        if self.max_dimensions.is_none() {
            self.max_dimensions = row.get(3).and_then(|v| v.long()).map(|n| n.max(1) as usize);
        }
        let Ok(Value::Array(values)) = serde_json::from_str::<Value>(text) else {
            return Ok(());
        };
        self.add(values.iter().map(Value::to_string).collect(), weight)
    }

    fn state(&self) -> Vec<u8> {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|(values, weight)| json!([values, weight]))
            .collect();
        json!({"rows": rows, "threshold": self.threshold, "max_dimensions": self.max_dimensions})
            .to_string()
            .into_bytes()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let Ok(state) = serde_json::from_slice::<Value>(state) else {
            return exec_err!("a corrupt basket state");
        };
        for entry in state["rows"].as_array().into_iter().flatten() {
            let values: Vec<String> = entry[0]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            self.add(values, entry[1].as_f64().unwrap_or(0.0))?;
        }
        self.threshold = self.threshold.or(state["threshold"].as_f64());
        self.max_dimensions = self
            .max_dimensions
            .or(state["max_dimensions"].as_u64().map(|n| n as usize));
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let width = self.rows.keys().next().map_or(0, Vec::len);
        let (mut patterns, total) = self.frequent();
        patterns.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| a.0.len().cmp(&b.0.len()))
                .then_with(|| a.0.cmp(&b.0))
        });
        let out: Vec<Value> = patterns
            .iter()
            .enumerate()
            .map(|(id, (pattern, support))| {
                let mut values = vec![Value::Null; width];
                for (d, text) in pattern {
                    values[*d] = serde_json::from_str(text).unwrap_or(Value::Null);
                }
                json!({
                    "id": id,
                    "count": support,
                    "percent": if total > 0.0 { support / total * 100.0 } else { 0.0 },
                    "values": values,
                })
            })
            .collect();
        Ok(Out::Str(Value::Array(out).to_string()))
    }

    fn size(&self) -> usize {
        self.rows
            .keys()
            .map(|k| k.iter().map(String::len).sum::<usize>() + 64)
            .sum()
    }
}

/// `__basket(values, weight, threshold, max_dimensions)`.
pub fn make_basket(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(BasketAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern_of(agg: &BasketAgg) -> Vec<(Vec<Value>, f64)> {
        let Ok(Out::Str(text)) = agg.evaluate() else {
            return Vec::new();
        };
        let value: Value = serde_json::from_str(&text).unwrap_or_default();
        value
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["values"].as_array().cloned().unwrap_or_default(),
                    p["count"].as_f64().unwrap_or(0.0),
                )
            })
            .collect()
    }

    #[test]
    fn frequent_patterns_by_apriori() {
        let mut agg = BasketAgg {
            threshold: Some(0.3),
            ..BasketAgg::default()
        };
        let rows = [("a", "x", 4.0), ("a", "y", 3.0), ("b", "y", 2.0), ("c", "z", 1.0)];
        for (first, second, weight) in rows {
            agg.add(vec![json!(first).to_string(), json!(second).to_string()], weight)
                .unwrap_or_default();
        }
        let patterns = pattern_of(&agg);
        // a: 7, y: 5, x: 4, (a, x): 4, (a, y): 3 — all at least 3 of 10.
        assert_eq!(patterns[0], (vec![json!("a"), Value::Null], 7.0));
        assert!(patterns.contains(&(vec![json!("a"), json!("x")], 4.0)));
        assert!(patterns.contains(&(vec![json!("a"), json!("y")], 3.0)));
        assert!(!patterns.iter().any(|(v, _)| v.contains(&json!("c"))));
        assert_eq!(patterns.len(), 5);
        // A state merge gives the same patterns.
        let mut merged = BasketAgg::default();
        assert!(merged.merge(&agg.state()).is_ok());
        assert_eq!(pattern_of(&merged), patterns);
    }
}
