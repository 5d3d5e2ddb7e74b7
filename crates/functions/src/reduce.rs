//! `__reduce(value, threshold, characters, source)`: the aggregate behind the `reduce`
//! operator, which groups similar strings under a pattern.
//!
//! Each value is split into terms (runs of characters that are not separators: by default
//! every character that is not a letter or digit, or the characters given) and separators. A
//! term held by more than `threshold` of the rows is kept; every other term becomes the
//! wildcard `*`, and wildcards separated only by separators merge into one (with explicit
//! separator characters, the separators next to a wildcard merge into it too: `fooZ1` with
//! `Z` gives `foo*`). Values whose pattern is nothing but a wildcard fall in the group
//! `others`. The result is a dynamic array of `{pattern, count, representative}`, most rows
//! first (`representative` is the group's most frequent value; `others` has none), or with
//! `source` true, of `[value, pattern]` for every distinct value.

use std::collections::{HashMap, HashSet};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter};

/// The most distinct values kept; past it the aggregate fails rather than grow without bound.
const MAX_DISTINCT_VALUES: usize = 1_000_000;

/// The group of values whose pattern is only a wildcard.
pub const OTHERS: &str = "others";

#[derive(Debug, Default)]
struct ReduceAgg {
    values: HashMap<String, u64>,
    threshold: Option<f64>,
    characters: Option<String>,
    source: bool,
}

#[derive(Debug, PartialEq)]
enum Part<'a> {
    Term(&'a str),
    Separator(&'a str),
}

fn split<'a>(value: &'a str, characters: Option<&str>) -> Vec<Part<'a>> {
    let is_separator = |c: char| match characters {
        Some(chars) => chars.contains(c),
        None => !c.is_alphanumeric(),
    };
    let mut parts = Vec::new();
    let mut start = 0;
    let mut in_term: Option<bool> = None;
    for (i, c) in value.char_indices() {
        let term = !is_separator(c);
        if in_term.is_some_and(|t| t != term) {
            let text = &value[start..i];
            parts.push(if in_term == Some(true) {
                Part::Term(text)
            } else {
                Part::Separator(text)
            });
            start = i;
        }
        in_term = Some(term);
    }
    if let Some(term) = in_term {
        let text = &value[start..];
        parts.push(if term { Part::Term(text) } else { Part::Separator(text) });
    }
    parts
}

impl ReduceAgg {
    /// In how many rows each term occurs.
    fn term_rows(&self) -> HashMap<&str, u64> {
        let mut rows: HashMap<&str, u64> = HashMap::new();
        for (value, count) in &self.values {
            let mut seen = HashSet::new();
            for part in split(value, self.characters.as_deref()) {
                if let Part::Term(term) = part
                    && seen.insert(term)
                {
                    *rows.entry(term).or_insert(0) += count;
                }
            }
        }
        rows
    }

    fn pattern(&self, value: &str, term_rows: &HashMap<&str, u64>, total: u64) -> String {
        let threshold = self.threshold.unwrap_or(0.1);
        let explicit = self.characters.is_some();
        // Terms kept as they are, or `None` for a wildcard, with the separators between.
        let mut pieces: Vec<Option<&str>> = Vec::new();
        let mut separators: Vec<&str> = Vec::new();
        for part in split(value, self.characters.as_deref()) {
            match part {
                Part::Term(term) => {
                    let frequent = term_rows
                        .get(term)
                        .is_some_and(|n| *n as f64 / total as f64 > threshold);
                    let piece = frequent.then_some(term);
                    if piece.is_none() && matches!(pieces.last(), Some(None)) {
                        // Wildcards with only separators between them merge.
                        separators.clear();
                        continue;
                    }
                    pieces.extend(separators.drain(..).map(Some));
                    pieces.push(piece);
                }
                Part::Separator(text) => separators.push(text),
            }
        }
        pieces.extend(separators.drain(..).map(Some));
        let mut pattern = String::new();
        for (i, piece) in pieces.iter().enumerate() {
            match piece {
                None => pattern.push('*'),
                Some(text) => {
                    let is_separator = split(text, self.characters.as_deref())
                        .iter()
                        .all(|p| matches!(p, Part::Separator(_)));
                    let next_to_wildcard =
                        matches!(pieces.get(i + 1), Some(None)) || (i > 0 && pieces[i - 1].is_none());
                    if !(explicit && is_separator && next_to_wildcard) {
                        pattern.push_str(text);
                    }
                }
            }
        }
        if pattern == "*" || pattern.is_empty() {
            OTHERS.to_string()
        } else {
            pattern
        }
    }
}

