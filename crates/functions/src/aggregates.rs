//! Exact aggregates registered as UDAFs: `covariance(x, y)`, `covariancep`, `covarianceif`,
//! `covariancepif`, `variancepif`, `stdevpif`, `binary_all_and`, `binary_all_or`,
//! `binary_all_xor`, `count_distinct`, `count_distinctif` and `buildschema`.
//!
//! Statistics of an empty group are 0 (as Kusto's `variance()` and `stdev()` of no rows); the
//! sample forms of a single row are 0 too. Bitwise aggregates of no rows are null;
//! `buildschema` of no values is null.

use std::collections::HashSet;

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use serde_json::{Map, Value};

use crate::rowfn::{Out, Val};
use crate::udaf::{RowAgg, StateReader, StateWriter, cond};

fn arg<'a>(row: &[Val<'a>], i: usize) -> Val<'a> {
    row.get(i).copied().unwrap_or(Val::Null)
}

/// Whether a row passes an optional condition at `index` (`None`: no condition).
fn passes(row: &[Val], index: Option<usize>) -> bool {
    index.is_none_or(|i| cond(arg(row, i)))
}

/// Co-moments of two variables (Welford / Chan et al. for merging).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct CoMoments {
    n: f64,
    mean_x: f64,
    mean_y: f64,
    /// Σ (x - mean_x)(y - mean_y)
    c: f64,
}

impl CoMoments {
    fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        let dx = x - self.mean_x;
        self.mean_x += dx / self.n;
        self.mean_y += (y - self.mean_y) / self.n;
        self.c += dx * (y - self.mean_y);
    }

    fn merge(&mut self, other: &CoMoments) {
        if other.n == 0.0 {
            return;
        }
        if self.n == 0.0 {
            *self = *other;
            return;
        }
        let n = self.n + other.n;
        let dx = other.mean_x - self.mean_x;
        let dy = other.mean_y - self.mean_y;
        self.c += other.c + dx * dy * self.n * other.n / n;
        self.mean_x += dx * other.n / n;
        self.mean_y += dy * other.n / n;
        self.n = n;
    }

    fn covariance(&self, population: bool) -> f64 {
        let divisor = if population { self.n } else { self.n - 1.0 };
        if divisor <= 0.0 { 0.0 } else { self.c / divisor }
    }

    fn write(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.f64(self.n).f64(self.mean_x).f64(self.mean_y).f64(self.c);
        w.finish()
    }

    fn read(state: &[u8]) -> Result<CoMoments> {
        let mut r = StateReader::new(state);
        Ok(CoMoments {
            n: r.f64()?,
            mean_x: r.f64()?,
            mean_y: r.f64()?,
            c: r.f64()?,
        })
    }
}

/// `covariance`/`covariancep` (`y` given) and `variancep`/`stdevp` (`y` = `x`), each with an
/// optional condition.
#[derive(Debug)]
struct Moments {
    moments: CoMoments,
    /// Two variables (covariance) or one (variance).
    pair: bool,
    population: bool,
    sqrt: bool,
    condition: Option<usize>,
}

impl RowAgg for Moments {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if !passes(row, self.condition) {
            return Ok(());
        }
        let Some(x) = arg(row, 0).real() else { return Ok(()) };
        let y = if self.pair {
            match arg(row, 1).real() {
                Some(y) => y,
                None => return Ok(()),
            }
        } else {
            x
        };
        self.moments.add(x, y);
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        self.moments.write()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        self.moments.merge(&CoMoments::read(state)?);
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        let value = self.moments.covariance(self.population);
        Ok(Out::Real(if self.sqrt { value.max(0.0).sqrt() } else { value }))
    }
}

fn moments(pair: bool, population: bool, sqrt: bool, condition: Option<usize>) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(Moments {
        moments: CoMoments::default(),
        pair,
        population,
        sqrt,
        condition,
    }))
}

