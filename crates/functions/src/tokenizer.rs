//! Terms, as `has` sees them and the storage bloom index will record them: maximal runs of
//! ASCII letters and digits (every other byte separates terms), compared case-insensitively.
//! A needle matches when it occurs with a term boundary on both sides, so multi-term needles
//! such as `"connection reset"` work too.

/// Whether `byte` belongs to a term.
#[inline]
pub fn is_term_byte(byte: u8) -> bool {
    TERM_BYTES[usize::from(byte)]
}

/// [`is_term_byte`] of every byte: one load instead of three range checks, in the loops that
/// tokenize every value written (the token index) and scan every value read (`has`).
static TERM_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let byte = i as u8;
        table[i] = byte.is_ascii_alphanumeric() || byte >= 0x80;
        i += 1;
    }
    table
};

/// The terms of `text`, in order.
pub fn terms(text: &str) -> Terms<'_> {
    Terms { text, at: 0 }
}

/// Iterator of [`terms`]: walks bytes, not chars. Terms start and end at ASCII bytes (or the
/// text's ends), which are always char boundaries, so no slice splits a character.
#[derive(Debug, Clone)]
pub struct Terms<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Terms<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.at + bytes.get(self.at..)?.iter().position(|&b| is_term_byte(b))?;
        let end = bytes[start..]
            .iter()
            .position(|&b| !is_term_byte(b))
            .map_or(bytes.len(), |length| start + length);
        self.at = end;
        self.text.get(start..end)
    }
}

/// Which ends of a needle must fall on term boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TermMatch {
    /// Both (`has`): the needle is whole terms.
    Whole,
    /// The start (`hasprefix`): the needle begins a term.
    Prefix,
    /// The end (`hassuffix`): the needle ends a term.
    Suffix,
}

/// Whether `haystack` has `needle` as whole terms. An empty needle matches nothing.
pub fn has_term(haystack: &str, needle: &str, case_sensitive: bool) -> bool {
    has_terms(haystack, needle, case_sensitive, TermMatch::Whole)
}

/// Whether `haystack` has `needle` with the term boundaries `kind` asks for. An empty needle
/// matches nothing.
pub fn has_terms(haystack: &str, needle: &str, case_sensitive: bool, kind: TermMatch) -> bool {
    let hay = haystack.as_bytes();
    let pin = needle.as_bytes();
    if pin.is_empty() || pin.len() > hay.len() {
        return false;
    }
    let first = pin[0];
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let mut start = 0;
    while start + pin.len() <= hay.len() {
        // Find the next candidate position of the first byte (vectorized).
        let rest = &hay[start..=hay.len() - pin.len()];
        let offset = if case_sensitive || lower == upper {
            memchr::memchr(first, rest)
        } else {
            memchr::memchr2(lower, upper, rest)
        };
        let Some(offset) = offset else { return false };
        let at = start + offset;
        if at + pin.len() > hay.len() {
            return false;
        }
        let candidate = &hay[at..at + pin.len()];
        let equal = if case_sensitive {
            candidate == pin
        } else {
            candidate.eq_ignore_ascii_case(pin)
        };
        if equal {
            let left_ok = kind == TermMatch::Suffix || at == 0 || !is_term_byte(hay[at - 1]) || !is_term_byte(pin[0]);
            let end = at + pin.len();
            let right_ok = kind == TermMatch::Prefix
                || end == hay.len()
                || !is_term_byte(hay[end])
                || !is_term_byte(pin[pin.len() - 1]);
            if left_ok && right_ok {
                return true;
            }
        }
        start = at + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn term_bytes_are_ascii_letters_and_digits_and_every_non_ascii_byte() {
        for byte in 0..=u8::MAX {
            assert_eq!(
                is_term_byte(byte),
                byte.is_ascii_alphanumeric() || byte >= 0x80,
                "{byte:#x}"
            );
        }
    }

    #[test]
    fn terms_are_the_runs_between_ascii_separators() {
        let by_chars = |text: &str| -> Vec<String> {
            text.split(|c: char| !c.is_ascii_alphanumeric() && c.is_ascii())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        };
        for text in [
            "",
            "   ",
            "a",
            "GET /api/v1?x=5&y=héllo",
            "\"quoted\" text\\n with 日本語 and émigré-café",
            "ends with a separator.",
            ".starts with one",
            "x",
            "ÿ",
            "a\u{0}b\u{7f}c\u{80}d",
        ] {
            assert_eq!(terms(text).collect::<Vec<_>>(), by_chars(text), "{text:?}");
        }
    }

    #[test]
    fn matches_whole_terms_only() {
        assert!(has_term("Connection reset by peer", "reset", false));
        assert!(has_term("Connection reset by peer", "RESET", false));
        assert!(!has_term("Connection reset by peer", "RESET", true));
        assert!(!has_term("Connection resetting", "reset", false));
        assert!(!has_term("preset", "reset", false));
        assert!(has_term("GET /api/x?id=5", "api", false));
        assert!(has_term("a connection reset b", "connection reset", false));
        assert!(has_term("x=5", "5", false));
        assert!(!has_term("x=55", "5", false));
        assert!(!has_term("anything", "", false));
    }

    #[test]
    fn prefixes_and_suffixes_of_terms() {
        let text = "North Dakota; STORM-warning";
        assert!(has_terms(text, "dak", false, TermMatch::Prefix));
        assert!(!has_terms(text, "ota", false, TermMatch::Prefix));
        assert!(has_terms(text, "ota", false, TermMatch::Suffix));
        assert!(!has_terms(text, "dak", false, TermMatch::Suffix));
        assert!(!has_terms(text, "storm", true, TermMatch::Prefix));
        assert!(has_terms(text, "STORM", true, TermMatch::Prefix));
        assert!(has_terms(text, "warn", false, TermMatch::Prefix));
        assert!(has_terms(text, "Dakota", false, TermMatch::Prefix));
        assert!(has_terms(text, "Dakota", false, TermMatch::Suffix));
        // A needle of several terms: its first term must start a term (prefix), its last
        // must end one (suffix).
        assert!(has_terms(text, "north dak", false, TermMatch::Prefix));
        assert!(has_terms(text, "rth dakota", false, TermMatch::Suffix));
        assert!(!has_terms(text, "", false, TermMatch::Prefix));
    }

    #[test]
    fn terms_split_on_non_alphanumerics() {
        let t: Vec<&str> = terms("GET /api/v1?x=5&y=héllo").collect();
        assert_eq!(t, vec!["GET", "api", "v1", "x", "5", "y", "héllo"]);
    }
}
