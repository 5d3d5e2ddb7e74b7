//! `__graph_match(kind, source, target, bag, spec)`: the aggregate behind `make-graph |
//! graph-match`. Rows of kind 0 are nodes (`source` is the key, `bag` the properties), rows of
//! kind 1 are edges (`source` and `target` keys, `bag` the properties); `spec` (base64 JSON,
//! written by the planner) holds the patterns and what to compute per match. The result is a
//! dynamic array with one bag per match: each named node (its properties, with
//! `__degree_in`/`__degree_out`), each named edge (its properties, or the array of them for a
//! variable-length edge), `__inner_<edge>` (the nodes inside a variable-length edge) and the
//! requested `all`/`any`/`map` values over an edge's steps or inner nodes.
//!
//! Matching: the first node of a pattern is every node in turn; each edge step follows the
//! graph's edges in its direction (any direction in a graph made with `--`), a variable-length
//! edge every path with a length in its range. `cycles=unique_edges` (the default) uses an edge
//! once per match, `cycles=none` a node once, `cycles=all` anything. A name used twice binds one
//! node. At most [`MOST_MATCHES`] matches.

use std::collections::HashMap;

use base64::Engine as _;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Map, Value};

use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter};

/// Most matches one graph-match returns.
pub const MOST_MATCHES: usize = 1_000_000;
/// Most nodes plus edges of one graph.
const MOST_ELEMENTS: usize = 10_000_000;

#[derive(Debug, Clone)]
struct Spec {
    directed: bool,
    cycles: Option<String>,
    patterns: Vec<PatternSpec>,
    /// The property holding a node's key when a node has no row of its own.
    node_key: Option<String>,
    aggregates: Vec<AggregateSpec>,
    inner_nodes: Vec<String>,
    /// Add `__length` (edges in the match) and `__group` (the node bindings) to each match.
    shortest: bool,
}

#[derive(Debug, Clone)]
struct PatternSpec {
    nodes: Vec<Option<String>>,
    edges: Vec<EdgeSpec>,
}

#[derive(Debug, Clone)]
struct EdgeSpec {
    name: Option<String>,
    /// `f` forward, `b` backward, `a` any.
    dir: String,
    min: u32,
    max: u32,
    /// Whether the pattern wrote a length range (the edge binds an array).
    variable: bool,
}

#[derive(Debug, Clone)]
struct AggregateSpec {
    /// The output field.
    field: String,
    /// The edge variable it reads.
    edge: String,
    /// `all`, `any` or `map`.
    op: String,
    /// The field of each step's bag it reads.
    value: String,
    /// Over the edge's inner nodes instead of its steps.
    inner: bool,
}

