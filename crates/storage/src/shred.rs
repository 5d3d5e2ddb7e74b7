//! Shredding (decision 002): the hidden columns of `trawl_common::shred` computed from their
//! bags, when a batch is written (ingest and merges).
//!
//! A hidden column must equal `json_as_text(bag, key)` on every row, because queries read it in
//! place of the bag. The extraction below walks each bag once with the same parser
//! (jiter) and the same steps as `json_as_text` (first occurrence of a key wins, a JSON string
//! is decoded, any other value is its raw JSON text, `null` and errors give null); a test
//! checks the two agree on awkward input. Consecutive equal bags (the resource of one
//! request) are walked once.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayBuilder, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use jiter::{Jiter, Peek};
use trawl_catalog::ColumnInfo;
use trawl_common::KqlType;
use trawl_common::shred::{is_hidden_column, shredded_column, shredded_keys};

use crate::Result;
use crate::schema::{field, kql_type_of, segment_arrow_type};

/// One bag column of a schema and the keys shredded out of it.
#[derive(Debug, Clone)]
struct ShreddedBag {
    index: usize,
    keys: &'static [&'static str],
}

/// How to add hidden columns to batches of one schema.
#[derive(Debug, Clone)]
pub struct Shredder {
    bags: Vec<ShreddedBag>,
    /// The input's columns without hidden ones, then the hidden columns.
    schema: SchemaRef,
    /// Positions of the input's own (not hidden) columns.
    kept: Vec<usize>,
}

impl Shredder {
    /// A shredder for batches of `input`. Hidden columns already in `input` are dropped and
    /// computed again; every listed key of each `dynamic` bag column gets its column, so all
    /// segments written with a bag have the same hidden columns.
    pub fn new(input: &Schema) -> Shredder {
        let kept: Vec<usize> = (0..input.fields().len())
            .filter(|&i| !is_hidden_column(input.field(i).name()))
            .collect();
        let mut fields: Vec<Field> = kept.iter().map(|&i| input.field(i).clone()).collect();
        let mut bags = Vec::new();
        for &index in &kept {
            let bag = input.field(index);
            let keys = shredded_keys(bag.name());
            let is_text = matches!(
                bag.data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            );
            if keys.is_empty() || kql_type_of(bag) != KqlType::Dynamic || !is_text {
                continue;
            }
            for key in keys {
                let name = shredded_column(bag.name(), key);
                fields.push(field(&name, KqlType::String, segment_arrow_type(KqlType::String)));
            }
            bags.push(ShreddedBag { index, keys });
        }
        Shredder {
            bags,
            schema: Arc::new(Schema::new(fields)),
            kept,
        }
    }

    /// The schema of the batches [`Shredder::shred`] makes.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// `columns` (the input's) without hidden ones, then the hidden columns.
    pub fn columns(&self, columns: &[ColumnInfo]) -> Vec<ColumnInfo> {
        let mut out: Vec<ColumnInfo> = columns.iter().filter(|c| !is_hidden_column(&c.name)).cloned().collect();
        let hidden = self.schema.fields().iter().skip(self.kept.len());
        out.extend(hidden.map(|f| ColumnInfo {
            name: f.name().clone(),
            kql_type: KqlType::String,
        }));
        out
    }

    /// `batch` (of the input schema) with its hidden columns.
    pub fn shred(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let hidden = self
            .bags
            .iter()
            .flat_map(|bag| shred_column(batch.column(bag.index).as_ref(), bag.keys))
            .collect();
        self.assemble(batch, hidden)
    }

    /// Builders for the hidden columns of each shredded bag, by the bag's column position in
    /// the input schema, in column order: for a writer that sees each bag's text as it builds
    /// the batch.
    pub(crate) fn hidden_builders(&self, rows: usize) -> Vec<(usize, HiddenBuilder)> {
        self.bags
            .iter()
            .map(|bag| (bag.index, HiddenBuilder::new(bag.keys, rows)))
            .collect()
    }

    /// `batch` (of the input schema) with `hidden`: the hidden columns of every bag in order,
    /// as [`Shredder::hidden_builders`] made them.
    pub(crate) fn assemble(&self, batch: &RecordBatch, hidden: Vec<ArrayRef>) -> Result<RecordBatch> {
        let mut arrays: Vec<ArrayRef> = self.kept.iter().map(|&i| batch.column(i).clone()).collect();
        arrays.extend(hidden);
        Ok(RecordBatch::try_new(self.schema.clone(), arrays)?)
    }
}

/// The hidden columns of one bag column, built row by row. A text several rows share (the
/// resource of a request, one `Arc` in every row) is walked once, however its rows are
/// ordered.
pub(crate) struct HiddenBuilder {
    keys: &'static [&'static str],
    builders: Vec<StringBuilder>,
    /// Values of shared texts, by the address of the text.
    shared: datafusion::common::HashMap<usize, Vec<Option<String>>>,
    scratch: Vec<Option<String>>,
}

