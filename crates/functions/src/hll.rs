//! HyperLogLog sketches: the aggregates `hll(x [, accuracy])`, `hll_if(x, predicate
//! [, accuracy])` and `hll_merge(sketch)`, and the scalars `dcount_hll(sketch)` and
//! `hll_merge(sketch, ...)`. All share [`Hll`].
//!
//! The accuracy level picks the precision `p` (2^p one-byte registers) as Kusto documents:
//! 0 → 12 (1.6 % error), 1 (default) → 14 (0.8 %), 2 → 16 (0.4 %), 3 → 17 (0.28 %),
//! 4 → 18 (0.2 %). Values hash with XXH64 (of a type tag and the value's bytes; a real with no
//! fraction hashes like the same long).
//!
//! A sketch starts *sparse*: the exact set of the 64-bit hashes seen, so small sets count
//! exactly. Past 2^(p-4) hashes it turns *dense*: the registers. Sketches of different
//! precision merge at the lower precision (Kusto refuses; folding is exact for HLL).
//!
//! # Encoding of a sketch (a dynamic value)
//!
//! * sparse: `[[0, p], ["<hash>", ...]]`: the hashes as decimal texts of signed 64-bit
//!   integers, ascending (the layout of Kusto's own sparse sketches, which read back too);
//! * dense: `[[1, p], "<registers>"]`: the 2^p registers, one byte each, in standard base64;
//!   register `i` holds the largest rank (leading zeros + 1 of the bits after the first `p`)
//!   of the hashes whose first `p` bits are `i`.

use std::collections::BTreeSet;
use std::hash::Hasher;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::Value;

use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter, cond};

/// Default accuracy level.
pub const DEFAULT_ACCURACY: i64 = 1;

/// The precision (register bits) of an accuracy level.
pub fn precision_of(accuracy: i64) -> Result<u8> {
    Ok(match accuracy {
        0 => 12,
        1 => 14,
        2 => 16,
        3 => 17,
        4 => 18,
        other => return exec_err!("the accuracy must be 0 to 4, found {other}"),
    })
}

const MIN_P: u8 = 4;
const MAX_P: u8 = 18;

/// A HyperLogLog sketch.
#[derive(Debug, Clone, PartialEq)]
pub struct Hll {
    p: u8,
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    Sparse(BTreeSet<u64>),
    Dense(Vec<u8>),
}

/// The 64-bit hash of a value (`None` for null).
pub fn hash_val(v: Val<'_>) -> Option<u64> {
    let mut hasher = twox_hash::XxHash64::with_seed(0);
    match v {
        Val::Null => return None,
        Val::Str(s) => {
            hasher.write_u8(b's');
            hasher.write(s.as_bytes());
        }
        Val::Bool(b) => {
            hasher.write_u8(b'b');
            hasher.write_u8(u8::from(b));
        }
        Val::Long(n) => {
            hasher.write_u8(b'l');
            hasher.write(&n.to_le_bytes());
        }
        Val::Real(r) => {
            if r.fract() == 0.0 && r.abs() < 9.0e18 {
                hasher.write_u8(b'l');
                hasher.write(&(r as i64).to_le_bytes());
            } else {
                hasher.write_u8(b'r');
                let bits = if r.is_nan() { f64::NAN.to_bits() } else { r.to_bits() };
                hasher.write(&bits.to_le_bytes());
            }
        }
        Val::DateTime(t) => {
            hasher.write_u8(b'd');
            hasher.write(&t.to_le_bytes());
        }
        Val::Timespan(t) => {
            hasher.write_u8(b't');
            hasher.write(&t.to_le_bytes());
        }
    }
    Some(hasher.finish())
}

impl Hll {
    /// An empty sketch of precision `p` (clamped to 4..=18).
    pub fn new(p: u8) -> Hll {
        Hll {
            p: p.clamp(MIN_P, MAX_P),
            repr: Repr::Sparse(BTreeSet::new()),
        }
    }

    pub fn precision(&self) -> u8 {
        self.p
    }

    fn sparse_limit(&self) -> usize {
        1usize << (self.p - 4)
    }

    fn registers_len(&self) -> usize {
        1usize << self.p
    }

    /// Adds a hash.
    pub fn add_hash(&mut self, hash: u64) {
        let p = self.p;
        match &mut self.repr {
            Repr::Sparse(set) => {
                set.insert(hash);
                if set.len() > self.sparse_limit() {
                    self.densify();
                }
            }
            Repr::Dense(registers) => add_to_registers(registers, p, hash),
        }
    }

