//! More registered scalar functions (series, compression, conversions, …), kept apart from
//! [`crate::registry::FUNCTIONS`] so both lists can grow independently. Same contract as
//! `registry.rs`; [`crate::registry::lookup`] searches both. Keep sorted by name.

use crate::registry::KqlFunction;

pub static FUNCTIONS_MORE: &[KqlFunction] = &[];
