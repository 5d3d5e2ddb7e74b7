//! `trace-find {predicate} [relation {predicate} ...] [within timespan]` over spans: one row
//! per trace that holds spans matching the first span set and, in turn, spans in the relation
//! to them that match the next (`>>` descendant, `>` child, `<<` ancestor, `<` parent, `~`
//! sibling, `::` anywhere in the trace); with `within`, related spans start at most that long
//! apart. Output: `trace_id`, `start` (the earliest start of the last set's matching spans),
//! `spans` (their ids), `span_count`.
//!
//! Lowered to KQL: each span gets a bit per span set it matches; the traces holding every set
//! are found first, then all their spans go to the `__trace_find` aggregate, which follows
//! the parent links.

use datafusion::logical_expr::{lit, when};
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::TraceFind;
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular, internal};
use crate::rolling::INPUT;

const FLAGS: &str = "__trawl_trace_find_flags";
/// The span columns `trace-find` reads.
const SPAN_COLUMNS: [&str; 4] = ["trace_id", "span_id", "parent_span_id", trawl_common::TIME_COLUMN];
/// Most span sets (one bit each).
const MOST_SPANSETS: usize = 62;

impl Planner<'_> {
    pub(crate) fn trace_find(&mut self, input: Tabular, find: &TraceFind, span: Span) -> Result<Tabular, TrawlError> {
        if let Some(missing) = SPAN_COLUMNS.iter().find(|c| input.column_type(c).is_none()) {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                span,
                format!(
                    "trace-find reads spans: the input has no column '{missing}' \
                     (it needs trace_id, span_id, parent_span_id and timestamp)"
                ),
            ));
        }
        if find.spansets.len() > MOST_SPANSETS {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("trace-find takes at most {MOST_SPANSETS} span sets"),
            ));
        }
        let mut flags = lit(0i64);
        for (i, predicate) in find.spansets.iter().enumerate() {
            let typed = self.scalar(predicate, &input)?;
            let condition = self.boolean(typed, predicate)?;
            let bit = when(condition.is_true(), lit(1i64 << i))
                .otherwise(lit(0i64))
                .map_err(|e| internal(&e))?;
            flags = flags + bit;
        }
        let within = match &find.within {
            None => "long(null)".to_string(),
            Some(expr) => {
                let empty = self.empty_tabular()?;
                let typed = self.scalar(expr, &empty)?;
                let value = crate::sources::constant_value(&typed.expr);
                match (typed.kql_type, value) {
                    (KqlType::Timespan, Some(datafusion::common::ScalarValue::DurationNanosecond(Some(ns))))
                        if ns >= 0 =>
                    {
                        ns.to_string()
                    }
                    _ => {
                        return Err(self.error(
                            ErrorCode::BadRequest,
                            expr.span,
                            "trace-find's within takes a constant timespan, such as 5m",
                        ));
                    }
                }
            }
        };
        let flagged = input.extended(vec![(FLAGS, flags, KqlType::Long)])?;
        let counts: Vec<String> = (0..find.spansets.len())
            .map(|i| format!("__c{i} = countif(binary_and({FLAGS}, {}) != 0)", 1i64 << i))
            .collect();
        let all_present: Vec<String> = (0..find.spansets.len()).map(|i| format!("__c{i} > 0")).collect();
        let relations: Vec<&str> = find.relations.iter().map(|r| r.symbol()).collect();
        let text = format!(
            "{INPUT} | join kind=inner ({INPUT} | summarize {} by trace_id | where {} | project trace_id) on trace_id \
             | summarize __r = __trace_find(span_id, parent_span_id, timestamp, {FLAGS}, '{}', {within}) by trace_id \
             | where isnotnull(__r) \
             | project trace_id, start = unixtime_nanoseconds_todatetime(tolong(__r.start)), spans = __r.spans, \
             span_count = array_length(__r.spans)",
            counts.join(", "),
            all_present.join(" and "),
            relations.join(","),
        );
        self.lowered(flagged, "trace-find", &text, span)
    }
}
