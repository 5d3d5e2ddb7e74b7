//! Activity plugins over an id column and a timeline, lowered to KQL:
//!
//! - `evaluate sliding_window_counts(Id, Timeline, Start, End, Lookback, Bin [, dim, ...])`:
//!   for every bin from `Start` to `End`, the `Count` of rows and `dcount` of ids in the
//!   `Lookback` window that ends with the bin (`Lookback` rounded down to whole bins).
//! - `evaluate activity_counts_metrics(Id, Timeline, Start, End, Window [, dim, ...])`: per
//!   window from `Start` to `End`, `count` of rows, `dcount` of ids, `new_dcount` of ids not
//!   seen in an earlier window, `aggregated_dcount` of ids seen so far.
//!
//! - `evaluate active_users_count(Id, Timeline, Start, End, Lookback, Period, ActivePeriods, Bin
//!   [, dim, ...])`: per bin from `Start` to `End`, the `dcount` of ids active at one of their
//!   appearances in it: seen in at least `ActivePeriods` distinct `Period`s within the `Lookback`
//!   before it (the appearance included, the window's start excluded).
//! - `evaluate activity_engagement(Id, Timeline, [Start, End,] Inner, Outer [, dim, ...])`: per
//!   `Inner` window, the distinct ids in it, in the `Outer` window ending with it, and their ratio
//!   (without `Start` and `End`, the first and last time of the input).
//!
//! - `evaluate activity_metrics(Id, Timeline, [Start, End,] Window [, dim, ...])`: per window,
//!   `dcount_values`, `dcount_newvalues` (not seen in the window before), `retention_rate` (of
//!   the ids of the window before, the share seen again) and `churn_rate` (1 - retention).
//!
//! - `evaluate new_activity_metrics(Id, Timeline, Start, End, Window [, Cohort] [, dim, ...])`:
//!   for every cohort (the ids first seen in a window) and every window from its own on, the
//!   ids new by then, the cohort's ids seen again and not, and their rates.
//!
//! - `evaluate session_count(Id, Timeline, Start, End, Bin, LookBackWindow [, dim, ...])`: per
//!   bin, `count_sessions`: the sessions seen in it, a session being an id's run of appearances
//!   each at most `LookBackWindow` after the one before.
//!
//! Bins start at `Start` (`bin_at`); the bin may be a number or a timespan (`week`, `month` and
//! `year` are not supported). Distinct counts are exact.

use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::names::bracketed;
use crate::rolling::INPUT;

/// The parts of an activity plugin call as KQL text: the id, timeline and dimension columns
/// bracketed, the bounds, and the arguments after the bounds.
struct ActivityArgs {
    id: String,
    timeline: String,
    /// The timeline column's own name (for names derived from it, `from_<Timeline>`).
    timeline_name: String,
    start: String,
    end: String,
    dims: Vec<String>,
    rest: Vec<String>,
}

impl ActivityArgs {
    /// The dimensions continuing a list: `, [d1], [d2]`.
    fn dim_list(&self) -> String {
        self.dims.iter().map(|d| format!(", {d}")).collect()
    }
}

