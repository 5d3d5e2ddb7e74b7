//! The merge policy over a simulated hour of ingest: segments of a 1-second flush cadence,
//! merge passes at the janitor's interval, merges taking effect at once.

use std::time::Duration;

use trawl_catalog::{SegmentMeta, SegmentState};
use trawl_common::Signal;

use super::MergePolicy;

const SECOND: i64 = 1_000_000_000;

fn segment(id: usize, rows: u64, min_time: i64, max_time: i64, created_at: i64) -> SegmentMeta {
    SegmentMeta {
        id: format!("s{id:06}"),
        database: "default".into(),
        table: "logs".into(),
        path: format!("default/logs/s{id:06}.parquet"),
        min_time,
        max_time,
        rows,
        bytes: rows * 90,
        columns: Vec::new(),
        merge_level: 0,
        state: SegmentState::Live,
        created_at,
        tombstoned_at: None,
        signal: Some(Signal::Logs),
    }
}

/// What a simulated run saw.
#[derive(Debug)]
struct Run {
    /// The most small segments live at once after the first 10 minutes (just before a pass:
    /// the worst moment), i.e. the most a query over the table reads.
    most_small: usize,
    /// Live segments, and small ones, at the end of ingest.
    live_at_end: usize,
    small_at_end: usize,
    /// Rows merges wrote, per row ingested.
    rewrites_per_row: f64,
    /// Largest input of a merge relative to the group's rows (1.0: a big segment rewritten to
    /// take in tiny ones).
    worst_dominance: f64,
    /// Small segments once the table has been quiet for `idle_after` and a pass ran.
    small_when_quiet: usize,
    live: Vec<SegmentMeta>,
}

/// `seconds` of ingest, one flush a second of `rows(second)` rows, a pass every `pass_every`
/// seconds; then quiet until a pass after `idle_after`.
fn simulate(policy: &MergePolicy, seconds: i64, pass_every: i64, rows: impl Fn(i64) -> u64) -> Run {
    let mut live: Vec<SegmentMeta> = Vec::new();
    let mut next_id = 0;
    let (mut ingested, mut rewritten) = (0u64, 0u64);
    let mut most_small = 0;
    let mut worst_dominance: f64 = 0.0;
    let small = |live: &[SegmentMeta]| live.iter().filter(|s| policy.is_small(s.rows)).count();
    for second in 1..=seconds {
        let now = second * SECOND;
        let n = rows(second);
        next_id += 1;
        live.push(segment(next_id, n, now - SECOND, now - 1, now));
        ingested += n;
        if second % pass_every == 0 {
            if second > 600 {
                most_small = most_small.max(small(&live));
            }
            let (written, dominance) = pass(policy, &mut live, now, &mut next_id);
            rewritten += written;
            worst_dominance = worst_dominance.max(dominance);
        }
    }
    let (live_at_end, small_at_end) = (live.len(), small(&live));
    let quiet_at = seconds * SECOND + i64::try_from(policy.idle_after.as_nanos()).unwrap_or(i64::MAX);
    // The quiet pass may rewrite a big segment with small ones: that is its point.
    pass(policy, &mut live, quiet_at, &mut next_id);
    Run {
        most_small,
        live_at_end,
        small_at_end,
        rewrites_per_row: rewritten as f64 / ingested as f64,
        worst_dominance,
        small_when_quiet: small(&live),
        live,
    }
}

/// One pass, its merges taking effect at once: the rows written, and the largest share of a
/// merge's rows one input held.
fn pass(policy: &MergePolicy, live: &mut Vec<SegmentMeta>, now: i64, next_id: &mut usize) -> (u64, f64) {
    let (mut written, mut dominance) = (0, 0f64);
    for group in policy.plan(live.clone(), now) {
        let group_rows: u64 = group.iter().map(|s| s.rows).sum();
        let biggest = group.iter().map(|s| s.rows).max().unwrap_or(0);
        dominance = dominance.max(biggest as f64 / group_rows as f64);
        let min_time = group.iter().map(|s| s.min_time).min().unwrap_or(0);
        let max_time = group.iter().map(|s| s.max_time).max().unwrap_or(0);
        live.retain(|s| !group.iter().any(|g| g.id == s.id));
        *next_id += 1;
        live.push(segment(*next_id, group_rows, min_time, max_time, now));
        written += group_rows;
    }
    (written, dominance)
}

/// Flush sizes that vary around `mean` (±40%, deterministic).
fn around(mean: u64) -> impl Fn(i64) -> u64 {
    move |second| {
        let wobble = (second.wrapping_mul(2_654_435_761) >> 7).rem_euclid(81) as u64; // 0..=80
        mean * (60 + wobble) / 100
    }
}

