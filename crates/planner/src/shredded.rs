//! Reads of shredded keys (decision 002): a table scan carries hidden columns that hold single
//! keys of its bags (`trawl_common::shred`), each equal to `json_as_text(bag, key)` on every
//! row. After planning, `json_as_text(bag, 'key')` is replaced by the key's hidden column
//! wherever the input of the expression still carries it, so `tostring(resource['service.name'])`
//! reads one small column instead of decoding every bag.
//!
//! Hidden columns reach an expression only through operators that keep the input's columns as
//! they are (`where`, `sort`, `top`, `take`, window functions); every operator that builds
//! new columns (`project`, `extend`, `summarize`, joins, unions) lists the visible columns
//! only, and so drops them. A bag column seen next to its hidden columns is therefore the bag
//! the hidden columns were cut from.

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, ScalarValue, TableReference};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use trawl_common::TrawlError;
use trawl_common::shred::{is_hidden_column, parse_shredded_column};

use crate::context::{Tabular, column, internal};

/// Functions whose call on `(bag, 'key')` the hidden column of the key answers.
const KEY_AS_TEXT: &[&str] = &["json_as_text", "json_as_text_per_distinct"];

/// A hidden column an expression's input carries.
struct Hidden {
    relation: Option<TableReference>,
    name: String,
    bag: String,
    key: String,
}

/// `plan` with key reads answered by hidden columns where its nodes' inputs carry them.
pub fn read_shredded(plan: LogicalPlan) -> Result<LogicalPlan, TrawlError> {
    let rewritten = plan
        .transform_up_with_subqueries(rewrite_node)
        .map_err(|e| internal(&e))?;
    if !rewritten.transformed {
        return Ok(rewritten.data);
    }
    // A hidden column is a string view where `json_as_text` gave a string: schemas above the
    // rewritten nodes are computed again.
    rewritten
        .data
        .transform_up_with_subqueries(|node| node.recompute_schema().map(Transformed::yes))
        .map(|t| t.data)
        .map_err(|e| internal(&e))
}

/// `tabular`'s plan without hidden columns (for results and whole-row operators).
pub fn visible(tabular: Tabular) -> Result<Tabular, TrawlError> {
    if !has_hidden(tabular.plan.schema()) {
        return Ok(tabular);
    }
    let exprs: Vec<Expr> = tabular.columns.iter().map(|(n, _)| column(n).alias(n)).collect();
    let plan = LogicalPlanBuilder::from(tabular.plan)
        .project(exprs)
        .and_then(|b| b.build())
        .map_err(|e| internal(&e))?;
    Ok(Tabular {
        plan,
        columns: tabular.columns,
    })
}

fn has_hidden(schema: &DFSchema) -> bool {
    schema.fields().iter().any(|f| is_hidden_column(f.name()))
}

fn rewrite_node(node: LogicalPlan) -> DfResult<Transformed<LogicalPlan>> {
    let reads_input = matches!(
        node,
        LogicalPlan::Filter(_)
            | LogicalPlan::Projection(_)
            | LogicalPlan::Aggregate(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Window(_)
    );
    let hidden: Vec<Hidden> = match node.inputs().as_slice() {
        [input] if reads_input => input
            .schema()
            .iter()
            .filter_map(|(relation, field)| {
                let (bag, key) = parse_shredded_column(field.name())?;
                Some(Hidden {
                    relation: relation.cloned(),
                    name: field.name().clone(),
                    bag: bag.to_string(),
                    key: key.to_string(),
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    if hidden.is_empty() {
        return Ok(Transformed::no(node));
    }
    let names = NamePreserver::new(&node);
    node.map_expressions(|expr| {
        let saved = names.save(&expr);
        let rewritten = expr.transform_up(|e| Ok(replace_key_read(e, &hidden)))?;
        Ok(if rewritten.transformed {
            rewritten.update_data(|e| saved.restore(e))
        } else {
            rewritten
        })
    })
}

/// `json_as_text(bag, 'key')` → the key's hidden column, when `hidden` has it.
fn replace_key_read(expr: Expr, hidden: &[Hidden]) -> Transformed<Expr> {
    let found = match &expr {
        Expr::ScalarFunction(call) if KEY_AS_TEXT.contains(&call.func.name()) => match call.args.as_slice() {
            [Expr::Column(bag), Expr::Literal(key, _)] => text_of(key).and_then(|key| {
                hidden.iter().find(|h| {
                    h.bag == bag.name && h.key == key && (bag.relation.is_none() || bag.relation == h.relation)
                })
            }),
            _ => None,
        },
        _ => None,
    };
    match found {
        Some(h) => Transformed::yes(Expr::Column(Column::new(h.relation.clone(), &h.name))),
        None => Transformed::no(expr),
    }
}

fn text_of(value: &ScalarValue) -> Option<&str> {
    match value {
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s)) => Some(s),
        _ => None,
    }
}