    /// Adds a value (nulls are skipped).
    pub fn add(&mut self, v: Val<'_>) {
        if let Some(hash) = hash_val(v) {
            self.add_hash(hash);
        }
    }

    fn densify(&mut self) {
        if let Repr::Sparse(set) = &self.repr {
            let mut registers = vec![0u8; self.registers_len()];
            for hash in set {
                add_to_registers(&mut registers, self.p, *hash);
            }
            self.repr = Repr::Dense(registers);
        }
    }

    /// Lowers the precision to `p` (no-op when not lower).
    fn reduce(&mut self, p: u8) {
        if p >= self.p {
            return;
        }
        let shift = self.p - p;
        self.p = p;
        match &mut self.repr {
            Repr::Sparse(set) => {
                if set.len() > self.sparse_limit() {
                    self.densify();
                }
            }
            Repr::Dense(registers) => {
                let cap = 64 - p + 1;
                let mut folded = vec![0u8; 1usize << p];
                for (i, &rank) in registers.iter().enumerate() {
                    if rank == 0 {
                        continue;
                    }
                    let extra = (i as u64) & ((1u64 << shift) - 1);
                    let new_rank = if extra != 0 {
                        let bit_len = 64 - extra.leading_zeros() as u8;
                        shift - bit_len + 1
                    } else {
                        shift.saturating_add(rank).min(cap)
                    };
                    let j = i >> shift;
                    if folded[j] < new_rank {
                        folded[j] = new_rank;
                    }
                }
                self.repr = Repr::Dense(folded);
            }
        }
    }

    /// Merges `other` into this sketch (at the lower of both precisions).
    pub fn merge(&mut self, other: &Hll) {
        let p = self.p.min(other.p);
        self.reduce(p);
        let reduced;
        let other = if other.p > p {
            let mut copy = other.clone();
            copy.reduce(p);
            reduced = copy;
            &reduced
        } else {
            other
        };
        match (&mut self.repr, &other.repr) {
            (Repr::Sparse(mine), Repr::Sparse(theirs)) => {
                mine.extend(theirs.iter().copied());
                if mine.len() > self.sparse_limit() {
                    self.densify();
                }
            }
            (Repr::Sparse(mine), Repr::Dense(theirs)) => {
                let mut registers = theirs.clone();
                for hash in mine.iter() {
                    add_to_registers(&mut registers, p, *hash);
                }
                self.repr = Repr::Dense(registers);
            }
            (Repr::Dense(mine), Repr::Sparse(theirs)) => {
                for hash in theirs {
                    add_to_registers(mine, p, *hash);
                }
            }
            (Repr::Dense(mine), Repr::Dense(theirs)) => {
                for (a, b) in mine.iter_mut().zip(theirs) {
                    if *a < *b {
                        *a = *b;
                    }
                }
            }
        }
    }

    /// The estimated number of distinct values (exact while sparse).
    pub fn estimate(&self) -> f64 {
        match &self.repr {
            Repr::Sparse(set) => set.len() as f64,
            Repr::Dense(registers) => ertl_estimate(registers, self.p),
        }
    }

    /// The sketch as a dynamic value (see the module docs).
    pub fn to_json(&self) -> Value {
        match &self.repr {
            Repr::Sparse(set) => {
                let mut hashes: Vec<i64> = set.iter().map(|h| *h as i64).collect();
                hashes.sort_unstable();
                let hashes: Vec<Value> = hashes.into_iter().map(|h| Value::String(h.to_string())).collect();
                serde_json::json!([[0, self.p], hashes])
            }
            Repr::Dense(registers) => serde_json::json!([[1, self.p], BASE64.encode(registers)]),
        }
    }

