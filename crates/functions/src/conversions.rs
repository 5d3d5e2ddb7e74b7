//! `around`, `todecimal`, `hash_many` and `estimate_data_size`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use twox_hash::XxHash64;

use crate::rowfn::{Out, Val, arg};

/// `around(value, center, delta)`: whether `value` lies within `center ± delta`.
pub fn around(args: &[Val]) -> Result<Out> {
    let (value, center, delta) = (arg(args, 0), arg(args, 1), arg(args, 2));
    let within = match (value, center) {
        (Val::DateTime(v), Val::DateTime(c)) | (Val::Timespan(v), Val::Timespan(c)) => {
            let Some(d) = delta.timespan().or_else(|| delta.long()) else {
                return Ok(Out::Null);
            };
            let (v, c, d) = (v as i128, c as i128, d as i128);
            v >= c - d && v <= c + d
        }
        _ => match (value.real(), center.real(), delta.real()) {
            (Some(v), Some(c), Some(d)) => v >= c - d && v <= c + d,
            _ => return Ok(Out::Null),
        },
    };
    Ok(Out::Bool(within))
}

/// `todecimal(x)`, returned as a real (Trawl has no decimal type).
pub fn todecimal(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0) {
        Val::Str(text) => text.trim().parse::<f64>().ok().filter(|r| r.is_finite()).into(),
        Val::Bool(b) => Out::Real(b as i64 as f64),
        Val::DateTime(_) => Out::Null,
        Val::Timespan(t) => Out::Real(t as f64 / 100.0),
        v => v.real().into(),
    })
}

/// Ticks (100 ns) from 0001-01-01 to the Unix epoch.
const EPOCH_TICKS: i64 = 621_355_968_000_000_000;

/// The bytes of a value as hashed by `hash` and `hash_many`: strings as UTF-8, numbers
/// little-endian, datetimes as their ticks since 0001-01-01 and timespans as ticks.
pub(crate) fn hash_bytes(v: Val) -> Option<Vec<u8>> {
    match v {
        Val::Null => None,
        Val::Str(s) => Some(s.as_bytes().to_vec()),
        Val::Bool(b) => Some(vec![b as u8]),
        Val::Long(n) => Some(n.to_le_bytes().to_vec()),
        Val::Real(r) => Some(r.to_le_bytes().to_vec()),
        Val::DateTime(t) => Some((t.div_euclid(100) + EPOCH_TICKS).to_le_bytes().to_vec()),
        Val::Timespan(t) => Some((t / 100).to_le_bytes().to_vec()),
    }
}

/// `hash_many(v1, v2, …)`: the xxhash64 of each value, combined.
pub fn hash_many(args: &[Val]) -> Result<Out> {
    let mut combined: u64 = 0;
    for (i, v) in args.iter().enumerate() {
        let h = match hash_bytes(*v) {
            Some(bytes) => XxHash64::oneshot(0, &bytes),
            None => 0,
        };
        combined = if i == 0 { h } else { combine(combined, h) };
    }
    Ok(Out::Long(combined as i64))
}

/// `hash_combine(h1, h2, …)`: the hashes combined as `hash_many` combines its arguments
/// hashes, so `hash_combine(hash(a), hash(b)) == hash_many(a, b)`; null when one is null.
pub fn hash_combine(args: &[Val]) -> Result<Out> {
    let mut combined: Option<u64> = None;
    for v in args {
        let Some(h) = v.long() else {
            return Ok(Out::Null);
        };
        combined = Some(match combined {
            None => h as u64,
            Some(seed) => combine(seed, h as u64),
        });
    }
    Ok(combined.map_or(Out::Null, |h| Out::Long(h as i64)))
}

