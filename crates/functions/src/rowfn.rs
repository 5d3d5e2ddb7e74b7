//! A row-at-a-time UDF: the shared machinery behind most registered KQL functions.
//!
//! A function body is a plain `fn(&[Val]) -> Result<Out>`: it sees one row's arguments
//! (already converted by the planner to the declared [`ArgKind`](crate::registry::ArgKind)s)
//! and returns one value, which is converted to the call's return type. Scalar-only calls
//! give a scalar result.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, DurationNanosecondType, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use regex::Regex;

use crate::registry::ReturnRule;
use crate::types::arrow_type;

/// One argument value of one row. Strings and dynamic values (JSON text) are both `Str`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'a> {
    Null,
    Str(&'a str),
    Bool(bool),
    /// Any integer type.
    Long(i64),
    Real(f64),
    /// Nanoseconds since the Unix epoch.
    DateTime(i64),
    /// Nanoseconds.
    Timespan(i64),
}

impl<'a> Val<'a> {
    pub fn str(self) -> Option<&'a str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn long(self) -> Option<i64> {
        match self {
            Val::Long(v) => Some(v),
            Val::Real(v) if v.is_finite() => Some(v as i64),
            Val::Bool(b) => Some(b as i64),
            _ => None,
        }
    }

    pub fn real(self) -> Option<f64> {
        match self {
            Val::Real(v) => Some(v),
            Val::Long(v) => Some(v as f64),
            Val::Bool(b) => Some(b as i64 as f64),
            _ => None,
        }
    }

    pub fn bool(self) -> Option<bool> {
        match self {
            Val::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn datetime(self) -> Option<i64> {
        match self {
            Val::DateTime(v) => Some(v),
            _ => None,
        }
    }

    pub fn timespan(self) -> Option<i64> {
        match self {
            Val::Timespan(v) => Some(v),
            _ => None,
        }
    }

    pub fn is_null(self) -> bool {
        matches!(self, Val::Null)
    }
}

/// A result value, converted to the call's return type.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Null,
    Str(String),
    Bool(bool),
    Long(i64),
    Real(f64),
    DateTime(i64),
    Timespan(i64),
}

impl From<Option<String>> for Out {
    fn from(v: Option<String>) -> Out {
        v.map_or(Out::Null, Out::Str)
    }
}

impl From<Option<i64>> for Out {
    fn from(v: Option<i64>) -> Out {
        v.map_or(Out::Null, Out::Long)
    }
}

impl From<Option<f64>> for Out {
    fn from(v: Option<f64>) -> Out {
        v.map_or(Out::Null, Out::Real)
    }
}

impl From<Option<bool>> for Out {
    fn from(v: Option<bool>) -> Out {
        v.map_or(Out::Null, Out::Bool)
    }
}

impl From<Val<'_>> for Out {
    fn from(v: Val<'_>) -> Out {
        match v {
            Val::Null => Out::Null,
            Val::Str(s) => Out::Str(s.to_string()),
            Val::Bool(b) => Out::Bool(b),
            Val::Long(n) => Out::Long(n),
            Val::Real(r) => Out::Real(r),
            Val::DateTime(t) => Out::DateTime(t),
            Val::Timespan(t) => Out::Timespan(t),
        }
    }
}

/// The body of a row function.
pub type RowFn = fn(&[Val]) -> Result<Out>;

/// A UDF that evaluates a [`RowFn`] row by row.
#[derive(Debug)]
pub struct RowUdf {
    name: &'static str,
    returns: ReturnRule,
    eval: RowFn,
    signature: Signature,
}

impl RowUdf {
    pub fn new(name: &'static str, returns: ReturnRule, eval: RowFn) -> RowUdf {
        RowUdf::with_volatility(name, returns, eval, Volatility::Immutable)
    }

    fn with_volatility(name: &'static str, returns: ReturnRule, eval: RowFn, volatility: Volatility) -> RowUdf {
        let signature = Signature::one_of(vec![TypeSignature::Nullary, TypeSignature::VariadicAny], volatility);
        RowUdf {
            name,
            returns,
            eval,
            signature,
        }
    }

    pub fn udf(name: &'static str, returns: ReturnRule, eval: RowFn) -> ScalarUDF {
        ScalarUDF::from(RowUdf::new(name, returns, eval))
    }

    /// A function whose value changes from call to call (`rand()`, `new_guid()`): never
    /// folded into a constant, and evaluated once per row even when its arguments are
    /// constants.
    pub fn volatile_udf(name: &'static str, returns: ReturnRule, eval: RowFn) -> ScalarUDF {
        ScalarUDF::from(RowUdf::with_volatility(name, returns, eval, Volatility::Volatile))
    }

    fn is_volatile(&self) -> bool {
        self.signature.volatility == Volatility::Volatile
    }
}

impl PartialEq for RowUdf {
    fn eq(&self, other: &RowUdf) -> bool {
        self.name == other.name && self.returns == other.returns
    }
}

impl Eq for RowUdf {}