impl Planner<'_> {
    fn activity_args(
        &self,
        plugin: &str,
        usage: &str,
        args: &[KExpr],
        fixed: usize,
        input: &Tabular,
        span: Span,
    ) -> Result<ActivityArgs, TrawlError> {
        if args.len() < fixed {
            return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}")));
        }
        let mut columns = Vec::new();
        for arg in args[..2].iter().chain(&args[fixed..]) {
            let ExprKind::Name(ident) = &arg.kind else {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    arg.span,
                    format!("{plugin} takes column names for the id, the timeline and the dimensions"),
                ));
            };
            if input.column_type(&ident.name).is_none() {
                return Err(self.unknown_column(&ident.name, ident.span, input));
            }
            columns.push(ident.name.clone());
        }
        for arg in &args[2..fixed] {
            if matches!(&arg.kind, ExprKind::Literal(trawl_kql::ast::Literal::String(_))) {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    arg.span,
                    format!("{plugin}: calendar steps ('week', 'month', 'year') are not supported; use a timespan"),
                ));
            }
        }
        let dims = columns.split_off(2);
        Ok(ActivityArgs {
            id: bracketed(&columns[0]),
            timeline: bracketed(&columns[1]),
            timeline_name: columns[1].clone(),
            start: args[2].to_string(),
            end: args[3].to_string(),
            dims: dims.iter().map(|d| bracketed(d)).collect(),
            rest: args[4..fixed].iter().map(|a| a.to_string()).collect(),
        })
    }

    /// The `N` arguments after the bounds.
    fn after_bounds<'b, const N: usize>(
        &self,
        a: &'b ActivityArgs,
        usage: &str,
        span: Span,
    ) -> Result<&'b [String; N], TrawlError> {
        a.rest
            .as_slice()
            .try_into()
            .map_err(|_| self.error(ErrorCode::BadRequest, span, format!("expected {usage}")))
    }

    pub(crate) fn sliding_window_counts(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "sliding_window_counts(IdColumn, TimelineColumn, Start, End, LookbackWindow, Bin [, dim, ...])";
        let a = self.activity_args("sliding_window_counts", usage, args, 6, &input, span)?;
        let [lookback, bin] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end) = (&a.id, &a.timeline, &a.start, &a.end);
        let dims = a.dim_list();
        let text = format!(
            "{INPUT} \
             | extend __sw_back = max_of(tolong(({lookback}) / ({bin})), 1) \
             | extend __sw_bin = bin_at({timeline}, {bin}, {start}) \
             | where __sw_bin >= ({start}) - (__sw_back - 1) * ({bin}) and __sw_bin <= {end} \
             | mv-expand __sw_k = range(0, __sw_back - 1, 1) to typeof(long) \
             | extend __sw_target = __sw_bin + __sw_k * ({bin}) \
             | where __sw_target >= {start} and __sw_target <= {end} \
             | summarize ['Count'] = count(), ['dcount'] = count_distinct({id}) by {timeline} = __sw_target{dims} \
             | order by {timeline} asc{dims}"
        );
        self.lowered(input, "sliding_window_counts", &text, span)
    }

    pub(crate) fn activity_counts_metrics(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "activity_counts_metrics(IdColumn, TimelineColumn, Start, End, Window [, dim, ...])";
        let a = self.activity_args("activity_counts_metrics", usage, args, 5, &input, span)?;
        let [window] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end) = (&a.id, &a.timeline, &a.start, &a.end);
        let dims = a.dim_list();
        let dims_first: String = a.dims.iter().map(|d| format!("{d} asc, ")).collect();
        let restart: String = if a.dims.is_empty() {
            String::new()
        } else {
            let changed: Vec<String> = a.dims.iter().map(|d| format!("{d} != prev({d})")).collect();
            format!(", {}", changed.join(" or "))
        };
        let text = format!(
            "{INPUT} \
             | extend __ac_window = bin_at({timeline}, {window}, {start}) \
             | where __ac_window >= {start} and __ac_window <= {end} \
             | summarize __ac_count = count() by __ac_window, {id}{dims} \
             | join kind=inner ({INPUT} \
                 | extend __ac_window = bin_at({timeline}, {window}, {start}) \
                 | where __ac_window >= {start} and __ac_window <= {end} \
                 | summarize __ac_first_window = min(__ac_window) by {id}{dims}) on {id}{dims} \
             | summarize ['count'] = sum(__ac_count), ['dcount'] = count(), \
                 new_dcount = countif(__ac_window == __ac_first_window) by {timeline} = __ac_window{dims} \
             | order by {dims_first}{timeline} asc \
             | extend aggregated_dcount = row_cumsum(new_dcount{restart}) \
             | order by {timeline} asc{dims} \
             | project {timeline}{dims}, ['count'], ['dcount'], new_dcount, aggregated_dcount"
        );
        self.lowered(input, "activity_counts_metrics", &text, span)
    }

    /// The arguments of a plugin taking `Id, Timeline, [Start, End,] w1, ..., wN [, dim, ...]`;
    /// without bounds, the input's first and last time.
    fn optionally_bounded(
        &self,
        plugin: &str,
        usage: &str,
        args: &[KExpr],
        windows: usize,
        input: &Tabular,
        span: Span,
    ) -> Result<ActivityArgs, TrawlError> {
        // With Start and End the windows follow them and are never columns.
        let is_column = |arg: Option<&KExpr>| matches!(arg.map(|a| &a.kind), Some(ExprKind::Name(ident)) if input.column_type(&ident.name).is_some());
        let bounded = args.len() >= 4 + windows && (4..4 + windows).all(|i| !is_column(args.get(i)));
        let fixed = 4 + windows;
        let shifted: Vec<KExpr>;
        let args = if bounded {
            args
        } else {
            if args.len() < 2 + windows {
                return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}")));
            }
            // Placeholders where the bounds go; replaced below.
            shifted = args[..2].iter().chain(&args[..2]).chain(&args[2..]).cloned().collect();
            &shifted
        };
        let mut a = self.activity_args(plugin, usage, args, fixed, input, span)?;
        if !bounded {
            a.start = format!("toscalar({INPUT} | summarize min({}))", a.timeline);
            a.end = format!("toscalar({INPUT} | summarize max({}))", a.timeline);
        }
        Ok(a)
    }

    pub(crate) fn active_users_count(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "active_users_count(IdColumn, TimelineColumn, Start, End, LookbackWindow, Period, ActivePeriodsCount, Bin [, dim, ...])";
        let a = self.activity_args("active_users_count", usage, args, 8, &input, span)?;
        let [lookback, period, active, bin] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end) = (&a.id, &a.timeline, &a.start, &a.end);
        let dims = a.dim_list();
        let text = format!(
            "{INPUT} \
             | where {timeline} >= ({start}) and {timeline} <= {end} \
             | project __au_id = {id}, __au_t = {timeline}{dims} \
             | join kind=inner ({INPUT} \
                 | where {timeline} > ({start}) - ({lookback}) and {timeline} <= {end} \
                 | project __au_id = {id}, __au_s = {timeline}{dims}) on __au_id{dims} \
             | where __au_s > __au_t - ({lookback}) and __au_s <= __au_t \
             | summarize __au_periods = count_distinct(bin(__au_s, {period})) by __au_id, __au_t{dims} \
             | where __au_periods >= {active} \
             | summarize ['dcount'] = count_distinct(__au_id) by {timeline} = bin_at(__au_t, {bin}, {start}){dims} \
             | order by {timeline} asc{dims}"
        );
        self.lowered(input, "active_users_count", &text, span)
    }

    pub(crate) fn activity_engagement(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "activity_engagement(IdColumn, TimelineColumn, [Start, End,] InnerActivityWindow, OuterActivityWindow [, dim, ...])";
        let a = self.optionally_bounded("activity_engagement", usage, args, 2, &input, span)?;
        let [inner, outer] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end, dims) = (&a.id, &a.timeline, &a.start, &a.end, a.dim_list());
        let text = format!(
            "{INPUT} \
             | extend __ae_back = max_of(tolong(({outer}) / ({inner})), 1) \
             | extend __ae_bin = bin_at({timeline}, {inner}, {start}) \
             | where __ae_bin >= ({start}) - (__ae_back - 1) * ({inner}) and __ae_bin <= {end} \
             | mv-expand __ae_k = range(0, __ae_back - 1, 1) to typeof(long) \
             | extend __ae_target = __ae_bin + __ae_k * ({inner}) \
             | where __ae_target >= {start} and __ae_target <= {end} \
             | summarize dcount_activities_inner = count_distinctif({id}, __ae_k == 0), \
                 dcount_activities_outer = count_distinct({id}) by {timeline} = __ae_target{dims} \
             | extend activity_ratio = todouble(dcount_activities_inner) / dcount_activities_outer \
             | project {timeline}, dcount_activities_inner, dcount_activities_outer, activity_ratio{dims} \
             | order by {timeline} asc{dims}"
        );
        self.lowered(input, "activity_engagement", &text, span)
    }

    pub(crate) fn activity_metrics(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "activity_metrics(IdColumn, TimelineColumn, [Start, End,] Window [, dim, ...])";
        let a = self.optionally_bounded("activity_metrics", usage, args, 1, &input, span)?;
        let [step] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end, dims) = (&a.id, &a.timeline, &a.start, &a.end, a.dim_list());
        // The distinct (window, id) pairs from Start to End.
        let pairs = format!(
            "{INPUT} \
             | extend __am_w = bin_at({timeline}, {step}, {start}) \
             | where __am_w >= {start} and __am_w <= {end} \
             | summarize by __am_w, __am_id = {id}{dims}"
        );
        let text = format!(
            "{pairs} \
             | join kind=leftouter ({pairs} | project __am_w = __am_w + ({step}), __am_id{dims}, __am_before = true) \
                 on __am_w, __am_id{dims} \
             | summarize dcount_values = count(), dcount_newvalues = countif(isnull(__am_before)) by __am_w{dims} \
             | join kind=leftouter ({pairs} | summarize __am_earlier = count() by __am_w = __am_w + ({step}){dims}) \
                 on __am_w{dims} \
             | extend retention_rate = todouble(dcount_values - dcount_newvalues) / todouble(coalesce(__am_earlier, 0)) \
             | extend churn_rate = 1.0 - retention_rate \
             | project {timeline} = __am_w, dcount_values, dcount_newvalues, retention_rate, churn_rate{dims} \
             | order by {timeline} asc{dims}"
        );
        self.lowered(input, "activity_metrics", &text, span)
    }

    pub(crate) fn new_activity_metrics(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "new_activity_metrics(IdColumn, TimelineColumn, Start, End, Window [, Cohort] [, dim, ...])";
        let is_column =
            |arg: &KExpr| matches!(&arg.kind, ExprKind::Name(ident) if input.column_type(&ident.name).is_some());
        let (cohort, rest): (Option<&KExpr>, Vec<KExpr>) = match args.get(5) {
            Some(c) if !is_column(c) => (Some(c), args[..5].iter().chain(&args[6..]).cloned().collect()),
            _ => (None, args.to_vec()),
        };
        if let Some(lookback) = rest.iter().skip(5).find(|a| !is_column(a)) {
            return Err(self.error(
                ErrorCode::BadRequest,
                lookback.span,
                "new_activity_metrics: a Lookback table of earlier ids is not supported; \
                 the arguments after Window are an optional Cohort and dimension columns",
            ));
        }
        let a = self.activity_args("new_activity_metrics", usage, &rest, 5, &input, span)?;
        let [step] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end) = (&a.id, &a.timeline, &a.start, &a.end);
        let from = bracketed(&format!("from_{}", a.timeline_name));
        let to = bracketed(&format!("to_{}", a.timeline_name));
        let dims = a.dim_list();
        let only_cohort = cohort.map_or(String::new(), |c| {
            format!("| where __nm_from == bin_at({c}, {step}, {start})")
        });
        // Each id's windows (from Start to End), and its first window.
        let seen = format!(
            "{INPUT} \
             | extend __nm_w = bin_at({timeline}, {step}, {start}) \
             | where __nm_w >= {start} and __nm_w <= {end} \
             | summarize by __nm_w, __nm_id = {id}{dims} \
             | join kind=inner ({INPUT} \
                 | extend __nm_w = bin_at({timeline}, {step}, {start}) \
                 | where __nm_w >= {start} and __nm_w <= {end} \
                 | summarize __nm_first = min(__nm_w) by __nm_id = {id}{dims}) on __nm_id{dims}"
        );
        // Every cohort with every window from its own on. A window's new ids are those first
        // seen after the cohort's window, or in it when the window is the cohort's own.
        let pairs = format!(
            "({seen}) \
             | where __nm_w == __nm_first \
             | summarize __nm_cohort = count() by __nm_from = __nm_first{dims} {only_cohort} \
             | extend __nm_k = 1 \
             | join kind=inner (range __nm_to from {start} to {end} step {step} | extend __nm_k = 1) on __nm_k \
             | where __nm_to >= __nm_from"
        );
        let text = format!(
            "{pairs} \
             | join kind=leftouter (({seen}) | summarize __nm_retained = count() by __nm_from = __nm_first, __nm_to = __nm_w{dims}) \
                 on __nm_from, __nm_to{dims} \
             | join kind=leftouter (({seen}) | summarize __nm_total = count() by __nm_to = __nm_w{dims}) on __nm_to{dims} \
             | join kind=leftouter ({pairs} \
                 | join kind=inner (({seen}) | summarize __nm_n = count() by __nm_to = __nm_w, __nm_first{dims}) on __nm_to{dims} \
                 | where __nm_first < __nm_from or (__nm_first == __nm_from and __nm_to > __nm_from) \
                 | summarize __nm_before = sum(__nm_n) by __nm_from, __nm_to{dims}) on __nm_from, __nm_to{dims} \
             | extend dcount_new_values = coalesce(__nm_total, 0) - coalesce(__nm_before, 0), \
                 dcount_retained_values = coalesce(__nm_retained, 0) \
             | extend dcount_churn_values = __nm_cohort - dcount_retained_values \
             | extend retention_rate = todouble(dcount_retained_values) / __nm_cohort, \
                 churn_rate = todouble(dcount_churn_values) / __nm_cohort \
             | project {from} = __nm_from, {to} = __nm_to, dcount_new_values, dcount_retained_values, \
                 dcount_churn_values, retention_rate, churn_rate{dims} \
             | order by {from} asc, {to} asc{dims}"
        );
        self.lowered(input, "new_activity_metrics", &text, span)
    }

    pub(crate) fn session_count(&mut self, input: Tabular, args: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let usage = "session_count(IdColumn, TimelineColumn, Start, End, Bin, LookBackWindow [, dim, ...])";
        let a = self.activity_args("session_count", usage, args, 6, &input, span)?;
        let [bin, lookback] = self.after_bounds(&a, usage, span)?;
        let (id, timeline, start, end) = (&a.id, &a.timeline, &a.start, &a.end);
        let dims = a.dim_list();
        let sort_dims: String = a.dims.iter().map(|d| format!("{d} asc, ")).collect();
        let changed: String = a.dims.iter().map(|d| format!(" or {d} != prev({d})")).collect();
        // A session of an id runs while its appearances come at most LookBackWindow apart; each
        // bin counts the sessions that appear in it.
        let text = format!(
            "{INPUT} \
             | where {timeline} <= {end} \
             | project __sc_id = {id}, __sc_t = {timeline}{dims} \
             | order by __sc_id asc, {sort_dims}__sc_t asc \
             | extend __sc_new = row_number() == 1 or __sc_id != prev(__sc_id){changed} \
                 or __sc_t - prev(__sc_t) > ({lookback}) \
             | extend __sc_session = row_cumsum(iff(__sc_new, 1, 0)) \
             | where __sc_t >= {start} \
             | summarize count_sessions = count_distinct(__sc_session) by {timeline} = bin_at(__sc_t, {bin}, {start}){dims} \
             | order by {timeline} asc{dims}"
        );
        self.lowered(input, "session_count", &text, span)
    }
}
