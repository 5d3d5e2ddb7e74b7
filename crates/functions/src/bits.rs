//! Bitwise functions on longs: `binary_and`, `binary_or`, `binary_xor`, `binary_not`,
//! `binary_shift_left`, `binary_shift_right`. A null argument gives null; shift counts are
//! taken modulo 64, as the 64-bit shifts of the platform Kusto runs on do.

use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg};

fn two(args: &[Val], f: impl Fn(i64, i64) -> i64) -> Result<Out> {
    Ok(match (arg(args, 0).long(), arg(args, 1).long()) {
        (Some(a), Some(b)) => Out::Long(f(a, b)),
        _ => Out::Null,
    })
}

pub fn binary_and(args: &[Val]) -> Result<Out> {
    two(args, |a, b| a & b)
}

pub fn binary_or(args: &[Val]) -> Result<Out> {
    two(args, |a, b| a | b)
}

pub fn binary_xor(args: &[Val]) -> Result<Out> {
    two(args, |a, b| a ^ b)
}

pub fn binary_not(args: &[Val]) -> Result<Out> {
    Ok(arg(args, 0).long().map(|a| !a).into())
}

/// The shift count modulo 64 (a negative count wraps as well).
fn count(n: i64) -> u32 {
    (n & 63) as u32
}

pub fn binary_shift_left(args: &[Val]) -> Result<Out> {
    two(args, |a, n| a.wrapping_shl(count(n)))
}

/// An arithmetic shift: the sign is kept.
pub fn binary_shift_right(args: &[Val]) -> Result<Out> {
    two(args, |a, n| a.wrapping_shr(count(n)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{l, run};

    #[test]
    fn bitwise_operations_on_longs() {
        assert_eq!(run("binary_and", &[l(6), l(3)]), "2");
        assert_eq!(run("binary_or", &[l(6), l(3)]), "7");
        assert_eq!(run("binary_xor", &[l(6), l(3)]), "5");
        assert_eq!(run("binary_not", &[l(100)]), "-101");
        assert_eq!(run("binary_shift_left", &[l(1), l(2)]), "4");
        assert_eq!(run("binary_shift_right", &[l(16), l(2)]), "4");
        assert_eq!(run("binary_shift_right", &[l(-16), l(2)]), "-4");
        assert_eq!(run("binary_shift_left", &[l(1), l(65)]), "2");
        assert_eq!(run("binary_shift_left", &[l(1), l(63)]), i64::MIN.to_string());
    }

    #[test]
    fn a_null_argument_gives_null() {
        let null = datafusion::logical_expr::ColumnarValue::Scalar(datafusion::common::ScalarValue::Int64(None));
        assert_eq!(run("binary_and", &[null.clone(), l(3)]), "null");
        assert_eq!(run("binary_not", &[null]), "null");
    }
}
