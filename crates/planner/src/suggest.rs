//! The closest name to a misspelled one, for errors that can say what the query probably
//! meant (`unknown column 'timestmp'; did you mean 'timestamp'?`).

use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::Span;

use crate::context::{Binding, Planner, Tabular};

impl Planner<'_> {
    /// `unknown column 'x'`, suggesting the closest column of `input` or scalar `let` name.
    pub(crate) fn unknown_column(&self, name: &str, span: Span, input: &Tabular) -> TrawlError {
        let scalars = self
            .bindings
            .iter()
            .filter(|(_, b)| matches!(b, Binding::Scalar(_)))
            .map(|(n, _)| n.as_str());
        let columns = input.columns.iter().map(|(n, _)| n.as_str()).chain(scalars);
        let error = self.error(ErrorCode::UnknownColumn, span, format!("unknown column '{name}'"));
        match closest(name, columns) {
            Some(found) => error.suggesting(found),
            None => error,
        }
    }

    /// `unknown function 'f'`, suggesting the closest function name.
    pub(crate) fn unknown_function(&self, name: &str, span: Span) -> TrawlError {
        let mut names: Vec<&str> = trawl_functions::registry::all()
            .map(|f| f.name)
            .filter(|n| !n.starts_with("__"))
            .chain(trawl_functions::aggregate_registry::AGGREGATES.iter().map(|a| a.name))
            .chain(crate::aggregates::AGGREGATES.iter().copied())
            .chain(crate::windows::ROW_FUNCTIONS.iter().copied())
            .chain(crate::planner_functions::names())
            .collect();
        names.extend(
            self.bindings
                .iter()
                .filter(|(_, b)| matches!(b, Binding::Function(_)))
                .map(|(n, _)| n.as_str()),
        );
        let error = self.error(ErrorCode::UnknownFunction, span, format!("unknown function '{name}'"));
        match closest(name, names) {
            Some(found) => error.suggesting(found),
            None => error,
        }
    }
}

/// The candidate closest to `name`: one that differs only in case, else the one at the
/// smallest edit distance (insertions, deletions, substitutions and swaps of neighbours), if
/// that distance is small for the name's length (1 up to 4 characters, 2 up to 8, else 3).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted: Vec<char> = name.to_lowercase().chars().collect();
    let limit = match wanted.len() {
        0 => return None,
        1..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let other: Vec<char> = candidate.to_lowercase().chars().collect();
        if other.len().abs_diff(wanted.len()) > limit {
            continue;
        }
        let distance = distance(&wanted, &other);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// The optimal string alignment distance of two words.
fn distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut rows = vec![0usize; (a.len() + 1) * width];
    for (j, cell) in rows.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        rows[i * width] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[(i - 1) * width + j] + 1)
                .min(rows[i * width + j - 1] + 1)
                .min(rows[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[(i - 2) * width + j - 2] + 1);
            }
            rows[i * width + j] = best;
        }
    }
    rows[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_near_names_and_nothing_far() {
        let columns = ["timestamp", "severity_text", "body", "trace_id"];
        assert_eq!(closest("timestmp", columns), Some("timestamp"));
        assert_eq!(closest("Timestamp", columns), Some("timestamp"));
        assert_eq!(closest("boyd", columns), Some("body"));
        assert_eq!(closest("severity", columns), None);
        assert_eq!(closest("xyz", columns), None);
        assert_eq!(closest("strlenn", ["strlen", "strcat", "tolower"]), Some("strlen"));
        assert_eq!(closest("countt", ["count", "countif", "dcount"]), Some("count"));
        assert_eq!(closest("", columns), None);
    }
}