/// `covariance(x, y)`: the sample covariance.
pub fn make_covariance(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    moments(true, false, false, None)
}

/// `covariancep(x, y)`: the population covariance.
pub fn make_covariancep(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    moments(true, true, false, None)
}

/// `covarianceif(x, y, predicate)`.
pub fn make_covarianceif(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    moments(true, false, false, Some(2))
}

/// `covariancepif(x, y, predicate)`.
pub fn make_covariancepif(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    moments(true, true, false, Some(2))
}

/// `variancepif(x, predicate)`: the population variance.
pub fn make_variancepif(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    moments(false, true, false, Some(1))
}

/// `stdevpif(x, predicate)`: the population standard deviation.
pub fn make_stdevpif(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    moments(false, true, true, Some(1))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
}

/// `binary_all_and/or/xor(x)`.
#[derive(Debug)]
struct Bits {
    op: BitOp,
    value: Option<i64>,
}

impl Bits {
    fn fold(&mut self, v: i64) {
        self.value = Some(match self.value {
            None => v,
            Some(acc) => match self.op {
                BitOp::And => acc & v,
                BitOp::Or => acc | v,
                BitOp::Xor => acc ^ v,
            },
        });
    }
}

impl RowAgg for Bits {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if let Some(v) = arg(row, 0).long() {
            self.fold(v);
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        match self.value {
            None => w.u8(0),
            Some(v) => w.u8(1).i64(v),
        };
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        if r.u8()? == 1 {
            self.fold(r.i64()?);
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        Ok(self.value.into())
    }
}

pub fn make_binary_all_and(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(Bits {
        op: BitOp::And,
        value: None,
    }))
}

pub fn make_binary_all_or(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(Bits {
        op: BitOp::Or,
        value: None,
    }))
}

pub fn make_binary_all_xor(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(Bits {
        op: BitOp::Xor,
        value: None,
    }))
}

/// The identity of a value for exact distinct counting: a type tag and its bytes (a real with
/// no fraction counts as the same long).
fn distinct_key(v: Val<'_>) -> Option<Vec<u8>> {
    let (tag, bytes): (u8, Vec<u8>) = match v {
        Val::Null => return None,
        Val::Str(s) => (b's', s.as_bytes().to_vec()),
        Val::Bool(b) => (b'b', vec![u8::from(b)]),
        Val::Long(n) => (b'l', n.to_le_bytes().to_vec()),
        Val::Real(r) if r.fract() == 0.0 && r.abs() < 9.0e18 => (b'l', (r as i64).to_le_bytes().to_vec()),
        Val::Real(r) => (
            b'r',
            if r.is_nan() { f64::NAN } else { r }.to_bits().to_le_bytes().to_vec(),
        ),
        Val::DateTime(t) => (b'd', t.to_le_bytes().to_vec()),
        Val::Timespan(t) => (b't', t.to_le_bytes().to_vec()),
    };
    let mut key = Vec::with_capacity(bytes.len() + 1);
    key.push(tag);
    key.extend_from_slice(&bytes);
    Some(key)
}

/// `count_distinct(x)` / `count_distinctif(x, predicate)`: the exact number of distinct
/// non-null values.
#[derive(Debug)]
struct CountDistinct {
    seen: HashSet<Vec<u8>>,
    condition: Option<usize>,
    bytes: usize,
}

impl RowAgg for CountDistinct {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        if !passes(row, self.condition) {
            return Ok(());
        }
        if let Some(key) = distinct_key(arg(row, 0)) {
            let len = key.len();
            if self.seen.insert(key) {
                self.bytes += len + 32;
            }
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        let mut w = StateWriter::new();
        w.u64(self.seen.len() as u64);
        for key in &self.seen {
            w.bytes(key);
        }
        w.finish()
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        let mut r = StateReader::new(state);
        let n = r.u64()?;
        for _ in 0..n {
            let key = r.bytes()?;
            if !self.seen.contains(key) {
                self.bytes += key.len() + 32;
                self.seen.insert(key.to_vec());
            }
        }
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        Ok(Out::Long(self.seen.len() as i64))
    }

