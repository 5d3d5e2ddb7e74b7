//! String functions: trimming, replacing, extracting, searching, repeating and translating.
//! String results are never null: Kusto's empty string stands for "no value".

use datafusion::error::Result;
use serde_json::Value;

use crate::json::{element_text, out, parse, parse_array};
use crate::rowfn::{Out, Val, arg, str_arg, with_regex};
use crate::util::Built;

fn text(s: impl Into<String>) -> Result<Out> {
    Ok(Out::Str(s.into()))
}

fn empty() -> Result<Out> {
    text(String::new())
}

/// `trim(regex, text)`, `trim_start`, `trim_end`: removes leading and/or trailing matches.
fn trim_with(args: &[Val], start: bool, end: bool) -> Result<Out> {
    let pattern = str_arg(args, 0);
    let mut source = str_arg(args, 1);
    if pattern.is_empty() {
        return text(source);
    }
    if start {
        source = with_regex(&format!("^(?:{pattern})+"), |re| match re.find(source) {
            Some(m) => &source[m.end()..],
            None => source,
        })?;
    }
    if end {
        source = with_regex(&format!("(?:{pattern})+$"), |re| {
            // The leftmost match may start early when the pattern can match inside; try
            // every start until a match reaches the end.
            let mut at = 0;
            while at <= source.len() {
                match re.find_at(source, at) {
                    Some(m) if m.end() == source.len() && m.start() < m.end() => return &source[..m.start()],
                    Some(m) => {
                        at = source[m.start()..]
                            .chars()
                            .next()
                            .map_or(source.len() + 1, |c| m.start() + c.len_utf8());
                    }
                    None => break,
                }
            }
            source
        })?;
    }
    text(source)
}

pub fn trim(args: &[Val]) -> Result<Out> {
    trim_with(args, true, true)
}

pub fn trim_start(args: &[Val]) -> Result<Out> {
    trim_with(args, true, false)
}

pub fn trim_end(args: &[Val]) -> Result<Out> {
    trim_with(args, false, true)
}

/// `replace_string(text, lookup, rewrite)`: every non-overlapping occurrence.
pub fn replace_string(args: &[Val]) -> Result<Out> {
    let (source, lookup, rewrite) = (str_arg(args, 0), str_arg(args, 1), str_arg(args, 2));
    if lookup.is_empty() {
        return text(source);
    }
    // A rewrite longer than its lookup multiplies the text: its length is known up front.
    if rewrite.len() > lookup.len() && source.len() >= lookup.len() {
        let most = (source.len() / lookup.len()).saturating_mul(rewrite.len() - lookup.len());
        if most > ASK_ABOVE {
            let grows = source.matches(lookup).count().saturating_mul(rewrite.len() - lookup.len());
            Built::new("replace_string").reserve(source.len().saturating_add(grows))?;
        }
    }
    text(source.replace(lookup, rewrite))
}

/// Results that may grow past this many bytes are asked of the query's memory first.
const ASK_ABOVE: usize = 1 << 20;

/// A Kusto rewrite pattern (`\1` for group 1) in the `regex` crate's syntax.
fn rewrite_pattern(rewrite: &str) -> String {
    let mut out = String::with_capacity(rewrite.len());
    let mut chars = rewrite.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                out.push_str(&format!("${{{digits}}}"));
            }
            '$' => out.push_str("$$"),
            other => out.push(other),
        }
    }
    out
}

/// `replace_regex(source, lookup_regex, rewrite)`.
pub fn replace_regex(args: &[Val]) -> Result<Out> {
    let (source, pattern) = (str_arg(args, 0), str_arg(args, 1));
    let rewrite = rewrite_pattern(str_arg(args, 2));
    // Rewrites (and the groups they copy) can multiply the text: it is built match by match,
    // and asked of the query's memory as it grows.
    let replaced = with_regex(pattern, |re| -> Result<String> {
        let mut built = Built::new("replace_regex");
        let mut out = String::with_capacity(source.len());
        let mut last = 0;
        for captures in re.captures_iter(source) {
            let Some(whole) = captures.get(0) else { continue };
            let before = out.len();
            out.push_str(&source[last..whole.start()]);
            captures.expand(rewrite.as_str(), &mut out);
            last = whole.end();
            built.add(out.len() - before)?;
        }
        out.push_str(&source[last..]);
        Ok(out)
    })??;
    text(replaced)
}

