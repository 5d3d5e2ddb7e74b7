//! `summarize` hints of the telemetry extensions: `hint.sample` (aggregate a random share of
//! the rows) and `hint.budget` (a memory budget of the summarize's own, below the server's).

use datafusion::logical_expr::lit;
use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::ast::{ExprKind, Literal, OperatorParam};

use crate::context::{Planner, Tabular, internal};

/// The smallest `hint.budget` taken: below it no grouping fits anything useful.
const MIN_BUDGET_BYTES: usize = 64 << 10;

impl Planner<'_> {
    /// `summarize hint.sample = F`: the summarize reads a random share `F` (0 < F ≤ 1) of its
    /// input rows, with a `SummarizeSample` warning (counts and sums are of the sample, not
    /// scaled up).
    pub(crate) fn summarize_sample(
        &mut self,
        input: Tabular,
        params: &[OperatorParam],
        span: trawl_kql::span::Span,
    ) -> Result<Tabular, TrawlError> {
        let Some(param) = params.iter().find(|p| p.name.eq_ignore_ascii_case("hint.sample")) else {
            return Ok(input);
        };
        let share = match &param.value.kind {
            ExprKind::Literal(Literal::Real(f)) => *f,
            ExprKind::Literal(Literal::Long(n)) => *n as f64,
            ExprKind::Literal(Literal::Int(n)) => f64::from(*n),
            _ => f64::NAN,
        };
        if !(share > 0.0 && share <= 1.0) {
            return Err(self.error(
                ErrorCode::BadRequest,
                param.value.span,
                "hint.sample is the share of rows to summarize, a number above 0 and at most 1",
            ));
        }
        if share >= 1.0 {
            return Ok(input);
        }
        self.warn(
            "SummarizeSample",
            span,
            format!(
                "summarize read a random {}% of its input rows (hint.sample); counts and sums are of the sample",
                share * 100.0
            ),
        );
        let plan = input
            .builder()
            .filter(datafusion::functions::math::expr_fn::random().lt(lit(share)))
            .and_then(|b| b.build())
            .map_err(|e| internal(&e))?;
        Ok(Tabular {
            plan,
            columns: input.columns,
        })
    }

    /// `summarize hint.budget = B`: the most memory the summarize's groups may hold, in bytes
    /// (a long) or with a unit (`"64MB"`, `"512KiB"`, `"1GB"`: K, M, G, T are powers of 1024,
    /// with or without `B`/`iB`). The engine holds the aggregate to the smaller of this and
    /// the server's `--summarize-memory-limit-bytes`; past it, groups are dropped whole with a
    /// `SummarizeMemoryLimit` warning, as for the server's budget.
    pub(crate) fn summarize_budget(&mut self, params: &[OperatorParam]) -> Result<Option<usize>, TrawlError> {
        let Some(param) = params.iter().find(|p| p.name.eq_ignore_ascii_case("hint.budget")) else {
            return Ok(None);
        };
        let bytes = match &param.value.kind {
            ExprKind::Literal(Literal::Long(n)) => usize::try_from(*n).ok(),
            ExprKind::Literal(Literal::Int(n)) => usize::try_from(*n).ok(),
            ExprKind::Literal(Literal::String(text)) => parse_size(text),
            _ => None,
        };
        match bytes {
            Some(bytes) if bytes >= MIN_BUDGET_BYTES => Ok(Some(bytes)),
            Some(_) => Err(self.error(
                ErrorCode::BadRequest,
                param.value.span,
                format!(
                    "hint.budget is below the smallest budget, {} KiB",
                    MIN_BUDGET_BYTES >> 10
                ),
            )),
            None => Err(self.error(
                ErrorCode::BadRequest,
                param.value.span,
                "hint.budget is the summarize's memory budget: a number of bytes or a size such as \"64MB\"",
            )),
        }
    }
}

/// `"64MB"` → 67108864: a whole or decimal number, then an optional unit K, M, G or T (powers
/// of 1024) with an optional `B` or `iB`; case does not matter.
pub(crate) fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let scale: f64 = match unit {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = number * scale;
    (bytes.is_finite() && bytes >= 0.0 && bytes < usize::MAX as f64).then_some(bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(parse_size("64MB"), Some(64 << 20));
        assert_eq!(parse_size("64 mib"), Some(64 << 20));
        assert_eq!(parse_size("512K"), Some(512 << 10));
        assert_eq!(parse_size("1.5GB"), Some(3 << 29));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("12 parsecs"), None);
        assert_eq!(parse_size("MB"), None);
        assert_eq!(parse_size(""), None);
    }
}
