//! Functions whose value differs on every call: `rand([range])` and `new_guid()`.

use datafusion::error::Result;
use rand::Rng;

use crate::rowfn::{Out, Val, arg};

/// `rand()`: a real in [0, 1); `rand(N)`: a whole number in [0, N), as a real (null for N
/// below 1).
pub fn rand(args: &[Val]) -> Result<Out> {
    let mut generator = rand::rng();
    Ok(match arg(args, 0) {
        Val::Null if args.is_empty() => Out::Real(generator.random::<f64>()),
        value => match value.long() {
            Some(range) if range >= 1 => Out::Real(generator.random_range(0..range) as f64),
            _ => Out::Null,
        },
    })
}

/// `new_guid()`: a random (version 4) GUID.
pub fn new_guid(_args: &[Val]) -> Result<Out> {
    Ok(Out::Str(uuid::Uuid::new_v4().hyphenated().to_string()))
}
