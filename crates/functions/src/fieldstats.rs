//! `__fieldstats(value, column)`: the aggregate behind the `fieldstats` operator. For every
//! path of the dynamic `value`s (nested bags walked, arrays and scalars are leaves), per JSON
//! type found there: in how many rows it occurs, how many distinct values it holds (exact up
//! to [`MOST_DISTINCT`], then counted as that many), and the share of all rows it occurs in.
//! Types are named as `gettype` names them.
//! Paths are written as KQL reads them from `column`: `.key` for a plain key, `['key']` for a
//! key with dots or other characters (`attributes['http.method']`, `resource.host.name`).

use std::collections::{HashMap, HashSet};
use std::hash::Hasher;

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use serde_json::{Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter};

/// Distinct values counted exactly per path; past it the count stays there.
pub const MOST_DISTINCT: usize = 100_000;
/// Paths kept; values under more paths than this are not walked further.
const MOST_PATHS: usize = 10_000;
/// Deepest bag nesting walked.
const DEEPEST: usize = 32;

#[derive(Debug, Default)]
struct PathStats {
    rows: u64,
    distinct: HashSet<u64>,
}

#[derive(Debug, Default)]
struct FieldStatsAgg {
    column: Option<String>,
    rows: u64,
    /// (path, type) → stats.
    paths: HashMap<(String, &'static str), PathStats>,
}

/// `key` appended to a KQL path.
fn step(path: &str, key: &str) -> String {
    let plain = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}['{}']", key.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

fn hash(value: &Value) -> u64 {
    let mut hasher = twox_hash::XxHash64::with_seed(0);
    hasher.write(value.to_string().as_bytes());
    hasher.finish()
}

impl FieldStatsAgg {
    fn record(&mut self, path: String, value: &Value, seen: &mut HashSet<(String, &'static str)>) {
        let key = (path, crate::bags::json_type(value));
        if !self.paths.contains_key(&key) && self.paths.len() >= MOST_PATHS {
            return;
        }
        if !seen.insert(key.clone()) {
            return;
        }
        let stats = self.paths.entry(key).or_default();
        stats.rows += 1;
        if stats.distinct.len() < MOST_DISTINCT {
            stats.distinct.insert(hash(value));
        }
    }

    fn walk(&mut self, path: String, value: &Value, depth: usize, seen: &mut HashSet<(String, &'static str)>) {
        match value {
            Value::Object(entries) if !entries.is_empty() && depth < DEEPEST => {
                for (key, inner) in entries {
                    self.walk(step(&path, key), inner, depth + 1, seen);
                }
            }
            _ => self.record(path, value, seen),
        }
    }
}

impl RowAgg for FieldStatsAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if self.column.is_none() {
            self.column = row.get(1).and_then(|v| v.str()).map(str::to_string);
        }
        self.rows += 1;
        let Some(value) = row.first().copied().and_then(crate::json::parse) else {
            return Ok(());
        };
        let root = self.column.clone().unwrap_or_default();
        let mut seen = HashSet::new();
        match &value {
            Value::Object(_) => self.walk(root, &value, 0, &mut seen),
            other => self.record(root, other, &mut seen),
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.bytes(self.column.as_deref().unwrap_or("").as_bytes());
        w.u64(self.rows);
        w.u64(self.paths.len() as u64);
        for ((path, kind), stats) in &self.paths {
            w.bytes(path.as_bytes()).bytes(kind.as_bytes()).u64(stats.rows);
            w.u64(stats.distinct.len() as u64);
            for h in &stats.distinct {
                w.u64(*h);
            }
        }
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        let column = String::from_utf8_lossy(r.bytes()?).into_owned();
        if self.column.is_none() && !column.is_empty() {
            self.column = Some(column);
        }
        self.rows += r.u64()?;
        for _ in 0..r.u64()? {
            let path = String::from_utf8_lossy(r.bytes()?).into_owned();
            let kind = match r.bytes()? {
                b"null" => "null",
                b"bool" => "bool",
                b"long" => "long",
                b"real" => "real",
                b"string" => "string",
                b"array" => "array",
                _ => "dictionary",
            };
            let rows = r.u64()?;
            let count = r.u64()?;
            let mut hashes = Vec::new();
            for _ in 0..count {
                hashes.push(r.u64()?);
            }
            let key = (path, kind);
            if !self.paths.contains_key(&key) && self.paths.len() >= MOST_PATHS {
                continue;
            }
            let stats = self.paths.entry(key).or_default();
            stats.rows += rows;
            for h in hashes {
                if stats.distinct.len() >= MOST_DISTINCT {
                    break;
                }
                stats.distinct.insert(h);
            }
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let mut rows: Vec<(&(String, &'static str), &PathStats)> = self.paths.iter().collect();
        rows.sort_by(|a, b| b.1.rows.cmp(&a.1.rows).then_with(|| a.0.cmp(b.0)));
        let total = self.rows.max(1) as f64;
        let out: Vec<Value> = rows
            .into_iter()
            .map(|((path, kind), stats)| {
                json!({
                    "path": path,
                    "type": kind,
                    "count": stats.rows,
                    "cardinality": stats.distinct.len(),
                    "frequency": stats.rows as f64 / total,
                })
            })
            .collect();
        Ok(crate::json::out(Value::Array(out)))
    }

    fn size(&self) -> usize {
        self.paths
            .iter()
            .map(|((p, _), s)| p.len() + 64 + s.distinct.len() * 16)
            .sum()
    }
}

pub fn make_fieldstats(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(FieldStatsAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(values: &[&str]) -> Vec<Value> {
        let mut agg = FieldStatsAgg::default();
        for v in values {
            assert!(agg.update(&[Val::Str(v), Val::Str("attributes")]).is_ok());
        }
        crate::udaf::testing::merged_array(&agg, Box::new(FieldStatsAgg::default()))
    }

    #[test]
    fn paths_types_cardinality_and_frequency() {
        let rows = stats(&[
            r#"{"http.method":"GET","user":{"id":1},"tags":["a"]}"#,
            r#"{"http.method":"POST","user":{"id":2}}"#,
            r#"{"http.method":"GET","user":{"id":"x"}}"#,
            "null",
        ]);
        let find = |path: &str, kind: &str| rows.iter().find(|r| r["path"] == path && r["type"] == kind).cloned();
        let method = find("attributes['http.method']", "string").unwrap_or_default();
        assert_eq!(
            (method["count"].as_u64(), method["cardinality"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(method["frequency"].as_f64(), Some(0.75));
        assert_eq!(
            find("attributes.user.id", "long").map(|r| r["count"].clone()),
            Some(json!(2))
        );
        assert_eq!(
            find("attributes.user.id", "string").map(|r| r["count"].clone()),
            Some(json!(1))
        );
        assert_eq!(
            find("attributes.tags", "array").map(|r| r["count"].clone()),
            Some(json!(1))
        );
        assert_eq!(find("attributes", "null").map(|r| r["count"].clone()), Some(json!(1)));
        assert_eq!(rows[0]["path"], "attributes['http.method']", "most frequent first");
    }
}