/// `replace_strings(text, lookups, rewrites)`: the first lookup replaces everywhere, the next
/// ones only in text no earlier lookup replaced.
pub fn replace_strings(args: &[Val]) -> Result<Out> {
    let source = str_arg(args, 0);
    let (Some(lookups), Some(rewrites)) = (parse_array(arg(args, 1)), parse_array(arg(args, 2))) else {
        return text(source);
    };
    // (text, already replaced)
    let mut pieces: Vec<(String, bool)> = vec![(source.to_string(), false)];
    let mut built = Built::new("replace_strings");
    for (i, lookup) in lookups.iter().enumerate() {
        let lookup = element_text(lookup);
        if lookup.is_empty() {
            continue;
        }
        // A rewrite that is not a string keeps the matched text (and shields it from later
        // lookups).
        let rewrite = match rewrites.get(i) {
            Some(Value::String(r)) => r.clone(),
            _ => lookup.clone(),
        };
        let mut next = Vec::with_capacity(pieces.len());
        for (piece, done) in pieces {
            if done {
                next.push((piece, true));
                continue;
            }
            let mut parts = piece.split(lookup.as_str()).peekable();
            while let Some(part) = parts.next() {
                built.add(part.len())?;
                next.push((part.to_string(), false));
                if parts.peek().is_some() {
                    built.add(rewrite.len())?;
                    next.push((rewrite.clone(), true));
                }
            }
        }
        pieces = next;
    }
    text(pieces.into_iter().map(|(p, _)| p).collect::<String>())
}

pub fn reverse(args: &[Val]) -> Result<Out> {
    text(str_arg(args, 0).chars().rev().collect::<String>())
}

/// `substring(source, start[, length])`, in characters; a negative start counts from the end
/// (`substring("123456", -2, 2)` is `"56"`).
pub fn substring(args: &[Val]) -> Result<Out> {
    let source = str_arg(args, 0);
    let Some(start) = arg(args, 1).long() else {
        return empty();
    };
    let length = arg(args, 2).long();
    let start = match usize::try_from(start) {
        Ok(start) => start,
        Err(_) => {
            let chars = source.chars().count() as i64;
            usize::try_from(chars.saturating_add(start)).unwrap_or(0)
        }
    };
    let rest = source.chars().skip(start);
    match length {
        Some(l) if l <= 0 => empty(),
        Some(l) => text(rest.take(usize::try_from(l).unwrap_or(usize::MAX)).collect::<String>()),
        None => text(rest.collect::<String>()),
    }
}

/// `strcmp(a, b)`: -1, 0 or 1 as `a` sorts before, with or after `b` (ordinal: by code
/// point).
pub fn strcmp(args: &[Val]) -> Result<Out> {
    Ok(Out::Long(match str_arg(args, 0).cmp(str_arg(args, 1)) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }))
}

/// `isutf8(text)`: whether the text is valid UTF-8. Text reaches functions as UTF-8 (invalid
/// bytes were replaced on ingest), so this holds for every string.
pub fn isutf8(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0) {
        Val::Null => Out::Null,
        _ => Out::Bool(true),
    })
}

/// `has_any_index(source, values)`: the position in `values` of the first one `source` has
/// (as `has` matches: whole terms, any case); -1 when none does or `values` is empty.
pub fn has_any_index(args: &[Val]) -> Result<Out> {
    let source = str_arg(args, 0);
    let Some(values) = crate::json::parse_array(arg(args, 1)) else {
        return Ok(Out::Null);
    };
    let found = values
        .iter()
        .position(|value| crate::tokenizer::has_term(source, &crate::json::element_text(value), false));
    Ok(Out::Long(found.map_or(-1, |i| i as i64)))
}

