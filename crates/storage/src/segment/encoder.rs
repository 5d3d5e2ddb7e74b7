//! Encoding a segment's rows as Parquet: how each column is written (dictionary, codec,
//! encoding, statistics, page size), decided from its first rows, and the token index inside.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use datafusion::parquet::arrow::{ArrowSchemaConverter, add_encoded_arrow_schema_to_metadata};
use datafusion::parquet::basic::{Compression, Encoding, ZstdLevel};
use datafusion::parquet::file::metadata::KeyValue;
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::file::writer::SerializedFileWriter;
use datafusion::parquet::schema::types::ColumnPath;

use super::CHUNK_ROWS;
use crate::tokens::{BLOCK_ROWS, INDEX_KEY, TokenIndexBuilder};
use crate::{Result, StorageError};

/// Columns that get a Parquet bloom filter (exact-match lookups by id).
pub(crate) const BLOOM_COLUMNS: &[&str] = &["trace_id", "span_id"];

/// Largest data page of another string column (under a dictionary, or one whose dictionary
/// outgrew its limit), before compression: a scan that reads a few blocks of rows (picked by
/// the token index) decodes pages of about this size, not the default 1 MiB.
const STRING_PAGE_BYTES: usize = 128 * 1024;

/// How a segment's compressed columns are compressed: free text, ids, bags and long values.
/// The short dictionary-encoded and the delta-encoded columns are stored uncompressed
/// whatever this says (see [`uncompressed`]).
///
/// Merged segments are written with zstd. Fresh segments, which the background merge rewrites
/// a few times on their way to a large one, may be written faster (the way an LSM store may
/// keep its upper levels uncompressed or under LZ4 and its bottom level under zstd): on the
/// benchmark's logs, encoding a flush took 2.77 µs per record with zstd, 2.50 with LZ4 and
/// 1.74 without compression, for 110, 166 and 415 bytes per record. The bytes saved are not
/// free to write, though: see `--flush-compression` in docs/configuration.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SegmentCodec {
    /// No compression.
    None,
    /// LZ4 (Parquet's `LZ4_RAW`).
    Lz4,
    /// zstd at level 1.
    #[default]
    Zstd,
}

