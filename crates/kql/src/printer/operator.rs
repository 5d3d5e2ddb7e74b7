//! Printing tabular operators.

use std::fmt::{self, Display, Formatter};

use super::expr::ExprContext;
use super::write_list;
use crate::ast::{ColumnPattern, NullsOrder, Operator, OperatorKind, OperatorParam, SortKey, SortOrder};

impl Display for Operator {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let kind = &self.kind;
        f.write_str(kind.name())?;
        match kind {
            OperatorKind::Where(predicate) => write!(f, " {}", ExprContext::scalar(predicate)),
            OperatorKind::Project(columns) | OperatorKind::Extend(columns) => {
                f.write_str(" ")?;
                write_list(f, columns, |f, column| write!(f, "{column}"))
            }
            OperatorKind::Take(count) => write!(f, " {}", ExprContext::scalar(count)),
            OperatorKind::Count => Ok(()),
            OperatorKind::Sort(sort) => {
                write_params(f, &sort.params)?;
                f.write_str(" by ")?;
                write_list(f, &sort.keys, |f, key| write!(f, "{key}"))
            }
            OperatorKind::Summarize(summarize) => {
                write_params(f, &summarize.params)?;
                if !summarize.aggregates.is_empty() {
                    f.write_str(" ")?;
                    write_list(f, &summarize.aggregates, |f, aggregate| write!(f, "{aggregate}"))?;
                }
                if !summarize.by.is_empty() {
                    f.write_str(" by ")?;
                    write_list(f, &summarize.by, |f, group| write!(f, "{group}"))?;
                }
                Ok(())
            }
            OperatorKind::Top(top) => {
                write_params(f, &top.params)?;
                write!(f, " {} by {}", ExprContext::scalar(&top.count), top.by)
            }
            OperatorKind::Distinct(columns) => {
                f.write_str(" ")?;
                write_list(f, columns, |f, column| write!(f, "{}", ExprContext::scalar(column)))
            }
            OperatorKind::ProjectAway(patterns) | OperatorKind::ProjectKeep(patterns) => {
                f.write_str(" ")?;
                write_list(f, patterns, |f, pattern| write!(f, "{pattern}"))
            }
            OperatorKind::ProjectRename(renames) => {
                f.write_str(" ")?;
                write_list(f, renames, |f, rename| {
                    write!(f, "{} = {}", rename.new_name, rename.old_name)
                })
            }
            OperatorKind::ProjectReorder(keys) => {
                f.write_str(" ")?;
                write_list(f, keys, |f, key| {
                    write!(f, "{}", key.pattern)?;
                    match key.order {
                        Some(order) => write!(f, " {}", order.as_str()),
                        None => Ok(()),
                    }
                })
            }
            _ => super::operator_extended::write_operator_body(f, kind),
        }
    }
}

/// ` name=value` for each option.
pub(crate) fn write_params(f: &mut Formatter<'_>, params: &[OperatorParam]) -> fmt::Result {
    for param in params {
        write!(f, " {}={}", param.name, ExprContext::primary(&param.value))?;
    }
    Ok(())
}

impl Display for SortKey {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ExprContext::scalar(&self.expr))?;
        match self.order {
            Some(SortOrder::Asc) => f.write_str(" asc")?,
            Some(SortOrder::Desc) => f.write_str(" desc")?,
            None => {}
        }
        match self.nulls {
            Some(NullsOrder::First) => f.write_str(" nulls first"),
            Some(NullsOrder::Last) => f.write_str(" nulls last"),
            None => Ok(()),
        }
    }
}

impl Display for ColumnPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if self.bracketed {
            f.write_str("[")?;
            super::literal::write_string(f, &self.pattern)?;
            f.write_str("]")
        } else {
            f.write_str(&self.pattern)
        }
    }
}
