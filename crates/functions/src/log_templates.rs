//! Log pattern mining: `extract_log_template(message)` masks the variable parts of a log line,
//! `log_template_hash(message)` keys lines by their template, `log_template_regex(template)`
//! matches the lines of a template.
//!
//! A line is split into words (runs of characters that are not white space); a word that is a
//! variable — a number (`42`, `-3.5`, `0x1f`, `1e9`), a UUID, an IPv4 or IPv6 address (with
//! an optional port), a hexadecimal id of 8 or more digits, or any word mixing letters and
//! digits (`user42`, `a1b2`) — becomes `<*>`; punctuation around a word (`(`, `"`, `,`, `:`,
//! `=`, …) is kept, so `id=42,` gives `id=<*>,`. Runs of white space become one space.

use datafusion::common::Result;
use std::hash::Hasher;

use crate::rowfn::{Out, Val, arg};

/// The placeholder of a variable part.
pub const WILDCARD: &str = "<*>";

fn is_number(word: &str) -> bool {
    let body = word.strip_prefix(['-', '+']).unwrap_or(word);
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    body.bytes().any(|b| b.is_ascii_digit()) && body.parse::<f64>().is_ok()
}

fn is_hex_id(word: &str) -> bool {
    word.len() >= 8 && word.bytes().all(|b| b.is_ascii_hexdigit()) && word.bytes().any(|b| b.is_ascii_digit())
}

fn is_uuid(word: &str) -> bool {
    let groups: Vec<&str> = word.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_address(word: &str) -> bool {
    let host = match word.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => word,
    };
    host.parse::<std::net::IpAddr>().is_ok() || word.trim_matches(['[', ']']).parse::<std::net::Ipv6Addr>().is_ok()
}

/// Whether a word (without the punctuation around it) is a variable part.
fn is_variable(word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let has_digit = word.bytes().any(|b| b.is_ascii_digit());
    has_digit
        && (is_number(word)
            || is_uuid(word)
            || is_address(word)
            || is_hex_id(word)
            || word
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '/')))
}

/// Punctuation a word may be wrapped in, kept around its placeholder.
fn is_wrapping(c: char) -> bool {
    matches!(
        c,
        '(' | ')' | '[' | ']' | '{' | '}' | '"' | '\'' | ',' | ';' | '<' | '>' | '!' | '?'
    )
}

/// Masks one word: `key=value` and `key:value` mask the value only.
fn mask_word(word: &str, out: &mut String) {
    let start = word.find(|c: char| !is_wrapping(c)).unwrap_or(word.len());
    let end = word
        .rfind(|c: char| !is_wrapping(c))
        .map_or(start, |i| i + word[i..].chars().next().map_or(1, char::len_utf8));
    let (head, core, tail) = (&word[..start], &word[start..end.max(start)], &word[end.max(start)..]);
    out.push_str(head);
    if is_variable(core) {
        out.push_str(WILDCARD);
    } else if let Some((key, value)) = core
        .split_once(['=', ':'])
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
    {
        out.push_str(key);
        out.push_str(&core[key.len()..key.len() + 1]);
        let mut inner = String::new();
        mask_word(value, &mut inner);
        out.push_str(&inner);
    } else {
        out.push_str(core);
    }
    out.push_str(tail);
}

/// The template of a log line.
pub fn template(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for (i, word) in line.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        mask_word(word, &mut out);
    }
    out
}

/// `extract_log_template(message)`.
pub fn extract_log_template(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0).str() {
        Some(line) => Out::Str(template(line)),
        None => Out::Null,
    })
}

/// `log_template_hash(message)`: a 64-bit hash of the message's template (equal for lines of
/// one template, stable across releases: XXH64 with seed 0 of the template's UTF-8 bytes).
pub fn log_template_hash(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0).str() {
        Some(line) => {
            let mut hasher = twox_hash::XxHash64::with_seed(0);
            hasher.write(template(line).as_bytes());
            Out::Long(hasher.finish() as i64)
        }
        None => Out::Null,
    })
}

/// `log_template_regex(template)`: an anchored regular expression matching the lines of a
/// template (its `<*>` parts as non-space runs, its spaces as any white space).
pub fn log_template_regex(args: &[Val]) -> Result<Out> {
    let Some(template) = arg(args, 0).str() else {
        return Ok(Out::Null);
    };
    let mut regex = String::from("^");
    for (i, word) in template.split_whitespace().enumerate() {
        if i > 0 {
            regex.push_str(r"\s+");
        }
        let parts: Vec<&str> = word.split(WILDCARD).collect();
        for (j, part) in parts.iter().enumerate() {
            if j > 0 {
                regex.push_str(r"(\S+?)");
            }
            regex.push_str(&regex::escape(part));
        }
    }
    regex.push('$');
    Ok(Out::Str(regex))
}

#[cfg(test)]
mod tests {
    use super::template;
    use crate::testing::{run, s};

    #[test]
    fn variables_are_masked_and_words_kept() {
        assert_eq!(template("GET /api/items/42 took 12.5ms"), "GET <*> took <*>");
        assert_eq!(
            template("user=alice id=42, from 10.0.0.1:8080"),
            "user=alice id=<*>, from <*>"
        );
        assert_eq!(
            template("request 3f2504e0-4f89-11d3-9a0c-0305e82c3301 failed (code -3)"),
            "request <*> failed (code <*>)"
        );
        assert_eq!(template("  Connection   reset by peer  "), "Connection reset by peer");
        assert_eq!(template("trace deadbeef01 retry 0x1F"), "trace <*> retry <*>");
        assert_eq!(template("from fe80::1 port 22"), "from <*> port <*>");
        assert_eq!(template(""), "");
    }

    #[test]
    fn hashes_group_lines_and_regexes_match_them() {
        let a = run("log_template_hash", &[s("took 12 ms for user42")]);
        let b = run("log_template_hash", &[s("took 7 ms for user9")]);
        let c = run("log_template_hash", &[s("took long for user9")]);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(run("extract_log_template", &[s("took 12 ms")]), "took <*> ms");
        let regex = run("log_template_regex", &[s("took <*> ms (id=<*>)")]);
        assert_eq!(regex, r"^took\s+(\S+?)\s+ms\s+\(id=(\S+?)\)$");
        let Ok(compiled) = regex::Regex::new(&regex) else {
            panic!("{regex}")
        };
        assert!(compiled.is_match("took 12 ms (id=7)"));
        assert!(!compiled.is_match("took 12 s (id=7)"));
    }
}
