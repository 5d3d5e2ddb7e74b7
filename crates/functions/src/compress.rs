//! Compression and text encodings: `gzip_*`/`zlib_*` base64 functions, punycode (RFC 3492),
//! `parse_csv` (one RFC 4180 record) and `parse_path`.

use std::io::{Read, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use datafusion::error::Result;
use flate2::Compression;
use flate2::read::{GzDecoder, ZlibDecoder};
use flate2::write::DeflateEncoder;
use serde_json::{Map, Value};

use crate::json::out;
use crate::rowfn::{Out, Val, arg, str_arg};

/// Raw deflate of `data`; stored blocks when compressing does not make it smaller (as Kusto's
/// output for short texts shows).
fn deflate(data: &[u8]) -> Option<Vec<u8>> {
    let encode = |level: Compression| -> Option<Vec<u8>> {
        let mut encoder = DeflateEncoder::new(Vec::new(), level);
        encoder.write_all(data).ok()?;
        encoder.finish().ok()
    };
    let compressed = encode(Compression::fast())?;
    if compressed.len() >= data.len() {
        encode(Compression::none())
    } else {
        Some(compressed)
    }
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += byte as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    let mut bytes = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    bytes.extend(deflate(data)?);
    let mut crc = flate2::Crc::new();
    crc.update(data);
    bytes.extend(crc.sum().to_le_bytes());
    bytes.extend((data.len() as u32).to_le_bytes());
    Some(bytes)
}

fn zlib(data: &[u8]) -> Option<Vec<u8>> {
    let mut bytes = vec![0x78, 0x01];
    bytes.extend(deflate(data)?);
    bytes.extend(adler32(data).to_be_bytes());
    Some(bytes)
}

fn compress_with(args: &[Val], f: fn(&[u8]) -> Option<Vec<u8>>) -> Result<Out> {
    let text = str_arg(args, 0);
    if text.is_empty() {
        return Ok(Out::Str(String::new()));
    }
    Ok(f(text.as_bytes()).map(|b| STANDARD.encode(b)).into())
}

fn decompress_with(args: &[Val], gzip: bool) -> Result<Out> {
    let Ok(bytes) = STANDARD.decode(str_arg(args, 0).trim()) else {
        return Ok(Out::Str(String::new()));
    };
    let mut text = String::new();
    let read = if gzip {
        GzDecoder::new(bytes.as_slice()).read_to_string(&mut text)
    } else {
        ZlibDecoder::new(bytes.as_slice()).read_to_string(&mut text)
    };
    match read {
        Ok(_) => Ok(Out::Str(text)),
        Err(_) => Ok(Out::Str(String::new())),
    }
}

pub fn gzip_compress_to_base64_string(args: &[Val]) -> Result<Out> {
    compress_with(args, gzip)
}

pub fn zlib_compress_to_base64_string(args: &[Val]) -> Result<Out> {
    compress_with(args, zlib)
}

pub fn gzip_decompress_from_base64_string(args: &[Val]) -> Result<Out> {
    decompress_with(args, true)
}

pub fn zlib_decompress_from_base64_string(args: &[Val]) -> Result<Out> {
    decompress_with(args, false)
}

// Punycode (RFC 3492) parameters.
const BASE: u32 = 36;
const T_MIN: u32 = 1;
const T_MAX: u32 = 26;
const SKEW: u32 = 38;
const DAMP: u32 = 700;
const INITIAL_BIAS: u32 = 72;
const INITIAL_N: u32 = 128;

fn adapt(mut delta: u32, points: u32, first: bool) -> u32 {
    delta /= if first { DAMP } else { 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > ((BASE - T_MIN) * T_MAX) / 2 {
        delta /= BASE - T_MIN;
        k += BASE;
    }
    k + (BASE - T_MIN + 1) * delta / (delta + SKEW)
}

fn digit_char(d: u32) -> char {
    if d < 26 {
        (b'a' + d as u8) as char
    } else {
        (b'0' + (d - 26) as u8) as char
    }
}

fn char_digit(c: char) -> Option<u32> {
    match c {
        'a'..='z' => Some(c as u32 - 'a' as u32),
        'A'..='Z' => Some(c as u32 - 'A' as u32),
        '0'..='9' => Some(c as u32 - '0' as u32 + 26),
        _ => None,
    }
}

fn threshold(k: u32, bias: u32) -> u32 {
    if k <= bias {
        T_MIN
    } else if k >= bias + T_MAX {
        T_MAX
    } else {
        k - bias
    }
}

/// Encodes a label as punycode (without the `xn--` prefix).
pub fn punycode_encode(input: &str) -> Option<String> {
    let points: Vec<u32> = input.chars().map(|c| c as u32).collect();
    let mut output: String = input.chars().filter(|c| c.is_ascii()).collect();
    let basic = output.len() as u32;
    let mut handled = basic;
    if basic > 0 {
        output.push('-');
    }
    let (mut n, mut delta, mut bias) = (INITIAL_N, 0u32, INITIAL_BIAS);
    while (handled as usize) < points.len() {
        let m = points.iter().copied().filter(|&p| p >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &p in &points {
            if p < n {
                delta = delta.checked_add(1)?;
            }
            if p == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = threshold(k, bias);
                    if q < t {
                        break;
                    }
                    output.push(digit_char(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                output.push(digit_char(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    Some(output)
}

/// Decodes a punycode label (without the `xn--` prefix).
pub fn punycode_decode(input: &str) -> Option<String> {
    let (basic, rest) = match input.rfind('-') {
        Some(i) => (&input[..i], &input[i + 1..]),
        None => ("", input),
    };
    if !basic.is_ascii() {
        return None;
    }
    let mut output: Vec<char> = basic.chars().collect();
    let (mut n, mut i, mut bias) = (INITIAL_N, 0u32, INITIAL_BIAS);
    let mut chars = rest.chars().peekable();
    while chars.peek().is_some() {
        let old_i = i;
        let mut w = 1u32;
        let mut k = BASE;
        loop {
            let digit = char_digit(chars.next()?)?;
            i = i.checked_add(digit.checked_mul(w)?)?;
            let t = threshold(k, bias);
            if digit < t {
                break;
            }
            w = w.checked_mul(BASE - t)?;
            k += BASE;
        }
        let len = output.len() as u32 + 1;
        bias = adapt(i - old_i, len, old_i == 0);
        n = n.checked_add(i / len)?;
        i %= len;
        output.insert(i as usize, char::from_u32(n)?);
        i += 1;
    }
    Some(output.into_iter().collect())
}

pub fn punycode_from_string(args: &[Val]) -> Result<Out> {
    Ok(punycode_encode(str_arg(args, 0)).into())
}

pub fn punycode_to_string(args: &[Val]) -> Result<Out> {
    Ok(punycode_decode(str_arg(args, 0)).into())
}

/// The labels of a domain name: separated by `.` or the ideographic and full-width dots IDNA
/// treats as dots.
fn labels(domain: &str) -> impl Iterator<Item = &str> {
    domain.split(['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'])
}

/// `punycode_domain_to_string(domain)`: each label with characters beyond ASCII encoded as
/// `xn--` and its Punycode; "" when a label cannot be encoded.
pub fn punycode_domain_to_string(args: &[Val]) -> Result<Out> {
    let mut encoded = Vec::new();
    for label in labels(str_arg(args, 0)) {
        if label.is_ascii() {
            encoded.push(label.to_string());
        } else {
            match punycode_encode(label) {
                Some(code) => encoded.push(format!("xn--{code}")),
                None => return Ok(Out::Str(String::new())),
            }
        }
    }
    Ok(Out::Str(encoded.join(".")))
}

/// `punycode_domain_from_string(encoded)`: each `xn--` label decoded; "" when one cannot be.
pub fn punycode_domain_from_string(args: &[Val]) -> Result<Out> {
    let mut decoded = Vec::new();
    for label in labels(str_arg(args, 0)) {
        match label.get(..4) {
            Some(prefix) if prefix.eq_ignore_ascii_case("xn--") => match punycode_decode(&label[4..]) {
                Some(text) => decoded.push(text),
                None => return Ok(Out::Str(String::new())),
            },
            _ => decoded.push(label.to_string()),
        }
    }
    Ok(Out::Str(decoded.join(".")))
}

/// The fields of the first RFC 4180 record of `text`.
fn csv_record(text: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => field.push(c),
            }
            continue;
        }
        match c {
            '"' if field.is_empty() => quoted = true,
            ',' => fields.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => break,
            '\n' | '\r' => break,
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

pub fn parse_csv(args: &[Val]) -> Result<Out> {
    Ok(out(Value::Array(
        csv_record(str_arg(args, 0)).into_iter().map(Value::String).collect(),
    )))
}

/// `parse_path(path)`: Scheme, RootPath, DirectoryPath, DirectoryName, Filename, Extension and
/// AlternateDataStreamName.
pub fn parse_path(args: &[Val]) -> Result<Out> {
    let Val::Str(path) = arg(args, 0) else {
        return Ok(Out::Null);
    };
    let (scheme, rest) = match path.find("://") {
        Some(i)
            if i > 1
                && path[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (&path[..i], &path[i + 3..])
        }
        _ => ("", path),
    };
    let bytes = rest.as_bytes();
    let root = if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        &rest[..2]
    } else {
        ""
    };
    let (directory, file) = match rest.rfind(['/', '\\']) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None if !root.is_empty() => (root, &rest[2..]),
        None => ("", rest),
    };
    let (file, stream) = match file.find(':') {
        Some(i) => (&file[..i], &file[i + 1..]),
        None => (file, ""),
    };
    let extension = match file.rfind('.') {
        Some(i) => &file[i + 1..],
        None => "",
    };
    let directory_name = directory
        .rsplit(['/', '\\'])
        .next()
        .filter(|name| *name != root || root.is_empty())
        .unwrap_or("");
    let mut bag = Map::new();
    for (key, value) in [
        ("Scheme", scheme),
        ("RootPath", root),
        ("DirectoryPath", directory),
        ("DirectoryName", directory_name),
        ("Filename", file),
        ("Extension", extension),
        ("AlternateDataStreamName", stream),
    ] {
        bag.insert(key.to_string(), Value::String(value.to_string()));
    }
    Ok(out(Value::Object(bag)))
}

#[cfg(test)]
mod tests {
    use crate::testing::{run, s};

    #[test]
    fn domains_encode_and_decode_label_by_label() {
        for (plain, encoded) in [
            (
                "Lê Lợi。Thuận Thiên。com",
                "xn--L Li-gpa4517b.xn--Thun Thin-s4a7194f.com",
            ),
            ("Riðill｡Skáldskaparmál｡org", "xn--Riill-jta.xn--Skldskaparml-dbbj.org"),
            ("Kaledvoulc'h.Artorījos.edu", "Kaledvoulc'h.xn--Artorjos-ejb.edu"),
        ] {
            assert_eq!(run("punycode_domain_to_string", &[s(plain)]), encoded);
        }
        for (encoded, plain) in [
            ("xn--Ge-mia.Bulg.edu", "Gáe.Bulg.edu"),
            ("xn--Lin-8na.Celtchair.org", "Lúin.Celtchair.org"),
            ("xn--Ry-lja8c.xn--Jng-uta63a.xn--Bng-9ka.com", "Rúyì.Jīngū.Bàng.com"),
        ] {
            assert_eq!(run("punycode_domain_from_string", &[s(encoded)]), plain);
        }
        assert_eq!(run("punycode_domain_from_string", &[s("xn--!!!.com")]), "");
    }

    #[test]
    fn gzip_and_zlib() {
        assert_eq!(
            run("gzip_compress_to_base64_string", &[s("1234567890qwertyuiop")]),
            "H4sIAAAAAAAA/wEUAOv/MTIzNDU2Nzg5MHF3ZXJ0eXVpb3A6m7f2FAAAAA=="
        );
        assert_eq!(
            run(
                "gzip_decompress_from_base64_string",
                &[s("H4sIAAAAAAAA/wEUAOv/MTIzNDU2Nzg5MHF3ZXJ0eXVpb3A6m7f2FAAAAA==")]
            ),
            "1234567890qwertyuiop"
        );
        assert_eq!(run("gzip_decompress_from_base64_string", &[s("x0x0x0")]), "");
        assert_eq!(
            run("zlib_compress_to_base64_string", &[s("1234567890qwertyuiop")]),
            "eAEBFADr/zEyMzQ1Njc4OTBxd2VydHl1aW9wOAkGdw=="
        );
        assert_eq!(
            run(
                "zlib_decompress_from_base64_string",
                &[s("eJwLSS0uUSguKcrMS1cwNDIGACxqBQ4=")]
            ),
            "Test string 123"
        );
        assert_eq!(run("zlib_decompress_from_base64_string", &[s("x0x0x0")]), "");
        let long = "abc".repeat(100);
        let packed = run("gzip_compress_to_base64_string", &[s(&long)]);
        assert_eq!(run("gzip_decompress_from_base64_string", &[s(&packed)]), long);
        let packed = run("zlib_compress_to_base64_string", &[s(&long)]);
        assert_eq!(run("zlib_decompress_from_base64_string", &[s(&packed)]), long);
    }

    #[test]
    fn punycode() {
        assert_eq!(
            run("punycode_from_string", &[s("académie-française")]),
            "acadmie-franaise-npb1a"
        );
        assert_eq!(run("punycode_from_string", &[s("艺术")]), "cqv902d");
        assert_eq!(
            run("punycode_to_string", &[s("acadmie-franaise-npb1a")]),
            "académie-française"
        );
        assert_eq!(run("punycode_to_string", &[s("cqv902d")]), "艺术");
        assert_eq!(run("punycode_from_string", &[s("abc")]), "abc-");
        assert_eq!(run("punycode_to_string", &[s("abc-")]), "abc");
        assert_eq!(run("punycode_to_string", &[s("!!")]), "null");
    }

    #[test]
    fn csv() {
        assert_eq!(
            run("parse_csv", &[s("aaa,\"b,b\",\"c\"\"c\"")]),
            r#"["aaa","b,b","c\"c"]"#
        );
        assert_eq!(
            run("parse_csv", &[s("record1,a,b,c\nrecord2,x,y,z")]),
            r#"["record1","a","b","c"]"#
        );
        assert_eq!(run("parse_csv", &[s("")]), r#"[""]"#);
    }

    #[test]
    fn paths() {
        let cases = [
            (
                r"C:\temp\file.txt",
                r#"{"Scheme":"","RootPath":"C:","DirectoryPath":"C:\\temp","DirectoryName":"temp","Filename":"file.txt","Extension":"txt","AlternateDataStreamName":""}"#,
            ),
            (
                r"temp\file.txt",
                r#"{"Scheme":"","RootPath":"","DirectoryPath":"temp","DirectoryName":"temp","Filename":"file.txt","Extension":"txt","AlternateDataStreamName":""}"#,
            ),
            (
                "file://C:/temp/file.txt:some.exe",
                r#"{"Scheme":"file","RootPath":"C:","DirectoryPath":"C:/temp","DirectoryName":"temp","Filename":"file.txt","Extension":"txt","AlternateDataStreamName":"some.exe"}"#,
            ),
            (
                r"\\shared\users\temp\file.txt.gz",
                r#"{"Scheme":"","RootPath":"","DirectoryPath":"\\\\shared\\users\\temp","DirectoryName":"temp","Filename":"file.txt.gz","Extension":"gz","AlternateDataStreamName":""}"#,
            ),
            (
                "/usr/lib/temp/file.txt",
                r#"{"Scheme":"","RootPath":"","DirectoryPath":"/usr/lib/temp","DirectoryName":"temp","Filename":"file.txt","Extension":"txt","AlternateDataStreamName":""}"#,
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(run("parse_path", &[s(path)]), expected, "{path}");
        }
    }
}
