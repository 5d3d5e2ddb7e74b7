//! Rows written straight into columns: what a protocol mapping on the hot path (OTLP logs and
//! spans) fills instead of a [`crate::Row`] per record, so no cell is allocated, moved or
//! dropped one by one. The write path (`trawl_storage::columns_to_batch`) orders the rows by
//! time and makes the segment's batch of them.
//!
//! A mapping declares its columns once ([`ColumnsBuilder::column`]; the order of declaration is
//! the order of the batch), then per row sets the cells it has and ends the row; a cell not set
//! is null, and a column no row set is left out. Bag columns (`dynamic`) that have shredded
//! keys (`crate::shred`) take the keys' values with the bag ([`ColumnsBuilder::set_bag`]): the
//! mapping knows them as it writes the bag's JSON, so nobody parses the text again.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{ArrayBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};

use crate::KqlType;
use crate::shred::shredded_keys;

/// A declared column of a [`ColumnsBuilder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot(usize);

/// Values of one column, as Arrow builders. Datetimes and timespans are nanoseconds.
#[derive(Debug)]
enum Values {
    Bool(BooleanBuilder),
    Integer(Int64Builder),
    Real(Float64Builder),
    Text(StringBuilder),
}

impl Values {
    fn new(kql_type: KqlType, rows: usize) -> Values {
        match kql_type {
            KqlType::Bool => Values::Bool(BooleanBuilder::with_capacity(rows)),
            KqlType::Int | KqlType::Long | KqlType::DateTime | KqlType::Timespan => {
                Values::Integer(Int64Builder::with_capacity(rows))
            }
            KqlType::Real | KqlType::Decimal => Values::Real(Float64Builder::with_capacity(rows)),
            // Sized by its first value (see `sized_for`).
            KqlType::String | KqlType::Guid | KqlType::Dynamic => Values::Text(StringBuilder::with_capacity(0, 0)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Values::Bool(b) => b.len(),
            Values::Integer(b) => b.len(),
            Values::Real(b) => b.len(),
            Values::Text(b) => b.len(),
        }
    }

    fn append_nulls(&mut self, n: usize) {
        match self {
            Values::Bool(b) => b.append_nulls(n),
            Values::Integer(b) => b.append_nulls(n),
            Values::Real(b) => b.append_nulls(n),
            Values::Text(b) => b.append_nulls(n),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Values::Bool(b) => Arc::new(b.finish()),
            Values::Integer(b) => Arc::new(b.finish()),
            Values::Real(b) => Arc::new(b.finish()),
            Values::Text(b) => Arc::new(b.finish()),
        }
    }
}

#[derive(Debug)]
struct ColumnBuilder {
    name: &'static str,
    kql_type: KqlType,
    values: Values,
    /// The shredded keys of a bag column, and a builder per key.
    keys: &'static [&'static str],
    hidden: Vec<StringBuilder>,
    /// Whether any row set this column.
    used: bool,
}

impl ColumnBuilder {
    /// Whether row `row` may be set: nulls fill the rows before it; a second cell for the
    /// same row is ignored (the first one counts, as in a [`crate::Row`]).
    fn open(&mut self, row: usize) -> bool {
        let len = self.values.len();
        if len > row {
            return false;
        }
        if len < row {
            self.values.append_nulls(row - len);
        }
        self.used = true;
        true
    }
}

/// Builds the columns of a request's rows; see the module's documentation.
#[derive(Debug, Default)]
pub struct ColumnsBuilder {
    columns: Vec<ColumnBuilder>,
    rows: usize,
    /// How many rows are expected: builders are sized for them, not grown step by step.
    expected_rows: usize,
}

impl ColumnsBuilder {
    pub fn new() -> ColumnsBuilder {
        ColumnsBuilder::default()
    }

    /// A builder for about `rows` rows.
    pub fn with_rows(rows: usize) -> ColumnsBuilder {
        ColumnsBuilder {
            expected_rows: rows,
            ..ColumnsBuilder::default()
        }
    }

    /// Declares a column (again: the slot it has).
    pub fn column(&mut self, name: &'static str, kql_type: KqlType) -> Slot {
        if let Some(i) = self.columns.iter().position(|c| c.name == name) {
            return Slot(i);
        }
        let keys = if kql_type == KqlType::Dynamic {
            shredded_keys(name)
        } else {
            &[]
        };
        self.columns.push(ColumnBuilder {
            name,
            kql_type,
            values: Values::new(kql_type, self.expected_rows),
            keys,
            hidden: keys.iter().map(|_| StringBuilder::with_capacity(0, 0)).collect(),
            used: false,
        });
        Slot(self.columns.len() - 1)
    }