/// Combines two hashes (the boost `hash_combine` mix, widened to 64 bits).
fn combine(seed: u64, h: u64) -> u64 {
    seed ^ h
        .wrapping_add(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(seed << 6)
        .wrapping_add(seed >> 2)
}

/// `estimate_data_size(col, …)`: the estimated bytes of the values of a row, by type: 8 for
/// long, real, datetime and timespan, 4 for int, 1 for bool, 16 for guid, the UTF-8 length
/// of strings and dynamic values; nulls count 0.
#[derive(Debug)]
pub struct EstimateDataSizeUdf {
    signature: Signature,
}

impl EstimateDataSizeUdf {
    pub fn udf() -> ScalarUDF {
        ScalarUDF::from(EstimateDataSizeUdf {
            signature: Signature::one_of(
                vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
                Volatility::Immutable,
            ),
        })
    }
}

impl PartialEq for EstimateDataSizeUdf {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for EstimateDataSizeUdf {}

impl Hash for EstimateDataSizeUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        "kql_estimate_data_size".hash(state);
    }
}

/// The estimated size of row `i` of `array`.
fn estimated_size(array: &ArrayRef, i: usize) -> i64 {
    if array.is_null(i) {
        return 0;
    }
    match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(i).len() as i64,
        DataType::LargeUtf8 => array.as_string::<i64>().value(i).len() as i64,
        DataType::Utf8View => array.as_string_view().value(i).len() as i64,
        DataType::Boolean | DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 | DataType::UInt32 | DataType::Float32 => 4,
        DataType::FixedSizeBinary(n) => *n as i64,
        DataType::Binary => array.as_binary::<i32>().value(i).len() as i64,
        DataType::Null => 0,
        _ => 8,
    }
}

impl ScalarUDFImpl for EstimateDataSizeUdf {
    fn name(&self) -> &str {
        "kql_estimate_data_size"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(rows)).collect::<Result<_>>()?;
        let sizes: Int64Array = (0..rows)
            .map(|i| Some(arrays.iter().map(|a| estimated_size(a, i)).sum::<i64>()))
            .collect();
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&sizes, 0)?));
        }
        Ok(ColumnarValue::Array(Arc::new(sizes)))
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, dt, l, r, run, s, ts};

    #[test]
    fn around_values() {
        assert_eq!(run("around", &[r(1.5), r(1.0), r(0.5)]), "true");
        assert_eq!(run("around", &[l(3), l(1), l(1)]), "false");
        let minute = 60_000_000_000;
        assert_eq!(
            run(
                "around",
                &[dt("2021-01-01T01:29:00Z"), dt("2021-01-01T01:30:00Z"), ts(minute)]
            ),
            "true"
        );
        assert_eq!(
            run(
                "around",
                &[dt("2021-01-01T01:28:00Z"), dt("2021-01-01T01:30:00Z"), ts(minute)]
            ),
            "false"
        );
    }

    #[test]
    fn decimal() {
        assert_eq!(run("todecimal", &[s("123.45678")]), "123.45678");
        assert_eq!(run("todecimal", &[l(7)]), "7");
        assert_eq!(run("todecimal", &[s("abc")]), "null");
    }

    #[test]
    fn hashes() {
        let a = run("hash_many", &[s("Hello"), s("World")]);
        let b = run("hash_many", &[s("World"), s("Hello")]);
        assert_ne!(a, b);
        assert_eq!(a, run("hash_many", &[s("Hello"), s("World")]));
        // hash_combine of the hashes is hash_many of the values.
        let hello = run("hash", &[s("Hello")]).parse::<i64>().unwrap_or(0);
        let world = run("hash", &[s("World")]).parse::<i64>().unwrap_or(0);
        assert_eq!(run("hash_combine", &[l(hello), l(world)]), a);
        let null_long = datafusion::logical_expr::ColumnarValue::Scalar(datafusion::common::ScalarValue::Int64(None));
        assert_eq!(run("hash_combine", &[l(hello), null_long]), "null");
    }

    #[test]
    fn data_size() {
        assert_eq!(run("estimate_data_size", &[l(1), s("1234567890")]), "18");
        assert_eq!(run("estimate_data_size", &[d("{\"a\":1}"), r(1.0)]), "15");
    }
}