impl SegmentCodec {
    fn compression(self) -> Result<Compression> {
        Ok(match self {
            SegmentCodec::None => Compression::UNCOMPRESSED,
            SegmentCodec::Lz4 => Compression::LZ4_RAW,
            SegmentCodec::Zstd => Compression::ZSTD(ZstdLevel::try_new(1)?),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SegmentCodec::None => "none",
            SegmentCodec::Lz4 => "lz4",
            SegmentCodec::Zstd => "zstd",
        }
    }
}

impl std::fmt::Display for SegmentCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SegmentCodec {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<SegmentCodec, String> {
        match text {
            "none" => Ok(SegmentCodec::None),
            "lz4" => Ok(SegmentCodec::Lz4),
            "zstd" => Ok(SegmentCodec::Zstd),
            other => Err(format!("unknown segment compression {other:?}: none, lz4 or zstd")),
        }
    }
}

/// Encodes batches (one schema) as a Parquet file whose compressed columns use `codec`.
pub fn encode_parquet(batches: &[RecordBatch], codec: SegmentCodec) -> Result<Bytes> {
    let Some(first) = batches.first() else {
        return Err(StorageError::Invalid("no batches to write".into()));
    };
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut encoder = SegmentEncoder::new(first.schema(), rows)?.with_codec(codec);
    // Requests passed on whole: the first may not look like the rest (a column it lacks is
    // all null there), so how columns are written is decided from rows of every batch.
    if batches.len() > 1 && first.num_rows() < SAMPLE_ROWS {
        let per_batch = SAMPLE_ROWS.div_ceil(batches.len());
        let slices: Vec<RecordBatch> = batches
            .iter()
            .map(|batch| batch.slice(0, batch.num_rows().min(per_batch)))
            .collect();
        encoder.sample(&slices)?;
    }
    for batch in batches {
        encoder.write(batch)?;
    }
    encoder.finish()
}

/// Encodes batches one at a time into the Parquet bytes of a segment, so a large segment (a
/// merge) never holds all of its rows decoded at once.
pub struct SegmentEncoder {
    /// Made with the first batch, whose values decide how each column is written.
    writer: Option<Writer>,
    schema: SchemaRef,
    expected_rows: usize,
    capacity: usize,
    codec: SegmentCodec,
    tokens: TokenIndexBuilder,
}

/// The Parquet file being written, a row group ([`CHUNK_ROWS`]) at a time, each column by a
/// writer of its own (as `ArrowWriter` does inside), so that columns can have pages of different
/// row counts, which Parquet's writer properties set only for a whole file.
struct Writer {
    file: SerializedFileWriter<Vec<u8>>,
    /// Make the writers of the columns with pages of up to [`PAGE_ROWS`] rows (`[0]`) and of
    /// those with a page per block (`[1]`, [`BLOCK_ROWS`] rows); `None` when there are none.
    factories: [Option<ArrowRowGroupWriterFactory>; 2],
    /// By leaf column of the file: the factory that makes its writer.
    leaf_factory: Vec<usize>,
    /// The open row group's writers, by leaf column (empty when none is open).
    columns: Vec<ArrowColumnWriter>,
    /// Rows in the open row group.
    rows: usize,
}

impl Writer {
    fn new(schema: &SchemaRef, plan: &Plan, capacity: usize) -> Result<Writer> {
        let mut properties = plan.properties(schema, PAGE_ROWS)?;
        add_encoded_arrow_schema_to_metadata(schema, &mut properties);
        let converter = ArrowSchemaConverter::new().with_coerce_types(properties.coerce_types());
        let parquet = converter.convert(schema)?;
        let file = SerializedFileWriter::new(
            Vec::with_capacity(capacity),
            parquet.root_schema_ptr(),
            Arc::new(properties),
        )?;
        // A factory takes its schema and properties from a file writer. Each of these writes
        // nothing of its own: its columns' pages are spliced into `file`, whose columns they
        // describe alike (the same names, types and levels).
        let factory = |block_pages: bool, page_rows: usize| -> Result<Option<ArrowRowGroupWriterFactory>> {
            let fields: Vec<_> = (schema.fields().iter().zip(&plan.fields))
                .filter(|(_, field)| field.block_pages == block_pages)
                .map(|(field, _)| Arc::clone(field))
                .collect();
            if fields.is_empty() {
                return Ok(None);
            }
            let part = Arc::new(Schema::new(fields));
            let template = SerializedFileWriter::new(
                std::io::sink(),
                converter.convert(&part)?.root_schema_ptr(),
                Arc::new(plan.properties(schema, page_rows)?),
            )?;
            Ok(Some(ArrowRowGroupWriterFactory::new(&template, part)))
        };
        let factories = [factory(false, PAGE_ROWS)?, factory(true, BLOCK_ROWS)?];
        let leaf_factory = (0..parquet.num_columns())
            .map(|leaf| {
                let field = plan.fields.get(parquet.get_column_root_idx(leaf));
                usize::from(field.is_some_and(|field| field.block_pages))
            })
            .collect();
        Ok(Writer {
            file,
            factories,
            leaf_factory,
            columns: Vec::new(),
            rows: 0,
        })
    }

    /// Writes `batch`, a block's part at a time: a column writer ends a page only between two
    /// writes, so the pages of a column with a page per block start where blocks start.
    fn write(&mut self, schema: &SchemaRef, batch: &RecordBatch) -> Result<()> {
        let mut start = 0;
        while start < batch.num_rows() {
            if self.columns.is_empty() {
                self.open_group()?;
            }
            let take = (BLOCK_ROWS - self.rows % BLOCK_ROWS).min(batch.num_rows() - start);
            let part = batch.slice(start, take);
            let mut writers = self.columns.iter_mut();
            for (field, column) in schema.fields().iter().zip(part.columns()) {
                for leaf in compute_leaves(field, column)? {
                    let writer = writers
                        .next()
                        .ok_or_else(|| StorageError::Invalid("a batch has more columns than its segment".into()))?;
                    writer.write(&leaf)?;
                }
            }
            self.rows += take;
            start += take;
            if self.rows == CHUNK_ROWS {
                self.close_group()?;
            }
        }
        Ok(())
    }

    fn open_group(&mut self) -> Result<()> {
        let group = self.file.flushed_row_groups().len();
        let mut made = Vec::with_capacity(self.factories.len());
        for factory in &self.factories {
            let writers = match factory {
                Some(factory) => factory.create_column_writers(group)?,
                None => Vec::new(),
            };
            made.push(writers.into_iter());
        }
        self.columns = self
            .leaf_factory
            .iter()
            .map(|&factory| made.get_mut(factory).and_then(Iterator::next))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| StorageError::Invalid("a segment column has no writer".into()))?;
        Ok(())
    }

