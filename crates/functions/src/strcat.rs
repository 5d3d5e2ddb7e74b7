//! `strcat()`: DataFusion's `concat`, asking the query's memory account before it builds.
//!
//! `concat` builds its output in one go inside a projection, where no memory check runs
//! until the projection's batch is done: a pipeline of `extend s = strcat(s, s)` doubles a
//! string at every step and would build gigabytes before anything counted them. This wrapper
//! asks [`trawl_common::memory::admit`] for the output (at most the sum of its inputs) before
//! `concat` builds it; everything else (types, coercion, folding of literals) is `concat`'s.

use std::sync::{Arc, OnceLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};

use crate::util::memory_error;

/// `kql_strcat`: see the module.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StrcatUdf {
    concat: Arc<ScalarUDF>,
}

impl StrcatUdf {
    pub const NAME: &'static str = "kql_strcat";

    pub fn new() -> StrcatUdf {
        StrcatUdf {
            concat: datafusion::functions::string::concat(),
        }
    }
}

impl Default for StrcatUdf {
    fn default() -> Self {
        Self::new()
    }
}

/// The registered `kql_strcat`, to call from the planner.
pub fn udf() -> Arc<ScalarUDF> {
    static UDF: OnceLock<Arc<ScalarUDF>> = OnceLock::new();
    Arc::clone(UDF.get_or_init(|| Arc::new(ScalarUDF::from(StrcatUdf::new()))))
}

/// Bytes of string data `concat` would build over `rows` rows of `args`: the sum of the
/// inputs' (an upper bound: a null input makes no bytes).
fn output_bytes(args: &[ColumnarValue], rows: usize) -> u64 {
    args.iter()
        .map(|arg| match arg {
            ColumnarValue::Array(array) => array.get_buffer_memory_size() as u64,
            ColumnarValue::Scalar(scalar) => (scalar.size() as u64).saturating_mul(rows as u64),
        })
        .fold(0u64, u64::saturating_add)
}

impl ScalarUDFImpl for StrcatUdf {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn signature(&self) -> &Signature {
        self.concat.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.concat.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.concat.return_type(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let bytes = output_bytes(&args.args, args.number_rows);
        trawl_common::memory::admit(bytes, "strcat()").map_err(memory_error)?;
        self.concat.invoke_with_args(args)
    }

    /// `concat`'s own simplification (adjacent literals joined, nested `concat`s flattened),
    /// kept a `kql_strcat`.
    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        Ok(match self.concat.simplify(args, info)? {
            ExprSimplifyResult::Simplified(Expr::ScalarFunction(ScalarFunction { func, args }))
                if func.name() == self.concat.name() =>
            {
                ExprSimplifyResult::Simplified(udf().call(args))
            }
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, StringArray};
    use datafusion::arrow::datatypes::Field;
    use datafusion::common::config::ConfigOptions;
    use trawl_common::memory::{QueryMemory, enter};

    use super::*;

    fn call(values: &[&str], repeat: usize) -> Result<ColumnarValue> {
        let array: Arc<dyn Array> = Arc::new(StringArray::from(values.to_vec()));
        let args = vec![ColumnarValue::Array(Arc::clone(&array)); repeat];
        let field = Arc::new(Field::new("s", DataType::Utf8, true));
        StrcatUdf::new().invoke_with_args(ScalarFunctionArgs {
            args,
            arg_fields: vec![Arc::clone(&field); repeat],
            number_rows: values.len(),
            return_field: field,
            config_options: Arc::new(ConfigOptions::default()),
        })
    }

    #[test]
    fn strcat_joins_as_concat_does() -> Result<()> {
        let ColumnarValue::Array(joined) = call(&["ab", "c"], 2)? else {
            panic!("an array was expected");
        };
        let joined = joined
            .as_any()
            .downcast_ref::<StringArray>()
            .map(|a| a.iter().collect::<Vec<_>>());
        assert_eq!(joined, Some(vec![Some("abab"), Some("cc")]));
        Ok(())
    }

    #[test]
    fn strcat_asks_before_it_builds_past_the_query_limit() {
        let account = QueryMemory::standalone(1 << 20);
        let _entry = enter(&account);
        let long = "x".repeat(300 << 10);
        let refused = call(&[long.as_str()], 4)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(refused.contains("strcat()"), "{refused}");
        assert!(
            refused.contains(trawl_common::memory::MemoryExceeded::QUERY_LIMIT),
            "{refused}"
        );
    }
}
