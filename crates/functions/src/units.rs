//! Unit conversions: `convert_angle`, `convert_energy`, `convert_force`, `convert_length`,
//! `convert_mass`, `convert_speed`, `convert_temperature` and `convert_volume`, with the unit
//! names Kusto documents (those of the UnitsNet library, matched without regard to case). An
//! unknown unit or a null value gives null.

use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg, str_arg};

/// How a unit converts to the base unit.
#[derive(Clone, Copy)]
enum Factor {
    /// Base units per unit.
    Linear(f64),
    /// `Tilt` (the sine of the angle).
    Tilt,
    /// Base = value · scale + offset (temperatures, whose scales do not share a zero).
    Affine(f64, f64),
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

const ENERGY: &[(&str, Factor)] = {
    use Factor::Linear as L;
    const BTU: f64 = 1055.05585262;
    const EV: f64 = 1.602176634e-19;
    &[
        ("BritishThermalUnit", L(BTU)),
        ("Calorie", L(4.184)),
        ("DecathermEc", L(1.05505585262e9)),
        ("DecathermImperial", L(1.05505585257348e9)),
        ("DecathermUs", L(1.054804e9)),
        ("ElectronVolt", L(EV)),
        ("Erg", L(1e-7)),
        ("FootPound", L(1.355817948)),
        ("GigabritishThermalUnit", L(BTU * 1e9)),
        ("GigaelectronVolt", L(EV * 1e9)),
        ("Gigajoule", L(1e9)),
        ("GigawattDay", L(8.64e13)),
        ("GigawattHour", L(3.6e12)),
        ("HorsepowerHour", L(2.6845195377e6)),
        ("Joule", L(1.0)),
        ("KilobritishThermalUnit", L(BTU * 1e3)),
        ("Kilocalorie", L(4184.0)),
        ("KiloelectronVolt", L(EV * 1e3)),
        ("Kilojoule", L(1e3)),
        ("KilowattDay", L(8.64e7)),
        ("KilowattHour", L(3.6e6)),
        ("MegabritishThermalUnit", L(BTU * 1e6)),
        ("Megacalorie", L(4.184e6)),
        ("MegaelectronVolt", L(EV * 1e6)),
        ("Megajoule", L(1e6)),
        ("MegawattDay", L(8.64e10)),
        ("MegawattHour", L(3.6e9)),
        ("Millijoule", L(1e-3)),
        ("Petajoule", L(1e15)),
        ("TeraelectronVolt", L(EV * 1e12)),
        ("Terajoule", L(1e12)),
        ("TerawattDay", L(8.64e16)),
        ("TerawattHour", L(3.6e15)),
        ("ThermEc", L(1.05505585262e8)),
        ("ThermImperial", L(1.05505585257348e8)),
        ("ThermUs", L(1.054804e8)),
        ("WattDay", L(86_400.0)),
        ("WattHour", L(3_600.0)),
    ]
};

const MASS: &[(&str, Factor)] = {
    use Factor::Linear as L;
    const POUND: f64 = 0.45359237;
    &[
        ("Centigram", L(1e-5)),
        ("Decagram", L(1e-2)),
        ("Decigram", L(1e-4)),
        ("EarthMass", L(5.9722e24)),
        ("Grain", L(6.479891e-5)),
        ("Gram", L(1e-3)),
        ("Hectogram", L(0.1)),
        ("Kilogram", L(1.0)),
        ("Kilopound", L(POUND * 1e3)),
        ("Kilotonne", L(1e6)),
        ("LongHundredweight", L(50.80234544)),
        ("LongTon", L(1016.0469088)),
        ("Megapound", L(POUND * 1e6)),
        ("Megatonne", L(1e9)),
        ("Microgram", L(1e-9)),
        ("Milligram", L(1e-6)),
        ("Nanogram", L(1e-12)),
        ("Ounce", L(0.028349523125)),
        ("Pound", L(POUND)),
        ("ShortHundredweight", L(45.359237)),
        ("ShortTon", L(907.18474)),
        ("Slug", L(14.593902937206364)),
        ("SolarMass", L(1.98947e30)),
        ("Stone", L(6.35029318)),
        ("Tonne", L(1e3)),
    ]
};

const SPEED: &[(&str, Factor)] = {
    use Factor::Linear as L;
    const FOOT: f64 = 0.3048;
    const INCH: f64 = 0.0254;
    const YARD: f64 = 0.9144;
    const SURVEY_FOOT: f64 = 1200.0 / 3937.0;
    &[
        ("CentimeterPerHour", L(1e-2 / 3600.0)),
        ("CentimeterPerMinute", L(1e-2 / 60.0)),
        ("CentimeterPerSecond", L(1e-2)),
        ("DecimeterPerMinute", L(1e-1 / 60.0)),
        ("DecimeterPerSecond", L(1e-1)),
        ("FootPerHour", L(FOOT / 3600.0)),
        ("FootPerMinute", L(FOOT / 60.0)),
        ("FootPerSecond", L(FOOT)),
        ("InchPerHour", L(INCH / 3600.0)),
        ("InchPerMinute", L(INCH / 60.0)),
        ("InchPerSecond", L(INCH)),
        ("KilometerPerHour", L(1e3 / 3600.0)),
        ("KilometerPerMinute", L(1e3 / 60.0)),
        ("KilometerPerSecond", L(1e3)),
        ("Knot", L(1852.0 / 3600.0)),
        ("Mach", L(340.29)),
        ("MeterPerHour", L(1.0 / 3600.0)),
        ("MeterPerMinute", L(1.0 / 60.0)),
        ("MeterPerSecond", L(1.0)),
        ("MicrometerPerMinute", L(1e-6 / 60.0)),
        ("MicrometerPerSecond", L(1e-6)),
        ("MilePerHour", L(0.44704)),
        ("MillimeterPerHour", L(1e-3 / 3600.0)),
        ("MillimeterPerMinute", L(1e-3 / 60.0)),
        ("MillimeterPerSecond", L(1e-3)),
        ("NanometerPerMinute", L(1e-9 / 60.0)),
        ("NanometerPerSecond", L(1e-9)),
        ("UsSurveyFootPerHour", L(SURVEY_FOOT / 3600.0)),
        ("UsSurveyFootPerMinute", L(SURVEY_FOOT / 60.0)),
        ("UsSurveyFootPerSecond", L(SURVEY_FOOT)),
        ("YardPerHour", L(YARD / 3600.0)),
        ("YardPerMinute", L(YARD / 60.0)),
        ("YardPerSecond", L(YARD)),
    ]
};

/// Kelvin = value · scale + offset.
const TEMPERATURE: &[(&str, Factor)] = {
    use Factor::Affine as A;
    const ZERO_CELSIUS: f64 = 273.15;
    &[
        ("DegreeCelsius", A(1.0, ZERO_CELSIUS)),
        ("DegreeDelisle", A(-2.0 / 3.0, 373.15)),
        ("DegreeFahrenheit", A(5.0 / 9.0, 459.67 * 5.0 / 9.0)),
        ("DegreeNewton", A(100.0 / 33.0, ZERO_CELSIUS)),
        ("DegreeRankine", A(5.0 / 9.0, 0.0)),
        ("DegreeReaumur", A(5.0 / 4.0, ZERO_CELSIUS)),
        ("DegreeRoemer", A(40.0 / 21.0, ZERO_CELSIUS - 7.5 * 40.0 / 21.0)),
        ("Kelvin", A(1.0, 0.0)),
        ("MillidegreeCelsius", A(1e-3, ZERO_CELSIUS)),
        ("SolarTemperature", A(5778.0, 0.0)),
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
        Factor::Affine(scale, offset) => value * scale + offset,
    };
    let result = match to {
        Factor::Linear(f) => base / f,
        Factor::Tilt => base.sin(),
        Factor::Affine(scale, offset) => (base - offset) / scale,
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

pub fn convert_energy(args: &[Val]) -> Result<Out> {
    convert(args, ENERGY)
}

pub fn convert_mass(args: &[Val]) -> Result<Out> {
    convert(args, MASS)
}

pub fn convert_speed(args: &[Val]) -> Result<Out> {
    convert(args, SPEED)
}

pub fn convert_temperature(args: &[Val]) -> Result<Out> {
    convert(args, TEMPERATURE)
}

#[cfg(test)]
mod tests {
    use crate::testing::{r, run, s};

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
    fn energy_mass_speed_and_temperature() {
        close(
            &run("convert_energy", &[r(1.2), s("Joule"), s("BritishThermalUnit")]),
            0.00113738054437598,
        );
        close(
            &run("convert_energy", &[r(1.0), s("KilowattHour"), s("Megajoule")]),
            3.6,
        );
        close(
            &run("convert_mass", &[r(1.2), s("Kilogram"), s("Pound")]),
            2.64554714621853,
        );
        close(&run("convert_mass", &[r(1.0), s("stone"), s("pound")]), 14.0);
        close(
            &run("convert_speed", &[r(1.2), s("MeterPerSecond"), s("CentimeterPerHour")]),
            432_000.0,
        );
        close(
            &run("convert_speed", &[r(100.0), s("KilometerPerHour"), s("Knot")]),
            53.99568034557235,
        );
        close(
            &run("convert_temperature", &[r(1.2), s("Kelvin"), s("DegreeFahrenheit")]),
            -457.51,
        );
        close(
            &run(
                "convert_temperature",
                &[r(100.0), s("DegreeCelsius"), s("DegreeFahrenheit")],
            ),
            212.0,
        );
        close(
            &run("convert_temperature", &[r(0.0), s("DegreeCelsius"), s("DegreeDelisle")]),
            150.0,
        );
        close(
            &run(
                "convert_temperature",
                &[r(100.0), s("DegreeCelsius"), s("DegreeRoemer")],
            ),
            60.0,
        );
        close(
            &run(
                "convert_temperature",
                &[r(100.0), s("DegreeCelsius"), s("DegreeNewton")],
            ),
            33.0,
        );
        assert_eq!(run("convert_temperature", &[r(1.0), s("Kelvin"), s("Parsec")]), "null");
    }
}