    /// The shredded keys of a bag column, in the order [`ColumnsBuilder::set_bag`] takes
    /// their values.
    pub fn shredded_keys(&self, slot: Slot) -> &'static [&'static str] {
        self.columns.get(slot.0).map_or(&[], |c| c.keys)
    }

    fn open(&mut self, slot: Slot) -> Option<&mut ColumnBuilder> {
        let row = self.rows;
        let column = self.columns.get_mut(slot.0)?;
        column.open(row).then_some(column)
    }

    pub fn set_bool(&mut self, slot: Slot, value: bool) {
        if let Some(ColumnBuilder {
            values: Values::Bool(b),
            ..
        }) = self.open(slot)
        {
            b.append_value(value);
        }
    }

    /// A long, or the nanoseconds of a datetime or timespan.
    pub fn set_integer(&mut self, slot: Slot, value: i64) {
        match self.open(slot) {
            Some(ColumnBuilder {
                values: Values::Integer(b),
                ..
            }) => b.append_value(value),
            Some(ColumnBuilder {
                values: Values::Real(b),
                ..
            }) => b.append_value(value as f64),
            _ => {}
        }
    }

    pub fn set_real(&mut self, slot: Slot, value: f64) {
        if let Some(ColumnBuilder {
            values: Values::Real(b),
            ..
        }) = self.open(slot)
        {
            b.append_value(value);
        }
    }

    /// A string, or the JSON text of a dynamic value that is not a bag with shredded keys.
    pub fn set_text(&mut self, slot: Slot, text: &str) {
        self.set_bag(slot, text, &[]);
    }

    /// The JSON text of a dynamic value and, for a column with shredded keys, the keys'
    /// values as `json_as_text` reads them from `text` (a JSON string decoded, another value
    /// as its JSON text, none when absent or null), in [`ColumnsBuilder::shredded_keys`]
    /// order. Missing values are none.
    pub fn set_bag(&mut self, slot: Slot, text: &str, keys: &[Option<&str>]) {
        let row = self.rows;
        let expected = self.expected_rows;
        let Some(column) = self.open(slot) else { return };
        let Values::Text(b) = &mut column.values else { return };
        sized_for(b, expected, text.len());
        b.append_value(text);
        for (i, hidden) in column.hidden.iter_mut().enumerate() {
            let missing = row.saturating_sub(hidden.len());
            if missing > 0 {
                hidden.append_nulls(missing);
            }
            let value = keys.get(i).copied().flatten();
            sized_for(hidden, expected, value.map_or(0, str::len));
            hidden.append_option(value);
        }
    }

    /// Ends the current row.
    pub fn end_row(&mut self) {
        self.rows += 1;
    }

    /// The columns that any row set, each padded to [`ColumnsBuilder::rows`].
    pub fn finish(mut self) -> Columns {
        let rows = self.rows;
        let columns = self
            .columns
            .iter_mut()
            .filter(|c| c.used)
            .map(|c| {
                let missing = rows.saturating_sub(c.values.len());
                c.values.append_nulls(missing);
                let hidden = c
                    .hidden
                    .iter_mut()
                    .map(|h| {
                        let missing = rows.saturating_sub(h.len());
                        h.append_nulls(missing);
                        Arc::new(h.finish()) as ArrayRef
                    })
                    .collect();
                Column {
                    name: c.name,
                    kql_type: c.kql_type,
                    values: c.values.finish(),
                    keys: c.keys,
                    hidden,
                }
            })
            .collect();
        Columns { rows, columns }
    }
}

/// Before the first value of a text column: room for `rows` values about as long as this
/// one (a column's values are often alike: ids, names, the resource of the request), so the
/// builder does not grow by copying itself over and over.
fn sized_for(builder: &mut StringBuilder, rows: usize, first_value_bytes: usize) {
    if rows == 0 || builder.values_capacity() > 0 || !builder.values_slice().is_empty() {
        return;
    }
    let mut sized = StringBuilder::with_capacity(rows, rows.saturating_mul(first_value_bytes + 8).min(64 << 20));
    let nulls = builder.len();
    if nulls > 0 {
        sized.append_nulls(nulls);
    }
    *builder = sized;
}

/// The finished columns of a [`ColumnsBuilder`].
#[derive(Debug, Clone)]
pub struct Columns {
    pub rows: usize,
    pub columns: Vec<Column>,
}

/// One finished column: datetimes and timespans as `Int64` nanoseconds, strings and dynamic
/// values as `Utf8`.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: &'static str,
    pub kql_type: KqlType,
    pub values: ArrayRef,
    /// The shredded keys of a bag column and their values (one array per key).
    pub keys: &'static [&'static str],
    pub hidden: Vec<ArrayRef>,
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;

    use super::*;

    #[test]
    fn cells_not_set_are_null_and_unused_columns_are_left_out() {
        let mut b = ColumnsBuilder::new();
        let time = b.column("timestamp", KqlType::DateTime);
        let text = b.column("severity_text", KqlType::String);
        let never = b.column("never", KqlType::Long);
        let bag = b.column("resource", KqlType::Dynamic);
        assert_eq!(b.shredded_keys(bag)[0], "service.name");
        assert!(b.shredded_keys(never).is_empty());
        b.set_integer(time, 10);
        b.set_text(text, "INFO");
        b.set_text(text, "ignored: the first cell counts");
        b.end_row();
        b.set_integer(time, 5);
        b.set_bag(bag, r#"{"service.name":"api"}"#, &[Some("api")]);
        b.end_row();
        b.end_row();
        let columns = b.finish();
        assert_eq!(columns.rows, 3);
        let names: Vec<_> = columns.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, ["timestamp", "severity_text", "resource"]);
        let times = columns.columns[0].values.as_primitive::<Int64Type>();
        assert_eq!((times.value(0), times.value(1), times.is_null(2)), (10, 5, true));
        let text = columns.columns[1].values.as_string::<i32>();
        assert_eq!((text.value(0), text.is_null(1), text.len()), ("INFO", true, 3));
        let resource = &columns.columns[2];
        assert_eq!(resource.hidden.len(), resource.keys.len());
        let service = resource.hidden[0].as_string::<i32>();
        assert_eq!(
            (service.is_null(0), service.value(1), service.is_null(2)),
            (true, "api", true)
        );
        assert!(resource.hidden[1].as_string::<i32>().is_null(1));
    }
}
