//! Writing the token index: per block of [`BLOCK_ROWS`] rows and indexed column, a filter
//! over the block's distinct terms, serialized in the layout [`super::TokenIndex::parse`] reads.

use std::borrow::Cow;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::HashSet as FastSet;
use datafusion::parquet::bloom_filter::Sbbf;
use trawl_common::KqlType;
use trawl_functions::dynamic::unquote_json_string;
use trawl_functions::tokenizer::terms;

use super::{BLOCK_ROWS, FPP, MAGIC, VERSION};
use crate::schema::kql_type_of;

/// Builds the index of one segment from its batches, in the order they are written.
#[derive(Debug)]
pub(crate) struct TokenIndexBuilder {
    pub(super) columns: Vec<ColumnBuilder>,
    rows_in_block: usize,
    rows: u64,
}

#[derive(Debug)]
pub(super) struct ColumnBuilder {
    /// Position in the batches' schema.
    position: usize,
    name: String,
    /// The finished blocks, serialized: per block a `u32` length, then the filter's bitset.
    blocks: Vec<u8>,
    block_count: u32,
    /// The hashes of the current block's terms (ASCII-lowercased), repeats included.
    pub(super) hashes: Vec<u64>,
    /// A term being lowercased.
    term: Vec<u8>,
    /// The previous value of the block: repeats (the resource of one request) add nothing.
    last: Option<Vec<u8>>,
    /// Values of the block already indexed, while the column repeats itself.
    seen: Seen,
    /// For a dynamic column until its first block is done: how many of its values are bags
    /// (JSON objects and arrays) and how many are not.
    probe: Option<(usize, usize)>,
    /// Set once the probe has seen [`PROBE_VALUES`] values, mostly bags: the column is left
    /// out at the end of its first block, so the rest of that block is not tokenized.
    left_out: bool,
}

/// Values of a dynamic column looked at before it is known to hold bags: a bag column's keys
/// and values are the longest text of a row (about 290 bytes of attributes a log record),
/// and tokenizing a whole first block of them cost about a sixteenth of a bag column's rows.
pub(super) const PROBE_VALUES: usize = 64;

impl TokenIndexBuilder {
    /// A builder for batches of `schema`: it indexes the string columns and the dynamic ones
    /// that hold text (the JSON text of a value and the content of a JSON string, as `has`
    /// reads them). A dynamic column whose first block holds mostly bags (attributes,
    /// resources) is left out, as soon as [`PROBE_VALUES`] of its values tell: its keys and values would make the index several times larger,
    /// and the text people search is in the other columns and in the bags' shredded keys.
    pub(crate) fn new(schema: &SchemaRef) -> TokenIndexBuilder {
        let columns = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, field)| {
                matches!(kql_type_of(field), KqlType::String | KqlType::Dynamic)
                    && matches!(
                        field.data_type(),
                        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                    )
            })
            .map(|(position, field)| ColumnBuilder {
                position,
                name: field.name().clone(),
                blocks: Vec::new(),
                block_count: 0,
                hashes: Vec::new(),
                term: Vec::new(),
                last: None,
                seen: Seen::default(),
                probe: (kql_type_of(field) == KqlType::Dynamic).then_some((0, 0)),
                left_out: false,
            })
            .collect();
        TokenIndexBuilder {
            columns,
            rows_in_block: 0,
            rows: 0,
        }
    }

    /// Adds the rows of `batch`.
    pub(crate) fn add(&mut self, batch: &RecordBatch) -> crate::Result<()> {
        let mut start = 0;
        while start < batch.num_rows() {
            let take = (BLOCK_ROWS - self.rows_in_block).min(batch.num_rows() - start);
            for column in &mut self.columns {
                if let Some(array) = batch.columns().get(column.position) {
                    column.add(array.as_ref(), start, take);
                }
            }
            start += take;
            self.rows_in_block += take;
            self.rows += take as u64;
            if self.rows_in_block == BLOCK_ROWS {
                self.finish_block()?;
            }
        }
        Ok(())
    }

    fn finish_block(&mut self) -> crate::Result<()> {
        // Whether a dynamic column is indexed is decided by its first block (a column of
        // bags is often known earlier: `left_out`).
        self.columns
            .retain(|column| column.probe.is_none_or(|(bags, texts)| bags <= texts));
        for column in &mut self.columns {
            column.probe = None;
            column.finish_block()?;
        }
        self.rows_in_block = 0;
        Ok(())
    }

    /// The serialized index; `None` when there is nothing to index.
    pub(crate) fn finish(mut self) -> crate::Result<Option<Vec<u8>>> {
        if self.columns.is_empty() || self.rows == 0 {
            return Ok(None);
        }
        if self.rows_in_block > 0 {
            self.finish_block()?;
        }
        let mut out = Vec::with_capacity(
            64 + self
                .columns
                .iter()
                .map(|c| c.blocks.len() + c.name.len() + 16)
                .sum::<usize>(),
        );
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&(BLOCK_ROWS as u32).to_le_bytes());
        out.extend_from_slice(&self.rows.to_le_bytes());
        out.extend_from_slice(&(self.columns.len() as u32).to_le_bytes());
        for column in &self.columns {
            out.extend_from_slice(&(column.name.len() as u32).to_le_bytes());
            out.extend_from_slice(column.name.as_bytes());
            out.extend_from_slice(&column.block_count.to_le_bytes());
            out.extend_from_slice(&(column.blocks.len() as u64).to_le_bytes());
            out.extend_from_slice(&column.blocks);
        }
        Ok(Some(out))
    }
}

