use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use trawl_common::KqlType;

use super::write::PROBE_VALUES;
use super::*;
use crate::schema::field;
use crate::segment::SegmentEncoder;

type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        field("n", KqlType::Long, DataType::Int64),
        field("body", KqlType::String, DataType::Utf8),
        field("attributes", KqlType::Dynamic, DataType::Utf8),
    ]))
}

/// `rows` rows; row `i`'s body is `line i ...`, with `needle` in the rows of `needle_rows`.
fn batch(rows: usize, needle_rows: &[usize]) -> crate::Result<RecordBatch> {
    let bodies: Vec<Option<String>> = (0..rows)
        .map(|i| {
            if i % 97 == 0 {
                None
            } else if needle_rows.contains(&i) {
                Some(format!("Line {i} has the Zqxjkv token"))
            } else {
                Some(format!("line {i} request GET /api/v{} done", i % 7))
            }
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..rows as i64)),
        Arc::new(StringArray::from(bodies)),
        Arc::new(StringArray::from(vec![Some(r#"{"k":"zqxjkv"}"#); rows])),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}

fn index_of_batches(batches: &[RecordBatch]) -> std::result::Result<TokenIndex, Box<dyn std::error::Error>> {
    let mut builder = TokenIndexBuilder::new(&schema());
    for batch in batches {
        builder.add(batch)?;
    }
    let bytes = builder.finish()?.ok_or("no index")?;
    Ok(TokenIndex::parse(&bytes)?)
}

fn has(column: &str, needle: &str) -> Expr {
    let udf = Arc::new(datafusion::logical_expr::ScalarUDF::from(
        trawl_functions::strings::HasUdf::new(false),
    ));
    udf.call(vec![col(column), lit(needle)])
}

#[test]
fn blocks_with_the_term_are_the_only_ones_kept() -> TestResult {
    let rows = 5 * BLOCK_ROWS + 100;
    let needles = [10, 3 * BLOCK_ROWS + 5, 5 * BLOCK_ROWS + 50];
    // Written in uneven batches, so blocks straddle batches.
    let whole = batch(rows, &needles)?;
    let parts = [
        whole.slice(0, 700),
        whole.slice(700, 2000),
        whole.slice(2700, rows - 2700),
    ];
    let index = index_of_batches(&parts)?;
    assert!(index.has_column("body"));
    assert!(
        !index.has_column("attributes"),
        "dynamic columns of bags are not indexed"
    );
    assert!(!index.has_column("n"));
    let need = Need::of_filters(&[has("body", "ZQXJKV")]).ok_or("no need")?;
    let passing: Vec<bool> = (0..index.blocks()).map(|b| need.may_match(&index, b)).collect();
    assert_eq!(passing, vec![true, false, false, true, false, true]);
    // Every block holds the terms of its rows, case-folded.
    let need = Need::of_filters(&[has("body", "Request")]).ok_or("no need")?;
    assert!((0..index.blocks()).all(|b| need.may_match(&index, b)));
    Ok(())
}

#[test]
fn chunks_become_skips_and_row_selections() -> TestResult {
    let rows = 4 * BLOCK_ROWS;
    let index = index_of_batches(&[batch(rows, &[BLOCK_ROWS + 3])?])?;
    let need = Need::of_filters(&[has("body", "zqxjkv")]).ok_or("no need")?;
    // Two chunks of two blocks each: the first holds the needle in its second block.
    let chunks = rows_by_chunk(&index, &need, &[2 * BLOCK_ROWS as u64, 2 * BLOCK_ROWS as u64]).ok_or("none")?;
    let expected = RowSelection::from(vec![RowSelector::skip(BLOCK_ROWS), RowSelector::select(BLOCK_ROWS)]);
    assert_eq!(chunks, vec![ChunkRows::Some(expected), ChunkRows::None]);
    // A chunk made of one passing block is read whole.
    let chunks = rows_by_chunk(&index, &need, &[BLOCK_ROWS as u64, 3 * BLOCK_ROWS as u64]).ok_or("none")?;
    assert_eq!(chunks[0], ChunkRows::None);
    assert!(matches!(chunks[1], ChunkRows::Some(_)));
    let chunks = rows_by_chunk(&index, &need, &[rows as u64]).ok_or("none")?;
    assert!(matches!(chunks[0], ChunkRows::Some(_)));
    // Chunks that do not add up to the index's rows: the index is not used.
    assert!(rows_by_chunk(&index, &need, &[rows as u64 - 1]).is_none());
    Ok(())
}

#[test]
fn the_bytes_of_the_filters_evaluated_are_counted() -> TestResult {
    let rows = 4 * BLOCK_ROWS;
    let index = index_of_batches(&[batch(rows, &[BLOCK_ROWS + 3])?])?;
    let (_, body_bytes, blocks) = index
        .columns()
        .into_iter()
        .find(|(name, _, _)| name == "body")
        .ok_or("body is indexed")?;
    assert_eq!(blocks, 4);
    let one = Need::of_filters(&[has("body", "zqxjkv")]).ok_or("no need")?;
    let (_, evaluated) = rows_by_chunk_counted(&index, &one, &[rows as u64]).ok_or("none")?;
    // Each block's filter is evaluated once.
    assert_eq!(evaluated, body_bytes as u64);
    // Two conditions on the column: its filters are evaluated for each, but the second only
    // where the first passed (one block).
    let two = Need::of_filters(&[has("body", "zqxjkv"), has("body", "token")]).ok_or("no need")?;
    let (_, evaluated) = rows_by_chunk_counted(&index, &two, &[rows as u64]).ok_or("none")?;
    assert!(evaluated > body_bytes as u64 && evaluated < 2 * body_bytes as u64, "{evaluated}");
    // A column without an index evaluates nothing: the index cannot tell.
    let unindexed = Need::of_filters(&[has("n", "1")]).ok_or("no need")?;
    assert!(rows_by_chunk_counted(&index, &unindexed, &[rows as u64]).is_none());
    Ok(())
}

#[test]
fn filters_the_index_can_and_cannot_use() {
    let terms = |t: &[&str]| t.iter().map(|t| t.as_bytes().to_vec()).collect::<Vec<_>>();
    let body = |t: &[&str]| Need::Terms {
        column: "body".into(),
        terms: terms(t),
    };
    assert_eq!(
        Need::of_filters(&[has("body", "Connection reset")]),
        Some(body(&["connection", "reset"]))
    );
    assert_eq!(
        Need::of_filters(&[col("body").eq(lit("GET /x"))]),
        Some(body(&["get", "x"]))
    );
    assert_eq!(Need::of_filters(&[lit("abc").eq(col("body"))]), Some(body(&["abc"])));
    assert_eq!(
        Need::of_filters(&[col("body").in_list(vec![lit("a"), lit("b")], false)]),
        Some(Need::Any(vec![body(&["a"]), body(&["b"])]))
    );
    assert_eq!(
        Need::of_filters(&[has("body", "a").or(has("body", "b"))]),
        Some(Need::Any(vec![body(&["a"]), body(&["b"])]))
    );
    // A conjunction keeps what it can use; a disjunction needs both sides.
    assert_eq!(
        Need::of_filters(&[has("body", "a").and(col("n").gt(lit(3)))]),
        Some(body(&["a"]))
    );
    assert_eq!(Need::of_filters(&[has("body", "a").or(col("n").gt(lit(3)))]), None);
    assert_eq!(Need::of_filters(&[Expr::Not(Box::new(has("body", "a")))]), None);
    assert_eq!(Need::of_filters(&[col("body").in_list(vec![lit("a")], true)]), None);
    assert_eq!(Need::of_filters(&[has("body", "--")]), None, "a needle without terms");
    assert_eq!(Need::of_filters(&[col("body").eq(col("other"))]), None);
    assert_eq!(
        Need::of_filters(&[has("body", "a"), has("body", "b")]),
        Some(Need::All(vec![body(&["a"]), body(&["b"])]))
    );
}

#[test]
fn quoted_json_strings_are_indexed_as_has_reads_them_and_as_written() -> TestResult {
    let schema = Arc::new(Schema::new(vec![field("body", KqlType::String, DataType::Utf8)]));
    let values = StringArray::from(vec![r#""first\nsecond""#, r#""caf\u00e9 x""#]);
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(values)])?;
    let mut builder = TokenIndexBuilder::new(&schema);
    builder.add(&batch)?;
    let index = TokenIndex::parse(&builder.finish()?.ok_or("no index")?)?;
    for term in ["second", "nsecond", "first", "café", "u00e9"] {
        let need = Need::of_filters(&[has("body", term)]).ok_or("no need")?;
        assert!(need.may_match(&index, 0), "{term}");
    }
    Ok(())
}

#[test]
fn damaged_index_bytes_are_an_error_not_a_panic() -> TestResult {
    let mut builder = TokenIndexBuilder::new(&schema());
    builder.add(&batch(3 * BLOCK_ROWS, &[7])?)?;
    let bytes = builder.finish()?.ok_or("no index")?;
    assert!(TokenIndex::parse(&bytes).is_ok());
    for cut in 0..bytes.len() {
        assert!(TokenIndex::parse(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        let mut damaged = bytes.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % damaged.len() as u64) as usize;
            damaged[at] ^= (state >> 32) as u8 | 1;
        }
        let _ = TokenIndex::parse(&damaged);
    }
    Ok(())
}

#[test]
fn the_segment_file_carries_the_index_and_still_reads() -> TestResult {
    let rows = 2 * BLOCK_ROWS + 9;
    let batch = batch(rows, &[5])?;
    let mut encoder = SegmentEncoder::new(schema(), rows)?;
    encoder.write(&batch)?;
    let bytes = encoder.finish()?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())?;
    let footer = Arc::clone(reader.metadata());
    let read: usize = reader
        .build()?
        .map(|b| b.map(|b| b.num_rows()))
        .sum::<std::result::Result<usize, _>>()?;
    assert_eq!(read, rows);
    let (offset, length) = location(&footer, bytes.len() as u64).ok_or("no location")?;
    let index = TokenIndex::parse(&bytes[offset as usize..(offset + length) as usize])?;
    assert_eq!(index.rows, rows as u64);
    assert_eq!(index.blocks(), 3);
    // A location past the file's end is not believed.
    assert!(location(&footer, offset + length - 1).is_none());
    Ok(())
}

#[test]
fn every_term_of_every_row_is_in_its_block() -> TestResult {
    // Columns that repeat a few values, many values, and hardly ever the same one: the
    // blocks skip re-reading repeats, never a term.
    let schema = Arc::new(Schema::new(vec![
        field("few", KqlType::String, DataType::Utf8),
        field("many", KqlType::String, DataType::Utf8),
        field("body", KqlType::String, DataType::Utf8),
    ]));
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let rows = 3 * BLOCK_ROWS + 77;
    let mut values: Vec<[String; 3]> = Vec::with_capacity(rows);
    for i in 0..rows {
        values.push([
            ["INFO", "WARN error", "DEBUG"][next(3) as usize].to_string(),
            format!("route/{} GET", next(if i < BLOCK_ROWS { 40 } else { 400 })),
            format!("line {i} Word{} ÜBER-id-{} café.MiXeD", next(50), next(1_000_000)),
        ]);
    }
    let columns: Vec<ArrayRef> = (0..3)
        .map(|c| Arc::new(StringArray::from_iter_values(values.iter().map(|v| v[c].clone()))) as ArrayRef)
        .collect();
    let whole = RecordBatch::try_new(schema.clone(), columns)?;
    let mut builder = TokenIndexBuilder::new(&schema);
    for part in [whole.slice(0, 1000), whole.slice(1000, rows - 1000)] {
        builder.add(&part)?;
    }
    let index = TokenIndex::parse(&builder.finish()?.ok_or("no index")?)?;
    for (row, row_values) in values.iter().enumerate() {
        for (name, value) in ["few", "many", "body"].iter().zip(row_values) {
            for term in trawl_functions::tokenizer::terms(value) {
                assert!(
                    index.may_hold_term(name, row / BLOCK_ROWS, term),
                    "row {row}: {name} lost {term}"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn filters_have_the_bits_parquet_would_set() -> TestResult {
    // Terms with repeats, as a block of bodies has them; sizes from one term to many.
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        seed >> 33
    };
    for count in [1usize, 2, 31, 500, 4000, 20000] {
        let terms: Vec<Vec<u8>> = (0..count)
            .map(|_| format!("t{}", next() % (count as u64 / 3 + 1)).into_bytes())
            .collect();
        let hashes: Vec<u64> = terms.iter().map(|t| write::term_hash(t)).collect();
        let ours = write::filter_of(&hashes, FPP)?;

        let mut parquet = Sbbf::new_with_ndv_fpp(count as u64, FPP)?;
        for term in &terms {
            parquet.insert(&term[..]);
        }
        parquet.fold_to_target_fpp(FPP);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        ours.write_bitset(&mut a)?;
        parquet.write_bitset(&mut b)?;
        assert_eq!(a, b, "{count} terms");
        assert!(terms.iter().all(|t| ours.check(&t[..])));
    }
    Ok(())
}

#[test]
fn a_dynamic_column_of_bags_stops_being_tokenized_once_its_first_values_tell() -> TestResult {
    let rows = BLOCK_ROWS / 2;
    let schema = Arc::new(Schema::new(vec![
        field("attributes", KqlType::Dynamic, DataType::Utf8),
        field("payload", KqlType::Dynamic, DataType::Utf8),
    ]));
    // Distinct bags; a dynamic column of text (a quoted JSON string) among them.
    let bags: Vec<String> = (0..rows).map(|i| format!(r#"{{"run":"r{i}","k":"v{i}"}}"#)).collect();
    let texts: Vec<String> = (0..rows).map(|i| format!(r#""line {i} done""#)).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(&bags)),
            Arc::new(StringArray::from_iter_values(&texts)),
        ],
    )?;
    let mut builder = TokenIndexBuilder::new(&schema);
    builder.add(&batch)?;
    let hashes: Vec<usize> = builder.columns.iter().map(|c| c.hashes.len()).collect();
    // The bags' terms stop at the values the probe looked at; the text goes on.
    assert!(hashes[0] < PROBE_VALUES * 5, "{hashes:?}");
    assert!(hashes[1] >= rows * 3, "{hashes:?}");
    let index = TokenIndex::parse(&builder.finish()?.ok_or("no index")?)?;
    assert!(!index.has_column("attributes"));
    assert!(index.has_column("payload"));
    Ok(())
}
