//! `contains` and `contains_cs`: substring search with a vectorized kernel.
//!
//! `kql_contains(haystack, needle)` (ASCII case folding) and `kql_contains_cs(...)` (exact
//! bytes). A null haystack contains nothing; an empty needle is in every other haystack.
//! Case-sensitive search is `memchr::memmem`. Case-insensitive search of an ASCII needle
//! looks for its rarest letter in both cases with `memchr2` (one vectorized pass over the
//! text), then compares the needle around each hit ignoring ASCII case; a needle with other
//! characters is compared after Unicode lower-casing of both sides. A constant needle is
//! looked for in a whole column's data buffers at once ([`column`]), not row by row.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::arrow::array::BooleanArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature};
use memchr::memmem;

use crate::dynamic::dynamic_to_string;
use crate::util::{StringArg, all_scalar, rows_of, two_strings};

mod column;

/// A needle prepared for many haystacks.
pub struct Searcher {
    kind: Kind,
}

enum Kind {
    Empty,
    Exact(Box<memmem::Finder<'static>>),
    /// ASCII needle, lowercased; the position of its rarest byte and that byte in both cases.
    FoldedAscii {
        needle: Vec<u8>,
        anchor: usize,
        lower: u8,
        upper: u8,
    },
    /// Any other needle, Unicode-lowercased.
    Folded(String),
}

/// How common each ASCII letter is in English text (rank 0 = most common): the anchor of a
/// search is the needle's least common byte. Other bytes rank as letters of middling
/// frequency, digits and punctuation as rare-ish.
fn commonness(byte: u8) -> u8 {
    const LETTERS: &[u8; 26] = b"etaoinshrdlcumwfgypbvkjxqz";
    match LETTERS.iter().position(|l| *l == byte.to_ascii_lowercase()) {
        Some(rank) => 26 - rank as u8,
        None if byte == b' ' => 30,
        None => 8,
    }
}

impl Searcher {
    pub fn new(needle: &str, case_sensitive: bool) -> Searcher {
        let kind = if needle.is_empty() {
            Kind::Empty
        } else if case_sensitive {
            Kind::Exact(Box::new(memmem::Finder::new(needle.as_bytes()).into_owned()))
        } else if needle.is_ascii() {
            let needle = needle.to_ascii_lowercase().into_bytes();
            let anchor = (0..needle.len()).min_by_key(|&i| commonness(needle[i])).unwrap_or(0);
            let byte = needle[anchor];
            Kind::FoldedAscii {
                lower: byte.to_ascii_lowercase(),
                upper: byte.to_ascii_uppercase(),
                anchor,
                needle,
            }
        } else {
            Kind::Folded(needle.to_lowercase())
        };
        Searcher { kind }
    }

    /// Whether `haystack` contains the needle.
    pub fn is_match(&self, haystack: &str) -> bool {
        match &self.kind {
            Kind::Empty => true,
            Kind::Exact(finder) => finder.find(haystack.as_bytes()).is_some(),
            Kind::FoldedAscii {
                needle,
                anchor,
                lower,
                upper,
            } => {
                let hay = haystack.as_bytes();
                if hay.len() < needle.len() {
                    return false;
                }
                // Anchor positions where the whole needle fits.
                let window = &hay[*anchor..hay.len() - (needle.len() - anchor - 1)];
                memchr::memchr2_iter(*lower, *upper, window)
                    .map(|at| &hay[at..at + needle.len()])
                    .any(|candidate| candidate.eq_ignore_ascii_case(needle))
            }
            Kind::Folded(needle) => haystack.to_lowercase().contains(needle.as_str()),
        }
    }
}

/// The text a row is searched as: a string as it is; a dynamic value's JSON text as
/// `tostring()` reads it (a string's content, null as ""). `None` for a null string.
fn searched_text(value: Option<&str>, dynamic: bool) -> Option<Cow<'_, str>> {
    match (value, dynamic) {
        (value, true) => Some(dynamic_to_string(value)),
        (Some(value), false) => Some(Cow::Borrowed(value)),
        (None, false) => None,
    }
}

/// `kql_contains(haystack, needle)` / `kql_contains_cs(...)`: see the module documentation.
/// The `_dynamic` variants take the JSON text of a dynamic value and search what `tostring()`
/// gives of it (a string's content, read in place when it has no escapes; other values'
/// JSON text; null as ""), in one pass over the column.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ContainsUdf {
    case_sensitive: bool,
    dynamic: bool,
    signature: Signature,
}

impl ContainsUdf {
    pub fn new(case_sensitive: bool) -> ContainsUdf {
        ContainsUdf {
            case_sensitive,
            dynamic: false,
            signature: two_strings(),
        }
    }

    /// The variant over dynamic values' JSON text.
    pub fn dynamic(case_sensitive: bool) -> ContainsUdf {
        ContainsUdf {
            dynamic: true,
            ..ContainsUdf::new(case_sensitive)
        }
    }

    pub fn function_name(case_sensitive: bool, dynamic: bool) -> &'static str {
        match (case_sensitive, dynamic) {
            (true, false) => "kql_contains_cs",
            (false, false) => "kql_contains",
            (true, true) => "kql_contains_cs_dynamic",
            (false, true) => "kql_contains_dynamic",
        }
    }
}

