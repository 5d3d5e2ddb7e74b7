//! Literal values and KQL scalar types.

/// A KQL scalar type, as written in typed literals, `typeof(...)`, function parameters and
/// `datatable` columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    Bool,
    Int,
    Long,
    Real,
    Decimal,
    String,
    DateTime,
    Timespan,
    Guid,
    Dynamic,
}

impl ScalarType {
    /// Reads a type name, accepting KQL's aliases (`boolean`, `double`, `date`, `time`, ...).
    pub fn from_name(name: &str) -> Option<ScalarType> {
        Some(match name {
            "bool" | "boolean" => ScalarType::Bool,
            "int" | "int32" => ScalarType::Int,
            "long" | "int64" => ScalarType::Long,
            "real" | "double" => ScalarType::Real,
            "decimal" => ScalarType::Decimal,
            "string" => ScalarType::String,
            "datetime" | "date" => ScalarType::DateTime,
            "timespan" | "time" => ScalarType::Timespan,
            "guid" | "uniqueid" => ScalarType::Guid,
            "dynamic" => ScalarType::Dynamic,
            _ => return None,
        })
    }

    /// The canonical name (`long`, `datetime`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::Int => "int",
            ScalarType::Long => "long",
            ScalarType::Real => "real",
            ScalarType::Decimal => "decimal",
            ScalarType::String => "string",
            ScalarType::DateTime => "datetime",
            ScalarType::Timespan => "timespan",
            ScalarType::Guid => "guid",
            ScalarType::Dynamic => "dynamic",
        }
    }
}

/// A literal value. Numbers keep their KQL type: `42` is `Long`, `int(42)` is `Int`.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `null` of a type (`int(null)`, `datetime(null)`), or the bare word `null` (`None`).
    Null(Option<ScalarType>),
    /// `true`, `false`, `bool(...)`.
    Bool(bool),
    /// `int(...)`.
    Int(i32),
    /// `42`, `0x2A`, `long(...)`.
    Long(i64),
    /// `1.5`, `1e3`, `real(...)`, `real(nan)`, `real(+inf)`.
    Real(f64),
    /// `decimal(...)`, kept as written so that no precision is lost.
    Decimal(String),
    /// Any string form: quoted, verbatim `@"..."`, multi-line, obfuscated `h"..."`, and
    /// adjacent literals concatenated.
    String(String),
    /// `datetime(...)`, in nanoseconds since the Unix epoch (UTC).
    DateTime(i64),
    /// `1d`, `30m`, `time(...)`, `timespan(...)`, in nanoseconds.
    Timespan(i64),
    /// `guid(...)`, lowercase canonical text `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    Guid(String),
    /// `dynamic(...)`.
    Dynamic(DynamicValue),
}

/// The body of a `dynamic(...)` literal: a JSON-like value that may also hold KQL literals.
#[derive(Debug, Clone, PartialEq)]
pub enum DynamicValue {
    Null,
    Bool(bool),
    Long(i64),
    Real(f64),
    String(String),
    /// A `datetime(...)` inside a dynamic value, in nanoseconds since the epoch.
    DateTime(i64),
    /// A timespan inside a dynamic value, in nanoseconds.
    Timespan(i64),
    /// A `guid(...)` inside a dynamic value.
    Guid(String),
    Array(Vec<DynamicValue>),
    /// Keys in the order written.
    Object(Vec<(String, DynamicValue)>),
}
