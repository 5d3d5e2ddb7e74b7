//! `evaluate rolling_percentile(value, percentile, index, bin_size, bins_back[, dimension,
//! ...])`: for every bin of `index` that holds rows (per dimension values), the percentile of
//! `value` over that bin and the `bins_back - 1` bins before it. Lowered to KQL: each row is
//! copied into the `bins_back` windows it belongs to (`mv-expand` over the offsets), the
//! windows are summarized, and only windows ending on a bin with rows are kept.
//!
//! `evaluate dcount_intersect(hll, ...)` is lowered to KQL the same way (and the pattern
//! miners, `mining.rs`).

use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal, StatementKind};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::names::bracketed;

/// The name the lowered query reads its input by.
pub(crate) const INPUT: &str = "__rolling_input";

impl Planner<'_> {
    pub(crate) fn rolling_percentile(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let usage = "rolling_percentile(value_column, percentile, index_column, bin_size, bins_back[, dimension, ...])";
        let [value, percentile, index, size, back, dimensions @ ..] = args else {
            return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}")));
        };
        let column_name = |expr: &KExpr| match &expr.kind {
            ExprKind::Name(ident) => Some(ident.name.clone()),
            _ => None,
        };
        let (Some(value_name), Some(index_name)) = (column_name(value), column_name(index)) else {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("the value and index of {usage} must be columns"),
            ));
        };
        let dimension_names: Option<Vec<String>> = dimensions.iter().map(column_name).collect();
        let Some(dimension_names) = dimension_names else {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "rolling_percentile dimensions must be columns",
            ));
        };
        let bins_back = match &back.kind {
            ExprKind::Literal(Literal::Long(n)) if *n >= 1 => *n,
            ExprKind::Literal(Literal::Int(n)) if *n >= 1 => i64::from(*n),
            _ => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    back.span,
                    "the number of bins to look back must be a whole number literal of at least 1",
                ));
            }
        };
        let label = match &percentile.kind {
            ExprKind::Literal(Literal::Long(n)) => n.to_string(),
            ExprKind::Literal(Literal::Int(n)) => n.to_string(),
            ExprKind::Literal(Literal::Real(x)) if x.fract() == 0.0 => format!("{}", *x as i64),
            ExprKind::Literal(Literal::Real(x)) => format!("{x}").replace('.', "_"),
            _ => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    percentile.span,
                    "the percentile must be a number literal",
                ));
            }
        };
        let dims: String = dimension_names.iter().map(|d| format!(", {}", bracketed(d))).collect();
        let output = format!("rolling_{bins_back}_percentile_{value_name}_{label}");
        let text = format!(
            "{INPUT} \
             | extend __rp_bin = bin({index}, {size}) \
             | mv-expand __rp_k = range(0, {last}, 1) to typeof(long) \
             | extend __rp_target = __rp_bin + __rp_k * ({size}) \
             | summarize __rp_value = percentile({value}, {percentile}) by __rp_target{dims} \
             | join kind=inner ({INPUT} | summarize by __rp_target = bin({index}, {size}){dims}) on __rp_target{dims} \
             | project {index_column} = __rp_target{dims}, {output_column} = __rp_value",
            last = bins_back - 1,
            index_column = bracketed(&index_name),
            output_column = bracketed(&output),
        );
        self.lowered(input, "rolling_percentile", &text, span)
    }

    /// The tabular expression of `text`, a query generated for `plugin` (its last statement).
    pub(crate) fn parse_lowered(&self, plugin: &str, text: &str, span: Span) -> Result<KExpr, TrawlError> {
        let query = trawl_kql::parse(text).map_err(|e| {
            self.error(
                ErrorCode::BadRequest,
                span,
                format!("{plugin} could not be lowered: {e}"),
            )
        })?;
        match query.statements.into_iter().last().map(|s| s.kind) {
            Some(StatementKind::Expr(lowered)) => Ok(lowered),
            _ => Err(self.error(ErrorCode::BadRequest, span, format!("{plugin} could not be lowered"))),
        }
    }

    /// Plans `text`, a query generated for a plugin that reads its input as [`INPUT`].
    pub(crate) fn lowered(
        &mut self,
        input: Tabular,
        plugin: &str,
        text: &str,
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        let lowered = self.parse_lowered(plugin, text, span)?;
        // Spans of the lowered text do not point into the user's query: report errors at the call.
        self.with_input(INPUT, input, |planner| planner.tabular(&lowered))
            .map_err(|e| TrawlError::new(e.code, format!("in {plugin}: {}", e.message)))
    }

    /// `... | evaluate preview(N)`: two tables, the first `N` rows and the count of all rows.
    /// It ends its query, as `fork` does.
    pub(crate) fn preview(
        &mut self,
        source: &KExpr,
        before: &[trawl_kql::ast::Operator],
        evaluate: &trawl_kql::ast::Evaluate,
    ) -> Result<Vec<(Option<String>, Tabular)>, TrawlError> {
        let span = evaluate.call.span;
        let mut input = self.tabular(source)?;
        for operator in before {
            input = self.operator(input, operator)?;
        }
        let rows = match &evaluate.call.kind {
            ExprKind::Call { args, .. } => match args.as_slice() {
                [
                    KExpr {
                        kind: ExprKind::Literal(Literal::Long(n)),
                        ..
                    },
                ] if *n >= 0 => *n,
                [
                    KExpr {
                        kind: ExprKind::Literal(Literal::Int(n)),
                        ..
                    },
                ] if *n >= 0 => i64::from(*n),
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        span,
                        "expected preview(NumberOfRows), a constant",
                    ));
                }
            },
            _ => return Err(self.error(ErrorCode::BadRequest, span, "evaluate takes a plugin call")),
        };
        let text = format!("{INPUT} | take {rows}");
        let first = self.lowered(input.clone(), "preview", &text, span)?;
        let count = self.lowered(input, "preview", &format!("{INPUT} | count"), span)?;
        Ok(vec![(None, first), (None, count)])
    }

    /// `evaluate rows_near(Condition, NumRows [, RowsAfter])`: the input's rows (in its order)
    /// within `NumRows` rows before or `RowsAfter` (by default `NumRows`) rows after a row where
    /// `Condition` holds.
    pub(crate) fn rows_near(&mut self, input: Tabular, args: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let usage = "rows_near(Condition, NumRows [, RowsAfter])";
        let (condition, before, after) = match args {
            [c, n] => (c, n, n),
            [c, n, a] => (c, n, a),
            _ => return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}"))),
        };
        for count in [before, after] {
            if !matches!(&count.kind, ExprKind::Literal(Literal::Long(n)) if *n >= 0)
                && !matches!(&count.kind, ExprKind::Literal(Literal::Int(n)) if *n >= 0)
            {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    count.span,
                    "rows_near takes a number of rows that is a constant, 0 or more",
                ));
            }
        }
        let columns: Vec<String> = input.columns.iter().map(|(n, _)| bracketed(n)).collect();
        // Rows since the last hit (counted forwards) and until the next (counted backwards).
        let text = format!(
            "{INPUT} \
             | serialize __rn_i = row_number(), __rn_hit = coalesce(tobool({condition}), false) \
             | extend __rn_seen = row_cumsum(iff(__rn_hit, 1, 0)), __rn_since = row_cumsum(1, __rn_hit) \
             | order by __rn_i desc \
             | extend __rn_ahead = row_cumsum(iff(__rn_hit, 1, 0)), __rn_until = row_cumsum(1, __rn_hit) \
             | order by __rn_i asc \
             | where (__rn_seen > 0 and __rn_since - 1 <= {after}) or (__rn_ahead > 0 and __rn_until - 1 <= {before}) \
             | project {}",
            columns.join(", ")
        );
        self.lowered(input, "rows_near", &text, span)
    }

    /// `evaluate dcount_intersect(hll_1, hll_2, ...)`: one row with `s0` the distinct count of
    /// the merged `hll_1` sketches, `s1` the estimated count of values in both `hll_1` and
    /// `hll_2`, and so on, each intersection estimated from the unions by inclusion-exclusion.
    pub(crate) fn dcount_intersect(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
    ) -> Result<Tabular, TrawlError> {
        const MOST: usize = 16;
        if args.len() < 2 || args.len() > MOST {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("dcount_intersect takes 2 to {MOST} hll sketch columns"),
            ));
        }
        let mut merges = Vec::with_capacity(args.len());
        for (index, arg) in args.iter().enumerate() {
            let ExprKind::Name(ident) = &arg.kind else {
                return Err(self.error(ErrorCode::BadRequest, arg.span, "dcount_intersect takes sketch columns"));
            };
            merges.push(format!("__di{index} = hll_merge({})", bracketed(&ident.name)));
        }
        let mut outputs = Vec::with_capacity(args.len());
        for k in 0..args.len() {
            // |A0 ∩ … ∩ Ak| = Σ over non-empty subsets S of (-1)^(|S|+1) |∪ S|.
            let mut terms = Vec::new();
            for subset in 1u32..(1 << (k + 1)) {
                let members: Vec<String> = (0..=k)
                    .filter(|i| subset & (1 << i) != 0)
                    .map(|i| format!("__di{i}"))
                    .collect();
                let sign = if members.len() % 2 == 1 { "+" } else { "-" };
                terms.push(format!("{sign} dcount_hll(hll_merge({}))", members.join(", ")));
            }
            outputs.push(format!("s{k} = max_of(0, 0 {})", terms.join(" ")));
        }
        let text = format!(
            "{INPUT} | summarize {} | project {}",
            merges.join(", "),
            outputs.join(", ")
        );
        self.lowered(input, "dcount_intersect", &text, span)
    }
}