    fn size(&self) -> usize {
        self.bytes
    }
}

pub fn make_count_distinct(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(CountDistinct {
        seen: HashSet::new(),
        condition: None,
        bytes: 0,
    }))
}

pub fn make_count_distinctif(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(CountDistinct {
        seen: HashSet::new(),
        condition: Some(1),
        bytes: 0,
    }))
}

/// A schema of dynamic values as `buildschema` describes them: the primitive type names seen
/// (in order of first appearance) and at most one container (the properties of objects;
/// the items of arrays under the key "`indexer`", backticks included, as Kusto writes it).
#[derive(Debug, Default, Clone, PartialEq)]
struct Schema {
    primitives: Vec<String>,
    container: Option<Map<String, Value>>,
}

const INDEXER: &str = "`indexer`";

/// The primitive type name of a JSON scalar (`None` for null and containers).
fn primitive_name(value: &Value) -> Option<&'static str> {
    match value {
        Value::Bool(_) => Some("bool"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("long"),
        Value::Number(_) => Some("double"),
        Value::String(_) => Some("string"),
        _ => None,
    }
}

/// Adds `addition` (a schema in the output form) to the schema `into` (also in output form)
/// and returns the union.
fn union_schema(into: Option<Value>, addition: Value) -> Value {
    let mut parts = Schema::default();
    if let Some(existing) = into {
        collect_schema(&mut parts, existing);
    }
    collect_schema(&mut parts, addition);
    parts.into_value()
}

/// Splits an output-form schema into its members.
fn collect_schema(parts: &mut Schema, schema: Value) {
    match schema {
        Value::String(name) if !parts.primitives.contains(&name) => parts.primitives.push(name),
        Value::Array(members) => {
            for member in members {
                collect_schema(parts, member);
            }
        }
        Value::Object(properties) => {
            let container = parts.container.get_or_insert_with(Map::new);
            for (key, value) in properties {
                match container.get_mut(&key) {
                    Some(slot) => {
                        let existing = slot.take();
                        *slot = union_schema(Some(existing), value);
                    }
                    None => {
                        container.insert(key, union_schema(None, value));
                    }
                }
            }
        }
        _ => {}
    }
}

impl Schema {
    fn into_value(self) -> Value {
        let mut members: Vec<Value> = self.primitives.into_iter().map(Value::String).collect();
        if let Some(container) = self.container {
            members.push(Value::Object(container));
        }
        match members.len() {
            1 => members.pop().unwrap_or(Value::Null),
            _ => Value::Array(members),
        }
    }
}

/// The schema (output form) of one dynamic value; `None` for null.
fn schema_of(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) => {
            let mut item_schema: Option<Value> = None;
            for item in items {
                if let Some(s) = schema_of(item) {
                    item_schema = Some(union_schema(item_schema, s));
                }
            }
            let mut container = Map::new();
            if let Some(s) = item_schema {
                container.insert(INDEXER.to_string(), s);
            }
            Some(Value::Object(container))
        }
        Value::Object(properties) => {
            let mut container = Map::new();
            for (key, v) in properties {
                if let Some(s) = schema_of(v) {
                    container.insert(key.clone(), s);
                }
            }
            Some(Value::Object(container))
        }
        scalar => primitive_name(scalar).map(|name| Value::String(name.to_string())),
    }
}

/// `buildschema(dynamic)`: the minimal schema admitting every value.
#[derive(Debug, Default)]
struct BuildSchema {
    schema: Option<Value>,
}

impl BuildSchema {
    fn add(&mut self, schema: Value) {
        self.schema = Some(union_schema(self.schema.take(), schema));
    }
}