/// `parse_command_line(command_line, "windows")`: the arguments as `CommandLineToArgvW`
/// splits them: blanks separate arguments outside double quotes; 2n backslashes before a
/// quote give n backslashes and the quote opens or closes a quoted part, 2n+1 give n and a
/// literal quote; `""` inside a quoted part is a literal quote; other backslashes are kept.
/// The first argument (the program name) ends at the first blank, or at its closing quote.
/// Null for another parser type.
pub fn parse_command_line(args: &[Val]) -> Result<Out> {
    if !str_arg(args, 1).eq_ignore_ascii_case("windows") {
        return Ok(Out::Null);
    }
    let chars: Vec<char> = str_arg(args, 0).chars().collect();
    let mut arguments: Vec<String> = Vec::new();
    let mut i = 0;
    // The program name: quotes group, backslashes are plain.
    let mut program = String::new();
    let mut quoted = false;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '"' => quoted = !quoted,
            ' ' | '\t' if !quoted => break,
            c => program.push(c),
        }
    }
    if !chars.is_empty() {
        arguments.push(program);
    }
    loop {
        while i < chars.len() && matches!(chars[i], ' ' | '\t') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let mut argument = String::new();
        let mut quoted = false;
        while i < chars.len() {
            let c = chars[i];
            if matches!(c, ' ' | '\t') && !quoted {
                break;
            }
            if c == '\\' {
                let run = chars[i..].iter().take_while(|&&c| c == '\\').count();
                i += run;
                if chars.get(i) == Some(&'"') {
                    argument.extend(std::iter::repeat_n('\\', run / 2));
                    if run % 2 == 1 {
                        argument.push('"');
                        i += 1;
                    }
                } else {
                    argument.extend(std::iter::repeat_n('\\', run));
                }
                continue;
            }
            if c == '"' {
                if quoted && chars.get(i + 1) == Some(&'"') {
                    argument.push('"');
                    i += 2;
                    continue;
                }
                quoted = !quoted;
                i += 1;
                continue;
            }
            argument.push(c);
            i += 1;
        }
        arguments.push(argument);
    }
    Ok(crate::json::out(serde_json::Value::Array(
        arguments.into_iter().map(serde_json::Value::String).collect(),
    )))
}

/// `indexof(source, lookup[, start[, length[, occurrence]]])`: a character index or -1. A
/// negative start counts from the end. The first occurrence must lie within `length`
/// characters from the start (-1: to the end); later ones are looked for up to the end.
pub fn indexof(args: &[Val]) -> Result<Out> {
    let source: Vec<char> = str_arg(args, 0).chars().collect();
    let lookup: Vec<char> = str_arg(args, 1).chars().collect();
    let start = arg(args, 2).long().unwrap_or(0);
    let length = arg(args, 3).long().unwrap_or(-1);
    let occurrence = arg(args, 4).long().unwrap_or(1);
    if length < -1 || occurrence <= 0 {
        return Ok(Out::Null);
    }
    let start = if start < 0 {
        match usize::try_from((source.len() as i64).saturating_add(start)) {
            Ok(start) => start,
            Err(_) => return Ok(Out::Null),
        }
    } else {
        usize::try_from(start).unwrap_or(usize::MAX)
    };
    if start > source.len() {
        return Ok(Out::Long(-1));
    }
    let window_end = match usize::try_from(length) {
        Ok(length) => start.saturating_add(length).min(source.len()),
        Err(_) => source.len(),
    };
    let mut seen = 0;
    let mut i = start;
    while i + lookup.len() <= source.len() {
        let end = if seen == 0 { window_end } else { source.len() };
        if i + lookup.len() > end {
            break;
        }
        if source[i..i + lookup.len()] == lookup[..] {
            seen += 1;
            if seen == occurrence {
                return Ok(Out::Long(i as i64));
            }
        }
        i += 1;
    }
    Ok(Out::Long(-1))
}

