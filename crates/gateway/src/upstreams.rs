//! The query nodes a gateway forwards to. A single process has one; in a cluster the list
//! follows meta's members (every heartbeat). Requests take the nodes round-robin, and one
//! that cannot be reached is passed over for the next.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// The live query nodes; cheap to clone, shared with whatever keeps it current.
#[derive(Debug, Clone, Default)]
pub struct Upstreams {
    nodes: Arc<RwLock<Vec<String>>>,
    next: Arc<AtomicUsize>,
}

impl Upstreams {
    /// A fixed list, such as the one query service of a single process.
    pub fn fixed(nodes: impl IntoIterator<Item = String>) -> Upstreams {
        let upstreams = Upstreams::default();
        upstreams.set(nodes.into_iter().collect());
        upstreams
    }

    /// Replaces the list (addresses such as `http://10.0.0.5:9510`).
    pub fn set(&self, mut nodes: Vec<String>) {
        for node in &mut nodes {
            let trimmed = node.trim_end_matches('/').len();
            node.truncate(trimmed);
        }
        nodes.sort();
        nodes.dedup();
        let mut current = self.nodes.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *current != nodes {
            tracing::info!(?nodes, "query nodes");
            *current = nodes;
        }
    }

    pub fn list(&self) -> Vec<String> {
        self.nodes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Every node once, starting at the next in turn.
    pub fn rotation(&self) -> Vec<String> {
        let nodes = self.list();
        if nodes.is_empty() {
            return nodes;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % nodes.len();
        nodes[start..].iter().chain(&nodes[..start]).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_take_the_nodes_in_turn() {
        let upstreams = Upstreams::fixed(["http://b/".to_string(), "http://a".into(), "http://b".into()]);
        assert_eq!(upstreams.list(), ["http://a", "http://b"]);
        assert_eq!(upstreams.rotation(), ["http://a", "http://b"]);
        assert_eq!(upstreams.rotation(), ["http://b", "http://a"]);
        upstreams.set(vec!["http://c".into()]);
        assert_eq!(upstreams.rotation(), ["http://c"]);
        upstreams.set(Vec::new());
        assert!(upstreams.rotation().is_empty());
    }
}
