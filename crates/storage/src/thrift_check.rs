//! A bounded walk of the Thrift structures a segment file holds (its footer, its page index,
//! and the header before every page), done before the Parquet decoder reads them.
//!
//! Why: the Parquet crate's decoder skips a field it does not know element by element, and it
//! counts a boolean inside a list as taking no bytes (the compact protocol gives each one a
//! byte). A damaged footer or page header that claims a list of two billion booleans, a few
//! thousand times over, keeps a thread busy for hours on a 12 KB file (the `segment_file`
//! fuzz target found one, see `fuzz/README.md`). Here every element is charged at least one
//! byte, a collection may not claim more elements than bytes remain, nesting is bounded, and
//! the walk ends inside the bytes it was given: the work is linear in the input.
//!
//! The walk only vouches that the structure is well formed in that sense; what the fields mean
//! is left to the decoder, which reports its own errors.

use std::ops::Range;

use bytes::Bytes;
use datafusion::parquet::file::metadata::ParquetMetaData;

/// Nesting of structs and collections allowed (Parquet's own structures nest about 6 deep).
const MAX_DEPTH: usize = 32;

/// The compact protocol's type codes.
mod kind {
    pub const BOOL_TRUE: u8 = 1;
    pub const BOOL_FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const UUID: u8 = 13;
}

/// Why some bytes are not a well-formed Thrift struct, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub offset: usize,
    pub reason: &'static str,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

/// A struct that was walked: its length in bytes, and the value of one top-level `i32` field
/// the caller asked for (a page header's compressed size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked {
    pub len: usize,
    pub wanted: Option<i32>,
}

/// Walks the struct that starts at `bytes[0]`; `wanted` names a top-level `i32` field whose
/// value is returned.
pub fn walk_struct(bytes: &[u8], wanted: Option<i16>) -> Result<Walked, Damage> {
    let mut walker = Walker {
        bytes,
        at: 0,
        wanted: None,
    };
    walker.structure(0, wanted)?;
    Ok(Walked {
        len: walker.at,
        wanted: walker.wanted,
    })
}

/// Checks a Parquet footer (the bytes before its length and the closing magic): one struct
/// that fills it exactly.
pub fn check_footer(footer: &[u8]) -> Result<(), String> {
    let walked = walk_struct(footer, None).map_err(|d| format!("its footer does not decode: {d}"))?;
    if walked.len != footer.len() {
        return Err(format!(
            "its footer does not decode: the footer ends at byte {} of {}",
            walked.len,
            footer.len()
        ));
    }
    Ok(())
}

/// The length of the footer a Parquet file's `tail` (its last bytes, at least 8) claims, or
/// an error when the tail is not a Parquet file's.
pub fn footer_len(tail: &[u8]) -> Result<u64, String> {
    let end = tail
        .len()
        .checked_sub(8)
        .and_then(|at| tail.get(at..))
        .ok_or_else(|| "it is too short to be a segment".to_string())?;
    if end.get(4..) != Some(b"PAR1".as_slice()) {
        return Err("it does not end as a Parquet file does".to_string());
    }
    Ok(u64::from(u32::from_le_bytes([end[0], end[1], end[2], end[3]])))
}

/// The byte ranges of the column and offset indexes `footer` names, each one Thrift struct.
pub fn page_index_ranges(footer: &ParquetMetaData, file_len: u64) -> Result<Vec<Range<u64>>, String> {
    let mut ranges = Vec::new();
    for group in footer.row_groups() {
        for column in group.columns() {
            let indexes = [
                (column.column_index_offset(), column.column_index_length()),
                (column.offset_index_offset(), column.offset_index_length()),
            ];
            for (offset, length) in indexes {
                let (Some(offset), Some(length)) = (offset, length) else {
                    continue;
                };
                let range = u64::try_from(offset)
                    .ok()
                    .zip(u64::try_from(length).ok())
                    .and_then(|(start, length)| Some(start..start.checked_add(length)?))
                    .filter(|range| range.end <= file_len);
                let Some(range) = range else {
                    return Err(format!(
                        "the page index of column '{}' lies outside the file",
                        column.column_path().string()
                    ));
                };
                ranges.push(range);
            }
        }
    }
    Ok(ranges)
}