    /// A sketch from its dynamic value (`None` when it is not one).
    pub fn from_json(value: &Value) -> Option<Hll> {
        let Value::Array(parts) = value else { return None };
        let [header, body] = parts.as_slice() else { return None };
        let Value::Array(header) = header else { return None };
        let p = header.get(1)?.as_u64()?;
        let p = u8::try_from(p).ok().filter(|p| (MIN_P..=MAX_P).contains(p))?;
        match body {
            Value::Array(hashes) => {
                let mut hll = Hll::new(p);
                let mut set = BTreeSet::new();
                for hash in hashes {
                    let hash = match hash {
                        Value::String(text) => text
                            .parse::<i64>()
                            .map(|h| h as u64)
                            .or_else(|_| text.parse::<u64>())
                            .ok()?,
                        Value::Number(n) => n.as_i64().map(|h| h as u64).or_else(|| n.as_u64())?,
                        _ => return None,
                    };
                    set.insert(hash);
                }
                hll.repr = Repr::Sparse(set);
                if let Repr::Sparse(set) = &hll.repr
                    && set.len() > hll.sparse_limit()
                {
                    hll.densify();
                }
                Some(hll)
            }
            Value::String(text) => {
                let registers = BASE64.decode(text).ok()?;
                if registers.len() != 1usize << p {
                    return None;
                }
                let cap = 64 - p + 1;
                if registers.iter().any(|r| *r > cap) {
                    return None;
                }
                Some(Hll {
                    p,
                    repr: Repr::Dense(registers),
                })
            }
            _ => None,
        }
    }

    /// A sketch from the JSON text of a dynamic value.
    pub fn from_text(text: &str) -> Option<Hll> {
        Hll::from_json(&serde_json::from_str(text).ok()?)
    }

    fn write(&self, w: &mut StateWriter) {
        w.u8(self.p);
        match &self.repr {
            Repr::Sparse(set) => {
                w.u8(0).u64(set.len() as u64);
                for hash in set {
                    w.u64(*hash);
                }
            }
            Repr::Dense(registers) => {
                w.u8(1).bytes(registers);
            }
        }
    }

    fn read(r: &mut StateReader<'_>) -> Result<Hll> {
        let p = r.u8()?;
        if !(MIN_P..=MAX_P).contains(&p) {
            return exec_err!("corrupt hll state");
        }
        let repr = match r.u8()? {
            0 => {
                let n = r.u64()?;
                let mut set = BTreeSet::new();
                for _ in 0..n {
                    set.insert(r.u64()?);
                }
                Repr::Sparse(set)
            }
            _ => {
                let registers = r.bytes()?.to_vec();
                if registers.len() != 1usize << p {
                    return exec_err!("corrupt hll state");
                }
                Repr::Dense(registers)
            }
        };
        Ok(Hll { p, repr })
    }

    fn heap_size(&self) -> usize {
        match &self.repr {
            Repr::Sparse(set) => set.len() * 3 * std::mem::size_of::<u64>(),
            Repr::Dense(registers) => registers.capacity(),
        }
    }
}

fn add_to_registers(registers: &mut [u8], p: u8, hash: u64) {
    let index = (hash >> (64 - p)) as usize;
    let rest = hash << p;
    let cap = 64 - p + 1;
    let rank = if rest == 0 {
        cap
    } else {
        (rest.leading_zeros() as u8 + 1).min(cap)
    };
    if let Some(register) = registers.get_mut(index)
        && *register < rank
    {
        *register = rank;
    }
}

/// Ertl's improved raw estimator ("New cardinality estimation algorithms for HyperLogLog
/// sketches", 2017): no bias tables, good over the whole range.
fn ertl_estimate(registers: &[u8], p: u8) -> f64 {
    let q = 64 - p as usize;
    let m = registers.len() as f64;
    let mut counts = vec![0u64; q + 2];
    for &r in registers {
        let r = (r as usize).min(q + 1);
        counts[r] += 1;
    }
    let mut z = m * tau(1.0 - counts[q + 1] as f64 / m);
    for k in (1..=q).rev() {
        z = 0.5 * (z + counts[k] as f64);
    }
    z += m * sigma(counts[0] as f64 / m);
    let alpha_inf = 1.0 / (2.0 * std::f64::consts::LN_2);
    alpha_inf * m * m / z
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if z == previous {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z == previous {
            return z / 3.0;
        }
    }
}

/// Which aggregate an [`HllAgg`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HllKind {
    /// `hll(x [, accuracy])`.
    Values,
    /// `hll_if(x, predicate [, accuracy])`.
    ValuesIf,
    /// `hll_merge(sketch)`.
    Merge,
}

/// The state of `hll`, `hll_if` and `hll_merge`: no sketch until a row arrives (so an empty
/// group gives null).
#[derive(Debug)]
struct HllAgg {
    kind: HllKind,
    sketch: Option<Hll>,
}