impl HiddenBuilder {
    fn new(keys: &'static [&'static str], rows: usize) -> HiddenBuilder {
        HiddenBuilder {
            keys,
            builders: keys.iter().map(|_| StringBuilder::with_capacity(rows, 0)).collect(),
            shared: datafusion::common::HashMap::default(),
            scratch: vec![None; keys.len()],
        }
    }

    fn len(&self) -> usize {
        self.builders.first().map_or(0, |b| b.len())
    }

    fn pad_to(&mut self, rows: usize) {
        let missing = rows.saturating_sub(self.len());
        if missing > 0 {
            self.builders.iter_mut().for_each(|b| b.append_nulls(missing));
        }
    }

    /// Appends the hidden values of row `row` whose bag is `text`. `shared` is the text's
    /// address when other rows hold the same text; the address must stay the text's while
    /// this builder lives. A second bag for the same row is ignored (the first one counts).
    pub(crate) fn append(&mut self, row: usize, text: &str, shared: Option<usize>) {
        if self.len() > row {
            return;
        }
        self.pad_to(row);
        let keys = self.keys;
        let values = match shared {
            Some(address) => self.shared.entry(address).or_insert_with(|| {
                let mut values = vec![None; keys.len()];
                extract_keys(text, keys, &mut values);
                values
            }),
            None => {
                self.scratch.iter_mut().for_each(|v| *v = None);
                extract_keys(text, keys, &mut self.scratch);
                &mut self.scratch
            }
        };
        for (builder, value) in self.builders.iter_mut().zip(values.iter()) {
            builder.append_option(value.as_deref());
        }
    }

    /// Appends again, as row `row`, the values of the last text appended without an address.
    fn repeat(&mut self, row: usize) {
        if self.len() > row {
            return;
        }
        self.pad_to(row);
        for (builder, value) in self.builders.iter_mut().zip(&self.scratch) {
            builder.append_option(value.as_deref());
        }
    }

    /// The hidden columns of `rows` rows.
    pub(crate) fn finish(mut self, rows: usize) -> Vec<ArrayRef> {
        self.pad_to(rows);
        self.builders
            .into_iter()
            .map(|mut b| Arc::new(b.finish()) as ArrayRef)
            .collect()
    }
}

/// The hidden columns of `keys` for one bag column of JSON text.
fn shred_column(bags: &dyn Array, keys: &'static [&'static str]) -> Vec<ArrayRef> {
    if let Some(array) = bags.as_string_opt::<i32>() {
        shred_texts(array.iter(), array.len(), keys)
    } else if let Some(array) = bags.as_string_view_opt() {
        shred_texts(array.iter(), array.len(), keys)
    } else if let Some(array) = bags.as_string_opt::<i64>() {
        shred_texts(array.iter(), array.len(), keys)
    } else {
        shred_texts(std::iter::repeat_n(None, bags.len()), bags.len(), keys)
    }
}

fn shred_texts<'a>(
    texts: impl Iterator<Item = Option<&'a str>>,
    rows: usize,
    keys: &'static [&'static str],
) -> Vec<ArrayRef> {
    let mut hidden = HiddenBuilder::new(keys, rows);
    let mut previous: Option<&str> = None;
    for (row, text) in texts.enumerate() {
        match text {
            None => {} // null in every hidden column
            Some(json) if previous == Some(json) => hidden.repeat(row),
            Some(json) => hidden.append(row, json, None),
        }
        previous = text;
    }
    hidden.finish(rows)
}

/// `values[i] = json_as_text(json, keys[i])` for every key, in one walk over `json`.
fn extract_keys(json: &str, keys: &[&str], values: &mut [Option<String>]) {
    let position = |key: &str| keys.iter().take(64).position(|k| *k == key);
    let mut jiter = Jiter::new(json.as_bytes());
    // Keys already met, as bits (a bag column has a handful of listed keys).
    let mut found: u64 = 0;
    let mut left = keys.len().min(64);
    let Ok(Peek::Object) = jiter.peek() else {
        return;
    };
    let mut key = match jiter.known_object() {
        Ok(Some(key)) => position(key),
        _ => return,
    };
    loop {
        match key.filter(|&i| found & (1 << i) == 0) {
            Some(i) => {
                found |= 1 << i;
                left -= 1;
                match read_text(json, &mut jiter) {
                    Ok(text) => values[i] = text,
                    Err(()) => return,
                }
                if left == 0 {
                    return;
                }
            }
            None => {
                if jiter.next_skip().is_err() {
                    return;
                }
            }
        }
        key = match jiter.next_key() {
            Ok(Some(key)) => position(key),
            _ => return,
        };
    }
}

