//! Regular-expression helpers: `indexof_regex` and `regex_quote`.

use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg, str_arg, with_regex};

/// `indexof_regex(source, regex[, start[, length[, occurrence]]])`: the character position
/// of the `occurrence`-th match (matches may overlap: each search starts one character after
/// the previous match began), looking at `length` characters from `start` (-1: to the end);
/// -1 when there is none, null for a negative start, a length below -1 or an occurrence
/// below 1.
pub fn indexof_regex(args: &[Val]) -> Result<Out> {
    let (source, pattern) = (str_arg(args, 0), str_arg(args, 1));
    let start = arg(args, 2).long().unwrap_or(0);
    let length = arg(args, 3).long().unwrap_or(-1);
    let occurrence = arg(args, 4).long().unwrap_or(1);
    if start < 0 || length < -1 || occurrence <= 0 {
        return Ok(Out::Null);
    }
    // Byte offsets of each character, and of the end.
    let offsets: Vec<usize> = source.char_indices().map(|(i, _)| i).chain([source.len()]).collect();
    let chars = offsets.len() - 1;
    let start = usize::try_from(start).unwrap_or(usize::MAX);
    if start > chars {
        return Ok(Out::Long(-1));
    }
    let end = match usize::try_from(length) {
        Ok(length) => start.saturating_add(length).min(chars),
        Err(_) => chars,
    };
    let window = &source[offsets[start]..offsets[end]];
    let found = with_regex(pattern, |re| {
        let (mut seen, mut at) = (0i64, 0usize);
        while at <= window.len() {
            let found = re.find_at(window, at)?;
            seen += 1;
            if seen == occurrence {
                return Some(found.start());
            }
            // The next search starts one character after this match began.
            at = window[found.start()..]
                .chars()
                .next()
                .map_or(window.len() + 1, |c| found.start() + c.len_utf8());
        }
        None
    })?;
    Ok(Out::Long(match found {
        Some(byte) => (start + window[..byte].chars().count()) as i64,
        None => -1,
    }))
}

/// `regex_quote(text)`: `text` with every character that is not a letter, digit or `_`
/// escaped with a backslash (characters beyond ASCII are kept as they are), so it matches
/// itself literally.
pub fn regex_quote(args: &[Val]) -> Result<Out> {
    let source = str_arg(args, 0);
    let mut quoted = String::with_capacity(source.len() * 2);
    for c in source.chars() {
        if !(c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii()) {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    Ok(Out::Str(quoted))
}

#[cfg(test)]
mod tests {
    use crate::testing::{l, run, s};

    #[test]
    fn finds_the_nth_match_within_the_window() {
        assert_eq!(run("indexof_regex", &[s("abcabc"), s("a.c")]), "0");
        assert_eq!(
            run("indexof_regex", &[s("abcabcdefg"), s("a.c"), l(0), l(9), l(2)]),
            "3"
        );
        assert_eq!(run("indexof_regex", &[s("abcabc"), s("a.c"), l(1), l(-1), l(2)]), "-1");
        // Matches overlap.
        assert_eq!(run("indexof_regex", &[s("ababaa"), s("a.a"), l(0), l(-1), l(2)]), "2");
        assert_eq!(run("indexof_regex", &[s("abcabc"), s("a|ab"), l(-1)]), "null");
        // Positions count characters, not bytes.
        assert_eq!(run("indexof_regex", &[s("ééxé"), s("x")]), "2");
        assert_eq!(run("indexof_regex", &[s("abc"), s("c"), l(3)]), "-1");
        assert_eq!(run("indexof_regex", &[s("abc"), s("c"), l(4)]), "-1");
    }

    #[test]
    fn quoted_text_matches_itself() {
        assert_eq!(run("regex_quote", &[s("(so$me.Te^xt)")]), r"\(so\$me\.Te\^xt\)");
        let text = "a+b*c?[d]{e}|f\\g é";
        let quoted = run("regex_quote", &[s(text)]);
        assert_eq!(run("indexof_regex", &[s(&format!("xx{text}")), s(&quoted)]), "2");
    }
}