fn text_of(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn spec_of(value: &Value) -> Option<Spec> {
    let patterns = value
        .get("patterns")?
        .as_array()?
        .iter()
        .map(|p| {
            let nodes = p
                .get("nodes")?
                .as_array()?
                .iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect();
            let edges = p
                .get("edges")?
                .as_array()?
                .iter()
                .map(|e| {
                    Some(EdgeSpec {
                        name: text_of(e, "name"),
                        dir: text_of(e, "dir")?,
                        min: u32::try_from(e.get("min")?.as_u64()?).ok()?,
                        max: u32::try_from(e.get("max")?.as_u64()?).ok()?,
                        variable: e.get("variable")?.as_bool()?,
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            Some(PatternSpec { nodes, edges })
        })
        .collect::<Option<Vec<_>>>()?;
    let aggregates = match value.get("aggregates").and_then(Value::as_array) {
        None => Vec::new(),
        Some(items) => items
            .iter()
            .map(|a| {
                Some(AggregateSpec {
                    field: text_of(a, "field")?,
                    edge: text_of(a, "edge")?,
                    op: text_of(a, "op")?,
                    value: text_of(a, "value")?,
                    inner: a.get("inner")?.as_bool()?,
                })
            })
            .collect::<Option<Vec<_>>>()?,
    };
    let inner_nodes = value
        .get("inner_nodes")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    Some(Spec {
        directed: value.get("directed")?.as_bool()?,
        cycles: text_of(value, "cycles"),
        patterns,
        node_key: text_of(value, "node_key"),
        aggregates,
        inner_nodes,
        shortest: value.get("shortest").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[derive(Debug, Default)]
struct GraphAgg {
    spec: Option<String>,
    nodes: Vec<(String, String)>,
    edges: Vec<(String, String, String)>,
}

struct Graph {
    keys: Vec<String>,
    bags: Vec<Value>,
    edges: Vec<(usize, usize, Value)>,
    out: Vec<Vec<usize>>,
    into: Vec<Vec<usize>>,
}

fn parse_bag(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

impl GraphAgg {
    fn graph(&self, spec: &Spec) -> Graph {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut keys: Vec<String> = Vec::new();
        let mut bags: Vec<Value> = Vec::new();
        let mut node = |key: &str, bag: Option<Value>, keys: &mut Vec<String>, bags: &mut Vec<Value>| -> usize {
            if let Some(&i) = index.get(key) {
                if let Some(bag) = bag
                    && bags[i].as_object().is_some_and(|o| o.len() <= 1)
                {
                    bags[i] = bag;
                }
                return i;
            }
            let bag = bag.unwrap_or_else(|| {
                let mut own = Map::new();
                if let Some(name) = &spec.node_key {
                    own.insert(name.clone(), Value::from(key));
                }
                Value::Object(own)
            });
            index.insert(key.to_string(), keys.len());
            keys.push(key.to_string());
            bags.push(bag);
            keys.len() - 1
        };
        for (key, bag) in &self.nodes {
            node(key, Some(parse_bag(bag)), &mut keys, &mut bags);
        }
        let mut edges = Vec::with_capacity(self.edges.len());
        for (source, target, bag) in &self.edges {
            let s = node(source, None, &mut keys, &mut bags);
            let t = node(target, None, &mut keys, &mut bags);
            edges.push((s, t, parse_bag(bag)));
        }
        let mut out = vec![Vec::new(); keys.len()];
        let mut into = vec![Vec::new(); keys.len()];
        for (i, (s, t, _)) in edges.iter().enumerate() {
            out[*s].push(i);
            into[*t].push(i);
        }
        for (i, bag) in bags.iter_mut().enumerate() {
            if let Value::Object(map) = bag {
                map.insert("__degree_in".into(), Value::from(into[i].len()));
                map.insert("__degree_out".into(), Value::from(out[i].len()));
            }
        }
        Graph {
            keys,
            bags,
            edges,
            out,
            into,
        }
    }
}

/// A partial match: node bindings, edge paths, and what the cycle rule has used.
#[derive(Clone, Default)]
struct Binding {
    nodes: HashMap<String, usize>,
    /// Per pattern edge (pattern, edge index): the edges and inner nodes of its path.
    paths: HashMap<(usize, usize), (Vec<usize>, Vec<usize>)>,
    used_edges: Vec<usize>,
    used_nodes: Vec<usize>,
}

struct Matcher<'g> {
    graph: &'g Graph,
    spec: &'g Spec,
    found: Vec<Binding>,
    too_many: bool,
}

impl Matcher<'_> {
    fn unique_edges(&self) -> bool {
        matches!(self.spec.cycles.as_deref(), None | Some("unique_edges"))
    }

    fn no_cycles(&self) -> bool {
        self.spec.cycles.as_deref() == Some("none")
    }

    /// The (edge, next node) steps from `node` in direction `dir`.
    fn steps(&self, node: usize, dir: &str) -> Vec<(usize, usize)> {
        let g = self.graph;
        let forward = || g.out[node].iter().map(|e| (*e, g.edges[*e].1)).collect::<Vec<_>>();
        let backward = || g.into[node].iter().map(|e| (*e, g.edges[*e].0)).collect::<Vec<_>>();
        if !self.spec.directed || dir == "a" {
            let mut both = forward();
            let back: Vec<(usize, usize)> = backward()
                .into_iter()
                .filter(|(e, _)| !both.iter().any(|(f, _)| f == e))
                .collect();
            both.extend(back);
            return both;
        }
        if dir == "b" { backward() } else { forward() }
    }

    /// Binds node `name` to `node` in `binding`, if allowed.
    fn bind_node(&self, binding: &mut Binding, name: &Option<String>, node: usize, fresh: bool) -> bool {
        if let Some(name) = name {
            match binding.nodes.get(name) {
                Some(bound) if *bound != node => return false,
                Some(_) => return true,
                None => {
                    binding.nodes.insert(name.clone(), node);
                }
            }
        }
        if fresh && self.no_cycles() {
            if binding.used_nodes.contains(&node) {
                return false;
            }
            binding.used_nodes.push(node);
        }
        true
    }

    fn run(&mut self, pattern: usize, position: usize, node: usize, binding: Binding) {
        if self.too_many {
            return;
        }
        let spec = &self.spec.patterns[pattern];
        if position == spec.edges.len() {
            if pattern + 1 == self.spec.patterns.len() {
                self.found.push(binding);
                if self.found.len() > MOST_MATCHES {
                    self.too_many = true;
                }
                return;
            }
            self.start(pattern + 1, binding);
            return;
        }
        let edge = &spec.edges[position];
        // Every path of a length in [min, max] from `node`: (edges, inner nodes, end).
        let mut paths: Vec<(Vec<usize>, Vec<usize>, usize)> = Vec::new();
        if edge.min == 0 {
            paths.push((Vec::new(), Vec::new(), node));
        }
        let mut stack: Vec<(Vec<usize>, Vec<usize>, usize)> = vec![(Vec::new(), vec![node], node)];
        while let Some((edges, visited, at)) = stack.pop() {
            if edges.len() as u32 >= edge.max {
                continue;
            }
            for (e, next) in self.steps(at, &edge.dir) {
                if (self.unique_edges() && (edges.contains(&e) || binding.used_edges.contains(&e)))
                    || (self.no_cycles()
                        && (visited.contains(&next) || binding.used_nodes.contains(&next) && next != node))
                {
                    continue;
                }
                let mut path = edges.clone();
                path.push(e);
                let mut seen = visited.clone();
                seen.push(next);
                if path.len() as u32 >= edge.min {
                    let inner = seen[1..seen.len() - 1].to_vec();
                    paths.push((path.clone(), inner, next));
                }
                stack.push((path, seen, next));
            }
        }
        for (edges, inner, end) in paths {
            let mut next = binding.clone();
            if self.no_cycles() && inner.iter().any(|n| next.used_nodes.contains(n)) {
                continue;
            }
            next.used_edges.extend(&edges);
            next.used_nodes.extend(&inner);
            if !self.bind_node(&mut next, &spec.nodes[position + 1], end, true) {
                continue;
            }
            next.paths.insert((pattern, position), (edges, inner));
            self.run(pattern, position + 1, end, next);
        }
    }

    fn start(&mut self, pattern: usize, binding: Binding) {
        let first = self.spec.patterns[pattern].nodes.first().cloned().flatten();
        let candidates: Vec<usize> = match first.as_ref().and_then(|n| binding.nodes.get(n)) {
            Some(bound) => vec![*bound],
            None => (0..self.graph.keys.len()).collect(),
        };
        for node in candidates {
            let mut next = binding.clone();
            let fresh = first.as_ref().is_none_or(|n| !binding.nodes.contains_key(n));
            if self.bind_node(&mut next, &first, node, fresh) {
                self.run(pattern, 0, node, next);
            }
        }
    }
}

fn field(bag: &Value, name: &str) -> Value {
    bag.get(name).cloned().unwrap_or(Value::Null)
}

fn truthy(value: &Value) -> bool {
    matches!(value, Value::Bool(true))
}

impl RowAgg for GraphAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if self.spec.is_none() {
            self.spec = row.get(4).and_then(|v| v.str()).map(str::to_string);
        }
        if self.nodes.len() + self.edges.len() >= MOST_ELEMENTS {
            return exec_err!("graph-match: the graph has more than {MOST_ELEMENTS} nodes and edges");
        }
        let text = |i: usize| row.get(i).and_then(|v| v.str()).unwrap_or("").to_string();
        match row.first().and_then(|v| v.long()) {
            Some(0) => self.nodes.push((text(1), text(3))),
            Some(1) => self.edges.push((text(1), text(2), text(3))),
            _ => {}
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.bytes(self.spec.as_deref().unwrap_or("").as_bytes());
        w.u64(self.nodes.len() as u64);
        for (key, bag) in &self.nodes {
            w.bytes(key.as_bytes()).bytes(bag.as_bytes());
        }
        w.u64(self.edges.len() as u64);
        for (s, t, bag) in &self.edges {
            w.bytes(s.as_bytes()).bytes(t.as_bytes()).bytes(bag.as_bytes());
        }
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let spec = text(r.bytes()?);
        if self.spec.is_none() && !spec.is_empty() {
            self.spec = Some(spec);
        }
        for _ in 0..r.u64()? {
            let key = text(r.bytes()?);
            let bag = text(r.bytes()?);
            self.nodes.push((key, bag));
        }
        for _ in 0..r.u64()? {
            let s = text(r.bytes()?);
            let t = text(r.bytes()?);
            let bag = text(r.bytes()?);
            self.edges.push((s, t, bag));
        }
        if self.nodes.len() + self.edges.len() > MOST_ELEMENTS {
            return exec_err!("graph-match: the graph has more than {MOST_ELEMENTS} nodes and edges");
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let Some(encoded) = &self.spec else {
            return Ok(crate::json::out(Value::Array(Vec::new())));
        };
        let spec: Spec = match base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|value| spec_of(&value))
        {
            Some(spec) => spec,
            None => return exec_err!("graph-match: unreadable match specification"),
        };
        let graph = self.graph(&spec);
        let mut matcher = Matcher {
            graph: &graph,
            spec: &spec,
            found: Vec::new(),
            too_many: false,
        };
        if !spec.patterns.is_empty() {
            matcher.start(0, Binding::default());
        }
        if matcher.too_many {
            return exec_err!(
                "graph-match found more than {MOST_MATCHES} matches; narrow the patterns or the variable-length edges"
            );
        }
        let mut rows = Vec::with_capacity(matcher.found.len());
        for binding in &matcher.found {
            let mut row = Map::new();
            for (name, node) in &binding.nodes {
                row.insert(name.clone(), graph.bags[*node].clone());
            }
            let mut steps: HashMap<&str, (&Vec<usize>, &Vec<usize>)> = HashMap::new();
            for (p, pattern) in spec.patterns.iter().enumerate() {
                for (i, edge) in pattern.edges.iter().enumerate() {
                    let (Some(name), Some((edges, inner))) = (&edge.name, binding.paths.get(&(p, i))) else {
                        continue;
                    };
                    let bags: Vec<Value> = edges.iter().map(|e| graph.edges[*e].2.clone()).collect();
                    let value = if edge.variable {
                        Value::Array(bags)
                    } else {
                        bags.into_iter().next().unwrap_or(Value::Null)
                    };
                    row.insert(name.clone(), value);
                    steps.insert(name.as_str(), (edges, inner));
                }
            }
            for name in &spec.inner_nodes {
                let inner = steps
                    .get(name.as_str())
                    .map(|(_, inner)| inner.iter().map(|n| graph.bags[*n].clone()).collect::<Vec<_>>());
                row.insert(format!("__inner_{name}"), Value::Array(inner.unwrap_or_default()));
            }
            for aggregate in &spec.aggregates {
                let values: Vec<Value> = match steps.get(aggregate.edge.as_str()) {
                    Some((edges, inner)) if aggregate.inner => {
                        inner.iter().map(|n| field(&graph.bags[*n], &aggregate.value)).collect()
                    }
                    Some((edges, _)) => edges
                        .iter()
                        .map(|e| field(&graph.edges[*e].2, &aggregate.value))
                        .collect(),
                    None => Vec::new(),
                };
                let value = match aggregate.op.as_str() {
                    "all" => Value::Bool(values.iter().all(truthy)),
                    "any" => Value::Bool(values.iter().any(truthy)),
                    _ => Value::Array(values),
                };
                row.insert(aggregate.field.clone(), value);
            }
            if spec.shortest {
                let length: usize = binding.paths.values().map(|(edges, _)| edges.len()).sum();
                let mut group: Vec<(&String, &usize)> = binding.nodes.iter().collect();
                group.sort();
                let group: Vec<String> = group.iter().map(|(n, i)| format!("{n}={}", graph.keys[**i])).collect();
                row.insert("__length".into(), Value::from(length));
                row.insert("__group".into(), Value::from(group.join("\u{1f}")));
            }
            rows.push(Value::Object(row));
        }
        Ok(crate::json::out(Value::Array(rows)))
    }

    fn size(&self) -> usize {
        self.nodes.iter().map(|(k, b)| k.len() + b.len() + 48).sum::<usize>()
            + self
                .edges
                .iter()
                .map(|(s, t, b)| s.len() + t.len() + b.len() + 72)
                .sum::<usize>()
    }
}

pub fn make_graph_match(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(GraphAgg::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(spec: Value, nodes: &[(&str, Value)], edges: &[(&str, &str, Value)]) -> Vec<Value> {
        let encoded = base64::engine::general_purpose::STANDARD.encode(spec.to_string());
        let mut agg = GraphAgg::default();
        for (key, bag) in nodes {
            let bag = bag.to_string();
            assert!(
                agg.update(&[
                    Val::Long(0),
                    Val::Str(key),
                    Val::Null,
                    Val::Str(&bag),
                    Val::Str(&encoded)
                ])
                .is_ok()
            );
        }
        for (s, t, bag) in edges {
            let bag = bag.to_string();
            assert!(
                agg.update(&[
                    Val::Long(1),
                    Val::Str(s),
                    Val::Str(t),
                    Val::Str(&bag),
                    Val::Str(&encoded)
                ])
                .is_ok()
            );
        }
        crate::udaf::testing::merged_array(&agg, Box::new(GraphAgg::default()))
    }

    fn edge(name: &str, dir: &str, min: u32, max: u32, variable: bool) -> Value {
        serde_json::json!({"name": name, "dir": dir, "min": min, "max": max, "variable": variable})
    }

    #[test]
    fn fixed_and_variable_length_patterns() {
        // a → b → c → d, and a → c.
        let edges = [
            ("a", "b", serde_json::json!({"w": 1})),
            ("b", "c", serde_json::json!({"w": 2})),
            ("c", "d", serde_json::json!({"w": 3})),
            ("a", "c", serde_json::json!({"w": 4})),
        ];
        let two_steps = serde_json::json!({
            "directed": true, "node_key": "name",
            "patterns": [{"nodes": ["x", "y", "z"], "edges": [edge("e", "f", 1, 1, false), edge("f", "f", 1, 1, false)]}],
        });
        let found = matches(two_steps, &[], &edges);
        let mut paths: Vec<String> = found
            .iter()
            .map(|m| {
                format!(
                    "{}{}{}",
                    m["x"]["name"].as_str().unwrap_or("?"),
                    m["y"]["name"].as_str().unwrap_or("?"),
                    m["z"]["name"].as_str().unwrap_or("?")
                )
            })
            .collect();
        paths.sort();
        assert_eq!(paths, ["abc", "acd", "bcd"]);
        let reach = serde_json::json!({
            "directed": true, "node_key": "name",
            "patterns": [{"nodes": ["x", "y"], "edges": [edge("p", "f", 1, 3, true)]}],
            "aggregates": [{"field": "__agg0", "edge": "p", "op": "map", "value": "w", "inner": false}],
            "inner_nodes": ["p"],
        });
        let from_a: Vec<Value> = matches(reach, &[("a", serde_json::json!({"name": "a", "age": 1}))], &edges)
            .into_iter()
            .filter(|m| m["x"]["name"] == "a")
            .collect();
        // a→b, a→b→c, a→b→c→d, a→c, a→c→d.
        assert_eq!(from_a.len(), 5);
        assert!(
            from_a
                .iter()
                .any(|m| m["__agg0"] == serde_json::json!([1, 2, 3])
                    && m["__inner_p"].as_array().map(Vec::len) == Some(2))
        );
        assert_eq!(from_a[0]["x"]["age"], 1, "a node row gives the node's properties");
        assert_eq!(from_a[0]["x"]["__degree_out"], 2);
        // Backward steps and a name used twice.
        let back = serde_json::json!({
            "directed": true,
            "patterns": [{"nodes": ["x", "y", "x"], "edges": [edge("e", "f", 1, 1, false), edge("f", "b", 1, 1, false)]}],
        });
        assert_eq!(
            matches(back, &[], &edges).len(),
            0,
            "no edge leads back without a cycle"
        );
    }
}
