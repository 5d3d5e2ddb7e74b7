//! Helpers for UDF bodies: string arguments in any of Arrow's string layouts.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, Signature, TypeSignature, Volatility};

/// A string argument, either one value or one per row.
pub enum StringArg<'a> {
    Scalar(Option<String>),
    Array(&'a ArrayRef),
}

impl<'a> StringArg<'a> {
    pub fn from_columnar(value: &'a ColumnarValue) -> Result<StringArg<'a>> {
        Ok(match value {
            ColumnarValue::Scalar(scalar) => StringArg::Scalar(scalar_string(scalar)?),
            ColumnarValue::Array(array) => StringArg::Array(array),
        })
    }

    /// Calls `f` with the value of row `i` (`None` for null).
    #[inline]
    pub fn with_value<R>(&self, i: usize, f: impl FnOnce(Option<&str>) -> R) -> R {
        match self {
            StringArg::Scalar(s) => f(s.as_deref()),
            StringArg::Array(array) => f(string_at(array, i)),
        }
    }
}

/// The string in row `i` of a string array of any layout (`None` when null or not a string).
#[inline]
pub fn string_at(array: &ArrayRef, i: usize) -> Option<&str> {
    if array.is_null(i) {
        return None;
    }
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(i)),
        DataType::Utf8View => Some(array.as_string_view().value(i)),
        _ => None,
    }
}

pub fn scalar_string(scalar: &ScalarValue) -> Result<Option<String>> {
    match scalar {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => Ok(s.clone()),
        ScalarValue::Null => Ok(None),
        other => exec_err!("expected a string, found {}", other.data_type()),
    }
}

/// Number of rows of a call: the length of any array argument, else 1.
pub fn rows_of(args: &[ColumnarValue], number_rows: usize) -> usize {
    args.iter()
        .find_map(|a| match a {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        })
        .unwrap_or(number_rows)
}

/// Whether every argument is a scalar (then the result is a scalar too).
pub fn all_scalar(args: &[ColumnarValue]) -> bool {
    args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)))
}

/// Applies `f` to the first argument's strings, row by row (once when every argument is a
/// scalar), and returns Utf8View; `f` returning `None` gives null.
pub fn map_strings(
    args: &[ColumnarValue],
    number_rows: usize,
    f: impl Fn(Option<&str>) -> Option<String>,
) -> Result<ColumnarValue> {
    use datafusion::arrow::array::StringViewBuilder;
    let rows = rows_of(args, number_rows);
    let input = StringArg::from_columnar(&args[0])?;
    if all_scalar(args) {
        return Ok(ColumnarValue::Scalar(ScalarValue::Utf8View(input.with_value(0, &f))));
    }
    let mut builder = StringViewBuilder::with_capacity(rows);
    for i in 0..rows {
        match input.with_value(i, &f) {
            Some(text) => builder.append_value(text),
            None => builder.append_null(),
        }
    }
    Ok(ColumnarValue::Array(std::sync::Arc::new(builder.finish())))
}

/// The signature of a function of two strings (a haystack and a needle), each in any of
/// Arrow's string layouts.
pub fn two_strings() -> Signature {
    let strings = [DataType::Utf8View, DataType::Utf8, DataType::LargeUtf8];
    let mut variants = Vec::new();
    for a in &strings {
        for b in &strings {
            variants.push(TypeSignature::Exact(vec![a.clone(), b.clone()]));
        }
    }
    Signature::one_of(variants, Volatility::Immutable)
}

/// A query's memory limit reached while a function built its result, as the error
/// DataFusion carries (the engine turns it back into the account's reason).
pub fn memory_error(exceeded: trawl_common::memory::MemoryExceeded) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::ResourcesExhausted(exceeded.to_string())
}

/// Texts longer than this are split into pieces under a meter ([`Built`]): the pieces of a
/// shorter one (at most a few MiB of values) are counted with the function's result.
pub const METERED_TEXT: usize = 64 << 10;

/// A meter of what a function builds for one call (see `trawl_common::memory::OutputMeter`),
/// whose refusals are DataFusion errors.
#[derive(Debug)]
pub struct Built(trawl_common::memory::OutputMeter);

impl Built {
    /// A meter for the function or aggregate `name` (a registered name, `kql_` prefix and
    /// all), named as KQL users write it in messages.
    pub fn new(name: &str) -> Built {
        Built(trawl_common::memory::OutputMeter::new(format!("{}()", kql_name(name))))
    }

    /// A meter for what the KQL operator `name` (`mv-expand`, `make-series`) builds.
    pub fn operator(name: &str) -> Built {
        Built(trawl_common::memory::OutputMeter::new(name))
    }

    /// Counts `bytes` more of the result.
    pub fn add(&mut self, bytes: usize) -> Result<()> {
        self.0.add(bytes).map_err(memory_error)
    }

    /// Asks up front for `bytes` about to be built at once.
    pub fn reserve(&mut self, bytes: usize) -> Result<()> {
        self.0.reserve(bytes).map_err(memory_error)
    }

    /// Asks for the room `items` takes when it next grows, before a push that would grow it:
    /// a vector doubles in one step, holding the old and the new buffer at once, which a
    /// meter counting piece by piece would see only after the fact.
    pub fn room_for_one_more<T>(&mut self, items: &Vec<T>) -> Result<()> {
        if items.len() < items.capacity() {
            return Ok(());
        }
        let grown = items.capacity().max(4).saturating_mul(std::mem::size_of::<T>());
        self.reserve(grown)
    }
}

/// A registered function's name as KQL users write it (`kql_strcat` is `strcat`).
pub fn kql_name(name: &str) -> &str {
    name.strip_prefix("kql_").unwrap_or(name)
}