    fn close_group(&mut self) -> Result<()> {
        if self.columns.is_empty() {
            return Ok(());
        }
        let mut group = self.file.next_row_group()?;
        for writer in std::mem::take(&mut self.columns) {
            writer.close()?.append_to_row_group(&mut group)?;
        }
        group.close()?;
        self.rows = 0;
        Ok(())
    }
}

/// Rows of the first batch sampled to tell a column's cardinality.
const SAMPLE_ROWS: usize = 4096;

/// Bytes of a column's values sampled (about; at least one value): long values (attributes,
/// resources) tell their cardinality in fewer rows, and hashing 4096 of them took 1-2% of the
/// ingest CPU.
const SAMPLE_BYTES: usize = 256 * 1024;

/// Most rows per data page of a column that is stored uncompressed or under a dictionary: a
/// scan that reads some rows of a chunk (a row selection of the token index) decodes pages of
/// at most this many rows around each. Compressed columns without a dictionary (free text,
/// ids, bags) have a page per block ([`BLOCK_ROWS`] rows) instead: such a read decompresses
/// the pages it touches whole, and fewer, longer pages make every other scan cheaper.
const PAGE_ROWS: usize = 8192;

/// Largest data page of a column with a page per block, before compression; a block of
/// longer values is split into pages of about this size.
const BLOCK_PAGE_BYTES: usize = 1024 * 1024;

/// How a column is written, decided from a sample of its first batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Choice {
    /// Worth a dictionary: not when more than half of the sampled values differ (free text,
    /// ids, timestamps, durations). A dictionary-encoded chunk must read its whole dictionary
    /// page (up to 1 MiB) for any row, and its data pages hold only indices, so the string
    /// page limit does not apply to them.
    dictionary: bool,
    /// Mean length in bytes of the distinct sampled values.
    mean_bytes: usize,
    /// Most sampled values are bags (JSON objects or arrays: attributes, resources).
    bags: bool,
}

/// Values at most this long on average, dictionary-encoded, are stored uncompressed.
const SHORT_VALUE_BYTES: usize = 32;

/// A column's [`Choice`] from its values in `columns` (one array per sampled batch); `None`
/// for columns of other types (booleans, nested), which keep the writer's defaults. At most
/// [`SAMPLE_ROWS`] values and about [`SAMPLE_BYTES`] are looked at.
fn choose(columns: &[&dyn Array]) -> Option<Choice> {
    use datafusion::arrow::array::AsArray;
    if columns.is_empty() {
        return None;
    }
    let data: Vec<_> = columns.iter().map(|column| column.to_data()).collect();
    let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(SAMPLE_ROWS);
    let mut bytes = 0usize;
    let mut cut = false;
    'columns: for (column, data) in columns.iter().zip(&data) {
        let each: Box<dyn Iterator<Item = Option<&[u8]>>> = if let Some(strings) = column.as_string_opt::<i32>() {
            Box::new(strings.iter().map(|v| v.map(str::as_bytes)))
        } else if let Some(strings) = column.as_string_opt::<i64>() {
            Box::new(strings.iter().map(|v| v.map(str::as_bytes)))
        } else if let Some(strings) = column.as_string_view_opt() {
            Box::new(strings.iter().map(|v| v.map(str::as_bytes)))
        } else if let (Some(width), [buffer]) = (column.data_type().primitive_width(), data.buffers()) {
            let start = data.offset().saturating_mul(width);
            let end = start.saturating_add(data.len().saturating_mul(width));
            let bytes = buffer.as_slice().get(start..end)?;
            Box::new(
                bytes
                    .chunks_exact(width)
                    .enumerate()
                    .map(|(row, value)| data.is_valid(row).then_some(value)),
            )
        } else {
            return None;
        };
        for value in each {
            if values.len() >= SAMPLE_ROWS {
                break 'columns;
            }
            if bytes >= SAMPLE_BYTES {
                cut = true;
                break 'columns;
            }
            bytes += value.map_or(0, <[u8]>::len);
            values.push(value);
        }
    }
    Some(distinct(values.into_iter(), cut))
}

