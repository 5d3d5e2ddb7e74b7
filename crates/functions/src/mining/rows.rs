//! The distinct rows a mining aggregate gathers, with their weights in each of two sets (only
//! the first is used outside `diffpatterns`), and what the miners share: supports, Apriori
//! enumeration, and the output of a pattern.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::RowAgg;

/// The most distinct rows kept; past it the aggregate fails rather than grow without bound.
const MAX_DISTINCT_ROWS: usize = 1_000_000;

/// A pattern: (dimension, value as JSON text) pairs in dimension order.
pub(crate) type Pattern = Vec<(usize, String)>;

/// Weights in the two sets.
pub(crate) type Weights = [f64; 2];

/// A miner's two parameters (a real and a whole number), read from the first row that holds
/// them and carried through its states.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Params {
    pub(crate) real: Option<f64>,
    pub(crate) whole: Option<usize>,
}

impl Params {
    /// Reads the parameters still unknown from `row` (at `real_at` and `real_at + 1`).
    pub(crate) fn read(&mut self, row: &[Val], real_at: usize) {
        if self.real.is_none() {
            self.real = row.get(real_at).and_then(|v| v.real());
        }
        if self.whole.is_none() {
            self.whole = row.get(real_at + 1).and_then(|v| v.long()).map(|n| n.max(1) as usize);
        }
    }

    fn merge(&mut self, other: &Value) {
        self.real = self.real.or(other["real"].as_f64());
        self.whole = self.whole.or(other["whole"].as_u64().map(|n| n as usize));
    }
}

/// One pattern miner: its name, where its two parameters start in an input row, which set a
/// row belongs to, and its result over the gathered rows. [`Miner`] is the aggregate.
pub(crate) trait Mine: Sized + std::fmt::Debug + Send + Sync {
    const PLUGIN: &'static str;
    const PARAMS_AT: usize;

    /// The set a row belongs to (`None`: the row is left out).
    fn set(_row: &[Val]) -> Option<usize> {
        Some(0)
    }

    fn result(miner: &Miner<Self>) -> Value;
}

/// The aggregate of a [`Mine`]: the distinct rows and the parameters.
#[derive(Debug)]
pub(crate) struct Miner<M> {
    pub(crate) rows: WeightedRows,
    pub(crate) params: Params,
    pub(crate) kind: std::marker::PhantomData<M>,
}

impl<M> Default for Miner<M> {
    fn default() -> Self {
        Miner {
            rows: WeightedRows::default(),
            params: Params::default(),
            kind: std::marker::PhantomData,
        }
    }
}

impl<M: Mine> RowAgg for Miner<M> {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        self.params.read(row, M::PARAMS_AT);
        match M::set(row) {
            Some(set) => self.rows.update(M::PLUGIN, row, set),
            None => Ok(()),
        }
    }

    fn state(&self) -> Vec<u8> {
        self.rows.state(&self.params)
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        self.rows.merge(M::PLUGIN, state, &mut self.params)
    }

    fn evaluate(&self) -> Result<Out> {
        Ok(Out::Str(M::result(self).to_string()))
    }

    fn size(&self) -> usize {
        self.rows.size()
    }
}

#[derive(Debug, Default)]
pub(crate) struct WeightedRows {
    rows: HashMap<Vec<String>, Weights>,
}

impl WeightedRows {
    /// Adds a row (its values as JSON texts) to set `side` with `weight`.
    pub(crate) fn add(&mut self, plugin: &str, values: Vec<String>, side: usize, weight: f64) -> Result<()> {
        if !self.rows.contains_key(&values) && self.rows.len() >= MAX_DISTINCT_ROWS {
            return exec_err!(
                "{plugin}: more than {MAX_DISTINCT_ROWS} distinct rows; project fewer or coarser columns"
            );
        }
        if let Some(slot) = self.rows.entry(values).or_insert([0.0; 2]).get_mut(side) {
            *slot += weight;
        }
        Ok(())
    }

    /// Adds an input row: `[values (a JSON array text), weight, …]`, to set `side`.
    pub(crate) fn update(&mut self, plugin: &str, row: &[Val], side: usize) -> Result<()> {
        let Some(Val::Str(text)) = row.first() else {
            return Ok(());
        };
        let weight = row.get(1).and_then(|v| v.real()).unwrap_or(1.0);
        if !weight.is_finite() || weight <= 0.0 {
            return Ok(());
        }
        let Ok(Value::Array(values)) = serde_json::from_str::<Value>(text) else {
            return Ok(());
        };
        self.add(plugin, values.iter().map(Value::to_string).collect(), side, weight)
    }

    /// The number of dimensions.
    pub(crate) fn width(&self) -> usize {
        self.rows.keys().next().map_or(0, Vec::len)
    }

    pub(crate) fn totals(&self) -> Weights {
        self.rows
            .values()
            .fold([0.0; 2], |acc, w| [acc[0] + w[0], acc[1] + w[1]])
    }

    /// The weights of the rows `pattern` matches.
    pub(crate) fn support(&self, pattern: &Pattern) -> Weights {
        self.rows
            .iter()
            .filter(|(row, _)| matches(row, pattern))
            .fold([0.0; 2], |acc, (_, w)| [acc[0] + w[0], acc[1] + w[1]])
    }

