//! `__funnel_reach(time, state, sequence, period)`: the aggregate behind `evaluate
//! funnel_sequence_completion`. Over one id's events (a time as a long, a state), the number
//! of leading steps of `sequence` (a JSON array of states) the id completed in order within
//! `period` of the first step: 0 when it never took the first step, the sequence's length
//! when it took them all. Steps are events in time order (equal times in state order), each
//! after the one before; the best start is taken.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Value, json};

use crate::rowfn::{Out, Val};
use crate::udaf::RowAgg;

/// The most events one id may hold; past it the aggregate fails rather than grow without
/// bound.
const MAX_EVENTS: usize = 1_000_000;

#[derive(Debug, Default)]
struct FunnelReach {
    events: Vec<(i64, String)>,
    sequence: Option<Vec<String>>,
    period: Option<i64>,
}

impl FunnelReach {
    fn push(&mut self, time: i64, state: String) -> Result<()> {
        if self.events.len() >= MAX_EVENTS {
            return exec_err!("funnel: more than {MAX_EVENTS} events of one id in one bin");
        }
        self.events.push((time, state));
        Ok(())
    }

    fn reached(&self) -> i64 {
        let (Some(sequence), Some(period)) = (&self.sequence, self.period) else {
            return 0;
        };
        let mut events: Vec<&(i64, String)> = self.events.iter().collect();
        events.sort();
        // Per step, the positions of the events in its state, ascending.
        let positions: Vec<Vec<usize>> = sequence
            .iter()
            .map(|state| (0..events.len()).filter(|&i| events[i].1 == *state).collect())
            .collect();
        let Some(starts) = positions.first() else {
            return 0;
        };
        let mut best = 0usize;
        for &start in starts {
            let first = events[start].0;
            let mut at = start;
            let mut reached = 1;
            for step in positions.iter().skip(1) {
                let next = step.partition_point(|&i| i <= at);
                match step.get(next) {
                    Some(&i) if events[i].0.saturating_sub(first) <= period => {
                        at = i;
                        reached += 1;
                    }
                    _ => break,
                }
            }
            best = best.max(reached);
            if best == sequence.len() {
                break;
            }
        }
        best as i64
    }
}

impl RowAgg for FunnelReach {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if self.sequence.is_none()
            && let Some(Val::Str(text)) = row.get(2)
            && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text)
        {
            self.sequence = Some(
                items
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect(),
            );
        }
        if self.period.is_none() {
            self.period = row.get(3).and_then(|v| v.long());
        }
        match (row.first().and_then(|v| v.long()), row.get(1)) {
            (Some(time), Some(Val::Str(state))) => self.push(time, (*state).to_owned()),
            _ => Ok(()),
        }
    }

    fn state(&self) -> Vec<u8> {
        json!({"events": self.events, "sequence": self.sequence, "period": self.period})
            .to_string()
            .into_bytes()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let Ok(state) = serde_json::from_slice::<Value>(state) else {
            return exec_err!("a corrupt funnel state");
        };
        for event in state["events"].as_array().into_iter().flatten() {
            if let (Some(time), Some(s)) = (event[0].as_i64(), event[1].as_str()) {
                self.push(time, s.to_owned())?;
            }
        }
        if self.sequence.is_none() {
            self.sequence = state["sequence"]
                .as_array()
                .map(|items| items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
        }
        self.period = self.period.or(state["period"].as_i64());
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        Ok(Out::Long(self.reached()))
    }

    fn size(&self) -> usize {
        self.events.iter().map(|(_, s)| s.len() + 40).sum()
    }
}

/// `__funnel_reach(time, state, sequence, period)`.
pub fn make_funnel_reach(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(FunnelReach::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(events: &[(i64, &str)], sequence: &[&str], period: i64) -> i64 {
        let mut agg = FunnelReach {
            sequence: Some(sequence.iter().map(|s| s.to_string()).collect()),
            period: Some(period),
            ..FunnelReach::default()
        };
        for (t, s) in events {
            let _ = agg.push(*t, s.to_string());
        }
        agg.reached()
    }

    #[test]
    fn steps_in_order_within_the_period_of_the_first() {
        let sequence = ["hail", "tornado", "wind"];
        let events = [
            (0, "hail"),
            (5, "tornado"),
            (50, "wind"),
            (60, "hail"),
            (70, "tornado"),
            (80, "wind"),
        ];
        // From t=0 the last step comes 50 later; from t=60, 20 later.
        assert_eq!(reach(&events, &sequence, 10), 2);
        assert_eq!(reach(&events, &sequence, 20), 3);
        assert_eq!(reach(&events, &sequence, 100), 3);
        // Out of order: a step before the first does not count.
        assert_eq!(reach(&[(5, "tornado"), (10, "hail")], &sequence, 100), 1);
        assert_eq!(reach(&[(5, "tornado")], &sequence, 100), 0);
        // A state repeated in the sequence needs two events.
        assert_eq!(reach(&[(1, "a"), (2, "b")], &["a", "b", "a"], 10), 2);
        assert_eq!(reach(&[(1, "a"), (2, "b"), (3, "a")], &["a", "b", "a"], 10), 3);
    }

    #[test]
    fn merged_states_reach_as_far() -> Result<()> {
        let mut left = FunnelReach::default();
        let mut right = FunnelReach::default();
        let seq = json!(["a", "b"]).to_string();
        left.update(&[Val::Long(1), Val::Str("a"), Val::Str(&seq), Val::Long(5)])?;
        right.update(&[Val::Long(3), Val::Str("b"), Val::Str(&seq), Val::Long(5)])?;
        left.merge(&right.state())?;
        assert_eq!(left.evaluate()?, Out::Long(2));
        Ok(())
    }
}
