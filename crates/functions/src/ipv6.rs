//! IPv6 functions (`ipv6_compare`, `ipv6_is_match`, `ipv6_is_in_range`,
//! `ipv6_is_in_any_range`, `parse_ipv6`, `parse_ipv6_mask`) and `ipv4_range_to_cidr_list`.
//! IPv4 texts are read as IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`), an IPv4 prefix `/n`
//! as `/96+n`.

use std::net::{Ipv4Addr, Ipv6Addr};

use datafusion::error::Result;
use serde_json::Value;

use crate::json::{self, out};
use crate::rowfn::{Out, Val, arg, str_arg};

/// An address and its prefix length (128 when none is given).
fn parse(text: &str) -> Option<(u128, u32)> {
    let text = text.trim();
    let (address, prefix) = match text.split_once('/') {
        Some((a, p)) => (a.trim(), Some(p.trim().parse::<u32>().ok()?)),
        None => (text, None),
    };
    // `::a.b.c.d` and `::ffff:a.b.c.d` are read as IPv4 (prefix relative to the IPv4 part).
    let v4_text = address
        .strip_prefix("::ffff:")
        .or_else(|| address.strip_prefix("::FFFF:"))
        .or_else(|| address.strip_prefix("::"))
        .filter(|rest| rest.contains('.'))
        .unwrap_or(address);
    if let Ok(v4) = v4_text.parse::<Ipv4Addr>() {
        let prefix = match prefix {
            Some(p) if p <= 32 => 96 + p,
            Some(_) => return None,
            None => 128,
        };
        return Some((u128::from(v4.to_ipv6_mapped()), prefix));
    }
    let v6 = address.parse::<Ipv6Addr>().ok()?;
    let prefix = match prefix {
        Some(p) if p <= 128 => p,
        Some(_) => return None,
        None => 128,
    };
    Some((u128::from(v6), prefix))
}

fn mask(prefix: u32) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix.min(128))
    }
}

/// The explicit prefix argument: `Some(None)` when absent, `None` when out of range.
fn prefix_arg(v: Val) -> Option<Option<u32>> {
    match v {
        Val::Null => Some(None),
        v => match v.long() {
            Some(p) if (0..=128).contains(&p) => Some(Some(p as u32)),
            _ => None,
        },
    }
}