/// Checks each page index struct (`bytes[i]` read from `ranges[i]`).
pub fn check_page_index(ranges: &[Range<u64>], bytes: &[Bytes]) -> Result<(), String> {
    for (range, bytes) in ranges.iter().zip(bytes) {
        walk_struct(bytes, None).map_err(|d| format!("its page index at byte {} does not decode: {d}", range.start))?;
    }
    Ok(())
}

/// Checks the page headers in `bytes`, which were read from `start` on and begin with a page
/// header: each header is walked, then the page it announces is stepped over, until the bytes
/// end.
pub fn check_page_headers(start: u64, bytes: &[u8]) -> Result<(), String> {
    /// PageHeader's `compressed_page_size` field.
    const COMPRESSED_PAGE_SIZE: i16 = 3;
    let mut at = 0usize;
    while at < bytes.len() {
        let header = &bytes[at..];
        let walked = walk_struct(header, Some(COMPRESSED_PAGE_SIZE))
            .map_err(|d| format!("its page header at byte {} does not decode: {d}", start + at as u64))?;
        let size = walked
            .wanted
            .and_then(|size| usize::try_from(size).ok())
            .ok_or_else(|| format!("its page header at byte {} has no page size", start + at as u64))?;
        at = at.saturating_add(walked.len).saturating_add(size);
    }
    Ok(())
}

struct Walker<'a> {
    bytes: &'a [u8],
    at: usize,
    wanted: Option<i32>,
}