impl Hash for RowUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for RowUdf {
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
                Some(DataType::Null) | None => DataType::Utf8View,
                Some(t) => t.clone(),
            },
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let target = args.return_field.data_type().clone();
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = args
            .args
            .iter()
            .find_map(|a| match a {
                ColumnarValue::Array(array) => Some(array.len()),
                ColumnarValue::Scalar(_) => None,
            })
            .unwrap_or(args.number_rows);
        let mut row: Vec<Val> = Vec::with_capacity(args.args.len());
        if scalar && !self.is_volatile() {
            for arg in &args.args {
                if let ColumnarValue::Scalar(s) = arg {
                    row.push(scalar_val(s)?);
                }
            }
            crate::json::set_caller(self.name);
            let out = (self.eval)(&row).map_err(|e| self.context(e))?;
            if let Some(refused) = crate::json::take_refusal() {
                return Err(crate::util::memory_error(refused));
            }
            return Ok(ColumnarValue::Scalar(to_scalar(out, &target)?));
        }
        let mut values = Vec::with_capacity(rows);
        // What the batch's results take (each value, then the array built from them), asked
        // of the query's memory as they grow: a column of long results stops near the limit.
        let mut built = crate::util::Built::new(self.name);
        crate::json::set_caller(self.name);
        for i in 0..rows {
            row.clear();
            for arg in &args.args {
                row.push(match arg {
                    ColumnarValue::Scalar(s) => scalar_val(s)?,
                    ColumnarValue::Array(a) => array_val(a, i)?,
                });
            }
            let out = (self.eval)(&row).map_err(|e| self.context(e))?;
            if let Some(refused) = crate::json::take_refusal() {
                return Err(crate::util::memory_error(refused));
            }
            built.add(out_bytes(&out))?;
            values.push(to_scalar(out, &target)?);
        }
        if values.is_empty() {
            return Ok(ColumnarValue::Array(datafusion::arrow::array::new_empty_array(&target)));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(values)?))
    }
}

/// Bytes a result value takes as a scalar and again in the array built from it.
fn out_bytes(out: &Out) -> usize {
    const SCALAR: usize = std::mem::size_of::<ScalarValue>();
    match out {
        Out::Str(text) => SCALAR + 2 * text.len() + 16,
        _ => SCALAR + 16,
    }
}

impl RowUdf {
    fn context(&self, e: DataFusionError) -> DataFusionError {
        e.context(format!("in {}()", self.name))
    }
}

/// The value of a scalar argument.
pub fn scalar_val(scalar: &ScalarValue) -> Result<Val<'_>> {
    use ScalarValue as S;
    Ok(match scalar {
        s if s.is_null() => Val::Null,
        S::Utf8(Some(s)) | S::Utf8View(Some(s)) | S::LargeUtf8(Some(s)) => Val::Str(s),
        S::Boolean(Some(b)) => Val::Bool(*b),
        S::Int8(Some(v)) => Val::Long(*v as i64),
        S::Int16(Some(v)) => Val::Long(*v as i64),
        S::Int32(Some(v)) => Val::Long(*v as i64),
        S::Int64(Some(v)) => Val::Long(*v),
        S::UInt8(Some(v)) => Val::Long(*v as i64),
        S::UInt16(Some(v)) => Val::Long(*v as i64),
        S::UInt32(Some(v)) => Val::Long(*v as i64),
        S::UInt64(Some(v)) => Val::Long(*v as i64),
        S::Float32(Some(v)) => Val::Real(*v as f64),
        S::Float64(Some(v)) => Val::Real(*v),
        S::TimestampNanosecond(Some(v), _) => Val::DateTime(*v),
        S::TimestampMicrosecond(Some(v), _) => Val::DateTime(v.saturating_mul(1_000)),
        S::TimestampMillisecond(Some(v), _) => Val::DateTime(v.saturating_mul(1_000_000)),
        S::TimestampSecond(Some(v), _) => Val::DateTime(v.saturating_mul(1_000_000_000)),
        S::DurationNanosecond(Some(v)) => Val::Timespan(*v),
        other => return exec_err!("unsupported argument type {}", other.data_type()),
    })
}

