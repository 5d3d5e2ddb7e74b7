//! A row-at-a-time aggregate: the shared machinery behind the registered KQL aggregates
//! (the aggregate counterpart of [`crate::rowfn`]).
//!
//! An aggregate body is a [`RowAgg`]: it sees one row's arguments at a time (as
//! [`Val`]s, already converted by the planner to the declared kinds), keeps its own state,
//! serializes that state to bytes (one `Binary` state field, so that DataFusion's partial and
//! final aggregation can move it between partitions) and merges serialized states of other
//! accumulators. Its result is an [`Out`], converted to the return type.

use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};

use crate::registry::ReturnRule;
use crate::rowfn::{Out, Val, array_val, to_scalar};
use crate::types::arrow_type;

/// The state and logic of one aggregate over one group.
pub trait RowAgg: Debug + Send + Sync {
    /// Adds one input row (nulls included: the body decides what to skip).
    fn update(&mut self, row: &[Val]) -> Result<()>;
    /// The state, serialized.
    fn state(&self) -> Vec<u8>;
    /// Merges a state serialized by [`RowAgg::state`] of the same aggregate.
    fn merge(&mut self, state: &[u8]) -> Result<()>;
    /// The result.
    fn evaluate(&self) -> Result<Out>;
    /// Approximate heap size in bytes.
    fn size(&self) -> usize {
        0
    }
}

/// Builds a fresh aggregate state for a call (given its return type and input types).
pub type MakeAgg = fn(&DataType, &[DataType]) -> Result<Box<dyn RowAgg>>;

/// A UDAF whose accumulator is a [`RowAgg`].
#[derive(Debug)]
pub struct RowUdaf {
    name: &'static str,
    returns: ReturnRule,
    make: MakeAgg,
    signature: Signature,
}

impl RowUdaf {
    pub fn udaf(name: &'static str, returns: ReturnRule, make: MakeAgg) -> AggregateUDF {
        AggregateUDF::from(RowUdaf {
            name,
            returns,
            make,
            signature: Signature::variadic_any(Volatility::Immutable),
        })
    }
}

impl PartialEq for RowUdaf {
    fn eq(&self, other: &RowUdaf) -> bool {
        self.name == other.name && self.returns == other.returns
    }
}

impl Eq for RowUdaf {}

impl Hash for RowUdaf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl AggregateUDFImpl for RowUdaf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.returns {
            ReturnRule::Fixed(kql_type) => arrow_type(kql_type),
            ReturnRule::SameAsArg(i) => match arg_types.get(i) {
                Some(DataType::Null) | None => DataType::Float64,
                Some(t) => t.clone(),
            },
        })
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let input_types: Vec<DataType> = acc_args.expr_fields.iter().map(|f| f.data_type().clone()).collect();
        let target = acc_args.return_type().clone();
        let inner = (self.make)(&target, &input_types).map_err(|e| e.context(format!("in {}()", self.name)))?;
        Ok(Box::new(RowAccumulator {
            name: self.name,
            inner,
            target,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "state"),
            DataType::Binary,
            true,
        ))])
    }
}

/// The DataFusion accumulator around a [`RowAgg`].
#[derive(Debug)]
pub struct RowAccumulator {
    name: &'static str,
    inner: Box<dyn RowAgg>,
    target: DataType,
}

impl RowAccumulator {
    fn context(&self, e: DataFusionError) -> DataFusionError {
        e.context(format!("in {}()", self.name))
    }
}

impl Accumulator for RowAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let rows = values.first().map_or(0, |a| a.len());
        let mut row: Vec<Val> = Vec::with_capacity(values.len());
        for i in 0..rows {
            row.clear();
            for array in values {
                row.push(array_val(array, i)?);
            }
            self.inner.update(&row).map_err(|e| self.context(e))?;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let out = self.inner.evaluate().map_err(|e| self.context(e))?;
        to_scalar(out, &self.target)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.inner.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.inner.state()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(array) = states.first() else {
            return Ok(());
        };
        match array.data_type() {
            DataType::Binary => {
                let binary = array.as_binary::<i32>();
                for i in 0..binary.len() {
                    if binary.is_valid(i) {
                        self.inner.merge(binary.value(i)).map_err(|e| self.context(e))?;
                    }
                }
            }
            DataType::LargeBinary => {
                let binary = array.as_binary::<i64>();
                for i in 0..binary.len() {
                    if binary.is_valid(i) {
                        self.inner.merge(binary.value(i)).map_err(|e| self.context(e))?;
                    }
                }
            }
            DataType::BinaryView => {
                let binary = array.as_binary_view();
                for i in 0..binary.len() {
                    if binary.is_valid(i) {
                        self.inner.merge(binary.value(i)).map_err(|e| self.context(e))?;
                    }
                }
            }
            other => return exec_err!("unexpected state type {other}"),
        }
        Ok(())
    }
}

/// Writes a serialized state.
#[derive(Debug, Default)]
pub struct StateWriter(pub Vec<u8>);

impl StateWriter {
    pub fn new() -> StateWriter {
        StateWriter(Vec::new())
    }

