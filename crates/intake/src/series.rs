//! `metric_hash`: a stable identity of a metric series, stored on every metric row so that
//! queries can group the points of one series (`summarize … by metric_hash`) without comparing
//! bags. It hashes (XXH64) the resource attributes without the ones that change when a pod,
//! container or process restarts, the scope name and version, the metric name and the data
//! point attributes, each set in key order.

use std::hash::Hasher;

use twox_hash::XxHash64;

/// Resource attributes left out of the hash: they name one pod, container or process, so a
/// restart would otherwise start a new series.
pub fn is_instance_attribute(key: &str) -> bool {
    key.starts_with("k8s.pod.")
        || key.starts_with("k8s.replicaset.")
        || key.starts_with("container.")
        || key.starts_with("process.")
        || matches!(key, "service.instance.id" | "k8s.container.restart_count" | "host.id")
}

/// The hash state after the resource, scope and metric name; finished per data point by
/// [`SeriesSeed::metric_hash`].
#[derive(Clone)]
pub struct SeriesSeed {
    state: XxHash64,
}

/// Writes `(key, value)` pairs in key order, with separators no key or JSON text holds.
fn write_pairs<'a>(state: &mut XxHash64, pairs: impl IntoIterator<Item = (&'a str, String)>) {
    let mut sorted: Vec<(&str, String)> = pairs.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in sorted {
        state.write(key.as_bytes());
        state.write(&[0x1f]);
        state.write(value.as_bytes());
        state.write(&[0x1e]);
    }
    state.write(&[0x1d]);
}

impl SeriesSeed {
    /// `resource`: attribute keys and values as JSON text.
    pub fn new<'a>(
        resource: impl IntoIterator<Item = (&'a str, String)>,
        scope_name: &str,
        scope_version: &str,
        metric_name: &str,
    ) -> SeriesSeed {
        let mut state = XxHash64::with_seed(0);
        write_pairs(
            &mut state,
            resource.into_iter().filter(|(k, _)| !is_instance_attribute(k)),
        );
        for part in [scope_name, scope_version, metric_name] {
            state.write(part.as_bytes());
            state.write(&[0x1d]);
        }
        SeriesSeed { state }
    }

    /// The hash of one data point's series: the seed and the point's attributes.
    pub fn metric_hash<'a>(&self, attributes: impl IntoIterator<Item = (&'a str, String)>) -> i64 {
        let mut state = self.state.clone();
        write_pairs(&mut state, attributes);
        state.finish() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs<'a>(items: &[(&'a str, &str)]) -> Vec<(&'a str, String)> {
        items.iter().map(|(k, v)| (*k, format!("\"{v}\""))).collect()
    }

    #[test]
    fn pod_restarts_keep_the_series_and_attribute_order_does_not_matter() {
        let a = SeriesSeed::new(
            pairs(&[("service.name", "api"), ("k8s.pod.name", "api-1")]),
            "s",
            "1",
            "m",
        );
        let b = SeriesSeed::new(
            pairs(&[("k8s.pod.name", "api-2"), ("service.name", "api")]),
            "s",
            "1",
            "m",
        );
        let point = pairs(&[("route", "/a"), ("code", "200")]);
        let reordered = pairs(&[("code", "200"), ("route", "/a")]);
        assert_eq!(a.metric_hash(point.clone()), b.metric_hash(reordered));
        assert_ne!(
            a.metric_hash(point.clone()),
            a.metric_hash(pairs(&[("route", "/b"), ("code", "200")]))
        );
        let other_service = SeriesSeed::new(pairs(&[("service.name", "web")]), "s", "1", "m");
        assert_ne!(a.metric_hash(point.clone()), other_service.metric_hash(point.clone()));
        let other_metric = SeriesSeed::new(pairs(&[("service.name", "api")]), "s", "1", "n");
        assert_ne!(a.metric_hash(point.clone()), other_metric.metric_hash(point));
        // A key's text cannot run into the next one.
        let joined = SeriesSeed::new(pairs(&[("ab", "c")]), "", "", "m").metric_hash(Vec::new());
        let split = SeriesSeed::new(pairs(&[("a", "bc")]), "", "", "m").metric_hash(Vec::new());
        assert_ne!(joined, split);
    }
}
