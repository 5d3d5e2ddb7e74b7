//! `__trace_find(span_id, parent_span_id, timestamp, flags, relations, within)`: the aggregate
//! behind the `trace-find` operator, over the spans of one trace. `flags` has bit `i` set for
//! a span that matches span set `i`; `relations` names how each span set relates to the next
//! (`>>` descendant, `>` child, `<<` ancestor, `<` parent, `~` sibling, `::` same trace,
//! comma-separated). The spans of set 0 match; a span of set `i + 1` matches when it stands in
//! the relation to a matching span of set `i` (and, with `within`, starts at most that long
//! from it). The result, when the last set has matching spans, is `{spans, start}`: their ids
//! and the earliest start; otherwise null (the trace is left out).

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter};

/// The most spans of one trace kept; past it the query fails rather than grow without bound.
const MOST_SPANS: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Descendant,
    Child,
    Ancestor,
    Parent,
    Sibling,
    SameTrace,
}

fn relation(symbol: &str) -> Option<Relation> {
    Some(match symbol.trim() {
        ">>" => Relation::Descendant,
        ">" => Relation::Child,
        "<<" => Relation::Ancestor,
        "<" => Relation::Parent,
        "~" => Relation::Sibling,
        "::" => Relation::SameTrace,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
struct Span {
    id: String,
    parent: String,
    start: i64,
    flags: u64,
}

#[derive(Debug, Default)]
struct TraceFindAgg {
    spans: Vec<Span>,
    relations: Option<String>,
    within: Option<i64>,
}

impl TraceFindAgg {
    fn add(&mut self, span: Span) -> Result<()> {
        if self.spans.len() >= MOST_SPANS {
            return exec_err!("trace-find: a trace has more than {MOST_SPANS} spans");
        }
        self.spans.push(span);
        Ok(())
    }

    fn matches(&self) -> Result<Option<Vec<usize>>> {
        let relations: Vec<Relation> = match self.relations.as_deref() {
            None | Some("") => Vec::new(),
            Some(text) => match text.split(',').map(relation).collect::<Option<Vec<_>>>() {
                Some(relations) => relations,
                None => return exec_err!("trace-find: unknown span relation in {text:?}"),
            },
        };
        let by_id: HashMap<&str, usize> = self.spans.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
        let parent = |i: usize| -> Option<usize> { by_id.get(self.spans[i].parent.as_str()).copied() };
        // Whether `b` descends from `a`: walk up from `b` (at most as many steps as spans, so a
        // cycle in bad data ends).
        let descends = |a: usize, b: usize| {
            let mut current = parent(b);
            for _ in 0..self.spans.len() {
                match current {
                    Some(c) if c == a => return true,
                    Some(c) => current = parent(c),
                    None => return false,
                }
            }
            false
        };
        let related = |rel: Relation, a: usize, b: usize| match rel {
            Relation::Descendant => descends(a, b),
            Relation::Child => parent(b) == Some(a),
            Relation::Ancestor => descends(b, a),
            Relation::Parent => parent(a) == Some(b),
            Relation::Sibling => {
                a != b && !self.spans[a].parent.is_empty() && self.spans[a].parent == self.spans[b].parent
            }
            Relation::SameTrace => true,
        };
        let close = |a: usize, b: usize| {
            self.within.is_none_or(|w| {
                (i128::from(self.spans[a].start) - i128::from(self.spans[b].start)).abs() <= i128::from(w)
            })
        };
        let mut current: Vec<usize> = (0..self.spans.len())
            .filter(|i| self.spans[*i].flags & 1 != 0)
            .collect();
        for (step, rel) in relations.iter().enumerate() {
            let bit = 1u64 << (step + 1);
            current = (0..self.spans.len())
                .filter(|b| self.spans[*b].flags & bit != 0)
                .filter(|b| current.iter().any(|a| related(*rel, *a, *b) && close(*a, *b)))
                .collect();
            if current.is_empty() {
                break;
            }
        }
        Ok((!current.is_empty()).then_some(current))
    }
}

impl RowAgg for TraceFindAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if self.relations.is_none() {
            self.relations = row.get(4).and_then(|v| v.str()).map(str::to_string);
        }
        if self.within.is_none() {
            self.within = row.get(5).and_then(|v| v.timespan().or(v.long()));
        }
        let text = |i: usize| row.get(i).and_then(|v| v.str()).unwrap_or("").to_string();
        let start = row.get(2).and_then(|v| v.datetime().or(v.long())).unwrap_or(0);
        let flags = row.get(3).and_then(|v| v.long()).unwrap_or(0) as u64;
        self.add(Span {
            id: text(0),
            parent: text(1),
            start,
            flags,
        })
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.bytes(self.relations.as_deref().unwrap_or("").as_bytes());
        w.u8(u8::from(self.within.is_some())).i64(self.within.unwrap_or(0));
        w.u64(self.spans.len() as u64);
        for s in &self.spans {
            w.bytes(s.id.as_bytes())
                .bytes(s.parent.as_bytes())
                .i64(s.start)
                .u64(s.flags);
        }
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        let relations = String::from_utf8_lossy(r.bytes()?).into_owned();
        if self.relations.is_none() && !relations.is_empty() {
            self.relations = Some(relations);
        }
        let has_within = r.u8()? == 1;
        let within = r.i64()?;
        if self.within.is_none() && has_within {
            self.within = Some(within);
        }
        for _ in 0..r.u64()? {
            let id = String::from_utf8_lossy(r.bytes()?).into_owned();
            let parent = String::from_utf8_lossy(r.bytes()?).into_owned();
            let start = r.i64()?;
            let flags = r.u64()?;
            self.add(Span {
                id,
                parent,
                start,
                flags,
            })?;
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let Some(found) = self.matches()? else {
            return Ok(Out::Null);
        };
        let start = found.iter().map(|i| self.spans[*i].start).min().unwrap_or(0);
        let ids: Vec<Value> = found.iter().map(|i| Value::from(self.spans[*i].id.clone())).collect();
        Ok(crate::json::out(json!({"spans": ids, "start": start})))
    }

    fn size(&self) -> usize {
        self.spans.iter().map(|s| s.id.len() + s.parent.len() + 64).sum()
    }
}

pub fn make_trace_find(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(TraceFindAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace: root → (db, http → cache); (id, parent, start minute, flags).
    fn trace(relations: &str, within: Option<i64>, flags: [u64; 4]) -> Option<Vec<String>> {
        let mut agg = TraceFindAgg::default();
        let spans = [("root", ""), ("db", "root"), ("http", "root"), ("cache", "http")];
        for (i, (id, parent)) in spans.iter().enumerate() {
            let row = [
                Val::Str(id),
                Val::Str(parent),
                Val::DateTime(i as i64 * 60_000_000_000),
                Val::Long(flags[i] as i64),
                Val::Str(relations),
                within.map_or(Val::Null, Val::Timespan),
            ];
            assert!(agg.update(&row).is_ok());
        }
        let mut merged = TraceFindAgg::default();
        assert!(merged.merge(&agg.state()).is_ok());
        let Ok(Out::Str(text)) = merged.evaluate() else {
            return None;
        };
        let value: Value = serde_json::from_str(&text).ok()?;
        Some(
            value["spans"]
                .as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        )
    }

    #[test]
    fn relations_between_span_sets() {
        // Set 0 = root, set 1 = cache.
        assert_eq!(trace(">>", None, [1, 0, 0, 2]), Some(vec!["cache".to_string()]));
        assert_eq!(trace(">", None, [1, 0, 0, 2]), None, "cache is a grandchild");
        // Set 0 = cache, set 1 = root / http.
        assert_eq!(trace("<<", None, [2, 0, 0, 1]), Some(vec!["root".to_string()]));
        assert_eq!(trace("<", None, [2, 0, 0, 1]), None);
        assert_eq!(trace("<", None, [0, 0, 2, 1]), Some(vec!["http".to_string()]));
        // Set 0 = db, set 1 = http: siblings; db and cache are not.
        assert_eq!(trace("~", None, [0, 1, 2, 0]), Some(vec!["http".to_string()]));
        assert_eq!(trace("~", None, [0, 1, 0, 2]), None);
        assert_eq!(trace("::", None, [0, 1, 0, 2]), Some(vec!["cache".to_string()]));
        // Three sets: root > http > cache; within one minute of each other.
        assert_eq!(trace(">,>", None, [1, 0, 2, 4]), Some(vec!["cache".to_string()]));
        assert_eq!(
            trace(">>", Some(60_000_000_000), [1, 0, 0, 2]),
            None,
            "cache starts 3 minutes after root"
        );
        assert_eq!(
            trace("", None, [0, 1, 1, 0]),
            Some(vec!["db".to_string(), "http".to_string()])
        );
        assert_eq!(trace("", None, [0, 0, 0, 0]), None);
    }
}