#[test]
fn an_hour_of_one_second_flushes_keeps_few_small_segments_and_rewrites_each_row_a_few_times() {
    let policy = MergePolicy::default();
    for (rate, pass_every) in [(1_000, 10), (10_000, 10), (10_000, 30), (100_000, 10)] {
        let run = simulate(&policy, 3600, pass_every, around(rate));
        println!(
            "{rate} rows/s, a pass every {pass_every} s: {run:?}",
            run = (
                run.most_small,
                run.live_at_end,
                run.small_at_end,
                run.rewrites_per_row,
                run.worst_dominance,
                run.small_when_quiet
            )
        );
        // Every row is still there exactly once, and the segments are disjoint in time.
        let rows: u64 = run.live.iter().map(|s| s.rows).sum();
        assert_eq!(rows, (1..=3600).map(around(rate)).sum::<u64>());
        let mut spans: Vec<(i64, i64)> = run.live.iter().map(|s| (s.min_time, s.max_time)).collect();
        spans.sort_unstable();
        assert!(
            spans.windows(2).all(|w| w[0].1 < w[1].0),
            "segments overlap in time: {spans:?}"
        );
        // N: the flushes of one interval, plus the few a window left behind.
        let bound = pass_every as usize + 10;
        assert!(
            run.most_small <= bound,
            "{} small segments, more than {bound}",
            run.most_small
        );
        assert!(run.small_at_end <= bound);
        // Each row is rewritten about once per step its segment climbs (4 to 6 times as many
        // rows per merge), never again and again: 1k-row flushes climb 5 steps to 500k rows.
        let steps = ((policy.small_segment_rows as f64 / rate as f64).ln() / 4f64.ln()).ceil();
        assert!(
            run.rewrites_per_row <= steps + 0.5,
            "rows rewritten {} times",
            run.rewrites_per_row
        );
        assert!(
            run.worst_dominance <= 0.6,
            "a merge mostly rewrote one big input: {}",
            run.worst_dominance
        );
        // Quiet, a table ends with at most a couple of small segments.
        assert!(
            run.small_when_quiet <= 2,
            "{} small segments left when quiet",
            run.small_when_quiet
        );
        assert!(run.live_at_end >= run.live.len());
    }
}

#[test]
fn a_big_segment_is_not_rewritten_to_take_in_small_ones_until_the_table_is_quiet() {
    let policy = MergePolicy {
        idle_after: Duration::from_secs(60),
        ..MergePolicy::default()
    };
    // A big segment and then four tiny ones, all just written.
    let mut live = vec![segment(0, 300_000, 0, SECOND - 1, 10 * SECOND)];
    for i in 1..=4 {
        live.push(segment(i, 500, i as i64 * SECOND, i as i64 * SECOND + 1, 10 * SECOND));
    }
    let groups = policy.plan(live.clone(), 11 * SECOND);
    assert_eq!(groups.len(), 1);
    let ids: Vec<&str> = groups[0].iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s000001", "s000002", "s000003", "s000004"]);
    // A minute later, nothing new: all five are merged.
    let groups = policy.plan(live.clone(), 70 * SECOND);
    assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [5]);
    // Two tiny ones and nothing else wait while the table is busy, and merge when quiet.
    let pair = live[1..3].to_vec();
    assert!(policy.plan(pair.clone(), 11 * SECOND).is_empty());
    assert_eq!(policy.plan(pair, 70 * SECOND).len(), 1);
    // Segments at or over `small_segment_rows` are never inputs.
    let big = vec![
        segment(7, 500_000, 0, 1, 0),
        segment(8, 500_000, 2, 3, 0),
        segment(9, 600_000, 4, 5, 0),
    ];
    assert!(policy.plan(big, 1_000 * SECOND).is_empty());
}

#[test]
fn two_segments_holding_half_a_merged_segment_are_merged_without_waiting_for_more() {
    let policy = MergePolicy::default();
    let live = vec![
        segment(1, 260_000, 0, 1, 0),
        segment(2, 250_000, 2, 3, 0),
        segment(3, 240_000, 4, 5, 0),
    ];
    // 1M rows at most per merge: 260k + 250k + 240k = 750k in one, which is half of
    // `max_output_rows` and more.
    let groups = policy.plan(live, SECOND);
    assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [3]);
    let small = vec![segment(1, 200_000, 0, 1, 0), segment(2, 200_000, 2, 3, 0)];
    assert!(policy.plan(small, SECOND).is_empty(), "400k rows in two: wait for more");
}

#[test]
fn a_quiet_tables_lone_fresh_segment_is_rewritten_when_fresh_segments_use_a_faster_codec() {
    let policy = MergePolicy {
        idle_after: Duration::from_secs(60),
        rewrite_lone_fresh: true,
        ..MergePolicy::default()
    };
    let fresh = segment(1, 40_000, 0, 1, 10 * SECOND);
    let merged = SegmentMeta {
        merge_level: 2,
        ..segment(2, 300_000, 2, 3, 10 * SECOND)
    };
    // While the table is busy, a lone segment waits for neighbours of its size.
    assert!(policy.plan(vec![fresh.clone()], 11 * SECOND).is_empty());
    // Quiet: the fresh one is rewritten alone; a merged one has nothing to gain from it.
    let groups = policy.plan(vec![fresh.clone()], 70 * SECOND);
    assert_eq!(groups, [vec![fresh.clone()]]);
    assert!(policy.plan(vec![merged.clone()], 70 * SECOND).is_empty());
    // With a neighbour, the two are merged as before.
    let groups = policy.plan(vec![fresh.clone(), merged.clone()], 70 * SECOND);
    assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [2]);
    // Fresh segments under the merged segments' codec are left alone.
    let same_codec = MergePolicy {
        rewrite_lone_fresh: false,
        ..policy
    };
    assert!(same_codec.plan(vec![fresh], 70 * SECOND).is_empty());
}