/// Whether at most half of the non-null `values` differ (or there are too few to tell, unless
/// the sample was `cut` short by its size), and the mean length of the distinct ones.
fn distinct<'a>(values: impl Iterator<Item = Option<&'a [u8]>>, cut: bool) -> Choice {
    let mut distinct: datafusion::common::HashSet<&[u8]> = datafusion::common::HashSet::with_capacity(SAMPLE_ROWS);
    let (mut count, mut bags) = (0usize, 0usize);
    for value in values.flatten() {
        count += 1;
        bags += usize::from(matches!(value.first(), Some(b'{' | b'[')));
        distinct.insert(value);
    }
    let bytes: usize = distinct.iter().map(|value| value.len()).sum();
    Choice {
        dictionary: (count < 64 && !cut) || distinct.len() * 2 <= count,
        mean_bytes: bytes / distinct.len().max(1),
        bags: count > 0 && bags * 2 > count,
    }
}

/// Whether a column is stored without compression: zstd gains little on it, and a reader
/// then needs no codec. Parquet makes a zstd codec (a compression and a decompression
/// context) for every column chunk it reads; for the small columns most filters and groups
/// read (severity, service, times) that cost more than decompressing them: 6-8% of the CPU of
/// a count by severity or of errors by service over 10M rows. Measured on the benchmark's
/// segments, zstd shrank delta-encoded times by 0-1% and dictionary-encoded short strings
/// (their pages are bit-packed indices) by 6-67%, a few KB per chunk.
fn uncompressed(choice: Choice, data_type: &DataType) -> bool {
    if choice.dictionary {
        choice.mean_bytes <= SHORT_VALUE_BYTES
    } else {
        delta_encoded(data_type)
    }
}

/// Whether a column without a dictionary is better delta-encoded: integers and times, which a
/// segment holds sorted or close together (timestamps, durations, counters).
fn delta_encoded(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int32
            | DataType::Int64
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Date32
            | DataType::Date64
            | DataType::Timestamp(..)
            | DataType::Duration(_)
    )
}

/// How each column of a segment is written, decided from its first batch.
struct Plan {
    /// By field of the schema.
    fields: Vec<FieldPlan>,
    /// Rows the segment will hold (sizes the bloom filters).
    expected_rows: usize,
    /// The codec of the columns that are compressed.
    codec: SegmentCodec,
}

struct FieldPlan {
    choice: Option<Choice>,
    /// Compressed (by the codec of merged segments) and without a dictionary: a page per
    /// block (see [`PAGE_ROWS`]), whatever the codec of this segment.
    block_pages: bool,
}

impl Plan {
    fn new(schema: &SchemaRef, sample: &[RecordBatch], expected_rows: usize, codec: SegmentCodec) -> Plan {
        let fields = schema
            .fields()
            .iter()
            .map(|field| {
                let columns: Vec<&dyn Array> = sample
                    .iter()
                    .filter_map(|batch| batch.column_by_name(field.name()))
                    .map(|column| column.as_ref())
                    .collect();
                let choice = choose(&columns);
                let block_pages = choice.is_some_and(|c| !c.dictionary && !uncompressed(c, field.data_type()));
                FieldPlan { choice, block_pages }
            })
            .collect();
        Plan {
            fields,
            expected_rows,
            codec,
        }
    }

    /// The properties of writers whose pages hold at most `page_rows` rows.
    fn properties(&self, schema: &SchemaRef, page_rows: usize) -> Result<WriterProperties> {
        let mut properties = WriterProperties::builder()
            .set_compression(self.codec.compression()?)
            .set_max_row_group_row_count(Some(CHUNK_ROWS))
            .set_data_page_row_count_limit(page_rows)
            .set_statistics_enabled(EnabledStatistics::Page);
        for (field, plan) in schema.fields().iter().zip(&self.fields) {
            let path = ColumnPath::from(field.name().as_str());
            let text = matches!(
                field.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            );
            if plan.block_pages {
                properties = properties.set_column_data_page_size_limit(path.clone(), BLOCK_PAGE_BYTES);
                if text {
                    // The minimum and maximum of each block of free text prune nothing (the
                    // token index does), and they were the largest part of the page index
                    // every query reads (about 130 bytes a page); the chunk's are kept.
                    properties = properties.set_column_statistics_enabled(path.clone(), EnabledStatistics::Chunk);
                }
            } else if text {
                properties = properties.set_column_data_page_size_limit(path.clone(), STRING_PAGE_BYTES);
            }
            let Some(choice) = plan.choice else {
                continue;
            };
            if uncompressed(choice, field.data_type()) {
                properties = properties.set_column_compression(path.clone(), Compression::UNCOMPRESSED);
            }
            if choice.bags {
                // The minimum and maximum of JSON text prune nothing a query asks (a bag's
                // keys are read through its shredded columns), and finding them compares
                // every value: 1-2% of the ingest CPU for the attributes of logs.
                properties = properties.set_column_statistics_enabled(path.clone(), EnabledStatistics::None);
            }
            if !choice.dictionary {
                properties = properties.set_column_dictionary_enabled(path.clone(), false);
                if delta_encoded(field.data_type()) {
                    properties = properties.set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
                }
            }
        }
        for column in BLOOM_COLUMNS {
            if schema.column_with_name(column).is_some() {
                let path = ColumnPath::from(*column);
                // Random ids: their minimum and maximum prune nothing (the bloom filter and
                // the token index find one), and finding them compares every value. (Set
                // last: nothing above raises them again.)
                properties = properties
                    .set_column_statistics_enabled(path.clone(), EnabledStatistics::None)
                    .set_column_bloom_filter_enabled(path.clone(), true)
                    .set_column_bloom_filter_fpp(path.clone(), 0.01)
                    .set_column_bloom_filter_max_ndv(path, self.expected_rows.clamp(1, CHUNK_ROWS) as u64);
            }
        }
        Ok(properties.build())
    }
}

