//! The funnel plugins, lowered to KQL: `evaluate funnel_sequence_completion(...)` (one table,
//! over the `__funnel_reach` aggregate) and `evaluate funnel_sequence(...)` (three tables, so
//! it ends its query as `fork` does).

use serde_json::Value;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Evaluate, Expr as KExpr, ExprKind, Operator};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::names::{bracketed, string_literal};
use crate::rolling::INPUT;

/// The most steps a funnel sequence has.
const MAX_STEPS: usize = 64;

/// The most periods `funnel_sequence_completion` compares.
const MAX_PERIODS: usize = 32;

/// The columns and bounds both funnels share.
struct FunnelInput {
    id: String,
    timeline: String,
    timeline_type: KqlType,
    state: String,
    /// The KQL text of the start and end of the analysis.
    start: String,
    end: String,
    sequence: Vec<String>,
}

impl Planner<'_> {
    /// The user's text of an argument.
    fn argument_text(&self, arg: &KExpr) -> Result<String, TrawlError> {
        self.text
            .get(arg.span.start as usize..arg.span.end as usize)
            .filter(|text| !text.trim().is_empty())
            .map(|text| format!("({text})"))
            .ok_or_else(|| self.error(ErrorCode::BadRequest, arg.span, "expected a value"))
    }

    /// A constant dynamic array argument (a literal or a `let` of one).
    fn constant_array(&mut self, arg: &KExpr, input: &Tabular, what: &str) -> Result<Vec<Value>, TrawlError> {
        let typed = self.scalar(arg, input)?;
        let text = match crate::sources::constant_value(&typed.expr) {
            Some(datafusion::common::ScalarValue::Utf8(Some(text)))
            | Some(datafusion::common::ScalarValue::LargeUtf8(Some(text)))
            | Some(datafusion::common::ScalarValue::Utf8View(Some(text))) => text,
            _ => String::new(),
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(items)) if !items.is_empty() => Ok(items),
            _ => Err(self.error(
                ErrorCode::BadRequest,
                arg.span,
                format!("{what} is a constant dynamic array of at least one value"),
            )),
        }
    }

    /// A column argument that must exist in `input`.
    fn funnel_column(&self, plugin: &str, arg: &KExpr, input: &Tabular) -> Result<(String, KqlType), TrawlError> {
        let ExprKind::Name(ident) = &arg.kind else {
            return Err(self.error(ErrorCode::BadRequest, arg.span, format!("{plugin} takes a column here")));
        };
        match input.column_type(&ident.name) {
            Some(kql_type) => Ok((ident.name.clone(), kql_type)),
            None => Err(self.error(
                ErrorCode::UnknownColumn,
                arg.span,
                format!("unknown column '{}'", ident.name),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn funnel_input(
        &mut self,
        plugin: &str,
        input: &Tabular,
        id: &KExpr,
        timeline: &KExpr,
        start: &KExpr,
        end: &KExpr,
        state: &KExpr,
        sequence: &KExpr,
    ) -> Result<FunnelInput, TrawlError> {
        let (id, _) = self.funnel_column(plugin, id, input)?;
        let (timeline_name, timeline_type) = self.funnel_column(plugin, timeline, input)?;
        if !matches!(
            timeline_type,
            KqlType::DateTime | KqlType::Timespan | KqlType::Long | KqlType::Int
        ) {
            return Err(self.error(
                ErrorCode::TypeMismatch,
                timeline.span,
                format!("{plugin}'s timeline column is a datetime, timespan or long"),
            ));
        }
        let (state, _) = self.funnel_column(plugin, state, input)?;
        for bound in [start, end] {
            self.scalar(bound, input)?;
        }
        let steps = self.constant_array(sequence, input, "the sequence")?;
        if steps.len() > MAX_STEPS {
            return Err(self.error(
                ErrorCode::BadRequest,
                sequence.span,
                format!("a funnel sequence has at most {MAX_STEPS} steps"),
            ));
        }
        Ok(FunnelInput {
            id,
            timeline: timeline_name,
            timeline_type,
            state,
            start: self.argument_text(start)?,
            end: self.argument_text(end)?,
            sequence: steps
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect(),
        })
    }

    /// The rows of the analysis: `__id`, `__t`, `__s` (the state as a string), in the window.
    fn funnel_rows(funnel: &FunnelInput) -> String {
        let timeline = bracketed(&funnel.timeline);
        format!(
            "{INPUT} | where {timeline} >= {start} and {timeline} < {end} \
             | project __id = {id}, __t = {timeline}, __s = tostring({state})",
            start = funnel.start,
            end = funnel.end,
            id = bracketed(&funnel.id),
            state = bracketed(&funnel.state),
        )
    }

    /// `evaluate funnel_sequence_completion(id, timeline, start, end, bin_size, state,
    /// sequence, periods)`: per bin of the timeline, per period and per step of the sequence,
    /// how many ids completed the steps up to that one in order, the last within the period
    /// of the first (`dcount`).
    pub(crate) fn funnel_sequence_completion(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let plugin = "funnel_sequence_completion";
        let [id, timeline, start, end, bin_size, state, sequence, periods] = args else {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "expected funnel_sequence_completion(id_column, timeline_column, start, end, bin_size, \
                 state_column, sequence, max_sequence_step_periods)",
            ));
        };
        let funnel = self.funnel_input(plugin, &input, id, timeline, start, end, state, sequence)?;
        self.scalar(bin_size, &input)?;
        let period_values = self.constant_array(periods, &input, "the periods")?;
        if period_values.len() > MAX_PERIODS {
            return Err(self.error(
                ErrorCode::BadRequest,
                periods.span,
                format!("funnel_sequence_completion compares at most {MAX_PERIODS} periods"),
            ));
        }
        let periods_text = self.argument_text(periods)?;
        // Periods in the timeline's units: ticks for times, as `tolong` gives them.
        let (to_period, to_long) = match funnel.timeline_type {
            KqlType::DateTime | KqlType::Timespan => ("totimespan", "tolong(totimespan"),
            _ => ("tolong", "tolong(tolong"),
        };
        let sequence_json = serde_json::to_string(&funnel.sequence).unwrap_or_default();
        let reaches: Vec<String> = (0..period_values.len())
            .map(|i| {
                format!(
                    "__r{i} = __funnel_reach(tolong(__t), __s, {}, {to_long}({periods_text}[{i}])))",
                    string_literal(&sequence_json)
                )
            })
            .collect();
        let reached: Vec<String> = (0..period_values.len()).map(|i| format!("__r{i}")).collect();
        let text = format!(
            "{rows} | where set_has_element(dynamic({sequence_json}), __s) \
             | summarize {reaches} by __id, __bin = bin_at(__t, {bin_size}, {start}) \
             | extend __reached = pack_array({reached}) \
             | mv-expand with_itemindex = __pi __r = __reached to typeof(long) \
             | mv-expand __step = range(0, {last_step}, 1) to typeof(long) \
             | summarize dcount = countif(__r > __step) by __bin, __pi, __step \
             | order by __bin asc, __pi asc, __step asc \
             | project {timeline} = __bin, {state} = tostring(dynamic({sequence_json})[__step]), \
               Period = {to_period}({periods_text}[__pi]), dcount",
            rows = Self::funnel_rows(&funnel),
            reaches = reaches.join(", "),
            reached = reached.join(", "),
            bin_size = self.argument_text(bin_size)?,
            start = funnel.start,
            last_step = funnel.sequence.len() - 1,
            timeline = bracketed(&funnel.timeline),
            state = bracketed(&funnel.state),
        );
        self.lowered(input, plugin, &text, span)
    }

    /// `T | ... | evaluate funnel_sequence(id, timeline, start, end, max_step_window, step,
    /// state, sequence)`: where an id's consecutive events (at most `max_step_window` apart)
    /// take the sequence, the state of the event just before (`prev`) and just after (`next`,
    /// each "" when there is none within the window); three tables per bin of the first step:
    /// ids by `prev` and `next`, by `prev`, by `next`, each with `dcount` and up to 128
    /// `samples`, most ids first.
    pub(crate) fn funnel_sequence(
        &mut self,
        source: &KExpr,
        before: &[Operator],
        evaluate: &Evaluate,
    ) -> Result<Vec<(Option<String>, Tabular)>, TrawlError> {
        let plugin = "funnel_sequence";
        let span = evaluate.call.span;
        let mut input = self.tabular(source)?;
        for operator in before {
            input = self.operator(input, operator)?;
        }
        let ExprKind::Call { args, .. } = &evaluate.call.kind else {
            return Err(self.error(ErrorCode::BadRequest, span, "evaluate takes a plugin call"));
        };
        let [id, timeline, start, end, window, step, state, sequence] = args.as_slice() else {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "expected funnel_sequence(id_column, timeline_column, start, end, max_sequence_step_window, \
                 step, state_column, sequence)",
            ));
        };
        let funnel = self.funnel_input(plugin, &input, id, timeline, start, end, state, sequence)?;
        for arg in [window, step] {
            self.scalar(arg, &input)?;
        }
        let window = self.argument_text(window)?;
        let k = funnel.sequence.len();
        // The sequence at this row: its states on the next k - 1 rows of the same id, each
        // within the window of the one before.
        let mut hit = vec![format!("__s == {}", string_literal(&funnel.sequence[0]))];
        for (j, state) in funnel.sequence.iter().enumerate().skip(1) {
            let before_t = if j == 1 {
                "__t".to_owned()
            } else {
                format!("next(__t, {})", j - 1)
            };
            hit.push(format!(
                "next(__id, {j}) == __id and next(__s, {j}) == {} and next(__t, {j}) - {before_t} <= {window}",
                string_literal(state)
            ));
        }
        let last_t = if k == 1 {
            "__t".to_owned()
        } else {
            format!("next(__t, {})", k - 1)
        };
        let timeline = bracketed(&funnel.timeline);
        let matched = format!(
            "{rows} | sort by __id asc, __t asc, __s asc \
             | extend __hit = {hit}, \
               prev = iff(prev(__id) == __id and __t - prev(__t) <= {window}, prev(__s), ''), \
               next = iff(next(__id, {k}) == __id and next(__t, {k}) - {last_t} <= {window}, next(__s, {k}), '') \
             | where __hit \
             | project {timeline} = bin_at(__t, {step}, {start}), prev, next, __id",
            rows = Self::funnel_rows(&funnel),
            hit = hit.join(" and "),
            step = self.argument_text(step)?,
            start = funnel.start,
        );
        let mut tables = Vec::with_capacity(3);
        for (keys, order) in [
            ("prev, next", "prev asc, next asc"),
            ("prev", "prev asc"),
            ("next", "next asc"),
        ] {
            let text = format!(
                "{matched} | summarize dcount = count_distinct(__id), samples = make_set(__id, 128) \
                 by {timeline}, {keys} | order by {timeline} asc, dcount desc, {order}"
            );
            tables.push((None, self.lowered(input.clone(), plugin, &text, span)?));
        }
        Ok(tables)
    }
}

