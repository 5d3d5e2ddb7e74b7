//! Re-binning the Agent's distribution sketches into OpenTelemetry exponential histogram
//! buckets at scale 5.
//!
//! The Agent's sketch keeps, for each value `v > 0`, the key `k = round(log_γ v) + bias` with
//! γ = 1 + 2/128 and a bias that gives the smallest tracked magnitude (1e-9) key 1; negative
//! values have negated keys and key 0 counts zeros (and magnitudes below 1e-9). A key's
//! representative value is γ^(k − bias), within 0.79% of every value it counts.
//!
//! Each key's count moves whole to the scale-5 bucket holding that representative value: index
//! `i` holds `(2^(i/32), 2^((i+1)/32)]`. A bucket's midpoint is within 1.1% of its values, so
//! a percentile read from the histogram is within about 2% of the sketch's (SPEC: up to about
//! 3.3%). Count, sum, min and max are carried exactly, beside the buckets.

use serde_json::{Map, Value as Json};

/// The scale of the re-binned histogram: 32 buckets per power of two.
pub const SCALE: i32 = 5;
/// The sketch's relative accuracy parameter (γ = 1 + 2ε).
const EPSILON: f64 = 1.0 / 128.0;
/// The smallest magnitude the sketch tracks; it has key 1.
const MIN_VALUE: f64 = 1e-9;
/// Bounds the dense bucket array a hostile sketch could ask for (a real one spans at most a
/// few thousand scale-5 buckets between 1e-9 and 1e300).
const MAX_BUCKETS: i64 = 1 << 16;

/// `ln γ`.
fn gamma_ln() -> f64 {
    (2.0 * EPSILON).ln_1p()
}

/// The key offset that gives [`MIN_VALUE`] key 1.
fn bias() -> i32 {
    let emin = (MIN_VALUE.ln() / gamma_ln()).floor() as i32;
    1 - emin
}

/// The representative magnitude of a non-zero key's values.
pub fn key_value(key: i32) -> f64 {
    let exponent = f64::from(key.unsigned_abs()) - f64::from(bias());
    (exponent * gamma_ln()).exp()
}

/// The scale-5 bucket index of a magnitude `v > 0`: `i` with `2^(i/32) < v <= 2^((i+1)/32)`.
pub fn bucket_index(v: f64) -> i64 {
    let scaled = v.log2() * f64::from(1 << SCALE);
    // A value on a boundary belongs to the lower bucket; rounding noise near one counts as on it.
    let nearest = scaled.round();
    let upper = if (scaled - nearest).abs() < 1e-9 {
        nearest
    } else {
        scaled.ceil()
    };
    // `as` saturates infinities; a key far outside the sketch's range ends up refused by `dense`.
    (upper as i64).saturating_sub(1)
}

/// One side of the histogram: counts of consecutive buckets from `offset`.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    pub offset: i64,
    pub bucket_counts: Vec<u64>,
}

impl Side {
    /// `{offset, bucket_counts}`, as OTLP exponential histogram rows store it.
    pub fn to_json(&self) -> Json {
        let mut bag = Map::with_capacity(2);
        bag.insert("offset".to_owned(), Json::from(self.offset));
        let counts = self.bucket_counts.iter().map(|c| Json::from(*c)).collect();
        bag.insert("bucket_counts".to_owned(), Json::Array(counts));
        Json::Object(bag)
    }
}

/// The re-binned sketch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Buckets {
    pub zero_count: i64,
    pub positive: Option<Side>,
    pub negative: Option<Side>,
}

/// Re-bins the keys and counts of one sketch. Errors when the keys span more buckets than
/// any real sketch does.
pub fn rebin(keys: &[i32], counts: &[u64]) -> Result<Buckets, String> {
    let mut zero_count = 0_u64;
    let mut positive = Vec::new();
    let mut negative = Vec::new();
    for (&key, &count) in keys.iter().zip(counts) {
        match key {
            0 => zero_count = zero_count.saturating_add(count),
            k if k > 0 => positive.push((bucket_index(key_value(k)), count)),
            k => negative.push((bucket_index(key_value(k)), count)),
        }
    }
    Ok(Buckets {
        zero_count: i64::try_from(zero_count).unwrap_or(i64::MAX),
        positive: dense(&positive)?,
        negative: dense(&negative)?,
    })
}

