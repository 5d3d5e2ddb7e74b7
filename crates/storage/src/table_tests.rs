use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::logical_expr::{col, lit};

use super::*;

#[test]
fn bloom_filters_are_read_only_for_filters_on_the_columns_that_have_them() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("severity_text", DataType::Utf8View, true),
        Field::new("trace_id", DataType::Utf8View, true),
    ]));
    let reads = |filters: &[Expr]| {
        blooms_for(ParquetSource::new(Arc::clone(&schema)), filters)
            .table_parquet_options()
            .global
            .bloom_filter_on_read
    };
    assert!(!reads(&[]));
    assert!(!reads(&[col("severity_text").eq(lit("ERROR"))]));
    assert!(reads(&[col("trace_id").eq(lit("abc"))]));
    assert!(reads(&[
        col("severity_text").eq(lit("ERROR")),
        col("severity_text").eq(lit("WARN")).or(col("trace_id").eq(lit("abc"))),
    ]));
}
