//! Tests of the segment encoder: column choices, pages, codecs and statistics.

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

/// A column's choice reads about `SAMPLE_BYTES` of it: long values that repeat still get a
/// dictionary, long values that differ do not (even when few were read), and the sample
/// spans every batch given.
#[test]
fn a_sample_of_long_values_stops_early_and_still_tells_their_cardinality() {
    use datafusion::arrow::array::StringArray;
    let long = |i: usize| format!(r#"{{"service.name":"s{i}","pad":"{}"}}"#, "x".repeat(2_000));
    let repeating = StringArray::from_iter_values((0..SAMPLE_ROWS).map(|i| long(i % 5)));
    let choice = choose(&[&repeating]).map(|c| (c.dictionary, c.bags));
    assert_eq!(choice, Some((true, true)));
    let differing = StringArray::from_iter_values((0..SAMPLE_ROWS).map(long));
    let choice = choose(&[&differing]).map(|c| c.dictionary);
    assert_eq!(choice, Some(false), "cut after about 130 values, all different");
    // Few rows in all: too few to tell, so a dictionary.
    let few = StringArray::from_iter_values((0..10).map(|i| format!("v{i}")));
    assert_eq!(choose(&[&few]).map(|c| c.dictionary), Some(true));
    // Two batches: the second's values count too.
    let same = StringArray::from_iter_values((0..40).map(|_| "a".to_string()));
    let other = StringArray::from_iter_values((0..200).map(|i| format!("v{i}")));
    assert_eq!(choose(&[&same]).map(|c| c.dictionary), Some(true));
    assert_eq!(choose(&[&same, &other]).map(|c| c.dictionary), Some(false));
}
