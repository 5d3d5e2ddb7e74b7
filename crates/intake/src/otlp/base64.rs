//! Base64 for `bytesValue` attributes (RFC 4648): OTLP/JSON carries bytes as base64 and stored
//! rows show them as base64 text. Twenty lines do not justify a dependency.

const STANDARD_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes with the standard alphabet and `=` padding.
pub(crate) fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = chunk[0];
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let triple = (u32::from(b0) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        let sextet = |shift: u32| char::from(STANDARD_ALPHABET[((triple >> shift) & 0x3f) as usize]);
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// Decodes the standard or the URL-safe alphabet, with or without `=` padding. Returns `None`
/// on any other character or an impossible length.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.trim_end_matches('=').as_bytes();
    if digits.len() % 4 == 1 || text.len() - digits.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let mut accumulator: u32 = 0;
    let mut bits = 0;
    for &digit in digits {
        accumulator = (accumulator << 6) | u32::from(sextet_of(digit)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((accumulator >> bits) as u8);
        }
    }
    Some(out)
}

fn sextet_of(digit: u8) -> Option<u8> {
    match digit {
        b'A'..=b'Z' => Some(digit - b'A'),
        b'a'..=b'z' => Some(digit - b'a' + 26),
        b'0'..=b'9' => Some(digit - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
    }

    #[test]
    fn round_trips_every_byte_value() {
        let bytes: Vec<u8> = (0..=255).collect();
        for length in 0..bytes.len() {
            assert_eq!(decode(&encode(&bytes[..length])).as_deref(), Some(&bytes[..length]));
        }
    }

    #[test]
    fn decodes_url_safe_and_unpadded_and_refuses_garbage() {
        assert_eq!(decode("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(decode("Zg"), Some(b"f".to_vec()));
        assert_eq!(decode("Z"), None);
        assert_eq!(decode("Zm9v!"), None);
        assert_eq!(decode("Zg==="), None);
    }
}
