//! Unit conversions (`convert_angle`, `convert_length`, `convert_volume`, `convert_force`,
//! with the unit tables Kusto takes from UnitsNet), `around`, `todecimal`, `hash_many` and
//! `estimate_data_size`.

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

use crate::rowfn::{Out, Val, arg, str_arg};

/// How a unit converts to the base unit.
#[derive(Clone, Copy)]
enum Factor {
    /// Base units per unit.
    Linear(f64),
    /// `Tilt` (the sine of the angle).
    Tilt,
}

const ANGLE: &[(&str, Factor)] = {
    use Factor::Linear as L;
    use std::f64::consts::PI;
    &[
        ("Arcminute", L(PI / (60.0 * 180.0))),
        ("Arcsecond", L(PI / (3600.0 * 180.0))),
        ("Centiradian", L(1e-2)),
        ("Deciradian", L(1e-1)),
        ("Degree", L(PI / 180.0)),
        ("Gradian", L(PI / 200.0)),
        ("Microdegree", L(PI / 180.0 * 1e-6)),
        ("Microradian", L(1e-6)),
        ("Millidegree", L(PI / 180.0 * 1e-3)),
        ("Milliradian", L(1e-3)),
        ("Nanodegree", L(PI / 180.0 * 1e-9)),
        ("Nanoradian", L(1e-9)),
        ("NatoMil", L(PI / 3200.0)),
        ("Radian", L(1.0)),
        ("Revolution", L(2.0 * PI)),
        ("Tilt", Factor::Tilt),
    ]
};

const LENGTH: &[(&str, Factor)] = {
    use Factor::Linear as L;
    &[
        ("Angstrom", L(1e-10)),
        ("AstronomicalUnit", L(1.4959787070e11)),
        ("Centimeter", L(1e-2)),
        ("Chain", L(20.1168)),
        ("DataMile", L(1828.8)),
        ("Decameter", L(1e1)),
        ("Decimeter", L(1e-1)),
        ("DtpPica", L(1.0 / 236.220472441)),
        ("DtpPoint", L(2.54e-2 / 72.0)),
        ("Fathom", L(1.8288)),
        ("Femtometer", L(1e-15)),
        ("Foot", L(0.3048)),
        ("Gigameter", L(1e9)),
        ("Hand", L(1.016e-1)),
        ("Hectometer", L(1e2)),
        ("Inch", L(2.54e-2)),
        ("KilolightYear", L(9.46073047258e18)),
        ("Kilometer", L(1e3)),
        ("Kiloparsec", L(3.08567758128e19)),
        ("LightYear", L(9.46073047258e15)),
        ("MegalightYear", L(9.46073047258e21)),
        ("Megameter", L(1e6)),
        ("Megaparsec", L(3.08567758128e22)),
        ("Meter", L(1.0)),
        ("Microinch", L(2.54e-8)),
        ("Micrometer", L(1e-6)),
        ("Mil", L(2.54e-5)),
        ("Mile", L(1609.344)),
        ("Millimeter", L(1e-3)),
        ("Nanometer", L(1e-9)),
        ("NauticalMile", L(1852.0)),
        ("Parsec", L(3.08567758128e16)),
        ("Picometer", L(1e-12)),
        ("PrinterPica", L(1.0 / 237.106301584)),
        ("PrinterPoint", L(2.54e-2 / 72.27)),
        ("Shackle", L(27.432)),
        ("SolarRadius", L(6.95700e8)),
        ("Twip", L(1.0 / 56692.913385826)),
        ("UsSurveyFoot", L(1200.0 / 3937.0)),
        ("Yard", L(0.9144)),
    ]
};

