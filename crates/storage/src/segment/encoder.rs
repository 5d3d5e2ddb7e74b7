//! Encoding a segment's rows as Parquet: how each column is written (dictionary, codec,
//! encoding, statistics, page size), decided from its first rows, and the token index inside.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::compute::concat_batches;
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
        encoder.sample(&concat_batches(&first.schema(), &slices)?)?;
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

/// A column's [`Choice`]; `None` for columns of other types (booleans, nested), which keep the
/// writer's defaults.
fn choose(array: &dyn datafusion::arrow::array::Array) -> Option<Choice> {
    use datafusion::arrow::array::AsArray;
    let sample = array.slice(0, array.len().min(SAMPLE_ROWS));
    let data = sample.to_data();
    if let Some(strings) = sample.as_string_opt::<i32>() {
        Some(distinct(strings.iter().map(|v| v.map(str::as_bytes))))
    } else if let Some(strings) = sample.as_string_opt::<i64>() {
        Some(distinct(strings.iter().map(|v| v.map(str::as_bytes))))
    } else if let Some(strings) = sample.as_string_view_opt() {
        Some(distinct(strings.iter().map(|v| v.map(str::as_bytes))))
    } else if let (Some(width), [buffer]) = (sample.data_type().primitive_width(), data.buffers()) {
        let start = data.offset().saturating_mul(width);
        let end = start.saturating_add(data.len().saturating_mul(width));
        buffer.as_slice().get(start..end).map(|bytes| {
            distinct(
                bytes
                    .chunks_exact(width)
                    .enumerate()
                    .map(|(row, value)| data.is_valid(row).then_some(value)),
            )
        })
    } else {
        None
    }
}

