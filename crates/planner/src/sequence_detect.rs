//! `evaluate sequence_detect(Timeline, MaxStepWindow, MaxSequenceSpan, step1 = pred1, step2 =
//! pred2, ... [, Dim1, Dim2, ...])`, lowered to KQL: every chain of rows, one per step, each
//! later than the one before by at most `MaxStepWindow`, the last within `MaxSequenceSpan` of
//! the first, all with the same dimension values. One row per chain: the dimensions, each
//! step's time (`<step>_<Timeline>`) and the `Duration` from the first step to the last.

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::names::bracketed;
use crate::rolling::INPUT;

/// The most steps a sequence has.
const MAX_STEPS: usize = 16;

impl Planner<'_> {
    pub(crate) fn sequence_detect(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage =
            "sequence_detect(TimelineColumn, MaxSequenceStepWindow, MaxSequenceSpan, Expr1, Expr2, ... [, Dim1, ...])";
        let [timeline, step_window, span_window, rest @ ..] = args else {
            return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}")));
        };
        let ExprKind::Name(timeline) = &timeline.kind else {
            return Err(self.error(
                ErrorCode::BadRequest,
                timeline.span,
                "sequence_detect takes the timeline column first",
            ));
        };
        if input.column_type(&timeline.name).is_none() {
            return Err(self.unknown_column(&timeline.name, timeline.span, &input));
        }
        // The dimensions: the trailing columns that are not booleans (a boolean column is a step).
        let is_dimension = |arg: &KExpr| match &arg.kind {
            ExprKind::Name(ident) => input.column_type(&ident.name).is_some_and(|t| t != KqlType::Bool),
            _ => false,
        };
        let dims_from = rest.iter().rposition(|a| !is_dimension(a)).map_or(0, |i| i + 1);
        let (steps, dims) = rest.split_at(dims_from);
        if steps.is_empty() || steps.len() > MAX_STEPS {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("sequence_detect takes 1 to {MAX_STEPS} step predicates: expected {usage}"),
            ));
        }
        let mut named = Vec::with_capacity(steps.len());
        for (i, step) in steps.iter().enumerate() {
            named.push(match &step.kind {
                ExprKind::NamedArgument { name, value } => (name.name.clone(), value.to_string()),
                _ => (format!("Expr{}", i + 1), step.to_string()),
            });
        }
        let t = bracketed(&timeline.name);
        let dims: Vec<String> = dims
            .iter()
            .filter_map(|d| match &d.kind {
                ExprKind::Name(ident) => Some(bracketed(&ident.name)),
                _ => None,
            })
            .collect();
        let dim_list: String = dims.iter().map(|d| format!(", {d}")).collect();
        if dims.len() != rest.len() - steps.len() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "sequence_detect takes column names as dimensions",
            ));
        }
        let on: String = std::iter::once("__sd_k".to_string())
            .chain(dims.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ");
        let step_rows = |i: usize, predicate: &str| {
            format!(
                "{INPUT} | where coalesce(tobool({predicate}), false) | project __sd_k = 1, __sd_t{i} = {t}{dim_list}"
            )
        };
        let mut text = step_rows(0, &named[0].1);
        for (i, (_, predicate)) in named.iter().enumerate().skip(1) {
            text.push_str(&format!(
                " | join kind=inner ({}) on {on} \
                 | where __sd_t{i} > __sd_t{prev} and __sd_t{i} - __sd_t{prev} <= ({step_window}) \
                 and __sd_t{i} - __sd_t0 <= ({span_window})",
                step_rows(i, predicate),
                prev = i - 1
            ));
        }
        let last = named.len() - 1;
        let mut columns: Vec<String> = dims.clone();
        for (i, (name, _)) in named.iter().enumerate() {
            columns.push(format!(
                "{} = __sd_t{i}",
                bracketed(&format!("{name}_{}", timeline.name))
            ));
        }
        columns.push(format!("Duration = __sd_t{last} - __sd_t0"));
        let order: String = (0..named.len()).map(|i| format!("__sd_t{i} asc, ")).collect();
        text.push_str(&format!(
            " | order by {order}__sd_k asc | project {}",
            columns.join(", ")
        ));
        self.lowered(input, "sequence_detect", &text, span)
    }
}