fn compare(args: &[Val]) -> Option<i64> {
    let (a, pa) = parse(str_arg(args, 0))?;
    let (b, pb) = parse(str_arg(args, 1))?;
    let explicit = prefix_arg(arg(args, 2))?;
    let prefix = pa.min(pb).min(explicit.unwrap_or(128));
    let m = mask(prefix);
    Some(match (a & m).cmp(&(b & m)) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
}

pub fn ipv6_compare(args: &[Val]) -> Result<Out> {
    Ok(compare(args).into())
}

pub fn ipv6_is_match(args: &[Val]) -> Result<Out> {
    Ok(compare(args).map(|c| c == 0).into())
}

fn in_range(address: u128, range: &str) -> Option<bool> {
    let (base, prefix) = parse(range)?;
    let m = mask(prefix);
    Some(address & m == base & m)
}

pub fn ipv6_is_in_range(args: &[Val]) -> Result<Out> {
    let (Some((address, _)), range) = (parse(str_arg(args, 0)), str_arg(args, 1)) else {
        return Ok(Out::Null);
    };
    Ok(in_range(address, range).into())
}

/// `ipv6_is_in_any_range(ip, range, …)` or `ipv6_is_in_any_range(ip, dynamic([ranges]))`.
pub fn ipv6_is_in_any_range(args: &[Val]) -> Result<Out> {
    let Some((address, _)) = parse(str_arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let mut ranges: Vec<String> = Vec::new();
    for v in args.iter().skip(1) {
        match json::parse(*v) {
            Some(Value::Array(items)) => ranges.extend(items.iter().map(json::element_text)),
            Some(Value::String(s)) => ranges.push(s),
            _ => {
                if let Val::Str(s) = v {
                    ranges.push(s.to_string());
                }
            }
        }
    }
    for range in &ranges {
        match in_range(address, range) {
            Some(true) => return Ok(Out::Bool(true)),
            Some(false) => {}
            None => return Ok(Out::Null),
        }
    }
    Ok(Out::Bool(false))
}

/// The canonical text: eight groups of four hex digits.
fn canonical(address: u128) -> String {
    let groups: Vec<String> = (0..8)
        .rev()
        .map(|i| format!("{:04x}", (address >> (i * 16)) as u16))
        .collect();
    groups.join(":")
}

pub fn parse_ipv6(args: &[Val]) -> Result<Out> {
    Ok(parse(str_arg(args, 0)).map(|(a, p)| canonical(a & mask(p))).into())
}

pub fn parse_ipv6_mask(args: &[Val]) -> Result<Out> {
    let (Some((address, own)), Some(explicit)) = (parse(str_arg(args, 0)), prefix_arg(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let prefix = own.min(explicit.unwrap_or(128));
    Ok(Out::Str(canonical(address & mask(prefix))))
}

/// `ipv4_range_to_cidr_list(start, end)`: the fewest CIDR blocks covering the range.
pub fn ipv4_range_to_cidr_list(args: &[Val]) -> Result<Out> {
    let (Ok(start), Ok(end)) = (
        str_arg(args, 0).trim().parse::<Ipv4Addr>(),
        str_arg(args, 1).trim().parse::<Ipv4Addr>(),
    ) else {
        return Ok(Out::Null);
    };
    let (mut start, end) = (u32::from(start) as u64, u32::from(end) as u64);
    let mut blocks = Vec::new();
    while start <= end {
        let align = if start == 0 { 32 } else { start.trailing_zeros().min(32) };
        let mut size = align;
        while size > 0 && start + (1u64 << size) - 1 > end {
            size -= 1;
        }
        blocks.push(Value::String(format!("{}/{}", Ipv4Addr::from(start as u32), 32 - size)));
        start += 1u64 << size;
    }
    Ok(out(Value::Array(blocks)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, l, run, s};

    #[test]
    fn compare_cases() {
        let zero = [
            ("192.168.1.1", "192.168.1.1"),
            ("192.168.1.1/24", "192.168.1.255"),
            ("192.168.1.1", "192.168.1.255/24"),
            ("192.168.1.1/30", "192.168.1.255/24"),
            ("fe80::85d:e82c:9446:7994", "fe80::85d:e82c:9446:7994"),
            ("fe80::85d:e82c:9446:7994/120", "fe80::85d:e82c:9446:7998"),
            ("fe80::85d:e82c:9446:7994", "fe80::85d:e82c:9446:7998/120"),
            ("fe80::85d:e82c:9446:7994/120", "fe80::85d:e82c:9446:7998/120"),
            ("192.168.1.1", "::ffff:c0a8:0101"),
            ("192.168.1.1/24", "::ffff:c0a8:01ff"),
            ("::ffff:c0a8:0101", "192.168.1.255/24"),
            ("::192.168.1.1/30", "192.168.1.255/24"),
        ];
        for (a, b) in zero {
            assert_eq!(run("ipv6_compare", &[s(a), s(b)]), "0", "{a} {b}");
        }
        assert_eq!(run("ipv6_compare", &[s("::1"), s("::2")]), "-1");
        assert_eq!(run("ipv6_compare", &[s("::1"), s("::2"), l(120)]), "0");
        assert_eq!(run("ipv6_compare", &[s("bogus"), s("::2")]), "null");
        assert_eq!(run("ipv6_is_match", &[s("::1"), s("::2"), l(127)]), "false");
        assert_eq!(run("ipv6_is_match", &[s("::2"), s("::3"), l(127)]), "true");
    }

    #[test]
    fn ranges() {
        let ip = "a5e:f127:8a9d:146d:e102:b5d3:c755:abcd";
        assert_eq!(
            run(
                "ipv6_is_in_range",
                &[s(ip), s("a5e:f127:8a9d:146d:e102:b5d3:c755:0000/112")]
            ),
            "true"
        );
        assert_eq!(run("ipv6_is_in_range", &[s(ip), s(ip)]), "true");
        assert_eq!(
            run("ipv6_is_in_range", &[s(ip), s("0:0:0:0:0:ffff:c0a8:ac/60")]),
            "false"
        );
        let networks = d(r#"["a5e:f127:8a9d:146d:e102:b5d3:c755:f6cd/112","0:0:0:0:0:ffff:c0a8:ac/60"]"#);
        assert_eq!(run("ipv6_is_in_any_range", &[s(ip), networks.clone()]), "true");
        assert_eq!(
            run(
                "ipv6_is_in_any_range",
                &[s("a5e:f127:8a9d:146d:e102:b5d3:c756:abd1"), networks]
            ),
            "false"
        );
    }

    #[test]
    fn parsing() {
        assert_eq!(
            run("parse_ipv6", &[s("192.168.255.255")]),
            "0000:0000:0000:0000:0000:ffff:c0a8:ffff"
        );
        assert_eq!(
            run("parse_ipv6", &[s("192.168.255.255/24")]),
            "0000:0000:0000:0000:0000:ffff:c0a8:ff00"
        );
        assert_eq!(
            run("parse_ipv6", &[s("255.255.255.255")]),
            "0000:0000:0000:0000:0000:ffff:ffff:ffff"
        );
        assert_eq!(run("parse_ipv6", &[s("nope")]), "null");
        let cases = [
            ("192.168.255.255", 120, "0000:0000:0000:0000:0000:ffff:c0a8:ff00"),
            ("192.168.255.255/24", 124, "0000:0000:0000:0000:0000:ffff:c0a8:ff00"),
            ("255.255.255.255", 128, "0000:0000:0000:0000:0000:ffff:ffff:ffff"),
            (
                "fe80::85d:e82c:9446:7994",
                128,
                "fe80:0000:0000:0000:085d:e82c:9446:7994",
            ),
            (
                "fe80::85d:e82c:9446:7994/120",
                124,
                "fe80:0000:0000:0000:085d:e82c:9446:7900",
            ),
            ("::192.168.255.255", 128, "0000:0000:0000:0000:0000:ffff:c0a8:ffff"),
            ("::192.168.255.255/24", 128, "0000:0000:0000:0000:0000:ffff:c0a8:ff00"),
        ];
        for (ip, prefix, expected) in cases {
            assert_eq!(run("parse_ipv6_mask", &[s(ip), l(prefix)]), expected, "{ip}");
        }
    }

    #[test]
    fn cidr_list() {
        assert_eq!(
            run("ipv4_range_to_cidr_list", &[s("1.1.128.0"), s("1.1.140.255")]),
            r#"["1.1.128.0/21","1.1.136.0/22","1.1.140.0/24"]"#
        );
        assert_eq!(
            run("ipv4_range_to_cidr_list", &[s("0.0.0.0"), s("255.255.255.255")]),
            r#"["0.0.0.0/0"]"#
        );
        assert_eq!(
            run("ipv4_range_to_cidr_list", &[s("10.0.0.5"), s("10.0.0.5")]),
            r#"["10.0.0.5/32"]"#
        );
        assert_eq!(run("ipv4_range_to_cidr_list", &[s("x"), s("10.0.0.5")]), "null");
    }
}