fn dense(entries: &[(i64, u64)]) -> Result<Option<Side>, String> {
    let (Some(low), Some(high)) = (entries.iter().map(|e| e.0).min(), entries.iter().map(|e| e.0).max()) else {
        return Ok(None);
    };
    let span = high.saturating_sub(low).saturating_add(1);
    if span > MAX_BUCKETS {
        return Err(format!(
            "sketch keys span {span} scale-5 buckets; at most {MAX_BUCKETS} are accepted"
        ));
    }
    let mut bucket_counts = vec![0_u64; span as usize];
    for &(index, count) in entries {
        let slot = &mut bucket_counts[(index - low) as usize];
        *slot = slot.saturating_add(count);
    }
    Ok(Some(Side {
        offset: low,
        bucket_counts,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sketch key of a value, as the Agent computes it.
    fn agent_key(v: f64) -> i32 {
        if v == 0.0 {
            return 0;
        }
        let k = (v.abs().ln() / gamma_ln()).round_ties_even() as i32 + bias();
        if v < 0.0 { -k } else { k }
    }

    /// The value a percentile query reads from a scale-5 bucket: its log midpoint.
    fn bucket_mid(index: i64) -> f64 {
        2f64.powf((index as f64 + 0.5) / 32.0)
    }

    #[test]
    fn bias_gives_the_smallest_value_key_one() {
        assert_eq!(bias(), 1338);
        assert_eq!(agent_key(MIN_VALUE), 1);
        assert!((key_value(1) / MIN_VALUE - 1.0).abs() < 0.02);
    }

    #[test]
    fn bucket_index_follows_the_boundaries() {
        assert_eq!(bucket_index(1.0), -1);
        assert_eq!(bucket_index(1.0001), 0);
        assert_eq!(bucket_index(2.0), 31);
        assert_eq!(bucket_index(2.0001), 32);
        assert_eq!(bucket_index(0.5), -33);
    }

    #[test]
    fn every_value_lands_within_the_documented_error() {
        let mut worst = 0.0_f64;
        let mut v = 1e-6;
        while v < 1e12 {
            let key = agent_key(v);
            let index = bucket_index(key_value(key));
            let error = (bucket_mid(index) - v).abs() / v;
            worst = worst.max(error);
            v *= 1.0137;
        }
        assert!(worst < 0.033, "worst relative error {worst}");
        assert!(worst > 0.005, "the test must exercise real bucket widths: {worst}");
    }

    #[test]
    fn zeros_positives_and_negatives() -> Result<(), String> {
        let keys = [0, agent_key(1.5), agent_key(1.5), agent_key(3.0), agent_key(-2.0)];
        let buckets = rebin(&keys, &[4, 1, 2, 5, 7])?;
        assert_eq!(buckets.zero_count, 4);
        let positive = buckets.positive.ok_or("positive side")?;
        assert_eq!(positive.offset, bucket_index(key_value(agent_key(1.5))));
        assert_eq!(positive.bucket_counts.iter().sum::<u64>(), 8);
        assert_eq!(positive.bucket_counts.first(), Some(&3));
        assert_eq!(positive.bucket_counts.last(), Some(&5));
        let negative = buckets.negative.ok_or("negative side")?;
        assert_eq!(negative.bucket_counts, vec![7]);
        // The sketch key of -2 stands for -2.009 (within the sketch's 0.79%), just past 2.
        assert_eq!(negative.offset, 32);
        Ok(())
    }

    #[test]
    fn hostile_key_spans_are_refused() {
        assert!(rebin(&[1, 30_000], &[1, 1]).is_ok());
        assert!(rebin(&[1, i32::MAX], &[1, 1]).is_err());
        assert!(rebin(&[-1, i32::MIN], &[1, 1]).is_err());
    }
}