fn accuracy_arg(v: Val<'_>) -> Result<u8> {
    match v {
        Val::Null => precision_of(DEFAULT_ACCURACY),
        v => match v.long() {
            Some(level) => precision_of(level),
            None => exec_err!("the accuracy must be a number"),
        },
    }
}

fn arg<'a>(row: &[Val<'a>], i: usize) -> Val<'a> {
    row.get(i).copied().unwrap_or(Val::Null)
}

impl RowAgg for HllAgg {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        match self.kind {
            HllKind::Values | HllKind::ValuesIf => {
                let accuracy_index = if self.kind == HllKind::Values { 1 } else { 2 };
                if self.sketch.is_none() {
                    self.sketch = Some(Hll::new(accuracy_arg(arg(row, accuracy_index))?));
                }
                if self.kind == HllKind::ValuesIf && !cond(arg(row, 1)) {
                    return Ok(());
                }
                if let Some(sketch) = &mut self.sketch {
                    sketch.add(arg(row, 0));
                }
            }
            HllKind::Merge => {
                let Some(text) = arg(row, 0).str() else { return Ok(()) };
                let Some(other) = Hll::from_text(text) else {
                    return exec_err!("not an hll sketch: {}", truncate(text));
                };
                match &mut self.sketch {
                    Some(sketch) => sketch.merge(&other),
                    None => self.sketch = Some(other),
                }
            }
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        match &self.sketch {
            None => {
                w.u8(0);
            }
            Some(sketch) => {
                w.u8(1);
                sketch.write(&mut w);
            }
        }
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        if r.u8()? == 0 {
            return Ok(());
        }
        let other = Hll::read(&mut r)?;
        match &mut self.sketch {
            Some(sketch) => sketch.merge(&other),
            None => self.sketch = Some(other),
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        Ok(match &self.sketch {
            Some(sketch) => Out::Str(sketch.to_json().to_string()),
            None => Out::Null,
        })
    }

    fn size(&self) -> usize {
        self.sketch.as_ref().map_or(0, Hll::heap_size)
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(40).collect()
}

/// `hll(x [, accuracy])`.
pub fn make_hll(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(HllAgg {
        kind: HllKind::Values,
        sketch: None,
    }))
}

/// `hll_if(x, predicate [, accuracy])`.
pub fn make_hll_if(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(HllAgg {
        kind: HllKind::ValuesIf,
        sketch: None,
    }))
}

/// `hll_merge(sketch)` (aggregate).
pub fn make_hll_merge(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(HllAgg {
        kind: HllKind::Merge,
        sketch: None,
    }))
}

/// `dcount_hll(sketch)`: the distinct count estimated by a sketch (null for null or a value
/// that is not a sketch).
pub fn dcount_hll(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0).str().and_then(Hll::from_text) {
        Some(sketch) => Out::Long(sketch.estimate().round() as i64),
        None => Out::Null,
    })
}

