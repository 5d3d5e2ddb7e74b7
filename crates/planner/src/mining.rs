//! The pattern-mining plugins, lowered to KQL over their aggregates
//! (`trawl_functions::mining`): `evaluate basket(...)`, `evaluate autocluster(...)` and
//! `evaluate diffpatterns(...)`. Their dimensions are the input's columns of a scalar type
//! (not dynamic) other than the weight (and split) column; each result row is a pattern, its
//! free dimensions holding the wildcard: null by default, "" for strings, or the custom
//! wildcard given for the column's type.

use trawl_common::{ErrorCode, KqlType, TrawlError};
use trawl_kql::ast::{Expr as KExpr, ExprKind, Literal};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::names::bracketed;
use crate::rolling::INPUT;

/// Whether an argument is `~`, "the default".
fn is_default(arg: &KExpr) -> bool {
    matches!(&arg.kind, ExprKind::Literal(Literal::String(s)) if s == "~")
}

/// What a mining plugin produces per pattern before its dimensions.
struct Mined<'a> {
    plugin: &'a str,
    /// The aggregate call over `pack_array(dimensions…)` (its first argument).
    aggregate: String,
    /// The output columns before the dimensions, over the pattern `__bp`.
    leading: Vec<String>,
    dimensions: Vec<(String, KqlType)>,
    /// Custom wildcards: a type and the KQL text of its value.
    wildcards: Vec<(KqlType, String)>,
    /// Rows to keep before mining (`diffpatterns`' two sets).
    filter: Option<String>,
}

