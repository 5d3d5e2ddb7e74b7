//! Encodings: URLs, base64, hex, GUIDs; hashes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use datafusion::error::Result;
use md5::Md5;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::json::{out, parse_array};
use crate::rowfn::{Out, Val, arg, str_arg};

fn text(s: impl Into<String>) -> Result<Out> {
    Ok(Out::Str(s.into()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Percent-encodes as .NET's `HttpUtility.UrlEncode` (lowercase hex; letters, digits and
/// `-_.!*()` kept; space as `+` unless `space_as_plus` is false).
fn url_encode_with(source: &str, space_as_plus: bool) -> String {
    let mut out = String::with_capacity(source.len());
    for byte in source.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'!' | b'*' | b'(' | b')' => {
                out.push(byte as char)
            }
            b' ' if space_as_plus => out.push('+'),
            other => out.push_str(&format!("%{other:02x}")),
        }
    }
    out
}

pub fn url_encode(args: &[Val]) -> Result<Out> {
    text(url_encode_with(str_arg(args, 0), true))
}

pub fn url_encode_component(args: &[Val]) -> Result<Out> {
    text(url_encode_with(str_arg(args, 0), false))
}

/// Decodes `%XX` escapes and `+` (as space); `None` when the bytes are not UTF-8.
fn percent_decode(source: &str) -> Option<String> {
    let bytes = source.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let pair = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match pair.and_then(|p| u8::from_str_radix(p, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

pub fn url_decode(args: &[Val]) -> Result<Out> {
    text(percent_decode(str_arg(args, 0)).unwrap_or_default())
}

pub fn base64_encode_tostring(args: &[Val]) -> Result<Out> {
    text(STANDARD.encode(str_arg(args, 0)))
}

fn base64_bytes(source: &str) -> Option<Vec<u8>> {
    STANDARD.decode(source.trim()).ok()
}

pub fn base64_decode_tostring(args: &[Val]) -> Result<Out> {
    let decoded = base64_bytes(str_arg(args, 0)).and_then(|b| String::from_utf8(b).ok());
    text(decoded.unwrap_or_default())
}

pub fn base64_decode_toarray(args: &[Val]) -> Result<Out> {
    Ok(match base64_bytes(str_arg(args, 0)) {
        Some(bytes) => out(Value::Array(bytes.into_iter().map(Value::from).collect())),
        None => Out::Null,
    })
}

pub fn base64_encode_fromarray(args: &[Val]) -> Result<Out> {
    let Some(items) = parse_array(arg(args, 0)) else {
        return text("");
    };
    let bytes: Option<Vec<u8>> = items
        .iter()
        .map(|v| v.as_u64().and_then(|n| u8::try_from(n).ok()))
        .collect();
    text(bytes.map(|b| STANDARD.encode(b)).unwrap_or_default())
}

/// The 16 bytes of a GUID text (hyphens and braces optional), in textual order.
fn guid_bytes(source: &str) -> Option<[u8; 16]> {
    let trimmed = source
        .trim()
        .trim_start_matches(['{', '('])
        .trim_end_matches(['}', ')']);
    let digits: String = trimmed.chars().filter(|c| *c != '-').collect();
    if digits.len() != 32 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(bytes)
}

fn guid_text(b: &[u8; 16]) -> String {
    format!(
        "{}-{}-{}-{}-{}",
        hex(&b[0..4]),
        hex(&b[4..6]),
        hex(&b[6..8]),
        hex(&b[8..10]),
        hex(&b[10..16])
    )
}

/// .NET's byte order of a GUID (the first three groups little-endian), and back.
fn dotnet_order(b: [u8; 16]) -> [u8; 16] {
    let mut o = b;
    o[0..4].reverse();
    o[4..6].reverse();
    o[6..8].reverse();
    o
}

/// `toguid(text)`: null unless the text is a GUID.
pub fn toguid(args: &[Val]) -> Result<Out> {
    Ok(guid_bytes(str_arg(args, 0)).map(|b| guid_text(&b)).into())
}

pub fn base64_encode_fromguid(args: &[Val]) -> Result<Out> {
    Ok(guid_bytes(str_arg(args, 0))
        .map(|b| STANDARD.encode(dotnet_order(b)))
        .into())
}

pub fn base64_decode_toguid(args: &[Val]) -> Result<Out> {
    let bytes = base64_bytes(str_arg(args, 0)).and_then(|b| <[u8; 16]>::try_from(b).ok());
    Ok(bytes.map(|b| guid_text(&dotnet_order(b))).into())
}

/// `tohex(value[, minLength])`: lowercase, negative values in two's complement.
pub fn tohex(args: &[Val]) -> Result<Out> {
    let Some(value) = arg(args, 0).long() else {
        return Ok(Out::Null);
    };
    let digits = format!("{:x}", value as u64);
    let width = arg(args, 1).long().unwrap_or(0).clamp(0, 64) as usize;
    text(format!("{digits:0>width$}"))
}

/// `hash_sha256(text)`.
pub fn hash_sha256(args: &[Val]) -> Result<Out> {
    text(hex(&Sha256::digest(str_arg(args, 0).as_bytes())))
}

/// `hash_sha1(text)`.
pub fn hash_sha1(args: &[Val]) -> Result<Out> {
    text(hex(&sha1::Sha1::digest(str_arg(args, 0).as_bytes())))
}

/// `hash_md5(text)`.
pub fn hash_md5(args: &[Val]) -> Result<Out> {
    text(hex(&Md5::digest(str_arg(args, 0).as_bytes())))
}

/// `hash(value[, mod])` / `hash_xxhash64(value[, mod])`: XXH64 (seed 0) of the value's bytes
/// (UTF-8 for text, little-endian numbers, datetime ticks since 0001-01-01); null hashes to null.
pub fn hash_xxhash64(args: &[Val]) -> Result<Out> {
    let Some(bytes) = crate::conversions::hash_bytes(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let hash = twox_hash::XxHash64::oneshot(0, &bytes) as i64;
    Ok(match arg(args, 1) {
        Val::Null => Out::Long(hash),
        v => match v.long() {
            Some(m) if m > 0 => Out::Long(hash.rem_euclid(m)),
            _ => Out::Null,
        },
    })
}

fn query_bag(query: &str) -> Map<String, Value> {
    let mut bag = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key).unwrap_or_else(|| key.to_string());
        let value = percent_decode(value).unwrap_or_else(|| value.to_string());
        bag.insert(key, Value::String(value));
    }
    bag
}

/// `parse_urlquery(query)`: `{"Query Parameters": {...}}`.
pub fn parse_urlquery(args: &[Val]) -> Result<Out> {
    let query = str_arg(args, 0);
    let query = query.strip_prefix('?').unwrap_or(query);
    let mut bag = Map::new();
    bag.insert("Query Parameters".into(), Value::Object(query_bag(query)));
    Ok(out(Value::Object(bag)))
}

/// `parse_url(url)`: its parts as a bag; null when the text is not an absolute URL.
pub fn parse_url(args: &[Val]) -> Result<Out> {
    let url = str_arg(args, 0).trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(Out::Null);
    };
    if scheme.is_empty() || !scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) {
        return Ok(Out::Null);
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (user_info, host_port) = match authority.rsplit_once('@') {
        Some((u, h)) => (u, h),
        None => ("", authority),
    };
    let (username, password) = user_info.split_once(':').unwrap_or((user_info, ""));
    let (host, port) = if host_port.starts_with('[') {
        match host_port.find(']') {
            Some(end) => (&host_port[..=end], host_port[end + 1..].strip_prefix(':').unwrap_or("")),
            None => (host_port, ""),
        }
    } else {
        host_port.split_once(':').unwrap_or((host_port, ""))
    };
    let mut bag = Map::new();
    let s = |v: &str| Value::String(v.to_string());
    bag.insert("Scheme".into(), s(scheme));
    bag.insert("Host".into(), s(host));
    bag.insert("Port".into(), s(port));
    bag.insert("Path".into(), s(path));
    bag.insert("Username".into(), s(username));
    bag.insert("Password".into(), s(password));
    bag.insert("Query Parameters".into(), Value::Object(query_bag(query)));
    bag.insert("Fragment".into(), s(fragment));
    Ok(out(Value::Object(bag)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, dt, l, run, s};

    #[test]
    fn urls() {
        let u = s("https://www.bing.com/hello world");
        assert_eq!(
            run("url_encode", std::slice::from_ref(&u)),
            "https%3a%2f%2fwww.bing.com%2fhello+world"
        );
        assert_eq!(
            run("url_encode_component", &[u]),
            "https%3a%2f%2fwww.bing.com%2fhello%20world"
        );
        let e = s("https%3a%2f%2fwww.bing.com%2f");
        assert_eq!(run("url_decode", &[e]), "https://www.bing.com/");
        assert_eq!(run("url_decode", &[s("a+b%20c%")]), "a b c%");
        let r = run(
            "parse_url",
            &[s(
                "scheme://username:password@host:1234/this/is/a/path?k1=v1&k2=v2#fragment",
            )],
        );
        assert_eq!(
            r,
            "{\"Scheme\":\"scheme\",\"Host\":\"host\",\"Port\":\"1234\",\"Path\":\"/this/is/a/path\",\
             \"Username\":\"username\",\"Password\":\"password\",\"Query Parameters\":{\"k1\":\"v1\",\
             \"k2\":\"v2\"},\"Fragment\":\"fragment\"}"
        );
        assert_eq!(run("parse_url", &[s("not a url")]), "null");
        let r = run("parse_urlquery", &[s("k1=v1&k2=v2&k3=v%203")]);
        assert_eq!(r, "{\"Query Parameters\":{\"k1\":\"v1\",\"k2\":\"v2\",\"k3\":\"v 3\"}}");
    }

    #[test]
    fn base64_and_guids() {
        assert_eq!(run("base64_encode_tostring", &[s("Kusto")]), "S3VzdG8=");
        assert_eq!(run("base64_decode_tostring", &[s("S3VzdG8=")]), "Kusto");
        assert_eq!(run("base64_decode_tostring", &[s("U3RyaW5n0KHR0tGA0L7Rh9C60LA=")]), "");
        assert_eq!(run("base64_decode_toarray", &[s("S3VzdG8=")]), "[75,117,115,116,111]");
        assert_eq!(run("base64_encode_fromarray", &[d("[75,117,115,116,111]")]), "S3VzdG8=");
        let g = s("ae3133f2-6e22-49ae-b06a-16e6a9b212eb");
        assert_eq!(run("base64_encode_fromguid", &[g]), "8jMxriJurkmwahbmqbIS6w==");
        assert_eq!(
            run("base64_decode_toguid", &[s("8jMxriJurkmwahbmqbIS6w==")]),
            "ae3133f2-6e22-49ae-b06a-16e6a9b212eb"
        );
        let want = "01234567-89ab-cdef-0123-456789abcdef";
        assert_eq!(run("toguid", &[s("0123456789abcdef0123456789abcdef")]), want);
        assert_eq!(run("toguid", &[s("0123456789ab-cdef-0123-456789abcdef")]), want);
        assert_eq!(run("toguid", &[s("a string that is not a guid")]), "null");
    }

    #[test]
    fn hex_and_hashes() {
        assert_eq!(run("tohex", &[l(256)]), "100");
        assert_eq!(run("tohex", &[l(-546)]), "fffffffffffffdde");
        assert_eq!(run("tohex", &[l(546), l(8)]), "00000222");
        assert_eq!(run("hash_xxhash64", &[s("World")]), "1846988464401551951");
        assert_eq!(run("hash", &[s("World"), l(100)]), "51");
        // Datetimes hash their ticks since 0001-01-01, as the reference engine does.
        assert_eq!(run("hash", &[dt("2015-01-01T00:00:00Z")]), "1380966698541616202");
        assert_eq!(run("hash", &[l(1)]), run("hash", &[l(1)]));
        assert_ne!(run("hash", &[l(1)]), run("hash", &[l(2)]));
        assert_eq!(
            run("hash_sha256", &[s("World")]),
            "78ae647dc5544d227130a0682a51e30bc7777fbb6d8a8f17007463a3ecd1d524"
        );
        assert_eq!(run("hash_md5", &[s("World")]), "f5a7924e621e84c9280a9a27e1bcb7f6");
        assert_eq!(
            run("hash_sha1", &[s("World")]),
            "70c07ec18ef89c5309bbb0937f3a6342411e1fdd"
        );
    }
}
