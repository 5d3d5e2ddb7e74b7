//! IPv4 functions. Addresses are texts like `192.168.1.1`, optionally with a prefix length
//! (`192.168.1.0/24`); an invalid address gives null.

use datafusion::error::Result;
use serde_json::Value;

use crate::json::parse;
use crate::rowfn::{Out, Val, arg, str_arg};

/// A dotted IPv4 address.
fn parse_address(text: &str) -> Option<u32> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut value = 0u32;
    for part in parts {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let octet: u32 = part.parse().ok()?;
        if octet > 255 {
            return None;
        }
        value = value << 8 | octet;
    }
    Some(value)
}

/// An address with its prefix length (32 when absent).
fn parse_cidr(text: &str) -> Option<(u32, u32)> {
    let text = text.trim();
    match text.split_once('/') {
        Some((address, prefix)) => {
            let prefix: u32 = prefix.trim().parse().ok()?;
            (prefix <= 32).then_some((parse_address(address.trim())?, prefix))
        }
        None => Some((parse_address(text)?, 32)),
    }
}

fn mask(prefix: u32) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix.min(32))
    }
}

fn dotted(address: u32) -> String {
    let b = address.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// An optional prefix argument: `Some(None)` when absent, `None` when invalid.
fn prefix_arg(v: Val) -> Option<Option<u32>> {
    match v {
        Val::Null => Some(None),
        v => {
            let p = v.long()?;
            (0..=32).contains(&p).then_some(Some(p as u32))
        }
    }
}

/// `ipv4_netmask_suffix(ip)`: the prefix length of `ip` (32 without one), null when `ip`
/// is not an IPv4 address.
pub fn ipv4_netmask_suffix(args: &[Val]) -> Result<Out> {
    Ok(parse_cidr(str_arg(args, 0)).map(|(_, prefix)| i64::from(prefix)).into())
}

/// `ipv4_compare(ip1, ip2[, prefix])`: -1, 0 or 1.
pub fn ipv4_compare(args: &[Val]) -> Result<Out> {
    let (Some((a, pa)), Some((b, pb)), Some(p)) = (
        parse_cidr(str_arg(args, 0)),
        parse_cidr(str_arg(args, 1)),
        prefix_arg(arg(args, 2)),
    ) else {
        return Ok(Out::Null);
    };
    let m = mask(pa.min(pb).min(p.unwrap_or(32)));
    Ok(Out::Long((a & m).cmp(&(b & m)) as i64))
}

pub fn ipv4_is_match(args: &[Val]) -> Result<Out> {
    Ok(match ipv4_compare(args)? {
        Out::Long(c) => Out::Bool(c == 0),
        other => other,
    })
}

/// `ipv4_is_in_range(ip, range)`.
pub fn ipv4_is_in_range(args: &[Val]) -> Result<Out> {
    let (Some((ip, _)), Some((range, p))) = (parse_cidr(str_arg(args, 0)), parse_cidr(str_arg(args, 1))) else {
        return Ok(Out::Null);
    };
    Ok(Out::Bool(ip & mask(p) == range & mask(p)))
}

/// The texts of variadic arguments that are dynamic strings or arrays of strings.
fn texts(args: &[Val]) -> Vec<String> {
    let mut all = Vec::new();
    for v in args {
        match parse(*v) {
            Some(Value::Array(items)) => {
                all.extend(items.into_iter().filter_map(|i| i.as_str().map(str::to_string)));
            }
            Some(Value::String(s)) => all.push(s),
            _ => {}
        }
    }
    all
}

/// `ipv4_is_in_any_range(ip, ranges...)`: ranges as strings or a dynamic array.
pub fn ipv4_is_in_any_range(args: &[Val]) -> Result<Out> {
    let Some((ip, _)) = parse_cidr(str_arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let mut any = false;
    for range in texts(&args[1..]) {
        match parse_cidr(&range) {
            Some((r, p)) => any |= ip & mask(p) == r & mask(p),
            None => return Ok(Out::Null),
        }
    }
    Ok(Out::Bool(any))
}

pub fn ipv4_is_private(args: &[Val]) -> Result<Out> {
    let Some((ip, _)) = parse_cidr(str_arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let within = |net: u32, p: u32| ip & mask(p) == net & mask(p);
    Ok(Out::Bool(
        within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16),
    ))
}

/// `parse_ipv4(ip)`: the address as a number, masked by its prefix.
pub fn parse_ipv4(args: &[Val]) -> Result<Out> {
    Ok(parse_cidr(str_arg(args, 0)).map(|(a, p)| (a & mask(p)) as i64).into())
}

/// `parse_ipv4_mask(ip, prefix)`.
pub fn parse_ipv4_mask(args: &[Val]) -> Result<Out> {
    let (Some((a, p)), Some(Some(extra))) = (parse_cidr(str_arg(args, 0)), prefix_arg(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    Ok(Out::Long((a & mask(p.min(extra))) as i64))
}

/// The address (text or number) and effective prefix of `format_ipv4*` arguments.
fn format_parts(args: &[Val]) -> Option<(u32, u32)> {
    let (address, prefix) = match arg(args, 0) {
        Val::Str(s) => parse_cidr(&crate::dynamic::dynamic_to_string(Some(s)))?,
        v => (u32::try_from(v.long()?).ok()?, 32),
    };
    let extra = match prefix_arg(arg(args, 1))? {
        Some(p) => p,
        None if args.len() > 1 => return None,
        None => 32,
    };
    let p = prefix.min(extra);
    Some((address & mask(p), p))
}

pub fn format_ipv4(args: &[Val]) -> Result<Out> {
    Ok(Out::Str(format_parts(args).map(|(a, _)| dotted(a)).unwrap_or_default()))
}

pub fn format_ipv4_mask(args: &[Val]) -> Result<Out> {
    Ok(Out::Str(
        format_parts(args)
            .map(|(a, p)| format!("{}/{p}", dotted(a)))
            .unwrap_or_default(),
    ))
}

/// The IPv4 addresses of a text: runs of digits and dots not glued to letters or digits.
fn addresses_in(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let before_ok = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'.');
        let after_ok = i == bytes.len() || !bytes[i].is_ascii_alphanumeric();
        let token = &text[start..i];
        if before_ok && after_ok && parse_address(token).is_some() {
            found.push(token);
        }
    }
    found
}

fn has_any(args: &[Val], prefix: bool) -> Result<Out> {
    let found = addresses_in(str_arg(args, 0));
    let wanted = texts(&args[1..]);
    let hit = wanted.iter().any(|w| {
        if prefix {
            let dots = w.matches('.').count();
            let valid = if w.ends_with('.') {
                (1..=3).contains(&dots) && w[..w.len() - 1].split('.').all(|o| o.parse::<u8>().is_ok())
            } else {
                parse_address(w).is_some()
            };
            valid && found.iter().any(|f| f.starts_with(w.as_str()) || f == w)
        } else {
            parse_address(w).is_some_and(|a| found.iter().any(|f| parse_address(f) == Some(a)))
        }
    });
    Ok(Out::Bool(hit))
}

pub fn has_any_ipv4(args: &[Val]) -> Result<Out> {
    has_any(args, false)
}

pub fn has_any_ipv4_prefix(args: &[Val]) -> Result<Out> {
    has_any(args, true)
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, run, s};

    #[test]
    fn netmask_suffix() {
        assert_eq!(run("ipv4_netmask_suffix", &[s("10.1.2.3")]), "32");
        assert_eq!(run("ipv4_netmask_suffix", &[s("192.168.1.1/24")]), "24");
        assert_eq!(run("ipv4_netmask_suffix", &[s("127.0.0.1/16")]), "16");
        assert_eq!(run("ipv4_netmask_suffix", &[s("127.0.0.1/33")]), "null");
        assert_eq!(run("ipv4_netmask_suffix", &[s("not an address")]), "null");
    }

    #[test]
    fn comparing_and_matching() {
        assert_eq!(run("ipv4_compare", &[s("127.0.0.1"), s("127.0.0.1")]), "0");
        assert_eq!(run("ipv4_compare", &[s("192.168.1.1"), s("192.168.1.255")]), "-1");
        assert_eq!(run("ipv4_compare", &[s("192.168.1.255"), s("192.168.1.1")]), "1");
        assert_eq!(run("ipv4_compare", &[s("192.168.1.1/24"), s("192.168.1.255/24")]), "0");
        assert_eq!(run("ipv4_compare", &[s("192.168.1.1"), s("192.168.1.255"), l(24)]), "0");
        assert_eq!(run("ipv4_is_match", &[s("192.168.1.1/24"), s("192.168.1.255")]), "true");
        assert_eq!(
            run("ipv4_is_match", &[s("192.168.1.1/30"), s("192.168.1.255/24")]),
            "true"
        );
        assert_eq!(
            run("ipv4_is_match", &[s("192.168.1.1"), s("192.168.1.0"), l(31)]),
            "true"
        );
        assert_eq!(
            run("ipv4_is_match", &[s("192.168.1.1"), s("192.168.1.3"), l(31)]),
            "false"
        );
        assert_eq!(run("ipv4_is_match", &[s("bad"), s("192.168.1.3")]), "null");
    }

    #[test]
    fn ranges() {
        assert_eq!(
            run("ipv4_is_in_range", &[s("192.168.1.6"), s("192.168.1.1/24")]),
            "true"
        );
        assert_eq!(
            run("ipv4_is_in_range", &[s("192.168.2.6"), s("192.168.1.1/24")]),
            "false"
        );
        assert_eq!(run("ipv4_is_in_range", &[s("10.1.2.3"), s("10.1.2.3")]), "true");
        let ranges = d("[\"10.0.0.0/8\",\"127.0.0.1\",\"192.168.1.0/24\"]");
        assert_eq!(run("ipv4_is_in_any_range", &[s("192.168.1.7"), ranges.clone()]), "true");
        assert_eq!(run("ipv4_is_in_any_range", &[s("8.8.8.8"), ranges]), "false");
        let r = run(
            "ipv4_is_in_any_range",
            &[s("127.0.0.1"), d("\"10.0.0.0/8\""), d("\"127.0.0.1\"")],
        );
        assert_eq!(r, "true");
        assert_eq!(run("ipv4_is_private", &[s("172.16.1.1")]), "true");
        assert_eq!(run("ipv4_is_private", &[s("172.32.1.1")]), "false");
        assert_eq!(run("ipv4_is_private", &[s("10.1.2.3/24")]), "true");
    }

    #[test]
    fn parsing_and_formatting() {
        assert_eq!(run("parse_ipv4", &[s("127.0.0.1")]), "2130706433");
        assert_eq!(run("parse_ipv4", &[s("192.1.168.1/24")]), "3221334016");
        assert_eq!(run("parse_ipv4", &[s("1.2.3")]), "null");
        assert_eq!(run("parse_ipv4_mask", &[s("127.0.0.1"), l(24)]), "2130706432");
        assert_eq!(run("format_ipv4", &[s("192.168.1.1"), l(24)]), "192.168.1.0");
        assert_eq!(run("format_ipv4", &[s("192.168.1.1/24"), l(32)]), "192.168.1.0");
        assert_eq!(run("format_ipv4", &[s("192.168.1.1/24"), l(-1)]), "");
        assert_eq!(run("format_ipv4", &[l(3232235777)]), "192.168.1.1");
        assert_eq!(run("format_ipv4_mask", &[s("192.168.1.1"), l(24)]), "192.168.1.0/24");
        assert_eq!(run("format_ipv4_mask", &[s("192.168.1.1/24"), l(32)]), "192.168.1.0/24");
        assert_eq!(run("format_ipv4_mask", &[s("192.168.1.1")]), "192.168.1.1/32");
    }

    #[test]
    fn searching_text() {
        let line = s("05:04:54 127.0.0.1 GET /favicon.ico 404");
        assert_eq!(run("has_ipv4", &[line.clone(), d("\"127.0.0.1\"")]), "true");
        assert_eq!(run("has_ipv4", &[s("x127.0.0.1"), d("\"127.0.0.1\"")]), "false");
        assert_eq!(
            run("has_any_ipv4", &[line.clone(), d("\"1.1.1.1\""), d("\"127.0.0.1\"")]),
            "true"
        );
        let r = run(
            "has_any_ipv4_prefix",
            &[line.clone(), d("\"127.0.\""), d("\"192.168.\"")],
        );
        assert_eq!(r, "true");
        let r = run("has_any_ipv4_prefix", &[line.clone(), d("[\"127.0.\",\"192.168.\"]")]);
        assert_eq!(r, "true");
        assert_eq!(run("has_any_ipv4_prefix", &[line.clone(), d("\"127.0\"")]), "false");
        let glued = s("05:04:54127.0.0.1 GET /favicon.ico 404");
        assert_eq!(
            run("has_any_ipv4_prefix", &[glued, d("\"127.0.\""), d("\"192.\"")]),
            "false"
        );
        assert_eq!(run("has_ipv4_prefix", &[line, d("\"127.\"")]), "true");
    }
}