/// The value at `jiter` as `json_as_text` gives it: a string decoded, `null` as none, any
/// other value as its JSON text.
fn read_text(json: &str, jiter: &mut Jiter) -> std::result::Result<Option<String>, ()> {
    let peek = jiter.peek().map_err(|_| ())?;
    match peek {
        Peek::Null => jiter.known_skip(peek).map(|()| None).map_err(|_| ()),
        Peek::String => jiter.known_str().map(|text| Some(text.to_string())).map_err(|_| ()),
        _ => {
            let start = jiter.current_index();
            jiter.known_skip(peek).map_err(|_| ())?;
            json.get(start..jiter.current_index())
                .map(|raw| Some(raw.to_string()))
                .ok_or(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use datafusion::prelude::SessionContext;

    fn dynamic_schema() -> Schema {
        Schema::new(vec![
            field("attributes", KqlType::Dynamic, DataType::Utf8),
            field("body", KqlType::Dynamic, DataType::Utf8),
            field(&shredded_column("attributes", "stale"), KqlType::String, DataType::Utf8),
        ])
    }

    const AWKWARD: &[Option<&str>] = &[
        Some(r#"{"http.route":"/a","http.status_code":500}"#),
        Some(r#"{"http.route":"/a","http.status_code":500}"#),
        Some(r#"{"http.route":"esc\"aped\u00e9\n","http.status_code":"404"}"#),
        Some(r#" { "http.status_code" : 5.0e2 , "http.route" : null } "#),
        Some(r#"{"http.route":{"nested":[1,2,{"x":true}]},"http.method":true}"#),
        Some(r#"{"http.route":"first","http.route":"second"}"#),
        Some(r#"{"http.route":null,"http.route":"second"}"#),
        Some(r#"{"other":[1,2,3],"http.method":"GET","http.route":[]}"#),
        Some(r#"{"other":"unterminated,"http.route":"/x"}"#),
        Some(r#"{"http.route":"/ok","broken": tru}"#),
        Some(r#"{"http.route":"/ok" "missing comma":1}"#),
        Some(r#"["http.route","/x"]"#),
        Some(r#""just a string""#),
        Some("not json at all"),
        Some(""),
        Some("{}"),
        Some(r#"{"http.status_code":-12,"http.response.status_code":18446744073709551616}"#),
        None,
        None,
        Some(r#"{"http.route":"/a","http.status_code":500}"#),
    ];

    #[tokio::test]
    async fn hidden_columns_equal_json_as_text() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let schema = Arc::new(dynamic_schema());
        let bags: ArrayRef = Arc::new(StringArray::from(AWKWARD.to_vec()));
        let stale: ArrayRef = Arc::new(StringArray::from(vec![Some("old"); AWKWARD.len()]));
        let batch = RecordBatch::try_new(schema.clone(), vec![bags.clone(), bags, stale])?;
        let shredder = Shredder::new(&schema);
        let shredded = shredder.shred(&batch)?;
        // The stale hidden column is gone; `body` has no listed keys.
        assert!(
            shredded
                .schema()
                .field_with_name(&shredded_column("attributes", "stale"))
                .is_err()
        );
        assert_eq!(shredded.num_columns(), 2 + shredded_keys("attributes").len());

        let context = SessionContext::new();
        context.register_udf(datafusion_functions_json::udfs::json_as_text_udf().as_ref().clone());
        context.register_batch("t", shredded.clone())?;
        for key in shredded_keys("attributes") {
            let expected = context
                .sql(&format!("select json_as_text(attributes, '{key}') as v from t"))
                .await?
                .collect()
                .await?;
            let expected = expected[0].column(0).as_string::<i32>().clone();
            let hidden = shredded
                .column_by_name(&shredded_column("attributes", key))
                .ok_or("no hidden column")?;
            let hidden: Vec<Option<&str>> = hidden.as_string::<i32>().iter().collect();
            let expected: Vec<Option<&str>> = expected.iter().collect();
            for (row, bag) in AWKWARD.iter().enumerate() {
                assert_eq!(hidden[row], expected[row], "key {key}, row {row}: {bag:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn columns_list_hidden_ones_last() {
        let schema = dynamic_schema();
        let shredder = Shredder::new(&schema);
        let columns = vec![
            ColumnInfo {
                name: "attributes".into(),
                kql_type: KqlType::Dynamic,
            },
            ColumnInfo {
                name: shredded_column("attributes", "stale"),
                kql_type: KqlType::String,
            },
        ];
        let names: Vec<String> = shredder.columns(&columns).into_iter().map(|c| c.name).collect();
        assert_eq!(names[0], "attributes");
        assert_eq!(names[1], shredded_column("attributes", "http.route"));
        assert_eq!(names.len(), 1 + shredded_keys("attributes").len());
    }

    #[test]
    fn non_dynamic_bags_are_not_shredded() {
        let schema = Schema::new(vec![field("resource", KqlType::String, DataType::Utf8)]);
        assert_eq!(Shredder::new(&schema).schema().fields().len(), 1);
    }
}
