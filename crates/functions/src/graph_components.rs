//! `__graph_components(source, target, strong)`: the aggregate behind `graph-mark-components`.
//! Over the rows of a graph's edges (source and target keys as strings; a node with no edge
//! comes as an edge to itself), the component of every node as a bag `{key: id}`: weakly
//! connected components (edges read both ways) by default, strongly connected ones (a path each
//! way) with `strong`. Components are numbered from 0 in the order of their smallest key.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Map, Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::RowAgg;

/// The most edges one graph may have here; past it the aggregate fails rather than grow
/// without bound.
const MAX_EDGES: usize = 10_000_000;

#[derive(Debug, Default)]
struct Components {
    edges: BTreeSet<(String, String)>,
    strong: Option<bool>,
}

impl Components {
    fn add(&mut self, source: String, target: String) -> Result<()> {
        if self.edges.len() >= MAX_EDGES {
            return exec_err!("graph-mark-components: more than {MAX_EDGES} edges");
        }
        self.edges.insert((source, target));
        Ok(())
    }

    /// Each node's component, numbered in the order of the components' smallest keys.
    fn components(&self) -> BTreeMap<&str, usize> {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for (s, t) in &self.edges {
            for key in [s.as_str(), t.as_str()] {
                let next = index.len();
                index.entry(key).or_insert(next);
            }
        }
        let keys: Vec<&str> = index.keys().copied().collect();
        // Dense ids in key order.
        for (i, key) in keys.iter().enumerate() {
            index.insert(key, i);
        }
        let n = keys.len();
        let mut out_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (s, t) in &self.edges {
            if let (Some(&a), Some(&b)) = (index.get(s.as_str()), index.get(t.as_str())) {
                out_edges[a].push(b);
            }
        }
        let labels = if self.strong.unwrap_or(false) {
            strong_components(&out_edges)
        } else {
            weak_components(&out_edges)
        };
        // Renumber by the smallest node (key order) of each component.
        let mut renumbered: BTreeMap<usize, usize> = BTreeMap::new();
        let mut result = BTreeMap::new();
        for (node, key) in keys.iter().enumerate() {
            let next = renumbered.len();
            let id = *renumbered.entry(labels[node]).or_insert(next);
            result.insert(*key, id);
        }
        result
    }
}

/// Union-find over the edges read both ways.
fn weak_components(out_edges: &[Vec<usize>]) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..out_edges.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for (a, targets) in out_edges.iter().enumerate() {
        for &b in targets {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            if ra != rb {
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
    }
    (0..out_edges.len()).map(|x| find(&mut parent, x)).collect()
}

/// Tarjan's strongly connected components, with an explicit stack (no recursion).
fn strong_components(out_edges: &[Vec<usize>]) -> Vec<usize> {
    let n = out_edges.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut label = vec![usize::MAX; n];
    let mut counter = 0;
    let mut components = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, next edge to follow)
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut next)) = work.last_mut() {
            if let Some(&target) = out_edges[node].get(*next) {
                *next += 1;
                if index[target] == usize::MAX {
                    index[target] = counter;
                    low[target] = counter;
                    counter += 1;
                    stack.push(target);
                    on_stack[target] = true;
                    work.push((target, 0));
                } else if on_stack[target] {
                    low[node] = low[node].min(index[target]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    label[member] = components;
                    if member == node {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    label
}

impl RowAgg for Components {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if self.strong.is_none() {
            self.strong = row.get(2).and_then(|v| v.bool());
        }
        match (row.first(), row.get(1)) {
            (Some(Val::Str(s)), Some(Val::Str(t))) => self.add((*s).to_owned(), (*t).to_owned()),
            _ => Ok(()),
        }
    }

    fn state(&self) -> Vec<u8> {
        json!({"edges": self.edges, "strong": self.strong})
            .to_string()
            .into_bytes()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let Ok(state) = serde_json::from_slice::<Value>(state) else {
            return exec_err!("a corrupt graph components state");
        };
        for edge in state["edges"].as_array().into_iter().flatten() {
            if let (Some(s), Some(t)) = (edge[0].as_str(), edge[1].as_str()) {
                self.add(s.to_owned(), t.to_owned())?;
            }
        }
        self.strong = self.strong.or(state["strong"].as_bool());
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let bag: Map<String, Value> = self
            .components()
            .into_iter()
            .map(|(key, id)| (key.to_owned(), json!(id)))
            .collect();
        Ok(Out::Str(Value::Object(bag).to_string()))
    }

    fn size(&self) -> usize {
        self.edges.iter().map(|(s, t)| s.len() + t.len() + 48).sum()
    }
}

/// `__graph_components(source, target, strong)`.
pub fn make_graph_components(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(Components::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn components(edges: &[(&str, &str)], strong: bool) -> BTreeMap<String, usize> {
        let mut agg = Components {
            strong: Some(strong),
            ..Components::default()
        };
        for (s, t) in edges {
            let _ = agg.add(s.to_string(), t.to_string());
        }
        agg.components().into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    #[test]
    fn weak_and_strong_components() {
        // a → b → c → a is one cycle; c → d leads out; e stands alone (an edge to itself).
        let edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "e")];
        let weak = components(&edges, false);
        assert_eq!(weak["a"], 0);
        assert_eq!(weak["d"], 0);
        assert_eq!(weak["e"], 1);
        let strong = components(&edges, true);
        assert_eq!(strong["a"], strong["b"]);
        assert_eq!(strong["a"], strong["c"]);
        assert_ne!(strong["a"], strong["d"]);
        assert_ne!(strong["d"], strong["e"]);
        // Numbered from 0 in the order of each component's smallest key.
        assert_eq!((strong["a"], strong["d"], strong["e"]), (0, 1, 2));
    }

    #[test]
    fn a_long_chain_needs_no_recursion() {
        let names: Vec<String> = (0..200_000).map(|i| format!("n{i:06}")).collect();
        let edges: Vec<(&str, &str)> = names.windows(2).map(|w| (w[0].as_str(), w[1].as_str())).collect();
        let strong = components(&edges, true);
        assert_eq!(strong.len(), 200_000);
        assert_eq!(strong.values().max(), Some(&199_999));
    }
}
