//! `reduce [kind=source] by Expr [with threshold = T, characters = "..."]`: groups similar
//! strings under patterns (see `trawl_functions::reduce` for how patterns are found). Lowered
//! to KQL over the `__reduce` aggregate: one row per pattern (`Pattern`, `Count`,
//! `Representative`), or with `kind=source` every input row with its `Pattern`.

use datafusion::logical_expr::lit;
use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{ExprKind, Literal, Reduce};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::joins::param_word;
use crate::rolling::INPUT;

const VALUE: &str = "__trawl_reduce_value";
const THRESHOLD: &str = "__trawl_reduce_threshold";
const CHARACTERS: &str = "__trawl_reduce_characters";

impl Planner<'_> {
    pub(crate) fn reduce(&mut self, input: Tabular, reduce: &Reduce, span: Span) -> Result<Tabular, TrawlError> {
        let source = match param_word(&reduce.params, "kind").as_deref() {
            None => false,
            Some("source") => true,
            Some(other) => {
                return Err(self.error(
                    ErrorCode::BadRequest,
                    span,
                    format!("unknown reduce kind '{other}': the only kind is 'source'"),
                ));
            }
        };
        let mut threshold = 0.1;
        let mut characters: Option<String> = None;
        for option in &reduce.options {
            let name = option.name().map(|n| n.name.to_ascii_lowercase()).unwrap_or_default();
            match (name.as_str(), &option.expr.kind) {
                ("threshold", ExprKind::Literal(Literal::Real(t))) if (0.0..=1.0).contains(t) => threshold = *t,
                ("threshold", ExprKind::Literal(Literal::Long(t))) if (0..=1).contains(t) => threshold = *t as f64,
                ("threshold", _) => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        option.expr.span,
                        "reduce's threshold is a number from 0 to 1",
                    ));
                }
                ("characters", ExprKind::Literal(Literal::String(c))) => characters = Some(c.clone()),
                ("characters", _) => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        option.expr.span,
                        "reduce's characters is a string of separator characters",
                    ));
                }
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        option.expr.span,
                        format!("unknown reduce option '{name}': expected threshold or characters"),
                    ));
                }
            }
        }
        let value = self.scalar(&reduce.by, &input)?;
        let value = crate::scalar::to_string(value);
        let extended = input.extended(vec![
            (VALUE, value, KqlType::String),
            (THRESHOLD, lit(threshold), KqlType::Real),
            (CHARACTERS, lit(characters.unwrap_or_default()), KqlType::String),
        ])?;
        let aggregate = format!("__reduce({VALUE}, {THRESHOLD}, {CHARACTERS}, {source})");
        let text = if source {
            format!(
                "{INPUT} | lookup kind=leftouter ({INPUT} | summarize __rr = {aggregate} | mv-expand __r = __rr \
                 | project {VALUE} = tostring(__r[0]), Pattern = tostring(__r[1])) on {VALUE} \
                 | project-away {VALUE}, {THRESHOLD}, {CHARACTERS}"
            )
        } else {
            format!(
                "{INPUT} | summarize __rr = {aggregate} | mv-expand __r = __rr \
                 | project Pattern = tostring(__r.pattern), Count = tolong(__r['count']), \
                 Representative = tostring(__r.representative)"
            )
        };
        self.lowered(extended, "reduce", &text, span)
    }
}