impl RowAgg for ReduceAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if self.threshold.is_none() {
            self.threshold = row.get(1).and_then(|v| v.real());
        }
        if self.characters.is_none() {
            self.characters = row
                .get(2)
                .and_then(|v| v.str())
                .filter(|c| !c.is_empty())
                .map(str::to_string);
        }
        self.source = self.source || row.get(3).and_then(|v| v.bool()) == Some(true);
        let Some(Val::Str(value)) = row.first() else {
            return Ok(());
        };
        if !self.values.contains_key(*value) && self.values.len() >= MAX_DISTINCT_VALUES {
            return exec_err!(
                "reduce: more than {MAX_DISTINCT_VALUES} distinct values; reduce a shorter or sanitized column"
            );
        }
        *self.values.entry(value.to_string()).or_insert(0) += 1;
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.f64(self.threshold.unwrap_or(f64::NAN));
        w.bytes(self.characters.as_deref().unwrap_or("").as_bytes());
        w.u8(u8::from(self.source));
        w.u64(self.values.len() as u64);
        for (value, count) in &self.values {
            w.bytes(value.as_bytes()).u64(*count);
        }
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        let threshold = r.f64()?;
        if self.threshold.is_none() && !threshold.is_nan() {
            self.threshold = Some(threshold);
        }
        let characters = String::from_utf8_lossy(r.bytes()?).into_owned();
        if self.characters.is_none() && !characters.is_empty() {
            self.characters = Some(characters);
        }
        self.source = self.source || r.u8()? == 1;
        for _ in 0..r.u64()? {
            let value = String::from_utf8_lossy(r.bytes()?).into_owned();
            let count = r.u64()?;
            if !self.values.contains_key(&value) && self.values.len() >= MAX_DISTINCT_VALUES {
                return exec_err!("reduce: more than {MAX_DISTINCT_VALUES} distinct values");
            }
            *self.values.entry(value).or_insert(0) += count;
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let total: u64 = self.values.values().sum();
        let term_rows = self.term_rows();
        let mut values: Vec<(&String, &u64)> = self.values.iter().collect();
        // Most frequent first, then by text: the first value of a group represents it.
        values.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        if self.source {
            let pairs: Vec<Value> = values
                .iter()
                .map(|(v, _)| json!([v, self.pattern(v, &term_rows, total)]))
                .collect();
            return Ok(crate::json::out(Value::Array(pairs)));
        }
        let mut groups: Vec<(String, u64, String)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (value, count) in values {
            let pattern = self.pattern(value, &term_rows, total);
            match index.get(&pattern) {
                Some(&i) => groups[i].1 += count,
                None => {
                    index.insert(pattern.clone(), groups.len());
                    let representative = if pattern == OTHERS {
                        String::new()
                    } else {
                        value.clone()
                    };
                    groups.push((pattern, *count, representative));
                }
            }
        }
        groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let rows: Vec<Value> = groups
            .into_iter()
            .map(|(pattern, count, representative)| json!({"pattern": pattern, "count": count, "representative": representative}))
            .collect();
        Ok(crate::json::out(Value::Array(rows)))
    }

    fn size(&self) -> usize {
        self.values.keys().map(|k| k.len() + 32).sum()
    }
}

pub fn make_reduce(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(ReduceAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce(values: &[&str], threshold: Option<f64>, characters: Option<&str>) -> Vec<(String, u64, String)> {
        let mut agg = ReduceAgg::default();
        for v in values {
            let row = [
                Val::Str(v),
                threshold.map_or(Val::Null, Val::Real),
                characters.map_or(Val::Null, Val::Str),
                Val::Bool(false),
            ];
            assert!(agg.update(&row).is_ok());
        }
        // Through a serialized state, as a partial aggregation hands it on.
        let mut merged = ReduceAgg::default();
        assert!(merged.merge(&agg.state()).is_ok());
        let Ok(Out::Str(text)) = merged.evaluate() else {
            return Vec::new();
        };
        let rows: Value = serde_json::from_str(&text).unwrap_or_default();
        rows.as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r["pattern"].as_str().unwrap_or_default().to_string(),
                    r["count"].as_u64().unwrap_or_default(),
                    r["representative"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn documented_groups() {
        let values: Vec<String> = (1..=10).map(|x| format!("fooZ{x}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        assert_eq!(reduce(&refs, None, None), vec![(OTHERS.to_string(), 10, String::new())]);
        assert_eq!(
            reduce(&refs, None, Some("Z")),
            vec![("foo*".to_string(), 10, "fooZ1".to_string())]
        );
    }

    #[test]
    fn default_separators_stay_in_patterns() {
        let mut values = vec!["San Bernard", "San Diego", "San Jose", "San Remo"];
        values.extend(["Paris"; 6]);
        values.extend(["One -on- One", "Two -on- Three", "Five -on- Six"]);
        let groups = reduce(&values, Some(0.1), None);
        let patterns: Vec<&str> = groups.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(patterns, ["Paris", "San *", "* -on- *"]);
        assert_eq!(groups[1].1, 4);
    }

    #[test]
    fn terms_split_where_separators_are() {
        assert_eq!(
            split("a-b", None),
            vec![Part::Term("a"), Part::Separator("-"), Part::Term("b")]
        );
        assert_eq!(split("--", None), vec![Part::Separator("--")]);
        assert_eq!(
            split("aXb", Some("X")),
            vec![Part::Term("a"), Part::Separator("X"), Part::Term("b")]
        );
        assert!(split("", None).is_empty());
    }
}
