//! Request body decompression with a size bound.

use std::io::Read;

use bytes::Bytes;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("unsupported Content-Encoding '{0}'; use gzip, deflate, zstd or none")]
    UnsupportedEncoding(String),
    #[error("the compressed body is corrupt: {0}")]
    Corrupt(std::io::Error),
}

impl From<BodyError> for trawl_common::TrawlError {
    fn from(error: BodyError) -> Self {
        let code = match error {
            BodyError::TooLarge(_) => trawl_common::ErrorCode::PayloadTooLarge,
            BodyError::UnsupportedEncoding(_) => trawl_common::ErrorCode::UnsupportedMediaType,
            BodyError::Corrupt(_) => trawl_common::ErrorCode::BadRequest,
        };
        trawl_common::TrawlError::new(code, error.to_string())
    }
}

/// Decodes `body` per `Content-Encoding` (none, `identity`, `gzip`, `deflate` or `zstd`),
/// refusing output larger than `limit` bytes.
pub fn decode_body(encoding: Option<&str>, body: Bytes, limit: usize) -> Result<Bytes, BodyError> {
    match encoding.map(|e| e.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("identity") => {
            if body.len() > limit {
                return Err(BodyError::TooLarge(limit));
            }
            Ok(body)
        }
        Some("gzip") | Some("x-gzip") => bounded(flate2::read::MultiGzDecoder::new(&body[..]), body.len(), limit),
        // HTTP's `deflate` is zlib-wrapped; a body may be several zlib streams one after another
        // (the Agent's v3 payloads are compressed column by column), read as one.
        Some("deflate") => bounded(ZlibStreams::new(&body[..]), body.len(), limit),
        Some("zstd") => {
            let decoder = zstd::stream::read::Decoder::new(&body[..]).map_err(BodyError::Corrupt)?;
            bounded(decoder, body.len(), limit)
        }
        Some(other) => Err(BodyError::UnsupportedEncoding(other.to_string())),
    }
}

/// Consecutive zlib streams read as one: when a stream ends and bytes remain, the next starts.
struct ZlibStreams<'a> {
    current: flate2::bufread::ZlibDecoder<&'a [u8]>,
}

impl<'a> ZlibStreams<'a> {
    fn new(body: &'a [u8]) -> ZlibStreams<'a> {
        ZlibStreams {
            current: flate2::bufread::ZlibDecoder::new(body),
        }
    }
}

impl Read for ZlibStreams<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let read = self.current.read(buf)?;
            // The bufread decoder consumes only its own stream's bytes: what is left is the next.
            let rest: &[u8] = self.current.get_ref();
            if read > 0 || buf.is_empty() || rest.is_empty() {
                return Ok(read);
            }
            self.current = flate2::bufread::ZlibDecoder::new(rest);
        }
    }
}

/// Reads all of `decoder`, refusing more than `limit` bytes.
fn bounded(decoder: impl Read, compressed: usize, limit: usize) -> Result<Bytes, BodyError> {
    let mut out = Vec::with_capacity(compressed.saturating_mul(4).min(limit));
    decoder
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(BodyError::Corrupt)?;
    if out.len() > limit {
        return Err(BodyError::TooLarge(limit));
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_round_trip_and_limits() -> Result<(), Box<dyn std::error::Error>> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&[7u8; 1000])?;
        let gz = encoder.finish()?;
        assert_eq!(decode_body(Some("gzip"), Bytes::from(gz.clone()), 1000)?.len(), 1000);
        assert!(matches!(
            decode_body(Some("gzip"), Bytes::from(gz), 999),
            Err(BodyError::TooLarge(_))
        ));
        assert!(matches!(
            decode_body(Some("gzip"), Bytes::from_static(b"not gzip"), 10),
            Err(BodyError::Corrupt(_))
        ));
        assert!(matches!(
            decode_body(Some("br"), Bytes::from_static(b"x"), 10),
            Err(BodyError::UnsupportedEncoding(_))
        ));
        assert_eq!(decode_body(None, Bytes::from_static(b"abc"), 3)?, &b"abc"[..]);
        Ok(())
    }

    #[test]
    fn deflate_and_zstd() -> Result<(), Box<dyn std::error::Error>> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&[1u8; 500])?;
        let deflated = encoder.finish()?;
        assert_eq!(decode_body(Some("deflate"), Bytes::from(deflated), 500)?.len(), 500);
        let zstd = zstd::encode_all(&[2u8; 500][..], 1)?;
        assert_eq!(decode_body(Some("zstd"), Bytes::from(zstd.clone()), 500)?.len(), 500);
        assert!(matches!(
            decode_body(Some("zstd"), Bytes::from(zstd), 499),
            Err(BodyError::TooLarge(_))
        ));
        Ok(())
    }

    /// Bodies compressed piece by piece, as the Agent's v3 payloads are: every stream is read.
    #[test]
    fn concatenated_streams_read_as_one() -> Result<(), Box<dyn std::error::Error>> {
        let pieces: [&[u8]; 3] = [b"first ", b"", b"second"];
        let (mut zlib, mut gzip, mut zstd) = (Vec::new(), Vec::new(), Vec::new());
        for piece in pieces {
            let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(piece)?;
            zlib.extend(encoder.finish()?);
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(piece)?;
            gzip.extend(encoder.finish()?);
            zstd.extend(zstd::encode_all(piece, 1)?);
        }
        for (encoding, body) in [("deflate", &zlib), ("gzip", &gzip), ("zstd", &zstd)] {
            let decoded = decode_body(Some(encoding), Bytes::from(body.clone()), 100)?;
            assert_eq!(&decoded[..], b"first second", "{encoding}");
            assert!(matches!(
                decode_body(Some(encoding), Bytes::from(body.clone()), 11),
                Err(BodyError::TooLarge(_))
            ));
        }
        // Bytes after the last stream that are not another stream are corrupt, not ignored.
        zlib.extend_from_slice(b"junk");
        assert!(matches!(
            decode_body(Some("deflate"), Bytes::from(zlib), 100),
            Err(BodyError::Corrupt(_))
        ));
        Ok(())
    }
}