impl Planner<'_> {
    /// A number argument, `default` when absent or `~`.
    fn mining_number(&self, plugin: &str, arg: Option<&KExpr>, what: &str, default: f64) -> Result<f64, TrawlError> {
        match arg {
            None => Ok(default),
            Some(arg) if is_default(arg) => Ok(default),
            Some(arg) => match &arg.kind {
                ExprKind::Literal(Literal::Real(x)) => Ok(*x),
                ExprKind::Literal(Literal::Long(n)) => Ok(*n as f64),
                ExprKind::Literal(Literal::Int(n)) => Ok(f64::from(*n)),
                _ => Err(self.error(
                    ErrorCode::BadRequest,
                    arg.span,
                    format!("{plugin}'s {what} is a number literal"),
                )),
            },
        }
    }

    /// The weight column argument, when given (a name or a string naming a numeric column).
    fn mining_weight(&self, plugin: &str, input: &Tabular, arg: Option<&KExpr>) -> Result<Option<String>, TrawlError> {
        let name = match arg {
            None => return Ok(None),
            Some(arg) if is_default(arg) => return Ok(None),
            Some(arg) => match &arg.kind {
                ExprKind::Name(ident) => (ident.name.clone(), arg.span),
                ExprKind::Literal(Literal::String(name)) => (name.clone(), arg.span),
                _ => {
                    return Err(self.error(
                        ErrorCode::BadRequest,
                        arg.span,
                        format!("{plugin}'s weight is a column name"),
                    ));
                }
            },
        };
        match input.columns.iter().find(|(n, _)| *n == name.0) {
            Some((_, KqlType::Int | KqlType::Long | KqlType::Real | KqlType::Decimal)) => Ok(Some(name.0)),
            Some(_) => Err(self.error(
                ErrorCode::TypeMismatch,
                name.1,
                format!("{plugin}'s weight column '{}' is not numeric", name.0),
            )),
            None => Err(self.error(
                ErrorCode::UnknownColumn,
                name.1,
                format!("{plugin}'s weight column '{}' does not exist", name.0),
            )),
        }
    }

    /// Custom wildcards: typed literals, one per type (`~` skips a place).
    fn mining_wildcards(&mut self, input: &Tabular, args: &[KExpr]) -> Result<Vec<(KqlType, String)>, TrawlError> {
        let mut wildcards = Vec::new();
        for arg in args.iter().filter(|arg| !is_default(arg)) {
            let typed = self.scalar(arg, input)?;
            let text = self
                .text
                .get(arg.span.start as usize..arg.span.end as usize)
                .filter(|text| !text.trim().is_empty())
                .ok_or_else(|| self.error(ErrorCode::BadRequest, arg.span, "a wildcard is a literal value"))?;
            if !matches!(arg.kind, ExprKind::Literal(_) | ExprKind::Call { .. }) {
                return Err(self.error(ErrorCode::BadRequest, arg.span, "a wildcard is a literal value"));
            }
            wildcards.push((typed.kql_type, format!("{}({text})", converter(typed.kql_type))));
        }
        Ok(wildcards)
    }

    /// The input's scalar columns other than `excluded`, as dimensions.
    fn mining_dimensions(
        &self,
        plugin: &str,
        input: &Tabular,
        excluded: &[&str],
        span: Span,
    ) -> Result<Vec<(String, KqlType)>, TrawlError> {
        let dimensions: Vec<(String, KqlType)> = input
            .columns
            .iter()
            .filter(|(name, t)| *t != KqlType::Dynamic && !excluded.contains(&name.as_str()) && !name.starts_with("__"))
            .cloned()
            .collect();
        if dimensions.is_empty() {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                format!("{plugin} needs columns of a scalar type (not dynamic) to find patterns in"),
            ));
        }
        Ok(dimensions)
    }

    /// Plans a miner: `INPUT [| where filter] | summarize __bb = aggregate | mv-expand` one
    /// row per pattern, the leading columns, then each dimension's value or wildcard.
    fn mined(&mut self, input: Tabular, mined: Mined, span: Span) -> Result<Tabular, TrawlError> {
        let mut outputs = mined.leading;
        for (index, (name, kql_type)) in mined.dimensions.iter().enumerate() {
            let value = format!("__bp['values'][{index}]");
            let typed = format!("{}({value})", converter(*kql_type));
            let output = match mined.wildcards.iter().find(|(t, _)| t == kql_type) {
                Some((_, wildcard)) => format!("iff(isnull({value}), {wildcard}, {typed})"),
                None => typed,
            };
            outputs.push(format!("{} = {output}", bracketed(name)));
        }
        let filter = mined.filter.map(|f| format!("| where {f} ")).unwrap_or_default();
        let text = format!(
            "{INPUT} {filter}| summarize __bb = {} | mv-expand __bp = __bb | project {} | order by SegmentId asc",
            mined.aggregate,
            outputs.join(", ")
        );
        self.lowered(input, mined.plugin, &text, span)
    }

    fn packed(dimensions: &[(String, KqlType)]) -> String {
        let names: Vec<String> = dimensions.iter().map(|(n, _)| bracketed(n)).collect();
        format!("pack_array({})", names.join(", "))
    }

    fn weight_expr(weight: Option<&str>) -> String {
        weight.map_or("1.0".to_owned(), |w| format!("todouble({})", bracketed(w)))
    }

    /// `evaluate basket([threshold, weight_column, max_dimensions, wildcards...])`: every
    /// frequent pattern (held by at least `threshold`, 0.05 by default, of the weight), one
    /// row per pattern: `SegmentId`, `Count`, `Percent`, then the dimensions.
    pub(crate) fn basket(&mut self, input: Tabular, args: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let threshold = self.mining_number("basket", args.first(), "threshold", 0.05)?;
        if !(0.0..=1.0).contains(&threshold) {
            return Err(self.error(ErrorCode::BadRequest, span, "basket's threshold is between 0 and 1"));
        }
        let weight = self.mining_weight("basket", &input, args.get(1))?;
        let max_dimensions = self.mining_number("basket", args.get(2), "max dimensions", 5.0)?;
        if max_dimensions < 1.0 || max_dimensions.fract() != 0.0 {
            return Err(self.error(ErrorCode::BadRequest, span, "basket's max dimensions is a whole number"));
        }
        self.counted_patterns(input, args, span, "basket", weight, (threshold, max_dimensions as i64))
    }

    /// `evaluate autocluster([size_weight, weight_column, num_seeds, wildcards...])`: a few
    /// patterns that each cover much of the rows and fix many dimensions (seed-and-expand),
    /// one row per pattern: `SegmentId`, `Count`, `Percent`, then the dimensions.
    pub(crate) fn autocluster(&mut self, input: Tabular, args: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let size_weight = self.mining_number("autocluster", args.first(), "size weight", 0.5)?;
        if !(0.0..=1.0).contains(&size_weight) {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "autocluster's size weight is between 0 and 1",
            ));
        }
        let weight = self.mining_weight("autocluster", &input, args.get(1))?;
        let seeds = self.mining_number("autocluster", args.get(2), "number of seeds", 25.0)?;
        if !(1.0..=1000.0).contains(&seeds) || seeds.fract() != 0.0 {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "autocluster's number of seeds is a whole number from 1 to 1000",
            ));
        }
        self.counted_patterns(input, args, span, "autocluster", weight, (size_weight, seeds as i64))
    }

    /// `basket` and `autocluster`: `__<plugin>(dimensions, weight, real, long)` over the input,
    /// one row per pattern: `SegmentId`, `Count` (a real with a weight column), `Percent`,
    /// then the dimensions (wildcards from the fourth argument on).
    fn counted_patterns(
        &mut self,
        input: Tabular,
        args: &[KExpr],
        span: Span,
        plugin: &'static str,
        weight: Option<String>,
        (real, long): (f64, i64),
    ) -> Result<Tabular, TrawlError> {
        let wildcards = self.mining_wildcards(&input, args.get(3..).unwrap_or_default())?;
        let excluded: Vec<&str> = weight.as_deref().into_iter().collect();
        let dimensions = self.mining_dimensions(plugin, &input, &excluded, span)?;
        let count = if weight.is_some() { "todouble" } else { "tolong" };
        let mined = Mined {
            plugin,
            aggregate: format!(
                "__{plugin}({}, {}, {real:?}, {long})",
                Self::packed(&dimensions),
                Self::weight_expr(weight.as_deref()),
            ),
            leading: vec![
                "SegmentId = toint(__bp.id)".to_owned(),
                format!("Count = {count}(__bp['count'])"),
                "Percent = todouble(__bp.percent)".to_owned(),
            ],
            dimensions,
            wildcards,
            filter: None,
        };
        self.mined(input, mined, span)
    }

    /// `evaluate diffpatterns(split_column, value_a, value_b[, weight_column, threshold,
    /// max_dimensions, wildcards...])`: patterns whose share of the rows differs by at least
    /// `threshold` (0.05 by default, 0.015 to 1) between set A (`tostring(split) == value_a`)
    /// and set B, the largest difference first: `SegmentId`, `CountA`, `CountB`, `PercentA`,
    /// `PercentB`, `PercentDiffAB`, then the dimensions (all but the split column).
    pub(crate) fn diffpatterns(&mut self, input: Tabular, args: &[KExpr], span: Span) -> Result<Tabular, TrawlError> {
        let usage = "diffpatterns(split_column, split_value_a, split_value_b[, weight_column, threshold, \
                     max_dimensions, wildcard, ...])";
        let [split, value_a, value_b, rest @ ..] = args else {
            return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}")));
        };
        let split_name = match &split.kind {
            ExprKind::Name(ident) => ident.name.clone(),
            ExprKind::Literal(Literal::String(name)) => name.clone(),
            _ => return Err(self.error(ErrorCode::BadRequest, split.span, format!("expected {usage}"))),
        };
        if !input.columns.iter().any(|(n, _)| *n == split_name) {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                split.span,
                format!("diffpatterns' split column '{split_name}' does not exist"),
            ));
        }
        let split_values = [value_a, value_b].map(|value| {
            self.text
                .get(value.span.start as usize..value.span.end as usize)
                .map(str::to_owned)
        });
        let [Some(text_a), Some(text_b)] = split_values else {
            return Err(self.error(ErrorCode::BadRequest, span, format!("expected {usage}")));
        };
        for value in [value_a, value_b] {
            self.scalar(value, &input)?;
        }
        let weight = self.mining_weight("diffpatterns", &input, rest.first())?;
        let threshold = self.mining_number("diffpatterns", rest.get(1), "threshold", 0.05)?;
        if !(0.015..=1.0).contains(&threshold) {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "diffpatterns' threshold is between 0.015 and 1",
            ));
        }
        let max_dimensions = self.mining_number("diffpatterns", rest.get(2), "max dimensions", 1_000_000.0)?;
        if max_dimensions < 1.0 || max_dimensions.fract() != 0.0 {
            return Err(self.error(
                ErrorCode::BadRequest,
                span,
                "diffpatterns' max dimensions is a whole number",
            ));
        }
        let wildcards = self.mining_wildcards(&input, rest.get(3..).unwrap_or_default())?;
        let mut excluded: Vec<&str> = vec![split_name.as_str()];
        excluded.extend(weight.as_deref());
        let dimensions = self.mining_dimensions("diffpatterns", &input, &excluded, span)?;
        let count = if weight.is_some() { "todouble" } else { "tolong" };
        let split_text = format!("tostring({})", bracketed(&split_name));
        let set = format!("iff({split_text} == tostring({text_a}), 0, 1)");
        let mined = Mined {
            plugin: "diffpatterns",
            aggregate: format!(
                "__diffpatterns({}, {}, {set}, {threshold:?}, {})",
                Self::packed(&dimensions),
                Self::weight_expr(weight.as_deref()),
                max_dimensions as i64
            ),
            leading: vec![
                "SegmentId = toint(__bp.id)".to_owned(),
                format!("CountA = {count}(__bp.count_a)"),
                format!("CountB = {count}(__bp.count_b)"),
                "PercentA = todouble(__bp.percent_a)".to_owned(),
                "PercentB = todouble(__bp.percent_b)".to_owned(),
                "PercentDiffAB = todouble(__bp.diff)".to_owned(),
            ],
            dimensions,
            wildcards,
            filter: Some(format!(
                "{split_text} == tostring({text_a}) or {split_text} == tostring({text_b})"
            )),
        };
        self.mined(input, mined, span)
    }
}

