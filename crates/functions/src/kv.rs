//! `parse-kv`: key/value text → a bag of strings, per the operator's options.
//! `kql_parse_kv(text, options_json)` returns the bag as JSON text.
//!
//! Options (JSON object): `pair_delimiter` (default `" "`), `kv_delimiter` (default `"="`),
//! `quote` (a list: each one character, or two: open and close), `escape` (a list of characters
//! that take the character after them literally inside quotes), `greedy` (a value runs until the
//! next key), `regex` (a pattern whose first two groups are key and value, applied repeatedly).

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use serde_json::{Map, Value};

use crate::util::{StringArg, map_strings};

/// Parsing options.
#[derive(Debug, Clone)]
pub struct KvOptions {
    pub pair_delimiter: String,
    pub kv_delimiter: String,
    pub quotes: Vec<(char, char)>,
    pub escapes: Vec<char>,
    pub greedy: bool,
    pub regex: Option<regex::Regex>,
}

impl KvOptions {
    pub fn from_json(text: &str) -> KvOptions {
        let json: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let string = |key: &str, default: &str| json.get(key).and_then(Value::as_str).unwrap_or(default).to_string();
        // A string, or a list of them (the operator's option repeated).
        let listed = |key: &str| -> Vec<String> {
            match json.get(key) {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(items)) => items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
                _ => Vec::new(),
            }
        };
        let quotes = listed("quote")
            .iter()
            .filter_map(|q| {
                let mut chars = q.chars();
                let open = chars.next()?;
                Some((open, chars.next().unwrap_or(open)))
            })
            .collect();
        let escapes = listed("escape").iter().filter_map(|e| e.chars().next()).collect();
        KvOptions {
            pair_delimiter: string("pair_delimiter", " "),
            kv_delimiter: string("kv_delimiter", "="),
            quotes,
            escapes,
            greedy: json.get("greedy").and_then(Value::as_bool).unwrap_or(false),
            regex: json
                .get("regex")
                .and_then(Value::as_str)
                .and_then(|r| regex::Regex::new(r).ok()),
        }
    }
}

/// Reads a possibly quoted token at the start of `rest`, ending before any of `stops`
/// (or, with `greedy_stop`, where it says). Returns the token and the remaining text.
fn token<'a>(rest: &'a str, options: &KvOptions, stop: impl Fn(&'a str) -> bool) -> (String, &'a str) {
    for (open, close) in &options.quotes {
        let Some(inner) = rest.strip_prefix(*open) else {
            continue;
        };
        // Up to the closing quote; an escape character takes the next character as it is.
        let mut value = String::new();
        let mut chars = inner.char_indices();
        while let Some((index, c)) = chars.next() {
            if options.escapes.contains(&c) {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
                continue;
            }
            if c == *close {
                return (value, &inner[index + c.len_utf8()..]);
            }
            value.push(c);
        }
        return (value, "");
    }
    let mut end = rest.len();
    for (index, _) in rest.char_indices() {
        if stop(&rest[index..]) {
            end = index;
            break;
        }
    }
    (rest[..end].to_string(), &rest[end..])
}

/// Parses `text` into a bag of strings.
pub fn parse_kv(text: &str, options: &KvOptions) -> Map<String, Value> {
    let mut bag = Map::new();
    if let Some(regex) = &options.regex {
        for captures in regex.captures_iter(text) {
            if let (Some(key), Some(value)) = (captures.get(1), captures.get(2)) {
                bag.insert(
                    key.as_str().trim().to_string(),
                    Value::String(value.as_str().trim().to_string()),
                );
            }
        }
        return bag;
    }
    let pair = options.pair_delimiter.as_str();
    let kv = options.kv_delimiter.as_str();
    if pair.is_empty() || kv.is_empty() {
        return bag;
    }
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(pair);
        if rest.is_empty() {
            break;
        }
        let (key, after_key) = token(rest, options, |s| s.starts_with(kv) || s.starts_with(pair));
        let Some(after_delimiter) = after_key.strip_prefix(kv) else {
            // A word without a value: skip it.
            rest = after_key;
            if rest.is_empty() {
                break;
            }
            continue;
        };
        let (value, after_value) = if options.greedy {
            // The value runs until a pair delimiter that starts a new `key=`.
            token(after_delimiter, options, |s| {
                s.strip_prefix(pair).is_some_and(|next| {
                    let next_key_end = next.find(pair).unwrap_or(next.len());
                    next[..next_key_end].contains(kv)
                })
            })
        } else {
            token(after_delimiter, options, |s| s.starts_with(pair))
        };
        bag.insert(key.trim().to_string(), Value::String(value));
        rest = after_value;
    }
    bag
}

/// `kql_parse_kv(text, options_json)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ParseKvUdf {
    signature: Signature,
}

impl ParseKvUdf {
    pub const NAME: &'static str = "kql_parse_kv";

    pub fn new() -> ParseKvUdf {
        ParseKvUdf {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl Default for ParseKvUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for ParseKvUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8View)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let options = StringArg::from_columnar(&args.args[1])?;
        let options = options.with_value(0, |o| KvOptions::from_json(o.unwrap_or("{}")));
        map_strings(&args.args, args.number_rows, |text| {
            Some(Value::Object(parse_kv(text.unwrap_or(""), &options)).to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, options: &str) -> Value {
        Value::Object(parse_kv(text, &KvOptions::from_json(options)))
    }

    #[test]
    fn plain_quoted_greedy_and_regex() {
        assert_eq!(
            parse(
                r#"src=10.1.1.123 bytes=125 failure="connection aborted" "event time"=2021-01-01T10:00:54"#,
                r#"{"quote":"\""}"#
            ),
            serde_json::json!({"src": "10.1.1.123", "bytes": "125", "failure": "connection aborted", "event time": "2021-01-01T10:00:54"})
        );
        assert_eq!(
            parse(
                "failure=(connection aborted) (event time)=(2021-01-01 10:00:54)",
                r#"{"quote":"()"}"#
            ),
            serde_json::json!({"failure": "connection aborted", "event time": "2021-01-01 10:00:54"})
        );
        // Escaped quotes inside a quoted value; several kinds of quotes.
        assert_eq!(
            parse(
                r#"failure="the remote host sent \"bye!\"" path='a b' n=1"#,
                r#"{"quote":["\"", "'"], "escape":["\\"]}"#
            ),
            serde_json::json!({"failure": "the remote host sent \"bye!\"", "path": "a b", "n": "1"})
        );
        // Without an escape character the backslash is text and the quote closes the value.
        assert_eq!(
            parse(r#"f="a \"b" n=1"#, r#"{"quote":"\""}"#),
            serde_json::json!({"f": "a \\", "n": "1"})
        );
        assert_eq!(
            parse("name=John Doe phone=555 5555", "{}"),
            serde_json::json!({"name": "John", "phone": "555"})
        );
        assert_eq!(
            parse("name=John Doe phone=555 5555 city=New York", r#"{"greedy":true}"#),
            serde_json::json!({"name": "John Doe", "phone": "555 5555", "city": "New York"})
        );
        assert_eq!(
            parse(r#"["a b: x", "c: y"]"#, r#"{"regex":"\"([\\w ]+)\\s*:\\s*([^\"]*)\""}"#),
            serde_json::json!({"a b": "x", "c": "y"})
        );
    }
}
