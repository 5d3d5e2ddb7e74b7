//! Which worker reads which segment: rendezvous (highest random weight) hashing of the
//! segment id against each worker's URL, with bounded loads. A segment goes to the worker
//! with its highest weight, so each worker's local cache holds a stable share of the
//! segments; when a worker joins or leaves, mostly the segments whose highest weight was (or
//! becomes) that worker move. Segments differ in size (merged ones are large), so pure
//! hashing can leave one worker most of the bytes: a worker already holding its fair share
//! of the scan's bytes (plus [`SLACK_PERCENT`]) passes a segment on to the next in that
//! segment's ranking ([`assign`]). What is balanced is what the scan reads: a table holds
//! several signals' segments (OTLP logs and spans land in one table), and a question about
//! one signal reads next to nothing of the others', so a segment weighs its bytes in
//! proportion to the scan's columns it holds ([`cost`]).
//!
//! Three handlers of the distributed planner use it: how many tasks a scan wants (one per
//! worker the query may use), the per-task copies of the scan (each with its worker's
//! segments and the worker's URL), and the routing of those tasks to their workers.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedLeafExec, RouteTasksEvent,
    RouteTasksEventResponse, ScaleUpLeafNodeEvent, ScaleUpLeafNodeEventResponse, get_distributed_worker_resolver,
};
use trawl_catalog::SegmentMeta;
use trawl_storage::SegmentScanExec;
use url::Url;