#[cfg(test)]
mod tests {
    use trawl_common::ErrorCode;

    const T: &str =
        "let T = datatable(id:string, t:datetime, s:string, n:long)[\"a\", datetime(2024-01-01), \"x\", 1];";

    fn code(text: &str) -> Option<ErrorCode> {
        crate::testing::error_code(&format!("{T} T | evaluate {text}"))
    }

    #[test]
    fn binding_errors() {
        let ok = "funnel_sequence_completion(id, t, datetime(2024-01-01), datetime(2024-01-02), 1d, s, \
                  dynamic(['x', 'y']), dynamic([1h]))";
        assert_eq!(
            crate::testing::columns_of(&format!("{T} T | evaluate {ok}")).ok(),
            Some(vec!["t".to_string(), "s".into(), "Period".into(), "dcount".into()])
        );
        assert_eq!(
            code(
                "funnel_sequence_completion(id, t, datetime(2024-01-01), datetime(2024-01-02), 1d, nope, dynamic(['x']), dynamic([1h]))"
            ),
            Some(ErrorCode::UnknownColumn)
        );
        assert_eq!(
            code(
                "funnel_sequence_completion(id, s, datetime(2024-01-01), datetime(2024-01-02), 1d, s, dynamic(['x']), dynamic([1h]))"
            ),
            Some(ErrorCode::TypeMismatch)
        );
        assert_eq!(
            code(
                "funnel_sequence_completion(id, t, datetime(2024-01-01), datetime(2024-01-02), 1d, s, n, dynamic([1h]))"
            ),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            code(
                "funnel_sequence_completion(id, t, datetime(2024-01-01), datetime(2024-01-02), 1d, s, dynamic([]), dynamic([1h]))"
            ),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(code("funnel_sequence_completion(id, t)"), Some(ErrorCode::BadRequest));
        assert_eq!(
            code(
                "funnel_sequence(id, t, datetime(2024-01-01), datetime(2024-01-02), 1h, 1d, s, dynamic(['x'])) | count"
            ),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(
            crate::testing::columns_of(&format!(
                "{T} T | evaluate funnel_sequence(id, t, datetime(2024-01-01), datetime(2024-01-02), 1h, 1d, s, dynamic(['x']))"
            ))
            .ok(),
            Some(vec!["t".to_string(), "prev".into(), "next".into(), "dcount".into(), "samples".into()])
        );
    }
}
