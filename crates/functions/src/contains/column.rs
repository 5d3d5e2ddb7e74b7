//! `contains` over a whole string column at once. The needle is looked for in each data buffer
//! of the column in one pass (one `memchr2` or `memmem` run over a buffer of many rows instead
//! of one call per row of a hundred bytes, whose set-up costs as much as the search), and each
//! row then asks whether an occurrence lies within its bytes: a binary search among the
//! buffer's occurrences, which are few for the needles people search for.

use std::ops::Range;

use datafusion::arrow::array::{Array, AsArray, BooleanArray, StringArray, StringViewArray};

use super::{Kind, Searcher, searched_text};

/// Views of at most this many bytes hold their string inline, not in a data buffer.
const INLINE_BYTES: usize = 12;

impl Searcher {
    /// The start of every occurrence of the needle in `haystack`, ascending, overlapping ones
    /// included; `None` for needles searched row by row (empty ones, and non-ASCII ones
    /// folded by Unicode).
    fn occurrences(&self, haystack: &[u8]) -> Option<Vec<usize>> {
        match &self.kind {
            Kind::Exact(finder) => {
                let mut found = Vec::new();
                let mut from = 0;
                while let Some(at) = haystack.get(from..).and_then(|rest| finder.find(rest)) {
                    found.push(from + at);
                    from += at + 1;
                }
                Some(found)
            }
            Kind::FoldedAscii {
                needle,
                anchor,
                lower,
                upper,
            } => Some(
                memchr::memchr2_iter(*lower, *upper, haystack)
                    .filter_map(|at| at.checked_sub(*anchor))
                    .filter(|&start| {
                        haystack
                            .get(start..start + needle.len())
                            .is_some_and(|candidate| candidate.eq_ignore_ascii_case(needle))
                    })
                    .collect(),
            ),
            Kind::Empty | Kind::Folded(_) => None,
        }
    }

    fn needle_len(&self) -> usize {
        match &self.kind {
            Kind::Exact(finder) => finder.needle().len(),
            Kind::FoldedAscii { needle, .. } => needle.len(),
            Kind::Empty => 0,
            Kind::Folded(needle) => needle.len(),
        }
    }

    /// Whether `text` (a row's value; JSON text when `dynamic`) contains the needle, one row
    /// at a time.
    fn row_matches(&self, text: &str, dynamic: bool) -> bool {
        searched_text(Some(text), dynamic).is_some_and(|text| self.is_match(&text))
    }
}

/// One data buffer of a column, with what was found in it.
struct Searched<'a> {
    bytes: &'a [u8],
    /// Where the needle starts, ascending.
    occurrences: Vec<usize>,
    /// Where a backslash is, ascending (dynamic columns only: a JSON string with escapes is
    /// decoded before it is searched).
    backslashes: Vec<usize>,
}