impl ColumnBuilder {
    fn add(&mut self, array: &dyn Array, start: usize, len: usize) {
        let array = array.slice(start, len);
        if let Some(strings) = array.as_string_opt::<i32>() {
            strings.iter().for_each(|value| self.add_value(value));
        } else if let Some(strings) = array.as_string_opt::<i64>() {
            strings.iter().for_each(|value| self.add_value(value));
        } else if let Some(strings) = array.as_string_view_opt() {
            strings.iter().for_each(|value| self.add_value(value));
        }
    }

    fn add_value(&mut self, value: Option<&str>) {
        let Some(value) = value else { return };
        if self.left_out || self.last.as_deref() == Some(value.as_bytes()) {
            return;
        }
        if self.probe.is_none() && self.seen.repeats(value.as_bytes()) {
            return;
        }
        if let Some((bags, texts)) = &mut self.probe {
            match value.as_bytes().first() {
                Some(b'{' | b'[') => *bags += 1,
                _ => *texts += 1,
            }
            if *bags + *texts >= PROBE_VALUES && *bags > *texts {
                self.left_out = true;
                return;
            }
        }
        // `has` reads a quoted JSON string as its content: index both forms. Without escapes
        // the content's terms are the quoted text's (a quote separates terms): index it once.
        match unquote_json_string(value) {
            Some(Cow::Borrowed(content)) => self.push_terms(content),
            Some(Cow::Owned(content)) => {
                self.push_terms(value);
                self.push_terms(&content);
            }
            None => self.push_terms(value),
        }
        match &mut self.last {
            Some(last) => {
                last.clear();
                last.extend_from_slice(value.as_bytes());
            }
            None => self.last = Some(value.as_bytes().to_vec()),
        }
    }

    /// The hashes of `text`'s terms, ASCII-lowercased: a term without capitals is hashed
    /// where it lies, the others once lowercased.
    fn push_terms(&mut self, text: &str) {
        for term in terms(text).map(str::as_bytes) {
            let hash = if term.iter().any(u8::is_ascii_uppercase) {
                self.term.clear();
                self.term.extend(term.iter().map(u8::to_ascii_lowercase));
                term_hash(&self.term)
            } else {
                term_hash(term)
            };
            self.hashes.push(hash);
        }
    }

    fn finish_block(&mut self) -> crate::Result<()> {
        if self.hashes.is_empty() {
            self.blocks.extend_from_slice(&0u32.to_le_bytes());
        } else {
            // Terms repeat within a block (the same words in many bodies). Setting a term's
            // bits again changes nothing, so there is no need to find the distinct ones: the
            // filter is sized for every term, repeats included, then folded down to the size
            // its fill says the target rate needs.
            let filter = filter_of(&self.hashes, FPP)?;
            let bytes = filter.num_blocks() * 32;
            self.blocks.extend_from_slice(&(bytes as u32).to_le_bytes());
            filter.write_bitset(&mut self.blocks)?;
        }
        self.block_count += 1;
        self.hashes.clear();
        self.last = None;
        self.seen = Seen::default();
        Ok(())
    }
}

/// A term's hash as Parquet's [`Sbbf`] computes it (xxHash64, seed 0): the reader checks
/// terms with [`Sbbf::check`].
pub(crate) fn term_hash(term: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, term)
}

/// The filter of a block whose terms hash to `hashes` (repeats allowed), folded to `fpp`: the
/// bits [`Sbbf::insert`] would set for the same terms in a filter sized for `hashes.len()`
/// values. Parquet keeps inserting a hash private, so the bits are set here, in Parquet's
/// layout: the upper 32 bits of the hash pick a 256-bit block, the lower 32 one bit in each of
/// its eight words.
pub(crate) fn filter_of(hashes: &[u64], fpp: f64) -> crate::Result<Sbbf> {
    let blocks = Sbbf::new_with_ndv_fpp(hashes.len() as u64, fpp)?.num_blocks();
    let mut words = vec![0u32; blocks * 8];
    for &hash in hashes {
        let block = (((hash >> 32) * blocks as u64) >> 32) as usize;
        for (i, salt) in SALT.iter().enumerate() {
            let bit = (hash as u32).wrapping_mul(*salt) >> 27;
            words[block * 8 + i] |= 1 << bit;
        }
    }
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let mut filter = Sbbf::new(&bytes);
    filter.fold_to_target_fpp(fpp);
    Ok(filter)
}

/// The split-block bloom filter's salts (Parquet's format specification).
const SALT: [u32; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

/// The distinct values of a block, kept while most values repeat one already seen (a level,
/// a service name, a route): a repeat adds no term, so it is not tokenized again. A column
/// whose values mostly differ (free text, ids) stops looking after [`Seen::TRIAL`] values.
#[derive(Debug, Default)]
struct Seen {
    values: FastSet<Vec<u8>>,
    looked: u32,
    repeats: u32,
    off: bool,
}

impl Seen {
    /// Values looked up before deciding whether the column repeats itself.
    const TRIAL: u32 = 128;
    /// Distinct values kept at most.
    const MOST: usize = 256;

    /// Whether `value` was seen in this block already (else it is remembered).
    fn repeats(&mut self, value: &[u8]) -> bool {
        if self.off {
            return false;
        }
        self.looked += 1;
        if self.values.contains(value) {
            self.repeats += 1;
            return true;
        }
        if (self.looked >= Self::TRIAL && self.repeats < self.looked / 2) || self.values.len() >= Self::MOST {
            self.off = true;
            self.values = FastSet::default();
            return false;
        }
        self.values.insert(value.to_vec());
        false
    }
}
