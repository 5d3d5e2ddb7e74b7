//! Bounds on the work one query may ask of the planner and of what runs its plan.
//!
//! The parser bounds the syntax tree ([`trawl_kql::MAX_TREE_DEPTH`]), but a small query can
//! still grow a large plan: a scalar `let` is inlined at every use (`let a1 = a0 + a0;
//! let a2 = a1 + a1; …` doubles at each step), a user function is expanded at every call,
//! and a chain of `let`s nests one expression in the next. Three bounds keep planning and
//! everything after it (DataFusion's optimizer, evaluation, dropping the plan) within
//! bounded time, memory and stack:
//!
//! - [`MAX_PLANNING_STEPS`]: expressions and tabular expressions lowered, with every
//!   inlined `let` value counted at its size;
//! - [`MAX_EXPRESSION_DEPTH`]: the depth of any lowered expression;
//! - [`MAX_PLAN_NODES`]: plan operators and expression nodes of a finished plan, counted as
//!   a tree (a plan shared by two branches counts twice, as the optimizer will copy it).
//!
//! The walks here use an explicit stack and stop at the bound, so measuring a huge plan
//! costs no more than the bound.

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{Expr, LogicalPlan};
use trawl_common::{ErrorCode, TrawlError};

/// Expressions and tabular expressions one query may lower (inlined `let` values count at
/// their size).
pub const MAX_PLANNING_STEPS: usize = 250_000;

/// The deepest expression a plan may hold: twice the parser's tree bound, so that any
/// query the parser takes fits, while `let` chains that nest further are refused.
pub const MAX_EXPRESSION_DEPTH: usize = 2 * trawl_kql::MAX_TREE_DEPTH;

/// Operators and expression nodes of one finished plan, counted as a tree.
pub const MAX_PLAN_NODES: usize = 1_000_000;

/// Stack left below which the planner's recursion continues on a new stack segment.
pub const STACK_RED_ZONE: usize = 256 * 1024;
/// Size of each new stack segment the planner's recursion moves to.
pub const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Size of a tree walked up to a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeSize {
    /// Nodes counted; past the bound the walk stopped, so this is a lower bound.
    pub nodes: usize,
    /// Deepest level seen (1 for a leaf).
    pub depth: usize,
}

/// The size of `expr`, walking at most `node_limit` nodes.
pub fn expression_size(expr: &Expr, node_limit: usize) -> TreeSize {
    let mut size = TreeSize::default();
    let mut stack: Vec<(&Expr, usize)> = vec![(expr, 1)];
    while let Some((node, depth)) = stack.pop() {
        size.nodes += 1;
        size.depth = size.depth.max(depth);
        if size.nodes > node_limit {
            break;
        }
        // Children are pushed, not visited: the closure never recurses.
        let _ = node.apply_children(|child| {
            stack.push((child, depth + 1));
            Ok(TreeNodeRecursion::Continue)
        });
    }
    size
}

/// The size of `plan` as a tree of operators and expression nodes, walking at most
/// `node_limit` nodes; `depth` is the deeper of the operator nesting and any expression's.
pub fn plan_size(plan: &LogicalPlan, node_limit: usize) -> TreeSize {
    let mut size = TreeSize::default();
    let mut stack: Vec<(&LogicalPlan, usize)> = vec![(plan, 1)];
    while let Some((node, depth)) = stack.pop() {
        size.nodes += 1;
        size.depth = size.depth.max(depth);
        if size.nodes > node_limit {
            break;
        }
        let _ = node.apply_expressions(|expr| {
            let expr_size = expression_size(expr, node_limit.saturating_sub(size.nodes));
            size.nodes += expr_size.nodes;
            size.depth = size.depth.max(expr_size.depth);
            Ok(TreeNodeRecursion::Continue)
        });
        for input in node.inputs() {
            stack.push((input, depth + 1));
        }
    }
    size
}

/// Refuses a finished plan over [`MAX_PLAN_NODES`] or deeper than [`MAX_EXPRESSION_DEPTH`].
pub fn check_plan(plan: &LogicalPlan) -> Result<(), TrawlError> {
    let size = plan_size(plan, MAX_PLAN_NODES);
    if size.nodes > MAX_PLAN_NODES {
        return Err(too_large(format!(
            "the query's plan has more than {MAX_PLAN_NODES} operators and expression terms \
             (a table 'let' used many times, or a union of unions, is copied at each use)"
        )));
    }
    if size.depth > MAX_EXPRESSION_DEPTH {
        return Err(too_large(format!(
            "the query's plan is more than {MAX_EXPRESSION_DEPTH} levels deep"
        )));
    }
    Ok(())
}

/// The error of a query over one of these bounds.
pub fn too_large(message: impl Into<String>) -> TrawlError {
    TrawlError::new(ErrorCode::BadRequest, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    #[test]
    fn a_chain_measures_its_depth_and_nodes() {
        let mut expr = col("x");
        for _ in 0..10 {
            expr = expr + lit(1);
        }
        assert_eq!(expression_size(&expr, 1000), TreeSize { nodes: 21, depth: 11 });
    }

    #[test]
    fn the_walk_stops_at_its_bound() {
        let mut expr = col("x");
        for _ in 0..1_000 {
            expr = expr + lit(1);
        }
        let size = expression_size(&expr, 100);
        assert_eq!(size.nodes, 101);
    }
}