/// `extract(regex, group, source[, type])`: the group's text, "" when nothing matches.
pub fn extract(args: &[Val]) -> Result<Out> {
    let (pattern, source) = (str_arg(args, 0), str_arg(args, 2));
    let Some(group) = arg(args, 1).long().and_then(|g| usize::try_from(g).ok()) else {
        return empty();
    };
    let found = with_regex(pattern, |re| {
        re.captures(source)
            .and_then(|c| c.get(group))
            .map(|m| m.as_str().to_string())
    })?;
    text(found.unwrap_or_default())
}

/// `extract_all(regex, [groups,] source)`: an array of the matches (of arrays when more than
/// one group is extracted); null when nothing matches. `groups` selects capture groups by
/// number or by name (`dynamic(['first', 2, 'last'])`).
pub fn extract_all(args: &[Val]) -> Result<Out> {
    let pattern = str_arg(args, 0);
    let (groups, source) = if args.len() >= 3 {
        let groups: Option<Vec<Value>> = match parse(arg(args, 1)) {
            Some(Value::Array(items)) => Some(items),
            _ => None,
        };
        (groups, str_arg(args, 2))
    } else {
        (None, str_arg(args, 1))
    };
    let rows = with_regex(pattern, |re| {
        let count = re.captures_len() - 1;
        let by_name = |name: &str| re.capture_names().position(|n| n == Some(name));
        let wanted: Vec<Option<usize>> = match &groups {
            Some(g) if !g.is_empty() => g
                .iter()
                .map(|v| match v {
                    Value::String(name) => by_name(name),
                    other => other.as_u64().map(|n| n as usize),
                })
                .collect(),
            _ if count == 0 => vec![Some(0)],
            _ => (1..=count).map(Some).collect(),
        };
        // Millions of matches build far more than the text they come from: counted as built.
        let mut built = (source.len() > crate::util::METERED_TEXT).then(|| Built::new("extract_all"));
        let mut rows = Vec::new();
        for c in re.captures_iter(source) {
            let mut bytes = 0;
            let values: Vec<Value> = wanted
                .iter()
                .map(|g| {
                    let found = g.and_then(|g| c.get(g)).map_or("", |m| m.as_str());
                    bytes += std::mem::size_of::<Value>() + found.len();
                    Value::String(found.to_string())
                })
                .collect();
            if let Some(built) = built.as_mut() {
                built.room_for_one_more(&rows)?;
                built.add(bytes)?;
            }
            rows.push(if wanted.len() == 1 {
                values.into_iter().next().unwrap_or(Value::Null)
            } else {
                Value::Array(values)
            });
        }
        Ok::<_, datafusion::error::DataFusionError>(rows)
    })??;
    Ok(if rows.is_empty() {
        Out::Null
    } else {
        out(Value::Array(rows))
    })
}

/// `countof(source, search[, kind])`: plain searches count overlapping occurrences, regex
/// searches non-overlapping matches.
pub fn countof(args: &[Val]) -> Result<Out> {
    let (source, search) = (str_arg(args, 0), str_arg(args, 1));
    if str_arg(args, 2) == "regex" {
        return Ok(Out::Long(with_regex(search, |re| re.find_iter(source).count())? as i64));
    }
    if search.is_empty() {
        return Ok(Out::Long(0));
    }
    let mut count = 0;
    let mut at = 0;
    while let Some(found) = source[at..].find(search) {
        count += 1;
        let start = at + found;
        at = start + source[start..].chars().next().map_or(1, char::len_utf8);
        if at > source.len() {
            break;
        }
    }
    Ok(Out::Long(count))
}

/// `strrep(value, multiplier[, delimiter])`; the multiplier is capped at 1024.
pub fn strrep(args: &[Val]) -> Result<Out> {
    let value = str_arg(args, 0);
    let Some(times) = arg(args, 1).long() else {
        return empty();
    };
    let times = times.clamp(0, 1024) as usize;
    let delimiter = str_arg(args, 2);
    let bytes = value.len().saturating_add(delimiter.len()).saturating_mul(times);
    if bytes > ASK_ABOVE {
        Built::new("strrep").reserve(bytes)?;
    }
    text(vec![value; times].join(delimiter))
}

