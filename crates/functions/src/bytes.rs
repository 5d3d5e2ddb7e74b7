//! `format_bytes(size [, precision [, units]])`: a byte count in the largest unit (base 1024)
//! that keeps it at least 1, or in the given unit: `564 Bytes`, `10.1 KB`, `19.08 MB`.

use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg, str_arg};

const UNITS: &[&str] = &["Bytes", "KB", "MB", "GB", "TB", "PB", "EB"];

/// The text of `size` bytes.
pub fn format_size(size: f64, precision: usize, unit: Option<&str>) -> String {
    let index = match unit.map(str::to_ascii_uppercase) {
        Some(u) => UNITS
            .iter()
            .position(|candidate| candidate.to_ascii_uppercase() == u || (u == "B" && *candidate == "Bytes")),
        None => None,
    };
    let index = index.unwrap_or_else(|| {
        let mut index = 0;
        let mut scaled = size.abs();
        while scaled >= 1024.0 && index + 1 < UNITS.len() {
            scaled /= 1024.0;
            index += 1;
        }
        index
    });
    let scaled = size / 1024f64.powi(index as i32);
    let factor = 10f64.powi(precision as i32);
    let rounded = (scaled * factor).round() / factor;
    let number = format!("{rounded:.precision$}");
    // Trailing zeros of the fraction are dropped, as Kusto prints them.
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        number
    };
    format!("{number} {}", UNITS[index])
}

/// `format_bytes(size [, precision [, units]])`.
pub fn format_bytes(args: &[Val]) -> Result<Out> {
    let Some(size) = arg(args, 0).real() else {
        return Ok(Out::Str(String::new()));
    };
    let precision = arg(args, 1).long().unwrap_or(0).clamp(0, 15) as usize;
    let unit = Some(str_arg(args, 2)).filter(|u| !u.is_empty());
    Ok(Out::Str(format_size(size, precision, unit)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_examples() {
        assert_eq!(format_size(564.0, 0, None), "564 Bytes");
        assert_eq!(format_size(10332.0, 1, None), "10.1 KB");
        assert_eq!(format_size(20010332.0, 0, None), "19 MB");
        assert_eq!(format_size(20010332.0, 2, None), "19.08 MB");
        assert_eq!(format_size(4000.0, 0, Some("KB")), "4 KB");
    }
}