    pub fn u8(&mut self, v: u8) -> &mut StateWriter {
        self.0.push(v);
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut StateWriter {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut StateWriter {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn f64(&mut self, v: f64) -> &mut StateWriter {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn bytes(&mut self, v: &[u8]) -> &mut StateWriter {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }

    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Reads a serialized state; a truncated state is an execution error.
#[derive(Debug)]
pub struct StateReader<'a> {
    data: &'a [u8],
}

impl<'a> StateReader<'a> {
    pub fn new(data: &'a [u8]) -> StateReader<'a> {
        StateReader { data }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.data.len() < n {
            return exec_err!("corrupt aggregate state");
        }
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        Ok(head)
    }

    fn array8(&mut self) -> Result<[u8; 8]> {
        let mut out = [0u8; 8];
        out.copy_from_slice(self.take(8)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array8()?))
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array8()?))
    }

    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array8()?))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n =
            usize::try_from(self.u64()?).map_err(|_| DataFusionError::Execution("corrupt aggregate state".into()))?;
        self.take(n)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Whether a row's condition argument is true (null and false skip the row).
pub fn cond(v: Val<'_>) -> bool {
    matches!(v, Val::Bool(true)) || matches!(v, Val::Long(n) if n != 0)
}

/// Test helpers: drive an accumulator built by a registered aggregate directly.
#[cfg(test)]
pub mod testing {
    use datafusion::arrow::array::ArrayRef;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::Accumulator;

    use super::RowAccumulator;
    use crate::aggregate_registry::lookup;
    use crate::registry::ReturnRule;
    use crate::types::arrow_type;

    /// The array an aggregate's state evaluates to after going through a serialized state (as a
    /// partial aggregation hands it on); empty when the result is not an array.
    pub fn merged_array(agg: &dyn super::RowAgg, mut fresh: Box<dyn super::RowAgg>) -> Vec<serde_json::Value> {
        assert!(fresh.merge(&agg.state()).is_ok(), "the state merges");
        let Ok(crate::rowfn::Out::Str(text)) = fresh.evaluate() else {
            return Vec::new();
        };
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    /// A fresh accumulator of the registered aggregate `name` over inputs like `inputs`.
    pub fn accumulator(name: &str, inputs: &[ArrayRef]) -> RowAccumulator {
        let Some(registered) = lookup(name) else {
            panic!("no aggregate {name}");
        };
        let types: Vec<_> = inputs.iter().map(|a| a.data_type().clone()).collect();
        let target = match registered.returns {
            ReturnRule::Fixed(t) => arrow_type(t),
            ReturnRule::SameAsArg(i) => types[i].clone(),
        };
        let udaf = (registered.udaf)();
        let any: &dyn std::any::Any = udaf.inner().as_ref();
        let inner = match any.downcast_ref::<super::RowUdaf>() {
            Some(row) => match (row.make)(&target, &types) {
                Ok(inner) => inner,
                Err(e) => panic!("{e}"),
            },
            None => panic!("{name} is not a RowUdaf"),
        };
        RowAccumulator {
            name: "test",
            inner,
            target,
        }
    }

    /// Runs `name` over `inputs`: all at once, and split in two accumulators whose states
    /// are merged into a third. Checks both agree and returns the result.
    pub fn run(name: &str, inputs: &[ArrayRef]) -> ScalarValue {
        let mut whole = accumulator(name, inputs);
        whole.update_batch(inputs).expect("update");
        let expected = whole.evaluate().expect("evaluate");
        let merged = run_split(name, inputs);
        match (&merged, &expected) {
            (ScalarValue::Float64(Some(a)), ScalarValue::Float64(Some(b))) => {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{name}: merged partial states disagree: {a} vs {b}"
                );
            }
            _ => assert_eq!(merged, expected, "{name}: merged partial states disagree"),
        }
        expected
    }

    /// Splits the rows in two halves, aggregates each, merges both states (and an empty
    /// accumulator's state) into a fresh accumulator.
    pub fn run_split(name: &str, inputs: &[ArrayRef]) -> ScalarValue {
        let rows = inputs.first().map_or(0, |a| a.len());
        let half = rows / 2;
        let first: Vec<ArrayRef> = inputs.iter().map(|a| a.slice(0, half)).collect();
        let second: Vec<ArrayRef> = inputs.iter().map(|a| a.slice(half, rows - half)).collect();
        let mut a = accumulator(name, inputs);
        let mut b = accumulator(name, inputs);
        let mut empty = accumulator(name, inputs);
        a.update_batch(&first).expect("update a");
        b.update_batch(&second).expect("update b");
        let states: Vec<ScalarValue> = [a.state(), empty.state(), b.state()]
            .into_iter()
            .flat_map(|s| s.expect("state"))
            .collect();
        let array = ScalarValue::iter_to_array(states).expect("state array");
        let mut c = accumulator(name, inputs);
        c.merge_batch(&[array]).expect("merge");
        c.evaluate().expect("evaluate merged")
    }
}
