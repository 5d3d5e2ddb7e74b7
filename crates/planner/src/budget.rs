//! The summarize memory budget in the plan. Every grouping `summarize` is planned with a
//! filter `kql_group_fraction(0, keys…)` on its input: with 0 it keeps every row, and the
//! optimizer removes it (the function simplifies to `true`). When a summarize goes over its
//! budget, the engine rewrites the plan it already has ([`keep_groups`]) to keep 1 of 2^bits
//! groups: the function then simplifies to `hash_many(keys…) & (2^bits - 1) == 0`, so whole
//! groups are kept or dropped, chosen by the hash of their keys. Nothing is planned again.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, Filter, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility, binary_expr, lit,
};

/// The marker function's name.
pub const GROUP_FRACTION: &str = "kql_group_fraction";

/// The most halvings a rewrite asks for.
const MAX_BITS: u32 = 30;

/// `kql_group_fraction(bits, keys…)`: whether a row's group is kept when 1 of 2^bits groups
/// are (see the module documentation). Always simplified away before it runs.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GroupFractionUdf {
    signature: Signature,
}

impl GroupFractionUdf {
    pub fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(GroupFractionUdf {
            signature: Signature::variadic_any(Volatility::Immutable),
        })
    }
}

fn bits_of(expr: &Expr) -> Option<u32> {
    match expr {
        Expr::Literal(ScalarValue::Int64(Some(bits)), _) => u32::try_from(*bits).ok(),
        _ => None,
    }
}

impl ScalarUDFImpl for GroupFractionUdf {
    fn name(&self) -> &str {
        GROUP_FRACTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let Some(bits) = args.first().and_then(bits_of) else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        if bits == 0 {
            return Ok(ExprSimplifyResult::Simplified(lit(true)));
        }
        let Some(hash) = trawl_functions::registry::lookup("hash_many") else {
            return exec_err!("hash_many is not registered");
        };
        let keys: Vec<Expr> = args.into_iter().skip(1).collect();
        let hashed = Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new((hash.udf)()), keys));
        let mask = lit((1i64 << bits.min(MAX_BITS)) - 1);
        Ok(ExprSimplifyResult::Simplified(
            binary_expr(hashed, Operator::BitwiseAnd, mask).eq(lit(0i64)),
        ))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // The optimizer's expression simplifier replaces every call before a plan runs.
        exec_err!("{GROUP_FRACTION} runs only after the optimizer rewrote it; this plan was not optimized")
    }
}

/// The filter a grouping summarize's input gets: every group kept until [`keep_groups`].
pub(crate) fn marker(keys: Vec<Expr>) -> Expr {
    let mut args = Vec::with_capacity(keys.len() + 1);
    args.push(lit(0i64));
    args.extend(keys);
    Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(GroupFractionUdf::udf()), args))
}

fn is_marker(expr: &Expr) -> bool {
    matches!(expr, Expr::ScalarFunction(call) if call.func.name() == GROUP_FRACTION)
}

/// `plan` with every grouping summarize keeping 1 of 2^`bits` of its groups; `None` when the
/// plan has no grouping summarize to thin out.
pub fn keep_groups(plan: &LogicalPlan, bits: u32) -> Result<Option<LogicalPlan>> {
    let mut found = false;
    let rewritten = plan
        .clone()
        .transform_up_with_subqueries(|node| match node {
            LogicalPlan::Filter(filter) if is_marker(&filter.predicate) => {
                found = true;
                let Expr::ScalarFunction(mut call) = filter.predicate else {
                    return exec_err!("the group filter changed shape");
                };
                if let Some(first) = call.args.first_mut() {
                    *first = lit(i64::from(bits.min(MAX_BITS)));
                }
                let filter = Filter::try_new(Expr::ScalarFunction(call), filter.input)?;
                Ok(Transformed::yes(LogicalPlan::Filter(filter)))
            }
            other => Ok(Transformed::no(other)),
        })
        .data()?;
    Ok(found.then_some(rewritten))
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::{LogicalPlanBuilder, col};

    use super::*;

    fn bits_in(plan: &LogicalPlan) -> Vec<Option<u32>> {
        let mut found = Vec::new();
        let _ = plan.apply_with_subqueries(|node| {
            if let LogicalPlan::Filter(filter) = node
                && let Expr::ScalarFunction(call) = &filter.predicate
                && call.func.name() == GROUP_FRACTION
            {
                found.push(call.args.first().and_then(bits_of));
            }
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        });
        found
    }

    #[test]
    fn the_rewrite_sets_the_fraction_of_every_marked_summarize() -> Result<()> {
        let values = LogicalPlanBuilder::values(vec![vec![lit(1i64)], vec![lit(2i64)]])?.build()?;
        let summarized = LogicalPlanBuilder::from(values.clone())
            .filter(marker(vec![col("column1")]))?
            .aggregate(vec![col("column1")], Vec::<Expr>::new())?
            .build()?;
        assert_eq!(bits_in(&summarized), [Some(0)]);
        let thinner = keep_groups(&summarized, 3)?;
        assert_eq!(thinner.as_ref().map(bits_in), Some(vec![Some(3)]));
        // The original is unchanged, and a plan without a grouping summarize has nothing to thin.
        assert_eq!(bits_in(&summarized), [Some(0)]);
        assert!(keep_groups(&values, 1)?.is_none());
        Ok(())
    }
}