    /// For each free dimension of `pattern`, the value (not null) the rows it matches hold
    /// with the most weight in the first set.
    pub(crate) fn best_extensions(&self, pattern: &Pattern) -> Vec<(usize, String)> {
        let width = self.width();
        let mut weights: HashMap<(usize, &str), f64> = HashMap::new();
        for (row, w) in self.rows.iter().filter(|(row, _)| matches(row, pattern)) {
            for (d, value) in row.iter().enumerate() {
                if value != "null" && !pattern.iter().any(|(pd, _)| *pd == d) {
                    *weights.entry((d, value.as_str())).or_insert(0.0) += w[0];
                }
            }
        }
        let mut best: BTreeMap<usize, (&str, f64)> = BTreeMap::new();
        for ((d, value), w) in weights {
            let entry = best.entry(d).or_insert((value, w));
            if w > entry.1 || (w == entry.1 && value < entry.0) {
                *entry = (value, w);
            }
        }
        best.into_iter()
            .filter(|(d, _)| *d < width)
            .map(|(d, (value, _))| (d, value.to_owned()))
            .collect()
    }

    /// Every pattern of one to `max_dimensions` values whose support `keep` accepts, found by
    /// Apriori: `keep` must hold for a pattern when it holds for a larger one (support only
    /// shrinks as values are added).
    pub(crate) fn apriori(&self, max_dimensions: usize, keep: impl Fn(Weights) -> bool) -> Vec<(Pattern, Weights)> {
        // Level 1: single values (nulls are not values).
        let mut singles: BTreeMap<(usize, String), Weights> = BTreeMap::new();
        for (row, w) in &self.rows {
            for (d, value) in row.iter().enumerate() {
                if value != "null" {
                    let entry = singles.entry((d, value.clone())).or_insert([0.0; 2]);
                    entry[0] += w[0];
                    entry[1] += w[1];
                }
            }
        }
        let mut level: Vec<(Pattern, Weights)> = singles
            .into_iter()
            .filter(|(_, s)| keep(*s) && (s[0] > 0.0 || s[1] > 0.0))
            .map(|(item, s)| (vec![item], s))
            .collect();
        let mut all = level.clone();
        for _ in 1..max_dimensions.max(1) {
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
                // Every pattern one item smaller must be kept too (the Apriori property).
                let subsets_kept = (0..candidate.len()).all(|skip| {
                    let subset: Pattern = candidate
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != skip)
                        .map(|(_, item)| item.clone())
                        .collect();
                    frequent.contains(&subset)
                });
                if !subsets_kept {
                    continue;
                }
                let support = self.support(&candidate);
                if keep(support) {
                    next.push((candidate, support));
                }
            }
            if next.is_empty() {
                break;
            }
            all.extend(next.iter().cloned());
            level = next;
        }
        all
    }

    pub(crate) fn state(&self, params: &Params) -> Vec<u8> {
        let rows: Vec<Value> = self.rows.iter().map(|(values, w)| json!([values, w])).collect();
        json!({"rows": rows, "params": {"real": params.real, "whole": params.whole}})
            .to_string()
            .into_bytes()
    }

    /// Merges a state [`WeightedRows::state`] wrote, and its parameters into `params`.
    pub(crate) fn merge(&mut self, plugin: &str, state: &[u8], params: &mut Params) -> Result<()> {
        let Ok(state) = serde_json::from_slice::<Value>(state) else {
            return exec_err!("a corrupt {plugin} state");
        };
        for entry in state["rows"].as_array().into_iter().flatten() {
            let values: Vec<String> = entry[0]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            for side in 0..2 {
                let weight = entry[1][side].as_f64().unwrap_or(0.0);
                if weight > 0.0 {
                    self.add(plugin, values.clone(), side, weight)?;
                }
            }
        }
        params.merge(&state["params"]);
        Ok(())
    }

    pub(crate) fn size(&self) -> usize {
        self.rows
            .keys()
            .map(|k| k.iter().map(String::len).sum::<usize>() + 64)
            .sum()
    }
}

/// Whether `row` holds every value of `pattern`.
pub(crate) fn matches(row: &[String], pattern: &Pattern) -> bool {
    pattern.iter().all(|(d, v)| row.get(*d) == Some(v))
}

/// Whether one of two patterns holds every value of the other.
pub(crate) fn comparable(a: &Pattern, b: &Pattern) -> bool {
    a.iter().all(|item| b.contains(item)) || b.iter().all(|item| a.contains(item))
}

/// A pattern's values, one per dimension, null where it leaves the dimension free.
pub(crate) fn values(pattern: &Pattern, width: usize) -> Vec<Value> {
    let mut values = vec![Value::Null; width];
    for (d, text) in pattern {
        if let Some(slot) = values.get_mut(*d) {
            *slot = serde_json::from_str(text).unwrap_or(Value::Null);
        }
    }
    values
}

/// A percentage of `part` in `whole`, rounded to two decimals as Kusto shows them.
pub(crate) fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        (part / whole * 10_000.0).round() / 100.0
    } else {
        0.0
    }
}

/// The (values, count) of each pattern a miner's result holds (for tests).
#[cfg(test)]
pub(crate) fn counted(result: Result<crate::rowfn::Out>) -> Vec<(Vec<Value>, f64)> {
    let Ok(crate::rowfn::Out::Str(text)) = result else {
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
