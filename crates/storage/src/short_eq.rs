//! Filters that compare a string column with a short literal (`==`, `!=`) compare string
//! views directly ([`trawl_functions::short_eq`]): a physical optimizer rule replaces such
//! comparisons in `FilterExec` predicates. Scans keep the original predicate (statistics,
//! bloom filters and the token index prune by it); only the row-by-row test changes.

use std::cell::OnceCell;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::Result;
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::{Operator, ScalarUDF};
use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal, NotExpr};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use trawl_functions::short_eq::{SHORT_BYTES, ShortEqUdf};

/// The rule; see the module documentation.
#[derive(Debug, Default)]
pub struct ShortStringEquality;

/// The function the rule calls, made once for the process.
static SHORT_EQ: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(ShortEqUdf::new())));

impl PhysicalOptimizerRule for ShortStringEquality {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        // Every query is planned through this rule; the options are copied for the calls it
        // makes, so only when it makes one.
        let options = OnceCell::new();
        plan.transform_up(|node| {
            let Some(filter) = node.downcast_ref::<FilterExec>() else {
                return Ok(Transformed::no(node));
            };
            let schema = filter.input().schema();
            let predicate =
                Arc::clone(filter.predicate()).transform_up(|expr| rewrite(expr, &schema, config, &options))?;
            if !predicate.transformed {
                return Ok(Transformed::no(node));
            }
            let filter = FilterExecBuilder::from(filter).with_predicate(predicate.data).build()?;
            Ok(Transformed::yes(Arc::new(filter) as Arc<dyn ExecutionPlan>))
        })
        .data()
    }

    fn name(&self) -> &str {
        "short_string_equality"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `column == 'short'` (either side) on a string-view column as the view compare, and `!=` as
/// its negation.
fn rewrite(
    expr: Arc<dyn PhysicalExpr>,
    schema: &Schema,
    config: &ConfigOptions,
    options: &OnceCell<Arc<ConfigOptions>>,
) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    let Some(binary) = expr.downcast_ref::<BinaryExpr>() else {
        return Ok(Transformed::no(expr));
    };
    let negated = match binary.op() {
        Operator::Eq => false,
        Operator::NotEq => true,
        _ => return Ok(Transformed::no(expr)),
    };
    let sides = |a: &Arc<dyn PhysicalExpr>, b: &Arc<dyn PhysicalExpr>| {
        a.downcast_ref::<Column>()
            .cloned()
            .zip(b.downcast_ref::<Literal>().map(|l| l.value().clone()))
    };
    let Some((column, literal)) = sides(binary.left(), binary.right()).or_else(|| sides(binary.right(), binary.left()))
    else {
        return Ok(Transformed::no(expr));
    };
    let is_view = schema
        .fields()
        .get(column.index())
        .is_some_and(|field| field.name() == column.name() && field.data_type() == &DataType::Utf8View);
    let Some(Some(text)) = literal.try_as_str() else {
        return Ok(Transformed::no(expr));
    };
    if !is_view || text.len() > SHORT_BYTES {
        return Ok(Transformed::no(expr));
    }
    let args: Vec<Arc<dyn PhysicalExpr>> = vec![
        Arc::new(column),
        Arc::new(Literal::new(ScalarValue::Utf8View(Some(text.to_string())))),
    ];
    let call: Arc<dyn PhysicalExpr> = Arc::new(ScalarFunctionExpr::try_new(
        Arc::clone(&SHORT_EQ),
        args,
        schema,
        Arc::clone(options.get_or_init(|| Arc::new(config.clone()))),
    )?);
    Ok(Transformed::yes(match negated {
        true => Arc::new(NotExpr::new(call)),
        false => call,
    }))
}