/// Whether at most half of the non-null `values` differ (or there are too few to tell), and
/// the mean length of the distinct ones.
fn distinct<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> Choice {
    let mut distinct: datafusion::common::HashSet<&[u8]> = datafusion::common::HashSet::with_capacity(SAMPLE_ROWS);
    let (mut count, mut bags) = (0usize, 0usize);
    for value in values.flatten() {
        count += 1;
        bags += usize::from(matches!(value.first(), Some(b'{' | b'[')));
        distinct.insert(value);
    }
    let bytes: usize = distinct.iter().map(|value| value.len()).sum();
    Choice {
        dictionary: count < 64 || distinct.len() * 2 <= count,
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
    fn new(schema: &SchemaRef, first: Option<&RecordBatch>, expected_rows: usize, codec: SegmentCodec) -> Plan {
        let fields = schema
            .fields()
            .iter()
            .map(|field| {
                let column = first.and_then(|batch| batch.column_by_name(field.name()));
                let choice = column.and_then(|column| choose(column.as_ref()));
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

    /// The writer, made for `first` (the first batch; `None` when there is none).
    fn writer(&mut self, first: Option<&RecordBatch>) -> Result<&mut Writer> {
        if self.writer.is_none() {
            let plan = Plan::new(&self.schema, first, self.expected_rows, self.codec);
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

    /// Decides how each column is written from `sample` (rows like the ones to come) instead
    /// of from the first batch written.
    pub fn sample(&mut self, sample: &RecordBatch) -> Result<()> {
        self.writer(Some(sample))?;
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
        self.writer(Some(batch))?.write(&schema, batch)
    }

    /// The file's bytes: the chunks, the token index (`crate::tokens`), the footer.
    pub fn finish(mut self) -> Result<Bytes> {
        self.writer(None)?;
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
mod tests {
    use super::*;

    #[test]
    fn bags_and_ids_have_no_statistics_and_other_columns_do() -> std::result::Result<(), Box<dyn std::error::Error>> {
        use datafusion::arrow::array::StringArray;
        use datafusion::arrow::datatypes::Schema;
        use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
        use trawl_common::KqlType;

        let names = ["body", "attributes", "resource", "trace_id", "severity_text"];
        let types = [
            KqlType::String,
            KqlType::Dynamic,
            KqlType::Dynamic,
            KqlType::String,
            KqlType::String,
        ];
        let schema = Arc::new(Schema::new(
            names
                .iter()
                .zip(types)
                .map(|(name, kql_type)| crate::schema::field(name, kql_type, DataType::Utf8))
                .collect::<Vec<_>>(),
        ));
        let rows = 5_000;
        let column = |value: &dyn Fn(usize) -> String| {
            Arc::new(StringArray::from_iter_values((0..rows).map(value))) as datafusion::arrow::array::ArrayRef
        };
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                column(&|i| format!("request {i} done")),
                column(&|i| format!(r#"{{"http.route":"/r/{}","n":{i}}}"#, i % 7)),
                column(&|i| format!(r#"{{"service.name":"s{}"}}"#, i % 3)),
                column(&|i| {
                    format!(
                        "{:032x}",
                        (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
                    )
                }),
                column(&|i| ["INFO", "ERROR"][i % 2].to_string()),
            ],
        )?;
        let mut encoder = SegmentEncoder::new(schema, rows)?;
        encoder.write(&batch)?;
        let reader = SerializedFileReader::new(encoder.finish()?)?;
        let group = reader.metadata().row_group(0);
        let with_statistics: Vec<bool> = (0..names.len())
            .map(|c| group.column(c).statistics().is_some())
            .collect();
        // Free text and short values keep their chunk statistics (`isnotempty(body)` is
        // answered from them); bags (dictionary-encoded or not) and ids do not.
        assert_eq!(with_statistics, [true, false, false, false, true], "{names:?}");
        // Only the short values keep page statistics (a column index): free text has a page
        // per block, whose minimum and maximum would prune nothing.
        let with_column_index: Vec<bool> = (0..names.len())
            .map(|c| group.column(c).column_index_offset().is_some())
            .collect();
        assert_eq!(with_column_index, [false, false, false, false, true], "{names:?}");
        assert!(
            group.column(3).bloom_filter_offset().is_some(),
            "ids keep their bloom filter"
        );
        Ok(())
    }

    /// The fields of log rows most tests here write: free text, few values, times.
    fn body_severity_time() -> Vec<datafusion::arrow::datatypes::Field> {
        use trawl_common::KqlType;
        vec![
            crate::schema::field("body", KqlType::String, DataType::Utf8),
            crate::schema::field("severity_text", KqlType::String, DataType::Utf8),
            crate::schema::field(
                "timestamp",
                KqlType::DateTime,
                DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None),
            ),
        ]
    }

    #[test]
    fn free_text_gets_no_dictionary_and_few_values_do() -> std::result::Result<(), Box<dyn std::error::Error>> {
        use datafusion::arrow::array::{Int64Array, StringArray, TimestampNanosecondArray};
        use datafusion::arrow::datatypes::Schema;
        use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
        use trawl_common::KqlType;

        let mut fields = body_severity_time();
        fields.push(crate::schema::field("status", KqlType::Long, DataType::Int64));
        let schema = Arc::new(Schema::new(fields));
        let rows = 20_000;
        let bodies: Vec<String> = (0..rows).map(|i| format!("request {i} done")).collect();
        let severities: Vec<&str> = (0..rows).map(|i| if i % 3 == 0 { "ERROR" } else { "INFO" }).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(bodies)),
                Arc::new(StringArray::from(severities)),
                Arc::new(TimestampNanosecondArray::from_iter_values(
                    (0..rows as i64).map(|i| 1_700_000_000_000_000_000 + i * 1_000_003),
                )),
                Arc::new(Int64Array::from_iter_values(
                    (0..rows as i64).map(|i| 200 + (i % 3) * 100),
                )),
            ],
        )?;
        let mut encoder = SegmentEncoder::new(schema, rows)?;
        encoder.write(&batch)?;
        let bytes = encoder.finish()?;
        let reader = SerializedFileReader::new(bytes)?;
        let group = reader.metadata().row_group(0);
        let (body, severity) = (group.column(0), group.column(1));
        assert!(
            body.dictionary_page_offset().is_none(),
            "free text is not dictionary-encoded"
        );
        assert!(severity.dictionary_page_offset().is_some(), "few values are");
        let (time, status) = (group.column(2), group.column(3));
        assert!(time.dictionary_page_offset().is_none(), "distinct times are not");
        assert!(
            time.encodings().any(|e| e == Encoding::DELTA_BINARY_PACKED),
            "times are delta-encoded: {:?}",
            time.encodings().collect::<Vec<_>>()
        );
        assert!(
            status.dictionary_page_offset().is_some(),
            "few numbers are dictionary-encoded"
        );
        let pages = reader.get_row_group(0)?.get_column_page_reader(1)?.count();
        assert!(pages >= rows / PAGE_ROWS, "{pages} pages of at most {PAGE_ROWS} rows");
        // Free text is compressed; times (delta-encoded) and short values under a dictionary
        // are not: zstd gains little there, and the reader then needs no codec.
        let codecs: Vec<Compression> = (0..4).map(|c| group.column(c).compression()).collect();
        assert!(matches!(codecs[0], Compression::ZSTD(_)), "{codecs:?}");
        assert_eq!(codecs[1..], [Compression::UNCOMPRESSED; 3], "{codecs:?}");
        Ok(())
    }

    /// The codec changes how the compressed columns' pages are compressed, nothing else: the
    /// same pages, dictionaries and rows whatever it is.
    #[test]
    fn compressed_columns_have_a_page_per_block_and_the_rest_longer_pages()
    -> std::result::Result<(), Box<dyn std::error::Error>> {
        for codec in [SegmentCodec::Zstd, SegmentCodec::Lz4, SegmentCodec::None] {
            pages_of_a_segment_written_with(codec).map_err(|e| format!("{codec}: {e}"))?;
        }
        Ok(())
    }

    fn pages_of_a_segment_written_with(codec: SegmentCodec) -> std::result::Result<(), Box<dyn std::error::Error>> {
        use datafusion::arrow::array::{StringArray, TimestampNanosecondArray};
        use datafusion::arrow::datatypes::Schema;
        use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};

        let schema = Arc::new(Schema::new(body_severity_time()));
        // More than a row group, written as requests arrive: 1,000 rows at a time, so no
        // write starts where a block starts.
        let rows = CHUNK_ROWS + 3 * BLOCK_ROWS + 500;
        let mut encoder = SegmentEncoder::new(schema.clone(), rows)?.with_codec(codec);
        for start in (0..rows).step_by(1000) {
            let end = (start + 1000).min(rows);
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from_iter_values(
                        (start..end).map(|i| format!("request {} done in {} ms", i * 7919, i % 97)),
                    )),
                    Arc::new(StringArray::from_iter_values(
                        (start..end).map(|i| if i % 3 == 0 { "ERROR" } else { "INFO" }),
                    )),
                    Arc::new(TimestampNanosecondArray::from_iter_values(
                        (start..end).map(|i| 1_700_000_000_000_000_000 + i as i64 * 1_000_003),
                    )),
                ],
            )?;
            encoder.write(&batch)?;
        }
        let bytes = encoder.finish()?;
        let footer = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&bytes)?;
        assert_eq!(footer.file_metadata().num_rows() as usize, rows);
        assert_eq!(footer.num_row_groups(), 2);
        for group in footer.row_groups() {
            let codecs: Vec<Compression> = group.columns().iter().map(|c| c.compression()).collect();
            assert_eq!(
                codecs,
                [
                    codec.compression()?,
                    Compression::UNCOMPRESSED,
                    Compression::UNCOMPRESSED
                ]
            );
        }
        let pages = footer.offset_index().ok_or("no offset index")?;
        for (g, group) in pages.iter().enumerate() {
            let group_rows = footer.row_group(g).num_rows();
            let starts = |column: usize| -> Vec<i64> {
                group[column]
                    .page_locations()
                    .iter()
                    .map(|p| p.first_row_index)
                    .collect()
            };
            // Free text (compressed, no dictionary): a page for each block, starting with it.
            let blocks: Vec<i64> = (0..group_rows).step_by(BLOCK_ROWS).collect();
            assert_eq!(starts(0), blocks, "row group {g}: body pages");
            // Under a dictionary and delta-encoded: pages of PAGE_ROWS rows.
            let long: Vec<i64> = (0..group_rows).step_by(PAGE_ROWS).collect();
            assert_eq!(starts(1), long, "row group {g}: severity pages");
            assert_eq!(starts(2), long, "row group {g}: time pages");
        }
        // And the rows read back as written.
        let reader = datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(bytes, 8192)?;
        let mut read = 0;
        for batch in reader {
            let batch = batch?;
            let bodies = batch
                .column(0)
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or("body is not text")?;
            for (i, body) in bodies.iter().enumerate() {
                let row = read + i;
                assert_eq!(
                    body,
                    Some(format!("request {} done in {} ms", row * 7919, row % 97).as_str())
                );
            }
            read += batch.num_rows();
        }
        assert_eq!(read, rows);
        Ok(())
    }

    #[test]
    fn batches_passed_on_whole_are_sampled_all() -> std::result::Result<(), Box<dyn std::error::Error>> {
        use datafusion::arrow::array::StringArray;
        use datafusion::arrow::datatypes::Schema;
        use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
        use trawl_common::KqlType;

        let schema = Arc::new(Schema::new(vec![crate::schema::field(
            "note",
            KqlType::String,
            DataType::Utf8,
        )]));
        // The first request lacks the column; the next ones have free text in it.
        let mut batches = vec![RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec![None::<&str>; 1000]))],
        )?];
        for part in 0..8 {
            let notes: Vec<String> = (0..1000).map(|i| format!("note {part}-{i} of a longer text")).collect();
            batches.push(RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(StringArray::from(notes))],
            )?);
        }
        let reader = SerializedFileReader::new(encode_parquet(&batches, SegmentCodec::Zstd)?)?;
        let column = reader.metadata().row_group(0).column(0);
        assert!(
            column.dictionary_page_offset().is_none(),
            "free text is not dictionary-encoded"
        );
        assert!(matches!(column.compression(), Compression::ZSTD(_)));
        Ok(())
    }

    #[test]
    fn long_values_under_a_dictionary_are_compressed() -> std::result::Result<(), Box<dyn std::error::Error>> {
        use datafusion::arrow::array::StringArray;
        use datafusion::arrow::datatypes::Schema;
        use datafusion::parquet::file::reader::{FileReader, SerializedFileReader};
        use trawl_common::KqlType;

        let schema = Arc::new(Schema::new(vec![crate::schema::field(
            "resource",
            KqlType::Dynamic,
            DataType::Utf8,
        )]));
        let rows = 10_000;
        let bags: Vec<String> = (0..rows)
            .map(|i| {
                format!(
                    r#"{{"service.name":"checkout-{}","host.name":"node-{}.cluster.example"}}"#,
                    i % 4,
                    i % 7
                )
            })
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(bags))])?;
        let mut encoder = SegmentEncoder::new(schema, rows)?;
        encoder.write(&batch)?;
        let reader = SerializedFileReader::new(encoder.finish()?)?;
        let column = reader.metadata().row_group(0).column(0);
        assert!(column.dictionary_page_offset().is_some());
        assert!(
            matches!(column.compression(), Compression::ZSTD(_)),
            "{:?}",
            column.compression()
        );
        Ok(())
    }
}