impl RowAgg for BuildSchema {
    fn update(&mut self, row: &[Val]) -> Result<()> {
        let value = match arg(row, 0) {
            Val::Str(text) => match serde_json::from_str::<Value>(text) {
                Ok(value) => value,
                Err(_) => Value::String(text.to_string()),
            },
            Val::Null => return Ok(()),
            Val::Bool(b) => Value::Bool(b),
            Val::Long(n) => Value::from(n),
            Val::Real(r) => crate::json::real(r),
            Val::DateTime(_) => {
                self.add(Value::String("datetime".into()));
                return Ok(());
            }
            Val::Timespan(_) => {
                self.add(Value::String("timespan".into()));
                return Ok(());
            }
        };
        if let Some(schema) = schema_of(&value) {
            self.add(schema);
        }
        Ok(())
    }

    fn state(&self) -> Vec<u8> {
        match &self.schema {
            None => Vec::new(),
            Some(schema) => schema.to_string().into_bytes(),
        }
    }

    fn merge(&mut self, state: &[u8]) -> Result<()> {
        if state.is_empty() {
            return Ok(());
        }
        let schema: Value = serde_json::from_slice(state)
            .map_err(|e| datafusion::error::DataFusionError::Execution(format!("corrupt buildschema state: {e}")))?;
        self.add(schema);
        Ok(())
    }

    fn evaluate(&self) -> Result<Out> {
        Ok(self
            .schema
            .as_ref()
            .map_or(Out::Null, |schema| Out::Str(schema.to_string())))
    }
}