/// The weight of `key` on `worker`: a 64-bit FNV-1a hash of both, mixed.
pub(crate) fn weight(key: &str, worker: &str) -> u64 {
    let mut hasher = Fnv1a::default();
    key.hash(&mut hasher);
    worker.hash(&mut hasher);
    // FNV's low bits mix poorly; a final avalanche (from SplitMix64) evens them out.
    let mut z = hasher.finish();
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a: stable across processes and releases (unlike the standard library's hasher).
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The index of the worker among `workers` with the highest weight for `key`.
pub(crate) fn owner(key: &str, workers: &[Url]) -> Option<usize> {
    workers
        .iter()
        .enumerate()
        .max_by_key(|(_, url)| weight(key, url.as_str()))
        .map(|(index, _)| index)
}

/// How far above an even share of a scan's bytes a worker may go before segments move to
/// their next-ranked worker.
pub(crate) const SLACK_PERCENT: u64 = 10;

/// The segments of each of `workers` (same order). Heaviest first (`cost_of`: what reading
/// the segment costs), each goes to the first worker of its rendezvous ranking whose load
/// stays within the cap: an even share plus [`SLACK_PERCENT`], never less than the heaviest
/// segment. Deterministic for a given list.
pub(crate) fn assign<'a>(
    segments: impl Iterator<Item = &'a SegmentMeta>,
    workers: &[Url],
    cost_of: impl Fn(&SegmentMeta) -> u64,
) -> Vec<Vec<SegmentMeta>> {
    let mut shares: Vec<Vec<SegmentMeta>> = vec![Vec::new(); workers.len()];
    if workers.is_empty() {
        return shares;
    }
    let mut segments: Vec<(u64, &SegmentMeta)> = segments.map(|s| (cost_of(s), s)).collect();
    segments.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let total: u64 = segments.iter().map(|(w, _)| w).sum();
    let even = total / workers.len() as u64;
    let largest = segments.first().map_or(0, |(w, _)| *w);
    let cap = (even + even * SLACK_PERCENT / 100).max(largest);
    let mut loads = vec![0u64; workers.len()];
    for (cost, segment) in segments {
        let mut ranking: Vec<usize> = (0..workers.len()).collect();
        ranking.sort_by_key(|&i| std::cmp::Reverse(weight(&segment.id, workers[i].as_str())));
        let index = ranking
            .iter()
            .copied()
            .find(|&i| loads[i] + cost <= cap)
            .or_else(|| (0..workers.len()).min_by_key(|&i| loads[i]))
            .unwrap_or(0);
        loads[index] += cost;
        shares[index].push(segment.clone());
    }
    shares
}

/// The columns a scan reads that not every one of its segments holds: those tell segments
/// of different signals (or schemas) apart. A table holds the rows of several signals (logs
/// and spans in one table), and a question about one reads next to nothing of the others'
/// segments, so balancing whole-segment bytes would balance the wrong thing.
fn wanted_columns(scan: &SegmentScanExec) -> Vec<String> {
    let spec = scan.spec();
    let mut names: std::collections::BTreeSet<String> = spec
        .projection
        .iter()
        .filter_map(|&i| spec.schema.fields().get(i))
        .map(|field| field.name().clone())
        .collect();
    for filter in &spec.filters {
        names.extend(filter.column_refs().into_iter().map(|column| column.name.clone()));
    }
    names
        .into_iter()
        .filter(|name| !scan.segments().all(|s| s.columns.iter().any(|c| &c.name == name)))
        .collect()
}

/// What reading `segment` costs a scan that reads `wanted` (see [`wanted_columns`]): its
/// bytes, in proportion to the wanted columns it holds.
fn cost(segment: &SegmentMeta, wanted: &[String]) -> u64 {
    if wanted.is_empty() {
        return segment.bytes;
    }
    let held = wanted
        .iter()
        .filter(|name| segment.columns.iter().any(|c| &c.name == *name))
        .count() as u64;
    segment.bytes.saturating_mul(held) / wanted.len() as u64
}

/// `count` of `workers` for a scan of `table`: all of them when it asks for as many, else
/// those with the highest weights for the table (the same ones each time).
fn chosen(table: &str, mut workers: Vec<Url>, count: usize) -> Vec<Url> {
    workers.sort();
    workers.dedup();
    if count >= workers.len() {
        return workers;
    }
    workers.sort_by_key(|url| std::cmp::Reverse(weight(table, url.as_str())));
    workers.truncate(count);
    workers.sort();
    workers
}

/// A scan wants one task per worker (the planner caps it at the workers the query may use).
pub(crate) fn desired_task_count(event: DesiredTaskCountEvent) -> Option<Result<DesiredTaskCountEventResponse>> {
    let scan = event.plan.downcast_ref::<SegmentScanExec>()?;
    let segments = scan.segments().count().max(1);
    Some(Ok(DesiredTaskCountEventResponse::desired(segments)))
}

/// The scan split into one copy per task: each worker's segments by rendezvous hashing.
pub(crate) fn scale_up(event: ScaleUpLeafNodeEvent) -> Option<Result<ScaleUpLeafNodeEventResponse>> {
    let scan = event.plan.downcast_ref::<SegmentScanExec>()?;
    Some(split(
        scan,
        Arc::clone(event.plan),
        event.task_count,
        event.session_config,
    ))
}

fn split(
    scan: &SegmentScanExec,
    original: Arc<dyn ExecutionPlan>,
    tasks: usize,
    config: &datafusion::prelude::SessionConfig,
) -> Result<ScaleUpLeafNodeEventResponse> {
    let workers = get_distributed_worker_resolver(config)?.get_urls()?;
    if workers.is_empty() {
        return Err(DataFusionError::Execution("no query node is available".into()));
    }
    let workers = chosen(&scan.spec().table, workers, tasks.max(1));
    let wanted = wanted_columns(scan);
    let shares = assign(scan.segments(), &workers, |segment| cost(segment, &wanted));
    // The planner settled on `tasks` copies; fewer workers than tasks share them round-robin.
    let mut variants: Vec<Arc<dyn ExecutionPlan>> = Vec::with_capacity(tasks);
    let mut shares = shares.into_iter().zip(&workers).collect::<Vec<_>>();
    for task in 0..tasks.max(1) {
        let (segments, worker) = match shares.get_mut(task) {
            Some((segments, worker)) => (std::mem::take(segments), worker.to_string()),
            None => (Vec::new(), workers[task % workers.len()].to_string()),
        };
        variants.push(Arc::new(scan.with_segments(segments, Some(worker))?));
    }
    let leaf = DistributedLeafExec::try_new(original, variants)?;
    Ok(ScaleUpLeafNodeEventResponse::new(Arc::new(leaf)))
}

/// The tasks of a stage that scans segments go to the workers their copies name; a worker
/// that left since is replaced by the live one with the next highest weight.
pub(crate) fn route_tasks(event: RouteTasksEvent) -> Option<Result<RouteTasksEventResponse>> {
    let mut named: Option<Vec<Option<String>>> = None;
    let found = event.plan.apply(|node| {
        if let Some(leaf) = node.downcast_ref::<DistributedLeafExec>()
            && leaf.original().downcast_ref::<SegmentScanExec>().is_some()
        {
            named = Some(
                leaf.variants()
                    .iter()
                    .map(|variant| {
                        variant
                            .downcast_ref::<SegmentScanExec>()
                            .and_then(|scan| scan.worker().map(str::to_string))
                    })
                    .collect(),
            );
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    if let Err(error) = found {
        return Some(Err(error));
    }
    let named = named?;
    if named.len() != event.task_count {
        return None;
    }
    Some(routes(named, event))
}

fn routes(named: Vec<Option<String>>, event: RouteTasksEvent) -> Result<RouteTasksEventResponse> {
    let mut live = get_distributed_worker_resolver(event.task_ctx.session_config())?.get_urls()?;
    live.sort();
    if live.is_empty() {
        return Err(DataFusionError::Execution("no query node is available".into()));
    }
    let urls = named
        .into_iter()
        .enumerate()
        .map(|(task, worker)| {
            let wanted = worker.and_then(|w| Url::parse(&w).ok());
            match wanted {
                Some(url) if live.contains(&url) => url,
                Some(url) => {
                    tracing::warn!(worker = %url, "a query node left: its share of a scan goes to another");
                    owner(url.as_str(), &live).map_or_else(|| live[task % live.len()].clone(), |i| live[i].clone())
                }
                None => live[task % live.len()].clone(),
            }
        })
        .collect();
    Ok(RouteTasksEventResponse::new(urls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(n: usize) -> Vec<Url> {
        (0..n)
            .filter_map(|i| Url::parse(&format!("http://10.0.0.{i}:9510")).ok())
            .collect()
    }

    #[test]
    fn segments_spread_evenly_and_only_a_leaving_workers_share_moves() {
        let ids: Vec<String> = (0..3000).map(|i| format!("{i:032x}")).collect();
        let three = urls(3);
        let owners: Vec<usize> = ids.iter().filter_map(|id| owner(id, &three)).collect();
        for worker in 0..3 {
            let share = owners.iter().filter(|&&o| o == worker).count();
            assert!((800..1200).contains(&share), "worker {worker} owns {share} of 3000");
        }
        // Worker 1 leaves: only its segments move.
        let two = vec![three[0].clone(), three[2].clone()];
        for (id, &before) in ids.iter().zip(&owners) {
            let after = owner(id, &two).map(|i| &two[i]);
            if before != 1 {
                assert_eq!(after, Some(&three[before]), "segment {id} moved");
            }
        }
        // A fourth joins: segments move only to it.
        let four = urls(4);
        for (id, &before) in ids.iter().zip(&owners) {
            let after = owner(id, &four).unwrap_or(0);
            assert!(after == before || after == 3, "segment {id} moved between old workers");
        }
    }

    fn segment(id: String, bytes: u64) -> SegmentMeta {
        SegmentMeta {
            id: id.clone(),
            database: "d".into(),
            table: "t".into(),
            path: id,
            min_time: 0,
            max_time: 0,
            rows: 1,
            bytes,
            columns: Vec::new(),
            merge_level: 0,
            state: trawl_catalog::SegmentState::Live,
            created_at: 0,
            tombstoned_at: None,
            signal: None,
        }
    }

    #[test]
    fn bytes_split_evenly_even_when_segments_differ_in_size() {
        // 40 segments from 1 to ~200 MB (merged ones are large), as a table has them.
        let segments: Vec<SegmentMeta> = (0..40u64)
            .map(|i| {
                segment(
                    format!("{i:032x}"),
                    1_000_000 + weight(&i.to_string(), "size") % 200_000_000,
                )
            })
            .collect();
        let three = urls(3);
        let shares = assign(segments.iter(), &three, |s| s.bytes);
        let total: u64 = segments.iter().map(|s| s.bytes).sum();
        for share in &shares {
            let bytes: u64 = share.iter().map(|s| s.bytes).sum();
            assert!(bytes * 100 <= total * 37, "one worker reads {bytes} of {total} bytes");
        }
        assert_eq!(shares.iter().map(Vec::len).sum::<usize>(), 40);
        // Still mostly where rendezvous puts them (cache affinity).
        let at_owner = shares
            .iter()
            .enumerate()
            .map(|(w, share)| share.iter().filter(|s| owner(&s.id, &three) == Some(w)).count())
            .sum::<usize>();
        assert!(
            at_owner >= 24,
            "only {at_owner} of 40 segments stay with their rendezvous owner"
        );
        // The same list gives the same assignment.
        assert_eq!(assign(segments.iter(), &three, |s| s.bytes), shares);
        // One segment larger than an even share goes whole to one worker.
        let lopsided = [
            segment("big".into(), 900),
            segment("a".into(), 50),
            segment("b".into(), 50),
        ];
        let shares = assign(lopsided.iter(), &three, |s| s.bytes);
        assert_eq!(shares.iter().map(Vec::len).sum::<usize>(), 3);
        assert!(shares.iter().any(|s| s.len() == 1 && s[0].id == "big"));
    }

    #[test]
    fn a_question_about_one_signal_splits_that_signals_segments() {
        // One table with 6 log segments and 3 larger span segments (as OTLP data lands).
        let with = |id: String, bytes: u64, columns: &[&str]| SegmentMeta {
            columns: columns
                .iter()
                .map(|name| trawl_catalog::ColumnInfo {
                    name: (*name).into(),
                    kql_type: trawl_common::KqlType::String,
                })
                .collect(),
            ..segment(id, bytes)
        };
        let mut segments: Vec<SegmentMeta> = (0..6)
            .map(|i| with(format!("log{i}"), 100, &["timestamp", "body"]))
            .collect();
        // Balanced by whole-segment bytes, the big span segment's worker would take no log
        // segment and the logs would split 0 / 3 / 3.
        for (i, bytes) in [500, 200, 200].into_iter().enumerate() {
            segments.push(with(format!("span{i}"), bytes, &["timestamp", "span_name"]));
        }
        let three = urls(3);
        // A logs question reads `body` (and `timestamp`, which every segment holds).
        let wanted = vec!["body".to_string()];
        assert_eq!(cost(&segments[0], &wanted), 100);
        assert_eq!(cost(&segments[6], &wanted), 0);
        assert_eq!(cost(&segments[6], &[]), 500);
        for (wanted, prefix, each) in [("body", "log", 2), ("span_name", "span", 1)] {
            let wanted = vec![wanted.to_string()];
            let shares = assign(segments.iter(), &three, |s| cost(s, &wanted));
            for share in &shares {
                let read = share.iter().filter(|s| s.id.starts_with(prefix)).count();
                assert_eq!(read, each, "{prefix} segments per worker: {shares:?}");
            }
        }
    }

    #[test]
    fn a_smaller_fanout_picks_the_same_workers_each_time() {
        let first = chosen("logs", urls(5), 2);
        assert_eq!(first.len(), 2);
        assert_eq!(chosen("logs", urls(5).into_iter().rev().collect(), 2), first);
        assert_eq!(chosen("logs", urls(3), 5).len(), 3);
    }
}