/// `translate(searchList, replacementList, source)`.
pub fn translate(args: &[Val]) -> Result<Out> {
    let search: Vec<char> = str_arg(args, 0).chars().collect();
    let replace: Vec<char> = str_arg(args, 1).chars().collect();
    let result = str_arg(args, 2)
        .chars()
        .filter_map(|c| match search.iter().position(|s| *s == c) {
            None => Some(c),
            Some(_) if replace.is_empty() => None,
            Some(i) => Some(*replace.get(i).or(replace.last()).unwrap_or(&c)),
        })
        .collect::<String>();
    text(result)
}

/// `strcat_delim(delimiter, arg1, arg2, ...)`.
pub fn strcat_delim(args: &[Val]) -> Result<Out> {
    let parts: Vec<&str> = args.iter().skip(1).map(|v| v.str().unwrap_or("")).collect();
    text(parts.join(str_arg(args, 0)))
}

pub fn string_size(args: &[Val]) -> Result<Out> {
    Ok(Out::Long(str_arg(args, 0).len() as i64))
}

pub fn isascii(args: &[Val]) -> Result<Out> {
    Ok(Out::Bool(str_arg(args, 0).is_ascii()))
}

pub fn unicode_codepoints_from_string(args: &[Val]) -> Result<Out> {
    Ok(out(Value::Array(
        str_arg(args, 0).chars().map(|c| Value::from(c as u32)).collect(),
    )))
}

