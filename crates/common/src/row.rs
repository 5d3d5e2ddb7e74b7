//! The neutral row model: what protocol mappings (`intake`) produce and the write path
//! (`storage`) turns into Arrow batches. A row is an ordered list of named cells; a table is
//! wide and sparse, so rows of different shapes live together and a missing cell reads as null.

use crate::types::KqlType;

/// One cell value, typed as KQL types it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Long(i64),
    Real(f64),
    String(String),
    /// Nanoseconds since the Unix epoch, UTC.
    DateTime(i64),
    /// Nanoseconds. (KQL counts timespans in 100 ns ticks; storage keeps nanoseconds.)
    Timespan(i64),
    /// A JSON-like value: property bag, array or scalar.
    Dynamic(serde_json::Value),
}

impl Value {
    pub fn kql_type(&self) -> KqlType {
        match self {
            Value::Bool(_) => KqlType::Bool,
            Value::Long(_) => KqlType::Long,
            Value::Real(_) => KqlType::Real,
            Value::String(_) => KqlType::String,
            Value::DateTime(_) => KqlType::DateTime,
            Value::Timespan(_) => KqlType::Timespan,
            Value::Dynamic(_) => KqlType::Dynamic,
        }
    }
}

/// One telemetry row: cells in insertion order. Column names are the fixed names of the
/// SPEC's row layouts, so they are `'static`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub cells: Vec<(&'static str, Value)>,
}

impl Row {
    pub fn with_capacity(n: usize) -> Row {
        Row {
            cells: Vec::with_capacity(n),
        }
    }
    pub fn push(&mut self, column: &'static str, value: Value) {
        self.cells.push((column, value));
    }
    pub fn get(&self, column: &str) -> Option<&Value> {
        self.cells.iter().find(|(name, _)| *name == column).map(|(_, v)| v)
    }
    pub fn set(&mut self, column: &'static str, value: Value) {
        match self.cells.iter_mut().find(|(name, _)| *name == column) {
            Some(cell) => cell.1 = value,
            None => self.cells.push((column, value)),
        }
    }
    pub fn remove(&mut self, column: &str) -> Option<Value> {
        let index = self.cells.iter().position(|(name, _)| *name == column)?;
        Some(self.cells.remove(index).1)
    }
}