const VOLUME: &[(&str, Factor)] = {
    use Factor::Linear as L;
    const US_GALLON: f64 = 0.003785411784;
    const CUBIC_FOOT: f64 = 2.8316846592e-2;
    &[
        ("AcreFoot", L(1.0 / 0.000810714)),
        ("AuTablespoon", L(2e-5)),
        ("BoardFoot", L(2.3597372158e-3)),
        ("Centiliter", L(1e-5)),
        ("CubicCentimeter", L(1e-6)),
        ("CubicDecimeter", L(1e-3)),
        ("CubicFoot", L(CUBIC_FOOT)),
        ("CubicHectometer", L(1e6)),
        ("CubicInch", L(1.6387064e-5)),
        ("CubicKilometer", L(1e9)),
        ("CubicMeter", L(1.0)),
        ("CubicMicrometer", L(1e-18)),
        ("CubicMile", L(4.16818182544058e9)),
        ("CubicMillimeter", L(1e-9)),
        ("CubicYard", L(0.764554858)),
        ("Decaliter", L(1e-2)),
        ("DecausGallon", L(US_GALLON * 1e1)),
        ("Deciliter", L(1e-4)),
        ("DeciusGallon", L(US_GALLON * 1e-1)),
        ("HectocubicFoot", L(CUBIC_FOOT * 1e2)),
        ("HectocubicMeter", L(1e2)),
        ("Hectoliter", L(1e-1)),
        ("HectousGallon", L(US_GALLON * 1e2)),
        ("ImperialBeerBarrel", L(0.16365924)),
        ("ImperialGallon", L(0.00454609)),
        ("ImperialOunce", L(2.84130624999629e-5)),
        ("ImperialPint", L(5.6826125e-4)),
        ("ImperialQuart", L(1.1365225e-3)),
        ("KilocubicFoot", L(CUBIC_FOOT * 1e3)),
        ("KilocubicMeter", L(1e3)),
        ("KiloimperialGallon", L(0.00454609 * 1e3)),
        ("Kiloliter", L(1.0)),
        ("KilousGallon", L(US_GALLON * 1e3)),
        ("Liter", L(1e-3)),
        ("MegacubicFoot", L(CUBIC_FOOT * 1e6)),
        ("MegaimperialGallon", L(0.00454609 * 1e6)),
        ("Megaliter", L(1e3)),
        ("MegausGallon", L(US_GALLON * 1e6)),
        ("MetricCup", L(0.00025)),
        ("MetricTeaspoon", L(0.5e-5)),
        ("Microliter", L(1e-9)),
        ("Milliliter", L(1e-6)),
        ("Nanoliter", L(1e-12)),
        ("OilBarrel", L(0.158987294928)),
        ("UkTablespoon", L(1.5e-5)),
        ("UsBeerBarrel", L(0.1173477658)),
        ("UsCustomaryCup", L(0.0002365882365)),
        ("UsGallon", L(US_GALLON)),
        ("UsLegalCup", L(0.00024)),
        ("UsOunce", L(2.9573529562537605e-5)),
        ("UsPint", L(4.73176473e-4)),
        ("UsQuart", L(9.46352946e-4)),
        ("UsTablespoon", L(1.478676478125e-5)),
        ("UsTeaspoon", L(4.92892159375e-6)),
    ]
};

const FORCE: &[(&str, Factor)] = {
    use Factor::Linear as L;
    const POUND_FORCE: f64 = 4.4482216152605;
    &[
        ("Decanewton", L(1e1)),
        ("Dyn", L(1e-5)),
        ("KilogramForce", L(9.80665)),
        ("Kilonewton", L(1e3)),
        ("KiloPond", L(9.80665)),
        ("KilopoundForce", L(POUND_FORCE * 1e3)),
        ("Meganewton", L(1e6)),
        ("Micronewton", L(1e-6)),
        ("Millinewton", L(1e-3)),
        ("Newton", L(1.0)),
        ("OunceForce", L(POUND_FORCE / 16.0)),
        ("Poundal", L(0.138254954376)),
        ("PoundForce", L(POUND_FORCE)),
        ("ShortTonForce", L(POUND_FORCE * 2000.0)),
        ("TonneForce", L(9.80665 * 1000.0)),
    ]
};

fn unit(table: &[(&str, Factor)], name: &str) -> Option<Factor> {
    let name = name.trim();
    table
        .iter()
        .find(|(unit, _)| unit.eq_ignore_ascii_case(name))
        .map(|(_, factor)| *factor)
}

fn convert(args: &[Val], table: &[(&str, Factor)]) -> Result<Out> {
    let (Some(value), Some(from), Some(to)) = (
        arg(args, 0).real(),
        unit(table, str_arg(args, 1)),
        unit(table, str_arg(args, 2)),
    ) else {
        return Ok(Out::Null);
    };
    let base = match from {
        Factor::Linear(f) => value * f,
        Factor::Tilt => value.asin(),
    };
    let result = match to {
        Factor::Linear(f) => base / f,
        Factor::Tilt => base.sin(),
    };
    Ok(Out::Real(result))
}

pub fn convert_angle(args: &[Val]) -> Result<Out> {
    convert(args, ANGLE)
}

pub fn convert_length(args: &[Val]) -> Result<Out> {
    convert(args, LENGTH)
}

pub fn convert_volume(args: &[Val]) -> Result<Out> {
    convert(args, VOLUME)
}

pub fn convert_force(args: &[Val]) -> Result<Out> {
    convert(args, FORCE)
}

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

    fn close(text: &str, expected: f64) {
        let v: f64 = text.parse().unwrap_or(f64::NAN);
        assert!((v - expected).abs() <= expected.abs() * 1e-9, "{text} vs {expected}");
    }

    #[test]
    fn conversions() {
        close(&run("convert_angle", &[r(1.2), s("Degree"), s("Arcminute")]), 72.0);
        close(&run("convert_force", &[r(1.2), s("Newton"), s("Decanewton")]), 0.12);
        close(
            &run("convert_length", &[r(1.2), s("Meter"), s("Foot")]),
            3.93700787401575,
        );
        close(
            &run("convert_volume", &[r(1.2), s("CubicMeter"), s("AcreFoot")]),
            0.0009728568,
        );
        close(&run("convert_angle", &[r(0.5), s("Tilt"), s("Degree")]), 30.0);
        close(&run("convert_length", &[r(1.0), s("mile"), s("kilometer")]), 1.609344);
        assert_eq!(run("convert_length", &[r(1.0), s("Parsnip"), s("Meter")]), "null");
    }

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
    }

    #[test]
    fn data_size() {
        assert_eq!(run("estimate_data_size", &[l(1), s("1234567890")]), "18");
        assert_eq!(run("estimate_data_size", &[d("{\"a\":1}"), r(1.0)]), "15");
    }
}