impl SegmentEncoder {
    /// An encoder for batches of `schema`; `expected_rows` sizes the bloom filters.
    pub fn new(schema: SchemaRef, expected_rows: usize) -> Result<SegmentEncoder> {
        let tokens = TokenIndexBuilder::new(&schema);
        Ok(SegmentEncoder {
            writer: None,
            schema,
            expected_rows,
            capacity: expected_rows.min(CHUNK_ROWS) * 64,
            codec: SegmentCodec::default(),
            tokens,
        })
    }

    /// The writer, made for `sample` (the first batch, or rows of several; none when there
    /// are no rows).
    fn writer(&mut self, sample: &[RecordBatch]) -> Result<&mut Writer> {
        if self.writer.is_none() {
            let plan = Plan::new(&self.schema, sample, self.expected_rows, self.codec);
            self.writer = Some(Writer::new(&self.schema, &plan, self.capacity)?);
        }
        self.writer
            .as_mut()
            .ok_or_else(|| StorageError::Invalid("the segment writer is missing".into()))
    }

    /// Compresses the compressed columns with `codec` (zstd unless told).
    pub fn with_codec(mut self, codec: SegmentCodec) -> SegmentEncoder {
        self.codec = codec;
        self
    }

    /// Reserves room for `bytes` of output up front, so a large segment's buffer is not
    /// copied as it grows.
    pub fn with_capacity(mut self, bytes: usize) -> SegmentEncoder {
        self.capacity = self.capacity.max(bytes);
        self
    }

    /// Decides how each column is written from `sample` (rows like the ones to come, in one
    /// batch or several) instead of from the first batch written.
    pub fn sample(&mut self, sample: &[RecordBatch]) -> Result<()> {
        self.writer(sample)?;
        Ok(())
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let expected = self.schema.fields().iter().map(|f| f.data_type());
        if batch.num_columns() != self.schema.fields().len()
            || batch.schema().fields().iter().map(|f| f.data_type()).ne(expected)
        {
            return Err(StorageError::Invalid(
                "a batch's columns differ from its segment's schema".into(),
            ));
        }
        self.tokens.add(batch)?;
        let schema = Arc::clone(&self.schema);
        self.writer(std::slice::from_ref(batch))?.write(&schema, batch)
    }

    /// The file's bytes: the chunks, the token index (`crate::tokens`), the footer.
    pub fn finish(mut self) -> Result<Bytes> {
        self.writer(&[])?;
        let tokens = std::mem::replace(&mut self.tokens, TokenIndexBuilder::new(&self.schema));
        let mut writer = self
            .writer
            .take()
            .ok_or_else(|| StorageError::Invalid("the segment writer is missing".into()))?;
        writer.close_group()?;
        if let Some(index) = tokens.finish()? {
            let offset = writer.file.bytes_written();
            writer.file.write_all(&index)?;
            writer.file.append_key_value_metadata(KeyValue::new(
                INDEX_KEY.to_string(),
                format!("{offset}:{}", index.len()),
            ));
        }
        Ok(Bytes::from(writer.file.into_inner()?))
    }
}

#[cfg(test)]
#[path = "encoder_tests.rs"]
mod tests;