impl<'a> Searched<'a> {
    fn new(searcher: &Searcher, bytes: &'a [u8], dynamic: bool) -> Option<Searched<'a>> {
        Some(Searched {
            bytes,
            occurrences: searcher.occurrences(bytes)?,
            backslashes: if dynamic {
                memchr::memchr_iter(b'\\', bytes).collect()
            } else {
                Vec::new()
            },
        })
    }

    /// Whether the row whose bytes are `range` of this buffer contains the needle.
    fn row(&self, searcher: &Searcher, range: Range<usize>, dynamic: bool) -> bool {
        let Some(bytes) = self.bytes.get(range.clone()) else {
            return false;
        };
        let mut within = range;
        if dynamic {
            if bytes == b"null" {
                return false; // reads as "", and the needle is not empty
            }
            if bytes.len() >= 2 && bytes[0] == b'"' && bytes[bytes.len() - 1] == b'"' {
                within = within.start + 1..within.end - 1;
                if any_in(&self.backslashes, &within) {
                    // Escapes: decode the string first.
                    return std::str::from_utf8(bytes).is_ok_and(|text| searcher.row_matches(text, true));
                }
            }
        }
        let first = self.occurrences.partition_point(|&at| at < within.start);
        self.occurrences
            .get(first)
            .is_some_and(|&at| at + searcher.needle_len() <= within.end)
    }
}

/// Whether any of `positions` (ascending) is in `range`.
fn any_in(positions: &[usize], range: &Range<usize>) -> bool {
    let first = positions.partition_point(|&at| at < range.start);
    positions.get(first).is_some_and(|&at| at < range.end)
}

/// `array` searched whole when it is a string column the searcher can search whole
/// (`Utf8` or `Utf8View`, a needle of its own bytes); `None` otherwise (the caller goes row by
/// row). Nulls never match (the needle is not empty).
pub(super) fn search_column(searcher: &Searcher, array: &dyn Array, dynamic: bool) -> Option<BooleanArray> {
    if let Some(views) = array.as_string_view_opt() {
        search_views(searcher, views, dynamic)
    } else if let Some(strings) = array.as_string_opt::<i32>() {
        search_strings(searcher, strings, dynamic)
    } else {
        None
    }
}

fn search_views(searcher: &Searcher, array: &StringViewArray, dynamic: bool) -> Option<BooleanArray> {
    let buffers = array
        .data_buffers()
        .iter()
        .map(|buffer| Searched::new(searcher, buffer.as_slice(), dynamic))
        .collect::<Option<Vec<_>>>()?;
    let views = array.views();
    let matches = (0..array.len()).map(|row| {
        if array.is_null(row) {
            return Some(false);
        }
        let view = views[row];
        let length = view as u32 as usize;
        if length <= INLINE_BYTES {
            return Some(searcher.row_matches(array.value(row), dynamic));
        }
        let buffer = (view >> 64) as u32 as usize;
        let offset = (view >> 96) as u32 as usize;
        Some(
            buffers
                .get(buffer)
                .is_some_and(|searched| searched.row(searcher, offset..offset + length, dynamic)),
        )
    });
    Some(matches.collect())
}

fn search_strings(searcher: &Searcher, array: &StringArray, dynamic: bool) -> Option<BooleanArray> {
    let searched = Searched::new(searcher, array.value_data(), dynamic)?;
    let offsets = array.value_offsets();
    let matches = (0..array.len()).map(|row| {
        if array.is_null(row) {
            return Some(false);
        }
        let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
        Some(searched.row(searcher, start..end, dynamic))
    });
    Some(matches.collect())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{StringArray, StringViewArray};

    use super::*;

    /// Row by row, as the column search must agree with.
    fn one_by_one(searcher: &Searcher, texts: &[Option<&str>], dynamic: bool) -> Vec<bool> {
        texts
            .iter()
            .map(|text| text.is_some_and(|text| searcher.row_matches(text, dynamic)))
            .collect()
    }

    fn both_layouts(searcher: &Searcher, texts: &[Option<&str>], dynamic: bool) -> Vec<Vec<bool>> {
        let views = StringViewArray::from(texts.to_vec());
        let strings = StringArray::from(texts.to_vec());
        [&views as &dyn Array, &strings]
            .into_iter()
            .map(|array| {
                let result = search_column(searcher, array, dynamic);
                result.map_or_else(Vec::new, |r| r.iter().map(|v| v.unwrap_or(false)).collect())
            })
            .collect()
    }

    #[test]
    fn a_whole_column_agrees_with_row_by_row_search() {
        let texts = [
            Some("a long line that ends with a DeadLock"),
            Some("deadlock at the start of a long line"),
            Some("short deadlock"),
            Some("deadlock"),
            Some("dead"),
            None,
            Some("lock"),
            // The needle across the boundary of two rows is in neither.
            Some("this long line ends with dead"),
            Some("lock and this one starts with lock"),
            Some(r#""a JSON string with a deadlock inside""#),
            Some(r#""a JSON string with an escaped \"deadlock\" inside""#),
            Some(r#""escaped dead\u006cock, which decodes to the needle""#),
            Some(r#"{"reason": "deadlock", "other": "values in a bag"}"#),
            Some(r#""the quote is not part of the text: deadloc""#),
            Some("null"),
            Some(""),
        ];
        for (needle, case_sensitive) in [
            ("deadlock", false),
            ("DeadLock", true),
            ("deadlock", true),
            ("k", false),
            ("\"", false),
            ("ad\"", false),
            ("\\", true),
            ("é", true),
        ] {
            let searcher = Searcher::new(needle, case_sensitive);
            for dynamic in [false, true] {
                let expected = one_by_one(&searcher, &texts, dynamic);
                for found in both_layouts(&searcher, &texts, dynamic) {
                    assert_eq!(
                        found, expected,
                        "{needle:?} case_sensitive={case_sensitive} dynamic={dynamic}"
                    );
                }
            }
        }
    }

    #[test]
    fn random_columns_agree_with_row_by_row_search() {
        let alphabet = ['a', 'b', 'A', 'k', '"', '\\', ' ', 'é'];
        let mut next = crate::contains::tests::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let texts: Vec<Option<String>> = (0..(next() % 40))
                .map(|_| {
                    (!next().is_multiple_of(10))
                        .then(|| (0..(next() % 30)).map(|_| alphabet[(next() % 8) as usize]).collect())
                })
                .collect();
            let texts: Vec<Option<&str>> = texts.iter().map(|t| t.as_deref()).collect();
            let needle: String = (0..1 + next() % 3).map(|_| alphabet[(next() % 6) as usize]).collect();
            let searcher = Searcher::new(&needle, next().is_multiple_of(2));
            for dynamic in [false, true] {
                let expected = one_by_one(&searcher, &texts, dynamic);
                for found in both_layouts(&searcher, &texts, dynamic) {
                    assert_eq!(found, expected, "{needle:?} in {texts:?} dynamic={dynamic}");
                }
            }
        }
    }

    #[test]
    fn needles_searched_row_by_row_are_not_searched_whole() {
        let column = StringArray::from(vec!["x"]);
        assert!(search_column(&Searcher::new("", false), &column, false).is_none());
        assert!(search_column(&Searcher::new("café", false), &column, false).is_none());
    }
}