/// The value in row `i` of an array argument.
pub fn array_val(array: &ArrayRef, i: usize) -> Result<Val<'_>> {
    if array.is_null(i) {
        return Ok(Val::Null);
    }
    Ok(match array.data_type() {
        DataType::Utf8 => Val::Str(array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Val::Str(array.as_string::<i64>().value(i)),
        DataType::Utf8View => Val::Str(array.as_string_view().value(i)),
        DataType::Boolean => Val::Bool(array.as_boolean().value(i)),
        DataType::Int8 => Val::Long(array.as_primitive::<Int8Type>().value(i) as i64),
        DataType::Int16 => Val::Long(array.as_primitive::<Int16Type>().value(i) as i64),
        DataType::Int32 => Val::Long(array.as_primitive::<Int32Type>().value(i) as i64),
        DataType::Int64 => Val::Long(array.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => Val::Long(array.as_primitive::<UInt8Type>().value(i) as i64),
        DataType::UInt16 => Val::Long(array.as_primitive::<UInt16Type>().value(i) as i64),
        DataType::UInt32 => Val::Long(array.as_primitive::<UInt32Type>().value(i) as i64),
        DataType::UInt64 => Val::Long(array.as_primitive::<UInt64Type>().value(i) as i64),
        DataType::Float32 => Val::Real(array.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => Val::Real(array.as_primitive::<Float64Type>().value(i)),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            Val::DateTime(array.as_primitive::<TimestampNanosecondType>().value(i))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => Val::DateTime(
            array
                .as_primitive::<TimestampMicrosecondType>()
                .value(i)
                .saturating_mul(1_000),
        ),
        DataType::Timestamp(TimeUnit::Millisecond, _) => Val::DateTime(
            array
                .as_primitive::<TimestampMillisecondType>()
                .value(i)
                .saturating_mul(1_000_000),
        ),
        DataType::Timestamp(TimeUnit::Second, _) => Val::DateTime(
            array
                .as_primitive::<TimestampSecondType>()
                .value(i)
                .saturating_mul(1_000_000_000),
        ),
        DataType::Duration(TimeUnit::Nanosecond) => {
            Val::Timespan(array.as_primitive::<DurationNanosecondType>().value(i))
        }
        DataType::Null => Val::Null,
        other => return exec_err!("unsupported argument type {other}"),
    })
}

/// Converts a result to a scalar of the return type.
pub fn to_scalar(out: Out, target: &DataType) -> Result<ScalarValue> {
    use ScalarValue as S;
    if out == Out::Null {
        return S::try_from(target);
    }
    let mismatch = |out: &Out| exec_err!("cannot return {out:?} as {target}");
    Ok(match target {
        DataType::Utf8View | DataType::Utf8 | DataType::LargeUtf8 => {
            let text = match out {
                Out::Str(s) => s,
                Out::Bool(b) => b.to_string(),
                Out::Long(n) => n.to_string(),
                Out::Real(r) => crate::json::real_text(r),
                other => return mismatch(&other),
            };
            match target {
                DataType::Utf8 => S::Utf8(Some(text)),
                DataType::LargeUtf8 => S::LargeUtf8(Some(text)),
                _ => S::Utf8View(Some(text)),
            }
        }
        DataType::Int64 => match out {
            Out::Long(n) => S::Int64(Some(n)),
            Out::Real(r) if r.is_finite() => S::Int64(Some(r as i64)),
            Out::Real(_) => S::Int64(None),
            Out::Bool(b) => S::Int64(Some(b as i64)),
            other => return mismatch(&other),
        },
        DataType::Int32 => match out {
            Out::Long(n) => S::Int32(i32::try_from(n).ok()),
            Out::Real(r) if r.is_finite() => S::Int32(Some(r as i32)),
            Out::Real(_) => S::Int32(None),
            Out::Bool(b) => S::Int32(Some(b as i32)),
            other => return mismatch(&other),
        },
        DataType::Float64 => match out {
            Out::Real(r) => S::Float64(Some(r)),
            Out::Long(n) => S::Float64(Some(n as f64)),
            Out::Bool(b) => S::Float64(Some(b as i64 as f64)),
            other => return mismatch(&other),
        },
        DataType::Boolean => match out {
            Out::Bool(b) => S::Boolean(Some(b)),
            Out::Long(n) => S::Boolean(Some(n != 0)),
            other => return mismatch(&other),
        },
        DataType::Timestamp(TimeUnit::Nanosecond, tz) => match out {
            Out::DateTime(t) => S::TimestampNanosecond(Some(t), tz.clone()),
            other => return mismatch(&other),
        },
        DataType::Duration(TimeUnit::Nanosecond) => match out {
            Out::Timespan(t) => S::DurationNanosecond(Some(t)),
            other => return mismatch(&other),
        },
        _ => return mismatch(&out),
    })
}

thread_local! {
    static REGEXES: RefCell<HashMap<String, Regex>> = RefCell::new(HashMap::new());
}

/// Calls `f` with the compiled regex `pattern` (cached per thread). An invalid pattern is an
/// execution error.
pub fn with_regex<R>(pattern: &str, f: impl FnOnce(&Regex) -> R) -> Result<R> {
    let cached = REGEXES.with(|cache| cache.borrow().get(pattern).cloned());
    let regex = match cached {
        Some(regex) => regex,
        None => {
            let regex = Regex::new(pattern)
                .map_err(|e| DataFusionError::Execution(format!("invalid regular expression: {e}")))?;
            REGEXES.with(|cache| {
                let mut cache = cache.borrow_mut();
                if cache.len() > 256 {
                    cache.clear();
                }
                cache.insert(pattern.to_string(), regex.clone());
            });
            regex
        }
    };
    Ok(f(&regex))
}

/// The argument at `i`, `Val::Null` when absent.
pub fn arg<'a>(args: &[Val<'a>], i: usize) -> Val<'a> {
    args.get(i).copied().unwrap_or(Val::Null)
}

/// The string argument at `i`; `""` when absent or null.
pub fn str_arg<'a>(args: &[Val<'a>], i: usize) -> &'a str {
    arg(args, i).str().unwrap_or("")
}
