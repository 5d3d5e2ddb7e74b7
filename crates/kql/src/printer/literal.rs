//! Printing literals so that they read back as the same typed value.

use std::fmt::{self, Display, Formatter, Write};

use trawl_common::time::format_datetime;

use crate::ast::{DynamicValue, Literal, ScalarType};

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null(None) => f.write_str("null"),
            Literal::Null(Some(ty)) => write!(f, "{}(null)", ty.name()),
            Literal::Bool(value) => write!(f, "{value}"),
            Literal::Int(value) => write!(f, "int({value})"),
            Literal::Long(value) if *value < 0 => write!(f, "long({value})"),
            Literal::Long(value) => write!(f, "{value}"),
            Literal::Real(value) => write_real(f, *value),
            Literal::Decimal(text) => write!(f, "decimal({text})"),
            Literal::String(text) => write_string(f, text),
            Literal::DateTime(nanos) => write!(f, "datetime({})", format_datetime(*nanos)),
            Literal::Timespan(nanos) => write_timespan(f, *nanos),
            Literal::Guid(text) => write!(f, "guid({text})"),
            Literal::Dynamic(value) => write!(f, "dynamic({value})"),
        }
    }
}

impl Display for ScalarType {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn write_real(f: &mut Formatter<'_>, value: f64) -> fmt::Result {
    if value.is_nan() {
        f.write_str("real(nan)")
    } else if value.is_infinite() {
        f.write_str(if value > 0.0 { "real(+inf)" } else { "real(-inf)" })
    } else if value.is_sign_negative() {
        write!(f, "real({value:?})")
    } else {
        write!(f, "{value:?}")
    }
}

/// A double-quoted string with backslash escapes.
pub(crate) fn write_string(f: &mut Formatter<'_>, text: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

const TIMESPAN_UNITS: [(i64, &str); 7] = [
    (86_400_000_000_000, "d"),
    (3_600_000_000_000, "h"),
    (60_000_000_000, "m"),
    (1_000_000_000, "s"),
    (1_000_000, "ms"),
    (1_000, "microsecond"),
    (100, "tick"),
];

/// `1d`, `90m`; negative or sub-tick values as `timespan(...)`.
fn write_timespan(f: &mut Formatter<'_>, nanos: i64) -> fmt::Result {
    let magnitude = nanos.unsigned_abs();
    let unit = TIMESPAN_UNITS
        .iter()
        .find(|(unit_nanos, _)| magnitude.is_multiple_of(*unit_nanos as u64));
    match unit {
        Some((unit_nanos, name)) => {
            let count = magnitude / (*unit_nanos as u64);
            if nanos < 0 {
                write!(f, "timespan(-{count}{name})")
            } else {
                write!(f, "{count}{name}")
            }
        }
        None => {
            let sign = if nanos < 0 { "-" } else { "" };
            let seconds = magnitude / 1_000_000_000;
            let fraction = magnitude % 1_000_000_000;
            let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
            write!(
                f,
                "timespan({sign}{days}.{hours:02}:{minutes:02}:{:02}.{fraction:09})",
                seconds % 60
            )
        }
    }
}

impl Display for DynamicValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DynamicValue::Null => f.write_str("null"),
            DynamicValue::Bool(value) => write!(f, "{value}"),
            DynamicValue::Long(value) => write!(f, "{value}"),
            DynamicValue::Real(value) if value.is_finite() => write!(f, "{value:?}"),
            DynamicValue::Real(value) => write_real(f, *value),
            DynamicValue::String(text) => write_string(f, text),
            DynamicValue::DateTime(nanos) => write!(f, "datetime({})", format_datetime(*nanos)),
            DynamicValue::Timespan(nanos) => write_timespan(f, *nanos),
            DynamicValue::Guid(text) => write!(f, "guid({text})"),
            DynamicValue::Array(items) => {
                f.write_str("[")?;
                super::write_list(f, items, |f, item| write!(f, "{item}"))?;
                f.write_str("]")
            }
            DynamicValue::Object(entries) => {
                f.write_str("{")?;
                super::write_list(f, entries, |f, (key, value)| {
                    write_string(f, key)?;
                    write!(f, ": {value}")
                })?;
                f.write_str("}")
            }
        }
    }
}