/// The conversion from a dynamic value to a column of `kql_type`.
fn converter(kql_type: KqlType) -> &'static str {
    match kql_type {
        KqlType::Bool => "tobool",
        KqlType::Int => "toint",
        KqlType::Long => "tolong",
        KqlType::Real => "todouble",
        KqlType::Decimal => "todecimal",
        KqlType::DateTime => "todatetime",
        KqlType::Timespan => "totimespan",
        KqlType::Guid => "toguid",
        KqlType::String => "tostring",
        KqlType::Dynamic => "todynamic",
    }
}

#[cfg(test)]
mod tests {
    use trawl_common::ErrorCode;

    const T: &str = r#"let T = datatable(State:string, Damage:long, Weight:long, Note:string, Bag:dynamic)
        ["TX", 1, 2, "a", dynamic({})];"#;

    fn columns(text: &str) -> Vec<String> {
        crate::testing::columns_of(&format!("{T} T | evaluate {text}")).unwrap_or_default()
    }

    fn code(text: &str) -> Option<ErrorCode> {
        crate::testing::error_code(&format!("{T} T | evaluate {text}"))
    }

    #[test]
    fn output_columns_leave_out_weight_split_and_dynamic_columns() {
        assert_eq!(
            columns("autocluster(0.6, Weight)"),
            ["SegmentId", "Count", "Percent", "State", "Damage", "Note"]
        );
        assert_eq!(
            columns("diffpatterns(Damage, '0', '1', '~', 0.05, 3, '*')"),
            [
                "SegmentId",
                "CountA",
                "CountB",
                "PercentA",
                "PercentB",
                "PercentDiffAB",
                "State",
                "Weight",
                "Note"
            ]
        );
        assert_eq!(
            columns("basket('~', '~', '~', '*', long(-1))"),
            ["SegmentId", "Count", "Percent", "State", "Damage", "Weight", "Note"]
        );
    }

    #[test]
    fn binding_errors() {
        assert_eq!(code("autocluster(0.5, Missing)"), Some(ErrorCode::UnknownColumn));
        assert_eq!(code("autocluster(0.5, Note)"), Some(ErrorCode::TypeMismatch));
        assert_eq!(code("autocluster(1.5)"), Some(ErrorCode::BadRequest));
        assert_eq!(code("autocluster(0.5, '~', 0)"), Some(ErrorCode::BadRequest));
        assert_eq!(code("autocluster('x')"), Some(ErrorCode::BadRequest));
        assert_eq!(code("diffpatterns(Damage, '0')"), Some(ErrorCode::BadRequest));
        assert_eq!(code("diffpatterns(Nope, '0', '1')"), Some(ErrorCode::UnknownColumn));
        assert_eq!(
            code("diffpatterns(Damage, '0', '1', '~', 0.01)"),
            Some(ErrorCode::BadRequest)
        );
        assert_eq!(code("basket(0.1, '~', '~', State)"), Some(ErrorCode::BadRequest));
    }
}
