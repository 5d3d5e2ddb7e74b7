//! Dynamic values as `serde_json` values: parsing the JSON text of an argument, writing a
//! result, comparing elements.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use crate::rowfn::{Out, Val};

thread_local! {
    /// The function evaluating rows on this thread (a registered name), for messages.
    static CALLER: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
    /// A parse refused for memory, for the function's loop to fail with.
    static REFUSED: std::cell::RefCell<Option<trawl_common::memory::MemoryExceeded>> =
        const { std::cell::RefCell::new(None) };
}

/// Texts longer than this are weighed before they are parsed.
const WEIGHED_TEXT: usize = 1 << 20;

/// Notes the function evaluating rows on this thread (`kql_…`).
pub(crate) fn set_caller(name: &'static str) {
    let _ = CALLER.try_with(|caller| caller.set(name));
}

/// A parse refused for memory since the last call, if any.
pub(crate) fn take_refusal() -> Option<trawl_common::memory::MemoryExceeded> {
    REFUSED.try_with(|refused| refused.borrow_mut().take()).ok().flatten()
}

/// Asks the query's memory for what parsing `text` builds: a value per element and key (the
/// commas, colons and brackets count them) beside the text's own bytes. A refusal is kept
/// for the function's loop ([`take_refusal`]).
fn admitted(text: &str) -> bool {
    if text.len() <= WEIGHED_TEXT {
        return true;
    }
    let tokens = text.bytes().filter(|b| matches!(b, b',' | b':' | b'[' | b'{')).count();
    let bytes = tokens.saturating_mul(std::mem::size_of::<Value>() + 16).saturating_add(text.len());
    let caller = CALLER.try_with(std::cell::Cell::get).unwrap_or("");
    let what = if caller.is_empty() {
        "parse_json()".to_string()
    } else {
        format!("{}()", crate::util::kql_name(caller))
    };
    match trawl_common::memory::admit(bytes as u64, &what) {
        Ok(()) => true,
        Err(refused) => {
            let _ = REFUSED.try_with(|r| *r.borrow_mut() = Some(refused));
            false
        }
    }
}

/// The dynamic value of an argument (`None` for a null argument or text that is not JSON,
/// and for text whose values the query's memory cannot hold: the function then fails).
pub fn parse(v: Val<'_>) -> Option<Value> {
    match v {
        Val::Str(text) if !admitted(text) => None,
        Val::Str(text) => serde_json::from_str(text).ok(),
        Val::Null => None,
        Val::Bool(b) => Some(Value::Bool(b)),
        Val::Long(n) => Some(Value::from(n)),
        Val::Real(r) => Some(real(r)),
        Val::DateTime(_) | Val::Timespan(_) => None,
    }
}

/// The array of a dynamic argument, `None` when it is not an array.
pub fn parse_array(v: Val<'_>) -> Option<Vec<Value>> {
    match parse(v)? {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// The property bag of a dynamic argument, `None` when it is not a bag.
pub fn parse_bag(v: Val<'_>) -> Option<Map<String, Value>> {
    match parse(v)? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// A dynamic result.
pub fn out(value: Value) -> Out {
    Out::Str(value.to_string())
}

/// A dynamic result, null for `None`.
pub fn out_opt(value: Option<Value>) -> Out {
    value.map_or(Out::Null, out)
}

/// A real as a JSON value (NaN and infinities, which JSON lacks, as strings like Kusto prints
/// them).
pub fn real(r: f64) -> Value {
    match Number::from_f64(r) {
        Some(n) => Value::Number(n),
        None => Value::String(real_text(r)),
    }
}

/// The text of a real as Kusto prints it.
pub fn real_text(r: f64) -> String {
    if r.is_nan() {
        "NaN".to_string()
    } else if r.is_infinite() {
        if r > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        r.to_string()
    }
}

/// `tostring()` of an element: strings without quotes, null as empty, others as JSON.
pub fn element_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A number element as a real.
pub fn as_real(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// Equality of elements as Kusto compares dynamic values: numbers by value.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

/// Rank of a type in a mixed sort: numbers, strings, bools, arrays, bags; nulls last.
fn rank(value: &Value) -> u8 {
    match value {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// Ascending order of elements (nulls sort after everything).
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => x
                .as_f64()
                .unwrap_or(f64::NAN)
                .total_cmp(&y.as_f64().unwrap_or(f64::NAN)),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)).then_with(|| a.to_string().cmp(&b.to_string())),
    }
}

/// Distinct elements, first occurrence kept.
pub fn distinct(items: impl IntoIterator<Item = Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for item in items {
        if !out.iter().any(|seen| same(seen, &item)) {
            out.push(item);
        }
    }
    out
}

/// Splits a JSONPath-like key (`$.a.b`, `$['a'].b`, or a plain key) into its steps.
pub fn path_steps(key: &str) -> Vec<String> {
    let Some(rest) = key.strip_prefix('$') else {
        return vec![key.to_string()];
    };
    let mut steps = Vec::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                let mut step = String::new();
                while let Some(&c) = chars.peek() {
                    if c == '.' || c == '[' {
                        break;
                    }
                    step.push(c);
                    chars.next();
                }
                steps.push(step);
            }
            '[' => {
                let mut step = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    step.push(c);
                }
                let trimmed = step.trim();
                let unquoted = trimmed
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| trimmed.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                    .unwrap_or(trimmed);
                steps.push(unquoted.to_string());
            }
            _ => {}
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(path_steps("a"), vec!["a"]);
        assert_eq!(path_steps("$.a.b"), vec!["a", "b"]);
        assert_eq!(path_steps("$['a b'].c"), vec!["a b", "c"]);
    }

    #[test]
    fn ordering_and_equality() {
        assert!(same(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert_eq!(compare(&serde_json::json!(2), &serde_json::json!(10)), Ordering::Less);
        assert_eq!(compare(&Value::Null, &serde_json::json!("a")), Ordering::Greater);
        assert_eq!(real_text(1.5), "1.5");
        assert_eq!(real_text(f64::NAN), "NaN");
    }
}

#[cfg(test)]
mod weighing_tests {
    use super::*;

    #[test]
    fn a_long_text_whose_values_do_not_fit_is_refused_before_it_is_parsed() {
        let account = trawl_common::memory::QueryMemory::standalone(4 << 20);
        let _entry = trawl_common::memory::enter(&account);
        set_caller("kql_array_length");
        let small = format!("[{}1]", "1,".repeat(1000));
        assert!(parse(Val::Str(&small)).is_some());
        assert!(take_refusal().is_none());
        // 2 MiB of text, a million elements: tens of MiB of values.
        let large = format!("[{}1]", "1,".repeat(1 << 20));
        assert!(parse(Val::Str(&large)).is_none());
        let refused = take_refusal().map(|r| r.to_string()).unwrap_or_default();
        assert!(refused.contains("array_length()"), "{refused}");
    }
}
