//! KQL's scalar types.

use std::fmt;
use std::str::FromStr;

/// A KQL column type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KqlType {
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

impl KqlType {
    pub fn as_str(self) -> &'static str {
        match self {
            KqlType::Bool => "bool",
            KqlType::Int => "int",
            KqlType::Long => "long",
            KqlType::Real => "real",
            KqlType::Decimal => "decimal",
            KqlType::String => "string",
            KqlType::DateTime => "datetime",
            KqlType::Timespan => "timespan",
            KqlType::Guid => "guid",
            KqlType::Dynamic => "dynamic",
        }
    }

    pub fn is_numeric(self) -> bool {
        matches!(self, KqlType::Int | KqlType::Long | KqlType::Real | KqlType::Decimal)
    }

    /// The type two columns of one name widen to when segments disagree:
    /// `int`→`long`→`real`; any other conflict reads as `dynamic`.
    pub fn widen(self, other: KqlType) -> KqlType {
        use KqlType::*;
        if self == other {
            return self;
        }
        match (self, other) {
            (Int, Long) | (Long, Int) => Long,
            (Int | Long, Real) | (Real, Int | Long) => Real,
            _ => Dynamic,
        }
    }
}

impl fmt::Display for KqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KqlType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "bool" | "boolean" => KqlType::Bool,
            "int" | "int32" => KqlType::Int,
            "long" | "int64" => KqlType::Long,
            "real" | "double" => KqlType::Real,
            "decimal" => KqlType::Decimal,
            "string" => KqlType::String,
            "datetime" | "date" => KqlType::DateTime,
            "timespan" | "time" => KqlType::Timespan,
            "guid" | "uuid" | "uniqueid" => KqlType::Guid,
            "dynamic" => KqlType::Dynamic,
            other => return Err(format!("unknown type '{other}'")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widening_follows_int_long_real_then_dynamic() {
        assert_eq!(KqlType::Int.widen(KqlType::Long), KqlType::Long);
        assert_eq!(KqlType::Long.widen(KqlType::Real), KqlType::Real);
        assert_eq!(KqlType::String.widen(KqlType::Long), KqlType::Dynamic);
        assert_eq!(KqlType::String.widen(KqlType::String), KqlType::String);
    }
}