impl Walker<'_> {
    fn damage(&self, reason: &'static str) -> Damage {
        Damage {
            offset: self.at,
            reason,
        }
    }

    fn byte(&mut self) -> Result<u8, Damage> {
        let byte = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| self.damage("the structure runs past its end"))?;
        self.at += 1;
        Ok(byte)
    }

    fn skip(&mut self, n: usize) -> Result<(), Damage> {
        match self.at.checked_add(n) {
            Some(end) if end <= self.bytes.len() => {
                self.at = end;
                Ok(())
            }
            _ => Err(self.damage("a value runs past the end")),
        }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn varint(&mut self) -> Result<u64, Damage> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            if shift == 63 && byte > 1 {
                return Err(self.damage("a variable-length integer overflows"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.damage("a variable-length integer overflows"))
    }

    fn zigzag(&mut self) -> Result<i64, Damage> {
        let raw = self.varint()?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    /// A count of elements, each taking at least `min_bytes` bytes.
    fn count(&mut self, raw: u64, min_bytes: usize) -> Result<usize, Damage> {
        usize::try_from(raw)
            .ok()
            .filter(|&n| n.checked_mul(min_bytes).is_some_and(|need| need <= self.remaining()))
            .ok_or_else(|| self.damage("a collection claims more elements than bytes remain"))
    }

    fn structure(&mut self, depth: usize, wanted: Option<i16>) -> Result<(), Damage> {
        if depth >= MAX_DEPTH {
            return Err(self.damage("structures nest too deeply"));
        }
        let mut last_id: i16 = 0;
        loop {
            let header = self.byte()?;
            if header == 0 {
                return Ok(());
            }
            let delta = header >> 4;
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?).map_err(|_| self.damage("a field id is out of range"))?
            } else {
                last_id.wrapping_add(i16::from(delta))
            };
            last_id = id;
            let field_kind = header & 0x0f;
            if wanted == Some(id) && field_kind == kind::I32 {
                let value = self.zigzag()?;
                self.wanted = i32::try_from(value).ok();
                continue;
            }
            match field_kind {
                // A boolean field's value is its type code.
                kind::BOOL_TRUE | kind::BOOL_FALSE => {}
                other => self.value(other, depth + 1)?,
            }
        }
    }

    fn value(&mut self, value_kind: u8, depth: usize) -> Result<(), Damage> {
        match value_kind {
            // Inside a collection a boolean takes one byte.
            kind::BOOL_TRUE | kind::BOOL_FALSE | kind::BYTE => self.skip(1),
            kind::I16 | kind::I32 | kind::I64 => self.varint().map(|_| ()),
            kind::DOUBLE => self.skip(8),
            kind::UUID => self.skip(16),
            kind::BINARY => {
                let raw = self.varint()?;
                let len = self.count(raw, 1)?;
                self.skip(len)
            }
            kind::LIST | kind::SET => {
                if depth >= MAX_DEPTH {
                    return Err(self.damage("structures nest too deeply"));
                }
                let header = self.byte()?;
                let short = u64::from(header >> 4);
                let raw = if short == 15 { self.varint()? } else { short };
                let n = self.count(raw, 1)?;
                let element = header & 0x0f;
                for _ in 0..n {
                    self.value(element, depth + 1)?;
                }
                Ok(())
            }
            kind::MAP => {
                if depth >= MAX_DEPTH {
                    return Err(self.damage("structures nest too deeply"));
                }
                let raw = self.varint()?;
                if raw == 0 {
                    return Ok(());
                }
                let n = self.count(raw, 2)?;
                let types = self.byte()?;
                for _ in 0..n {
                    self.value(types >> 4, depth + 1)?;
                    self.value(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            kind::STRUCT => self.structure(depth, None),
            _ => Err(self.damage("an unknown value type")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_of_every_kind_is_walked_to_its_end() {
        let bytes = [
            0x15, 0x04, // field 1: i32 2
            0x11, // field 2: bool true
            0x18, 0x02, b'h', b'i', // field 3: binary "hi"
            0x19, 0x32, 0x01, 0x02, 0x01, // field 4: list of 3 bools (one byte each)
            0x1c, 0x16, 0x02, 0x00, // field 5: struct { field 1: i64 1 }
            0x1b, 0x01, 0x55, 0x02, 0x04, // field 6: map of 1 i32 -> i32
            0x00, // stop
            0xff, // after the struct
        ];
        let walked = walk_struct(&bytes, Some(1));
        assert_eq!(
            walked,
            Ok(Walked {
                len: bytes.len() - 1,
                wanted: Some(2)
            })
        );
    }

    #[test]
    fn a_list_of_booleans_longer_than_its_bytes_is_refused_at_once() {
        // field 1: a list of 0x7fffffff booleans, then nothing.
        let bytes = [0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x01, 0x01];
        let damage = walk_struct(&bytes, None).err();
        assert_eq!(
            damage.map(|d| d.reason),
            Some("a collection claims more elements than bytes remain")
        );
    }

    #[test]
    fn deep_nesting_and_truncation_are_refused() {
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 100).collect();
        assert_eq!(
            walk_struct(&deep, None).err().map(|d| d.reason),
            Some("structures nest too deeply")
        );
        assert_eq!(
            walk_struct(&[0x15], None).err().map(|d| d.reason),
            Some("the structure runs past its end")
        );
        assert_eq!(
            walk_struct(&[0x1e], None).err().map(|d| d.reason),
            Some("an unknown value type")
        );
    }

    #[test]
    fn a_footer_must_be_one_struct_that_fills_it() {
        let mut tail = vec![0x00];
        tail.extend_from_slice(&100u32.to_le_bytes());
        tail.extend_from_slice(b"PAR1");
        assert_eq!(footer_len(&tail), Ok(100));
        assert!(footer_len(b"PAR1").is_err());
        assert!(footer_len(b"\0\0\0\0PAR2").is_err());
        assert_eq!(check_footer(&[0x15, 0x02, 0x00]), Ok(()));
        assert!(check_footer(&[0x15, 0x02, 0x00, 0x00]).is_err_and(|e| e.contains("ends at byte 3 of 4")));
    }

    #[test]
    fn page_headers_are_walked_page_by_page() {
        // A header { 1: i32 0 (type), 2: i32 1, 3: i32 2 (compressed size) } then 2 bytes.
        let page = [0x15, 0x00, 0x15, 0x02, 0x15, 0x04, 0x00, 0xaa, 0xbb];
        let two: Vec<u8> = page.iter().chain(page.iter()).copied().collect();
        assert_eq!(check_page_headers(4, &two), Ok(()));
        // The second header is damaged: a list of booleans claiming more than remains.
        let mut damaged = page.to_vec();
        damaged.extend_from_slice(&[0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07]);
        assert!(check_page_headers(4, &damaged).is_err_and(|e| e.contains("page header at byte 13")));
    }
}