/// `hll_merge(sketch1, sketch2, ...)` (scalar): the sketches merged; nulls are skipped, a
/// value that is not a sketch is an error.
pub fn hll_merge_scalar(args: &[Val]) -> Result<Out> {
    let mut merged: Option<Hll> = None;
    for v in args {
        let Some(text) = v.str() else { continue };
        let Some(sketch) = Hll::from_text(text) else {
            return exec_err!("not an hll sketch: {}", truncate(text));
        };
        match &mut merged {
            Some(m) => m.merge(&sketch),
            None => merged = Some(sketch),
        }
    }
    Ok(match merged {
        Some(m) => Out::Str(m.to_json().to_string()),
        None => Out::Null,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, StringViewArray};
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::Accumulator;

    use super::*;
    use crate::udaf::testing::{accumulator, run};

    fn longs(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
        Arc::new(Int64Array::from_iter(values))
    }

    fn text(value: &ScalarValue) -> String {
        match value {
            ScalarValue::Utf8View(Some(s)) => s.clone(),
            other => panic!("not a string: {other:?}"),
        }
    }

    fn count_of(sketch: &str) -> i64 {
        match dcount_hll(&[Val::Str(sketch)]) {
            Ok(Out::Long(n)) => n,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn small_sets_count_exactly() {
        let values = longs((1..=10).map(Some).chain([None, Some(3)]));
        let sketch = text(&run("hll", &[values]));
        assert!(sketch.starts_with("[[0,14],[\""), "{sketch}");
        assert_eq!(count_of(&sketch), 10);
    }

    #[test]
    fn empty_group_is_null_and_null_rows_give_an_empty_sketch() {
        let mut acc = accumulator("hll", &[longs([])]);
        assert_eq!(acc.evaluate().ok(), Some(ScalarValue::Utf8View(None)));
        let sketch = text(&run("hll", &[longs([None, None])]));
        assert_eq!(sketch, "[[0,14],[]]");
        assert_eq!(count_of(&sketch), 0);
    }

    #[test]
    fn large_sets_within_error() {
        for (accuracy, tolerance) in [(0i64, 0.05), (1, 0.03), (4, 0.01)] {
            let n = 200_000i64;
            let values = longs((0..n).map(Some));
            let levels = longs((0..n).map(|_| Some(accuracy)));
            let sketch = text(&run("hll", &[values, levels]));
            assert!(sketch.starts_with(&format!("[[1,{}]", precision_of(accuracy).unwrap_or(0))));
            let estimate = count_of(&sketch) as f64;
            let error = (estimate - n as f64).abs() / n as f64;
            assert!(error < tolerance, "accuracy {accuracy}: {estimate} vs {n}");
        }
    }

    #[test]
    fn hll_if_and_bad_accuracy() {
        let values = longs((1..=100).map(Some));
        let keep: ArrayRef = Arc::new(BooleanArray::from_iter((1..=100).map(|i| Some(i % 2 == 0))));
        let sketch = text(&run("hll_if", &[values.clone(), keep]));
        assert_eq!(count_of(&sketch), 50);
        let mut acc = accumulator("hll", &[values.clone(), values.clone()]);
        assert!(
            acc.update_batch(&[values.clone(), longs((1..=100).map(|_| Some(9)))])
                .is_err()
        );
    }

    #[test]
    fn merge_aggregate_and_scalar() {
        let a = text(&run("hll", &[longs((1..=10).map(Some))]));
        let b = text(&run("hll", &[longs((11..=20).map(Some))]));
        let c = text(&run("hll", &[longs((0..50_000).map(Some))]));
        let sketches: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some(a.as_str()),
            None,
            Some(b.as_str()),
            Some(a.as_str()),
        ]));
        let merged = text(&run("hll_merge", &[sketches]));
        assert_eq!(count_of(&merged), 20);
        let Ok(Out::Str(merged)) = hll_merge_scalar(&[Val::Str(&a), Val::Str(&b), Val::Null]) else {
            panic!()
        };
        assert_eq!(count_of(&merged), 20);
        let Ok(Out::Str(big)) = hll_merge_scalar(&[Val::Str(&a), Val::Str(&c)]) else {
            panic!()
        };
        let estimate = count_of(&big) as f64;
        assert!((estimate - 50_000.0).abs() / 50_000.0 < 0.03, "{estimate}");
        assert!(hll_merge_scalar(&[Val::Str("[1,2]")]).is_err());
        assert_eq!(dcount_hll(&[Val::Str("nope")]).ok(), Some(Out::Null));
    }

    #[test]
    fn precisions_fold_on_merge() {
        let mut low = Hll::new(12);
        let mut high = Hll::new(16);
        for i in 0..100_000i64 {
            low.add(Val::Long(i));
            high.add(Val::Long(i + 50_000));
        }
        let mut merged = high.clone();
        merged.merge(&low);
        assert_eq!(merged.precision(), 12);
        let estimate = merged.estimate();
        assert!((estimate - 150_000.0).abs() / 150_000.0 < 0.05, "{estimate}");
        let mut folded = high.clone();
        folded.reduce(12);
        let mut direct = Hll::new(12);
        for i in 0..100_000i64 {
            direct.add(Val::Long(i + 50_000));
        }
        assert_eq!(folded, direct, "folding must equal sketching at the lower precision");
    }

    #[test]
    fn json_round_trip() {
        let mut sketch = Hll::new(12);
        for i in 0..10_000i64 {
            sketch.add(Val::Long(i));
        }
        assert_eq!(Hll::from_json(&sketch.to_json()), Some(sketch));
        let kusto = serde_json::json!([[1024, 14], ["-6903255281122589438", "-7413697181929588220"]]);
        assert_eq!(Hll::from_json(&kusto).map(|h| h.estimate()), Some(2.0));
        assert_eq!(hash_val(Val::Real(3.0)), hash_val(Val::Long(3)));
        assert_ne!(hash_val(Val::Str("3")), hash_val(Val::Long(3)));
    }
}
