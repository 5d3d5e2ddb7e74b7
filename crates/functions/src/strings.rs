//! String operators that DataFusion has no exact equivalent for.

use std::sync::Arc;

use datafusion::arrow::array::BooleanArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature};

use crate::dynamic::unquote_json_string;
use crate::tokenizer::{TermMatch, has_terms};
use crate::util::{StringArg, all_scalar, rows_of, two_strings};

/// `kql_has(haystack, needle)` / `kql_has_cs(...)`: whole-term match (see [`crate::tokenizer`]);
/// `kql_hasprefix`/`kql_hassuffix` (and `_cs`): the needle begins or ends a term. A null
/// haystack never matches. A JSON string haystack (a dynamic value) is unquoted first.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct HasUdf {
    case_sensitive: bool,
    kind: TermMatch,
    signature: Signature,
}

impl HasUdf {
    pub fn new(case_sensitive: bool) -> HasUdf {
        HasUdf::matching(case_sensitive, TermMatch::Whole)
    }

    pub fn matching(case_sensitive: bool, kind: TermMatch) -> HasUdf {
        HasUdf {
            case_sensitive,
            kind,
            signature: two_strings(),
        }
    }

    pub fn function_name(case_sensitive: bool) -> &'static str {
        if case_sensitive { "kql_has_cs" } else { "kql_has" }
    }
}

impl ScalarUDFImpl for HasUdf {
    fn name(&self) -> &str {
        match (self.kind, self.case_sensitive) {
            (TermMatch::Whole, cs) => Self::function_name(cs),
            (TermMatch::Prefix, false) => "kql_hasprefix",
            (TermMatch::Prefix, true) => "kql_hasprefix_cs",
            (TermMatch::Suffix, false) => "kql_hassuffix",
            (TermMatch::Suffix, true) => "kql_hassuffix_cs",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = rows_of(&args.args, args.number_rows);
        let scalar = all_scalar(&args.args);
        let haystack = StringArg::from_columnar(&args.args[0])?;
        let needle = StringArg::from_columnar(&args.args[1])?;
        let matches = |i: usize| -> Option<bool> {
            needle.with_value(i, |needle| {
                let needle = needle?;
                haystack.with_value(i, |hay| {
                    let hay = hay?;
                    Some(match unquote_json_string(hay) {
                        Some(text) => has_terms(&text, needle, self.case_sensitive, self.kind),
                        None => has_terms(hay, needle, self.case_sensitive, self.kind),
                    })
                })
            })
        };
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(
                matches(0).unwrap_or(false),
            ))));
        }
        let result: BooleanArray = (0..rows).map(|i| Some(matches(i).unwrap_or(false))).collect();
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}