/// `unicode_codepoints_to_string(values...)`: numbers or arrays of numbers.
pub fn unicode_codepoints_to_string(args: &[Val]) -> Result<Out> {
    let mut result = String::new();
    let mut push = |v: &Value| -> bool {
        match v.as_u64().and_then(|n| u32::try_from(n).ok()).and_then(char::from_u32) {
            Some(c) => {
                result.push(c);
                true
            }
            None => false,
        }
    };
    for v in args {
        match parse(*v) {
            Some(Value::Array(items)) => {
                for item in &items {
                    if !push(item) {
                        return empty();
                    }
                }
            }
            Some(value) => {
                if !push(&value) {
                    return empty();
                }
            }
            None => return empty(),
        }
    }
    text(result)
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, run, s};

    #[test]
    fn trimming() {
        assert_eq!(run("trim", &[s("--"), s("--https://bing.com--")]), "https://bing.com");
        assert_eq!(run("trim", &[s(r"[^\w]+"), s("-  Te st1// $")]), "Te st1");
        assert_eq!(run("trim", &[s(r"\s+"), s("    Hello, world!    ")]), "Hello, world!");
        assert_eq!(run("trim", &[s("1"), s("11")]), "");
        assert_eq!(run("trim", &[s("1"), s("10")]), "0");
        assert_eq!(run("trim_start", &[s("https://"), s("https://bing.com")]), "bing.com");
        assert_eq!(run("trim_end", &[s(".com"), s("bing.com")]), "bing");
        assert_eq!(run("trim_end", &[s("ab"), s("xabab")]), "x");
    }

    #[test]
    fn replacing() {
        let m = s("A magic trick can turn a cat into a dog");
        let r = run("replace_string", &[m.clone(), s("cat"), s("hamster")]);
        assert_eq!(r, "A magic trick can turn a hamster into a dog");
        let r = run(
            "replace_strings",
            &[m.clone(), d("[\"cat\",\"dog\"]"), d("[\"dog\",\"pigeon\"]")],
        );
        assert_eq!(r, "A magic trick can turn a dog into a pigeon");
        let r = run(
            "replace_strings",
            &[m, d("[\"turn\",\" into a dog\"]"), d("[\"disappear\",\"\"]")],
        );
        assert_eq!(r, "A magic trick can disappear a cat");
        let e = s("This is an example of using replace_strings()");
        let r = run(
            "replace_strings",
            &[e.clone(), d("[\"This\",\"is\"]"), d("[\"This\",\"was\"]")],
        );
        assert_eq!(r, "This was an example of using replace_strings()");
        let r = run(
            "replace_strings",
            &[e.clone(), d("[\"is\",\"This\"]"), d("[\"was\",\"This\"]")],
        );
        assert_eq!(r, "Thwas was an example of using replace_strings()");
        let r = run("replace_strings", &[e, d("[\"This\",\"is\"]"), d("[12345,\"was\"]")]);
        assert_eq!(r, "This was an example of using replace_strings()");
        let r = run("replace_regex", &[s("abc123def"), s(r"(\d+)"), s(r"<\1>")]);
        assert_eq!(r, "abc<123>def");
        let r = run("replace_regex", &[s("Test 1 2 3"), s(r"\s"), s("$")]);
        assert_eq!(r, "Test$1$2$3");
    }

    #[test]
    fn reversing_and_substrings() {
        assert_eq!(run("reverse", &[s("ABC")]), "CBA");
        assert_eq!(run("reverse", &[s("")]), "");
        assert_eq!(run("substring", &[s("123456"), l(1), l(2)]), "23");
        assert_eq!(run("substring", &[s("123456"), l(2)]), "3456");
        assert_eq!(run("substring", &[s("123456"), l(-2), l(2)]), "56");
        assert_eq!(run("substring", &[s("ABCD"), l(-1), l(2)]), "D");
        assert_eq!(run("substring", &[s("ABCD"), l(-9), l(2)]), "AB");
        assert_eq!(run("substring", &[s("ABCD"), l(10)]), "");
        assert_eq!(
            run("parse_command_line", &[s(r#"echo "hello world!""#), s("windows")]),
            r#"["echo","hello world!"]"#
        );
        assert_eq!(
            run(
                "parse_command_line",
                &[s(r#""C:\Program Files\a.exe" -x a\\\"b "c d"e f\g"#), s("Windows")]
            ),
            r#"["C:\\Program Files\\a.exe","-x","a\\\"b","c de","f\\g"]"#
        );
        assert_eq!(run("parse_command_line", &[s("a"), s("linux")]), "null");
        assert_eq!(run("parse_command_line", &[s(""), s("windows")]), "[]");
        assert_eq!(run("strcmp", &[s("ABC"), s("ABC")]), "0");
        assert_eq!(run("strcmp", &[s("abc"), s("ABC")]), "1");
        assert_eq!(run("strcmp", &[s("ABC"), s("abc")]), "-1");
        assert_eq!(run("strcmp", &[s("abcde"), s("abc")]), "1");
        assert_eq!(run("isutf8", &[s("some string")]), "true");
        let example = "this is an example";
        assert_eq!(run("has_any_index", &[s(example), d(r#"["this","example"]"#)]), "0");
        assert_eq!(run("has_any_index", &[s(example), d(r#"["not","example"]"#)]), "1");
        assert_eq!(run("has_any_index", &[s(example), d(r#"["not","found"]"#)]), "-1");
        assert_eq!(run("has_any_index", &[s("Example number 2"), d("[1,2,3]")]), "1");
        assert_eq!(run("has_any_index", &[s(example), d("[]")]), "-1");
        assert_eq!(run("has_any_index", &[s(example), d(r#"["EXAMPLE"]"#)]), "0");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde")]), "2");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(1), l(4)]), "2");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(1), l(2)]), "-1");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(3)]), "-1");
        // A negative start counts from the end.
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(-5)]), "2");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(-1)]), "-1");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(-9)]), "null");
        assert_eq!(run("indexof", &[s("abcdefg"), s("cde"), l(2), l(-1)]), "2");
        // The length bounds the first occurrence only.
        assert_eq!(run("indexof", &[s("abcdefgabcdefg"), s("cde"), l(1), l(10), l(2)]), "9");
        assert_eq!(
            run("indexof", &[s("abcdefgabcdefg"), s("cde"), l(1), l(-1), l(3)]),
            "-1"
        );
        assert_eq!(run("indexof", &[s("abcdefg"), s("")]), "0");
        assert_eq!(run("indexof", &[s("abcabc"), s("bc"), l(0), l(-1), l(2)]), "4");
    }

    #[test]
    fn extracting() {
        let source = s("Duration: 15 seconds, then 20");
        assert_eq!(run("extract", &[s(r"(\d+) seconds"), l(1), source.clone()]), "15");
        assert_eq!(run("extract", &[s(r"\d+"), l(0), source.clone()]), "15");
        assert_eq!(run("extract", &[s(r"(\d+) minutes"), l(1), source.clone()]), "");
        assert_eq!(run("extract_all", &[s(r"(\d+)"), source.clone()]), "[\"15\",\"20\"]");
        let hex = s("ab12 cd34");
        assert_eq!(
            run("extract_all", &[s(r"([a-z]+)(\d+)"), hex.clone()]),
            "[[\"ab\",\"12\"],[\"cd\",\"34\"]]"
        );
        // One group asked for: one dimension, as the reference says.
        assert_eq!(
            run("extract_all", &[s(r"([a-z]+)(\d+)"), d("[2]"), hex.clone()]),
            "[\"12\",\"34\"]"
        );
        // Groups by name and by number.
        assert_eq!(
            run(
                "extract_all",
                &[
                    s(r"(?P<word>[a-z]+)(?P<number>\d+)"),
                    d("[\"number\", 1, \"nope\"]"),
                    hex
                ]
            ),
            "[[\"12\",\"ab\",\"\"],[\"34\",\"cd\",\"\"]]"
        );
        assert_eq!(run("extract_all", &[s(r"(x)"), source]), "null");
    }

    #[test]
    fn counting_and_repeating() {
        assert_eq!(run("countof", &[s("The cat sat on the mat"), s("at")]), "3");
        assert_eq!(run("countof", &[s("aaa"), s("a")]), "3");
        assert_eq!(run("countof", &[s("aaaa"), s("aa")]), "3");
        assert_eq!(run("countof", &[s("aaaa"), s("aa"), s("normal")]), "3");
        assert_eq!(run("countof", &[s("aaaa"), s("aa"), s("regex")]), "2");
        assert_eq!(run("countof", &[s("abcabc"), s("a.c"), s("regex")]), "2");
        assert_eq!(run("strrep", &[s("ABC"), l(2)]), "ABCABC");
        assert_eq!(run("strrep", &[s("ABC"), l(2), s(".")]), "ABC.ABC");
        assert_eq!(run("strrep", &[s("123"), l(3), s(" ")]), "123 123 123");
        assert_eq!(run("translate", &[s("abc"), s("x"), s("abc")]), "xxx");
        assert_eq!(run("translate", &[s("abc"), s(""), s("ab")]), "");
        assert_eq!(run("translate", &[s("krasp"), s("otsku"), s("spark")]), "kusto");
        assert_eq!(run("strcat_delim", &[s("-"), s("a"), s("b"), s("c")]), "a-b-c");
    }

    #[test]
    fn sizes_and_codepoints() {
        assert_eq!(run("string_size", &[s("hello")]), "5");
        assert_eq!(run("string_size", &[s("⒦⒰⒮⒯⒪")]), "15");
        assert_eq!(run("isascii", &[s("abc")]), "true");
        assert_eq!(run("isascii", &[s("⒦")]), "false");
        assert_eq!(
            run("unicode_codepoints_from_string", &[s("קוסטו - Kusto")]),
            "[1511,1493,1505,1496,1493,32,45,32,75,117,115,116,111]"
        );
        assert_eq!(
            run("unicode_codepoints_to_string", &[d("[75,117,115]"), d("116"), d("111")]),
            "Kusto"
        );
        assert_eq!(
            run("unicode_codepoints_to_string", &[d("75"), d("10"), d("117")]),
            "K\nu"
        );
    }
}
