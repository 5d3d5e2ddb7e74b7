//! `__basket(values, weight, threshold, max_dimensions)`: the aggregate behind `evaluate
//! basket`: every frequent pattern (an assignment of values to one to `max_dimensions`
//! dimensions held by at least `threshold` of the total weight) found by Apriori over the
//! distinct rows, as a dynamic array of `{id, count, percent, values}`, most frequent first.

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use serde_json::{Value, json};

use super::rows::{Mine, Miner, Pattern};
use crate::udaf::RowAgg;

#[derive(Debug)]
pub(crate) struct Basket;

type BasketAgg = Miner<Basket>;

impl Mine for Basket {
    const PLUGIN: &'static str = "basket";
    const PARAMS_AT: usize = 2;

    fn result(miner: &BasketAgg) -> Value {
        miner.patterns()
    }
}

impl BasketAgg {
    /// Every frequent pattern with its support, and the total weight.
    fn frequent(&self) -> (Vec<(Pattern, f64)>, f64) {
        let total = self.rows.totals()[0];
        let minimum = self.params.real.unwrap_or(0.05).clamp(0.0, 1.0) * total;
        let max_dimensions = self.params.whole.unwrap_or(5).max(1);
        let patterns = self
            .rows
            .apriori(max_dimensions, |support| support[0] >= minimum && support[0] > 0.0)
            .into_iter()
            .map(|(pattern, support)| (pattern, support[0]))
            .collect();
        (patterns, total)
    }

    #[cfg(test)]
    fn add(&mut self, values: Vec<String>, weight: f64) -> Result<()> {
        self.rows.add("basket", values, 0, weight)
    }

    /// The patterns as the aggregate returns them.
    fn patterns(&self) -> Value {
        let width = self.rows.width();
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
                json!({
                    "id": id,
                    "count": support,
                    "percent": if total > 0.0 { support / total * 100.0 } else { 0.0 },
                    "values": super::rows::values(pattern, width),
                })
            })
            .collect();
        Value::Array(out)
    }
}

/// `__basket(values, weight, threshold, max_dimensions)`.
pub fn make_basket(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(BasketAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mining::rows::Params;
    use crate::udaf::RowAgg;

    fn pattern_of(agg: &BasketAgg) -> Vec<(Vec<Value>, f64)> {
        super::super::rows::counted(agg.evaluate())
    }

    #[test]
    fn frequent_patterns_by_apriori() {
        let mut agg = BasketAgg {
            params: Params {
                real: Some(0.3),
                whole: None,
            },
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