pub fn make_buildschema(_: &DataType, _: &[DataType]) -> Result<Box<dyn RowAgg>> {
    Ok(Box::new(BuildSchema::default()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringViewArray};
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::Accumulator;

    use super::*;
    use crate::udaf::testing::{accumulator, run};

    fn longs(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
        Arc::new(Int64Array::from_iter(values))
    }

    fn reals(values: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
        Arc::new(Float64Array::from_iter(values))
    }

    fn bools(values: impl IntoIterator<Item = Option<bool>>) -> ArrayRef {
        Arc::new(BooleanArray::from_iter(values))
    }

    fn dynamic(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringViewArray::from(values.to_vec()))
    }

    fn real_of(value: ScalarValue) -> f64 {
        match value {
            ScalarValue::Float64(Some(x)) => x,
            other => panic!("not a real: {other:?}"),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn covariances() {
        let x = reals([Some(1.0), Some(2.0), Some(3.0), None, Some(4.0), Some(5.0)]);
        let y = reals([Some(14.0), Some(10.0), Some(17.0), Some(99.0), Some(20.0), Some(50.0)]);
        assert!(close(real_of(run("covariance", &[x.clone(), y.clone()])), 20.5));
        assert!(close(real_of(run("covariancep", &[x.clone(), y.clone()])), 16.4));
        // Documented: covariancepif over x in 1..100, y = x even ? 2x : 3x, where x % 3 == 0.
        let xs: Vec<i64> = (1..=100).collect();
        let x = reals(xs.iter().map(|v| Some(*v as f64)));
        let y = reals(xs.iter().map(|v| Some(if v % 2 == 0 { 2 * v } else { 3 * v } as f64)));
        let keep = bools(xs.iter().map(|v| Some(v % 3 == 0)));
        let got = real_of(run("covariancepif", &[x.clone(), y.clone(), keep.clone()]));
        assert!(close(got, 2077.090909090909), "{got}");
        assert!(close(real_of(run("covarianceif", &[x, y, keep])), 2142.0));
        let mut empty = accumulator("covariance", &[reals([]), reals([])]);
        assert_eq!(empty.evaluate().ok(), Some(ScalarValue::Float64(Some(0.0))));
    }

    #[test]
    fn population_variance_and_stdev_if() {
        let x = reals((1..=100).map(|v| Some(v as f64)));
        let even = bools((1..=100).map(|v| Some(v % 2 == 0)));
        assert!(close(real_of(run("variancepif", &[x.clone(), even.clone()])), 833.0));
        assert!(close(real_of(run("stdevpif", &[x, even])), 833.0f64.sqrt()));
        let mut empty = accumulator("variancepif", &[reals([]), bools([])]);
        assert_eq!(empty.evaluate().ok(), Some(ScalarValue::Float64(Some(0.0))));
    }

    #[test]
    fn binary_all() {
        let and = longs([
            Some(0xFFFFFFFF),
            Some(0xFFFFF00F),
            None,
            Some(0xCFFFFFFD),
            Some(0xFAFEFFFF),
        ]);
        assert_eq!(run("binary_all_and", &[and]), ScalarValue::Int64(Some(0xCAFEF00D)));
        let or = longs([Some(0x88888008), Some(0x42000000), Some(0x00767000), Some(0x00000005)]);
        assert_eq!(run("binary_all_or", &[or]), ScalarValue::Int64(Some(0xCAFEF00D)));
        let xor = longs([Some(0b1100), Some(0b1010), Some(0b0001)]);
        assert_eq!(run("binary_all_xor", &[xor]), ScalarValue::Int64(Some(0b0111)));
        let mut empty = accumulator("binary_all_and", &[longs([])]);
        assert_eq!(empty.evaluate().ok(), Some(ScalarValue::Int64(None)));
    }

    #[test]
    fn count_distinct_exact() {
        let values = longs((0..10_000).map(|i| if i % 7 == 0 { None } else { Some(i % 1000) }));
        assert_eq!(
            run("count_distinct", std::slice::from_ref(&values)),
            ScalarValue::Int64(Some(1000))
        );
        let small = bools((0..10_000).map(|i| Some(i % 1000 < 10)));
        assert_eq!(run("count_distinctif", &[values, small]), ScalarValue::Int64(Some(10)));
        let texts = dynamic(&[Some("a"), Some("b"), None, Some("a")]);
        assert_eq!(run("count_distinct", &[texts]), ScalarValue::Int64(Some(2)));
        let mut empty = accumulator("count_distinct", &[longs([])]);
        assert_eq!(empty.evaluate().ok(), Some(ScalarValue::Int64(Some(0))));
    }

    #[test]
    fn buildschema_documented_example() {
        let values = dynamic(&[
            Some(r#"{"x":1, "y":3.5}"#),
            Some(r#"{"x":"somevalue", "z":[1, 2, 3]}"#),
            None,
            Some(r#"{"y":{"w":"zzz"}, "t":["aa", "bb"], "z":["foo"]}"#),
        ]);
        let mut acc = accumulator("buildschema", std::slice::from_ref(&values));
        acc.update_batch(std::slice::from_ref(&values))
            .unwrap_or_else(|e| panic!("{e}"));
        let expected = r#"{"x":["long","string"],"y":["double",{"w":"string"}],"z":{"`indexer`":["long","string"]},"t":{"`indexer`":"string"}}"#;
        assert_eq!(
            acc.evaluate().ok(),
            Some(ScalarValue::Utf8View(Some(expected.to_string())))
        );
        // Split and merged, the properties may come in another order but the schema is equal.
        let merged = match run_merged(&values) {
            ScalarValue::Utf8View(Some(text)) => serde_json::from_str::<Value>(&text).ok(),
            _ => None,
        };
        assert_eq!(merged, serde_json::from_str::<Value>(expected).ok());
        let mut empty = accumulator("buildschema", &[dynamic(&[])]);
        assert_eq!(empty.evaluate().ok(), Some(ScalarValue::Utf8View(None)));
        let scalars = dynamic(&[Some("1"), Some("2")]);
        assert_eq!(
            run("buildschema", &[scalars]),
            ScalarValue::Utf8View(Some("\"long\"".into()))
        );
    }

    fn run_merged(values: &ArrayRef) -> ScalarValue {
        crate::udaf::testing::run_split("buildschema", std::slice::from_ref(values))
    }
}
