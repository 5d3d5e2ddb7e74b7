//! Table schemas: KQL column sets → Arrow schemas (the type mapping itself lives in
//! `trawl_functions::types`).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use trawl_catalog::ColumnInfo;
pub use trawl_functions::types::{
    KQL_TYPE_METADATA, UTC, arrow_type, field, kql_type_of, kql_type_of_arrow, segment_arrow_type,
};

/// The query-time schema of a table with these columns.
pub fn table_schema(columns: &[ColumnInfo]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| field(&c.name, c.kql_type, arrow_type(c.kql_type)))
            .collect::<Vec<_>>(),
    ))
}

/// The union of several column sets, widening conflicting types, in first-seen order.
pub fn union_columns<'a>(sets: impl IntoIterator<Item = &'a [ColumnInfo]>) -> Vec<ColumnInfo> {
    let mut union: Vec<ColumnInfo> = Vec::new();
    for set in sets {
        for column in set {
            match union.iter_mut().find(|c| c.name == column.name) {
                Some(existing) => existing.kql_type = existing.kql_type.widen(column.kql_type),
                None => union.push(column.clone()),
            }
        }
    }
    union
}

/// The kind of telemetry rows with these columns hold: `"metrics"`, `"spans"` or `"logs"`,
/// told apart by a column only that kind has. Segments hold one kind each (ingest buffers and
/// merges never mix kinds), so a filter on a column of one kind (`isnotempty(body)`,
/// `isnotempty(span_name)`) skips whole segments of the others by their null counts.
pub fn row_kind<'a>(mut columns: impl Iterator<Item = &'a str>) -> &'static str {
    let mut kind = "logs";
    for name in columns.by_ref() {
        match name {
            "metric_type" => return "metrics",
            "duration" => kind = "spans",
            _ => {}
        }
    }
    kind
}