impl ScalarUDFImpl for ContainsUdf {
    fn name(&self) -> &str {
        Self::function_name(self.case_sensitive, self.dynamic)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = rows_of(&args.args, args.number_rows);
        let haystack = StringArg::from_columnar(&args.args[0])?;
        let needle = StringArg::from_columnar(&args.args[1])?;
        // One searcher for a constant needle; a needle per row is prepared per row.
        let constant = match &needle {
            StringArg::Scalar(Some(text)) => Some(Searcher::new(text, self.case_sensitive)),
            _ => None,
        };
        if let (Some(searcher), StringArg::Array(array)) = (&constant, &haystack)
            && let Some(found) = column::search_column(searcher, array.as_ref(), self.dynamic)
        {
            return Ok(ColumnarValue::Array(Arc::new(found)));
        }
        let matches = |i: usize| -> bool {
            haystack.with_value(i, |hay| {
                let Some(text) = searched_text(hay, self.dynamic) else {
                    return false;
                };
                let hay: &str = &text;
                match &constant {
                    Some(searcher) => searcher.is_match(hay),
                    None => needle.with_value(i, |needle| {
                        needle.is_some_and(|needle| Searcher::new(needle, self.case_sensitive).is_match(hay))
                    }),
                }
            })
        };
        if all_scalar(&args.args) {
            return Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(matches(0)))));
        }
        let result: BooleanArray = (0..rows).map(|i| Some(matches(i))).collect();
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(hay: &str, needle: &str) -> bool {
        Searcher::new(needle, false).is_match(hay)
    }

    #[test]
    fn finds_needles_in_any_ascii_case() {
        assert!(folded("a DeadLock was found", "deadlock"));
        assert!(folded("deadlock", "DEADLOCK"));
        assert!(folded("xdeadlockx", "deadlock"), "a substring, not a term");
        assert!(!folded("deadloc", "deadlock"));
        assert!(!folded("dead lock", "deadlock"));
        assert!(folded("anything", ""));
        assert!(folded("", ""));
        assert!(!folded("", "a"));
        // The anchor (rarest letter) at either end of the needle and of the haystack.
        assert!(folded("zebra", "zeb"));
        assert!(folded("abz", "bz"));
        assert!(folded("kkkkk", "kk"));
        assert!(!folded("kxkxk", "kk"));
        assert!(folded("a-b_c", "-B_"));
        assert!(folded("héllo WORLD", "world"));
        // Non-ASCII needles fold with Unicode.
        assert!(folded("CAFÉ au lait", "café"));
        assert!(!folded("cafe", "café"));
    }

    fn dynamic_matches(case_sensitive: bool, texts: &[Option<&str>], needle: &str) -> Result<Vec<Option<bool>>> {
        use datafusion::arrow::array::{Array, StringArray};
        use datafusion::arrow::datatypes::Field;
        use datafusion::config::ConfigOptions;

        let udf = ContainsUdf::dynamic(case_sensitive);
        let array: Arc<dyn Array> = Arc::new(StringArray::from(texts.to_vec()));
        let args = vec![
            ColumnarValue::Array(array),
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(needle.to_string()))),
        ];
        let result = udf.invoke_with_args(ScalarFunctionArgs {
            args,
            arg_fields: vec![
                Arc::new(Field::new("hay", DataType::Utf8, true)),
                Arc::new(Field::new("needle", DataType::Utf8, true)),
            ],
            number_rows: texts.len(),
            return_field: Arc::new(Field::new("r", DataType::Boolean, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        let ColumnarValue::Array(array) = result else {
            return datafusion::common::internal_err!("not an array");
        };
        let booleans = array
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| datafusion::error::DataFusionError::Internal("not booleans".into()))?;
        Ok(booleans.iter().collect())
    }

    #[test]
    fn dynamic_text_is_searched_as_tostring_reads_it() -> Result<()> {
        let texts = [
            Some(r#""a DeadLock was found""#),
            Some(r#""escaped "deadlock" here""#),
            Some(r#""deadlock""#),
            Some(r#"{"reason":"deadlock"}"#),
            Some(r#""deadloc""#),
            Some("null"),
            None,
            Some("42"),
        ];
        assert_eq!(
            dynamic_matches(false, &texts, "deadlock")?,
            [true, true, true, true, false, false, false, false].map(Some)
        );
        assert_eq!(
            dynamic_matches(true, &texts, "DeadLock")?,
            [true, false, false, false, false, false, false, false].map(Some)
        );
        // The quotes of a JSON string are not part of its text; an object's are.
        assert_eq!(
            dynamic_matches(false, &texts, "\"")?,
            [false, true, false, true, false, false, false, false].map(Some)
        );
        // Null and JSON null read as "", which contains the empty needle.
        assert_eq!(dynamic_matches(false, &texts, "")?, [true; 8].map(Some));
        assert_eq!(dynamic_matches(false, &texts, "42")?[7], Some(true));
        Ok(())
    }

    #[test]
    fn case_sensitive_search_is_exact() {
        let searcher = Searcher::new("Lock", true);
        assert!(searcher.is_match("a Lock"));
        assert!(!searcher.is_match("a lock"));
        assert!(Searcher::new("", true).is_match("x"));
    }

    /// A xorshift generator of test inputs, from `seed`.
    pub(super) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn agrees_with_a_plain_search_on_many_inputs() {
        let alphabet = ['a', 'b', 'A', 'B', 'k', 'K', '-', 'é'];
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let text: String = (0..(next() % 12)).map(|_| alphabet[(next() % 8) as usize]).collect();
            let needle: String = (0..(next() % 4)).map(|_| alphabet[(next() % 7) as usize]).collect();
            let expected = text.to_ascii_lowercase().contains(&needle.to_ascii_lowercase());
            assert_eq!(folded(&text, &needle), expected, "{text:?} contains {needle:?}");
            assert_eq!(Searcher::new(&needle, true).is_match(&text), text.contains(&needle));
        }
    }
}
