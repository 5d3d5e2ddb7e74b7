//! Where the log and span mappings write their rows: neutral [`Row`]s ([`RowSink`]), or
//! columns ([`ColumnsBuilder`], the ingest path: no cell is allocated per record). One mapping
//! writes to either, so both give the same rows.

use std::ops::Range;
use std::sync::Arc;

use trawl_common::columns::{ColumnsBuilder, Slot};
use trawl_common::shred::shredded_keys;
use trawl_common::{KqlType, Row, Value};
use trawl_proto::otlp::common::v1::{InstrumentationScope, KeyValue};
use trawl_proto::otlp::resource::v1::Resource;

use crate::otlp::common::{Attribute, split_flags, write_attributes_noting};

/// The most shredded keys a bag column has (`trawl_common::shred::SHREDDED_KEYS`).
pub(crate) const MAX_SHREDDED_KEYS: usize = 8;

/// Rows written cell by cell; see the module's documentation.
pub(crate) trait Sink {
    type Slot: Copy;
    /// Declares a column; the order of declaration is the order of the columns.
    fn column(&mut self, name: &'static str, kql_type: KqlType) -> Self::Slot;
    fn set_bool(&mut self, slot: Self::Slot, value: bool);
    /// A long, or the nanoseconds of a datetime or timespan.
    fn set_integer(&mut self, slot: Self::Slot, value: i64);
    /// A string, or the JSON text of a dynamic value.
    fn set_text(&mut self, slot: Self::Slot, text: &str);
    /// The JSON text of a bag and the values of its shredded keys ([`BagText::values`]).
    fn set_bag(&mut self, slot: Self::Slot, bag: &BagText);
    fn end_row(&mut self);
}

impl Sink for ColumnsBuilder {
    type Slot = Slot;
    fn column(&mut self, name: &'static str, kql_type: KqlType) -> Slot {
        ColumnsBuilder::column(self, name, kql_type)
    }
    fn set_bool(&mut self, slot: Slot, value: bool) {
        ColumnsBuilder::set_bool(self, slot, value);
    }
    fn set_integer(&mut self, slot: Slot, value: i64) {
        ColumnsBuilder::set_integer(self, slot, value);
    }
    fn set_text(&mut self, slot: Slot, text: &str) {
        ColumnsBuilder::set_text(self, slot, text);
    }
    fn set_bag(&mut self, slot: Slot, bag: &BagText) {
        ColumnsBuilder::set_bag(self, slot, bag.text(), &bag.values());
    }
    fn end_row(&mut self) {
        ColumnsBuilder::end_row(self);
    }
}

/// Rows as [`Row`]s.
#[derive(Debug, Default)]
pub(crate) struct RowSink {
    pub(crate) rows: Vec<Row>,
    row: Row,
}

impl Sink for RowSink {
    type Slot = (&'static str, KqlType);
    fn column(&mut self, name: &'static str, kql_type: KqlType) -> Self::Slot {
        (name, kql_type)
    }
    fn set_bool(&mut self, (name, _): Self::Slot, value: bool) {
        self.row.push(name, Value::Bool(value));
    }
    fn set_integer(&mut self, (name, kql_type): Self::Slot, value: i64) {
        let value = match kql_type {
            KqlType::DateTime => Value::DateTime(value),
            KqlType::Timespan => Value::Timespan(value),
            _ => Value::Long(value),
        };
        self.row.push(name, value);
    }
    fn set_text(&mut self, (name, kql_type): Self::Slot, text: &str) {
        let value = match kql_type {
            KqlType::Dynamic => Value::JsonText(Arc::from(text)),
            _ => Value::String(text.to_owned()),
        };
        self.row.push(name, value);
    }
    fn set_bag(&mut self, slot: Self::Slot, bag: &BagText) {
        self.set_text(slot, bag.text());
    }
    fn end_row(&mut self) {
        self.rows.push(std::mem::take(&mut self.row));
    }
}

/// Key-value pairs written as the JSON text of a bag, with the values of the bag column's
/// shredded keys as `json_as_text` reads them from that text, noted while writing it.
#[derive(Debug, Clone, Default)]
pub(crate) struct BagText {
    text: String,
    keys: &'static [&'static str],
    /// Where each key's value is in `text` (a JSON string without escapes: its content).
    ranges: [Option<Range<usize>>; MAX_SHREDDED_KEYS],
    /// A value that is not a slice of `text` (a JSON string with escapes, decoded).
    owned: [Option<String>; MAX_SHREDDED_KEYS],
}

impl BagText {
    /// A writer for the bag column `column`.
    pub(crate) fn for_column(column: &str) -> BagText {
        BagText {
            keys: shredded_keys(column),
            ..BagText::default()
        }
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Writes `attributes` as the bag (an empty list: no bag).
    pub(crate) fn write<A: Attribute>(&mut self, attributes: &[A]) {
        self.text.clear();
        self.ranges = Default::default();
        self.owned = Default::default();
        if attributes.is_empty() {
            return;
        }
        let keys = self.keys;
        let mut noted: [Option<Range<usize>>; MAX_SHREDDED_KEYS] = Default::default();
        write_attributes_noting(&mut self.text, attributes, &mut |key, range| {
            if let Some(i) = keys.iter().take(MAX_SHREDDED_KEYS).position(|k| *k == key) {
                noted[i] = Some(range);
            }
        });
        for (i, range) in noted.into_iter().enumerate() {
            let Some(range) = range else { continue };
            let Some(raw) = self.text.get(range.clone()) else {
                continue;
            };
            if raw == "null" {
                continue;
            }
            if raw.len() >= 2 && raw.starts_with('"') {
                if raw.contains('\\') {
                    self.owned[i] = serde_json::from_str::<String>(raw).ok();
                } else {
                    self.ranges[i] = Some(range.start + 1..range.end - 1);
                }
            } else {
                self.ranges[i] = Some(range);
            }
        }
    }

    /// The shredded keys' values, in the order of the column's keys.
    pub(crate) fn values(&self) -> [Option<&str>; MAX_SHREDDED_KEYS] {
        std::array::from_fn(|i| match (&self.owned[i], &self.ranges[i]) {
            (Some(owned), _) => Some(owned.as_str()),
            (None, Some(range)) => self.text.get(range.clone()),
            (None, None) => None,
        })
    }
}

/// The resource and scope cells every row of one scope carries, written once.
#[derive(Debug, Clone)]
pub(crate) struct SharedBags {
    resource: BagText,
    dropped_resource: u32,
    scope_name: String,
    scope_version: String,
    scope: BagText,
    dropped_scope: u32,
}

/// The slots of the [`SharedBags`] columns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedSlots<S> {
    resource: S,
    dropped_resource: S,
    scope_name: S,
    scope_version: S,
    scope: S,
    dropped_scope: S,
}

impl<S: Copy> SharedSlots<S> {
    pub(crate) fn declare(sink: &mut impl Sink<Slot = S>) -> SharedSlots<S> {
        SharedSlots {
            resource: sink.column("resource", KqlType::Dynamic),
            dropped_resource: sink.column("dropped_resource_attributes_count", KqlType::Long),
            scope_name: sink.column("scope_name", KqlType::String),
            scope_version: sink.column("scope_version", KqlType::String),
            scope: sink.column("scope", KqlType::Dynamic),
            dropped_scope: sink.column("dropped_scope_attributes_count", KqlType::Long),
        }
    }
}

impl SharedBags {
    /// The resource's cells (its `schema_url` and entity refs are not stored).
    pub(crate) fn for_resource(resource: Option<&Resource>) -> SharedBags {
        let mut bags = SharedBags {
            resource: BagText::for_column("resource"),
            dropped_resource: 0,
            scope_name: String::new(),
            scope_version: String::new(),
            scope: BagText::for_column("scope"),
            dropped_scope: 0,
        };
        if let Some(resource) = resource {
            bags.resource.write(&resource.attributes);
            bags.dropped_resource = resource.dropped_attributes_count;
        }
        bags
    }

    /// The scope's cells, after the resource's.
    pub(crate) fn set_scope(&mut self, scope: Option<&InstrumentationScope>) {
        self.scope_name.clear();
        self.scope_version.clear();
        self.scope.write::<KeyValue>(&[]);
        self.dropped_scope = 0;
        if let Some(scope) = scope {
            self.scope_name.push_str(&scope.name);
            self.scope_version.push_str(&scope.version);
            self.scope.write(&scope.attributes);
            self.dropped_scope = scope.dropped_attributes_count;
        }
    }

    /// Sets the cells of the current row.
    pub(crate) fn set<K: Sink>(&self, sink: &mut K, slots: &SharedSlots<K::Slot>) {
        if !self.resource.is_empty() {
            sink.set_bag(slots.resource, &self.resource);
        }
        set_count(sink, slots.dropped_resource, self.dropped_resource);
        set_non_empty(sink, slots.scope_name, &self.scope_name);
        set_non_empty(sink, slots.scope_version, &self.scope_version);
        if !self.scope.is_empty() {
            sink.set_bag(slots.scope, &self.scope);
        }
        set_count(sink, slots.dropped_scope, self.dropped_scope);
    }
}

/// Sets a string unless it is empty.
pub(crate) fn set_non_empty<K: Sink>(sink: &mut K, slot: K::Slot, text: &str) {
    if !text.is_empty() {
        sink.set_text(slot, text);
    }
}

/// Sets `bit_0` = true when flag bit 0 is set, and `flags` to the bits left once bit 0 is
/// taken out, when any are left ([`split_flags`]).
pub(crate) fn set_flags<K: Sink>(sink: &mut K, bit_0: K::Slot, flags: K::Slot, value: u32) {
    let (bit_0_set, remaining) = split_flags(value);
    if bit_0_set {
        sink.set_bool(bit_0, true);
    }
    if let Some(remaining) = remaining {
        sink.set_integer(flags, i64::from(remaining));
    }
}

/// The items (log records, spans) of one request, gathered with the [`SharedBags`] of their
/// scope lists and mapped in time order: by the key each is added with ([`time_key`]), equal
/// keys in the request's order.
///
/// [`time_key`]: crate::otlp::common::time_key
pub(crate) struct TimeOrder<T> {
    shared: Vec<SharedBags>,
    /// Key, index into `shared`, position in the request (resource, scope, item), item.
    items: Vec<(u64, usize, [usize; 3], T)>,
}

impl<T> TimeOrder<T> {
    pub(crate) fn with_capacity(items: usize) -> TimeOrder<T> {
        TimeOrder {
            shared: Vec::new(),
            items: Vec::with_capacity(items),
        }
    }

    /// Adds `item`, at `at` in the request, of the scope list whose cells are `shared`.
    pub(crate) fn push(&mut self, shared: &SharedBags, at: [usize; 3], key: u64, item: T) {
        let same_list = self
            .items
            .last()
            .is_some_and(|&(_, _, [resource, scope, _], _)| [resource, scope] == [at[0], at[1]]);
        if !same_list {
            self.shared.push(shared.clone());
        }
        self.items.push((key, self.shared.len() - 1, at, item));
    }

    /// Calls `map` with each item in time order, its scope list's cells and its position.
    pub(crate) fn map(self, mut map: impl FnMut(&SharedBags, [usize; 3], T)) {
        // The keys are sorted with each item's place, not the items (a log record's view is
        // about 170 bytes: moving them was most of the sort); the place keeps equal keys in
        // the request's order.
        let mut order: Vec<(u64, usize)> = self
            .items
            .iter()
            .enumerate()
            .map(|(place, &(key, ..))| (key, place))
            .collect();
        order.sort_unstable();
        let mut items: Vec<Option<(usize, [usize; 3], T)>> = self
            .items
            .into_iter()
            .map(|(_, shared, at, item)| Some((shared, at, item)))
            .collect();
        for (_, place) in order {
            let Some((shared, at, item)) = items.get_mut(place).and_then(Option::take) else {
                continue;
            };
            if let Some(shared) = self.shared.get(shared) {
                map(shared, at, item);
            }
        }
    }
}

/// Sets a dropped-items count unless it is 0.
pub(crate) fn set_count<K: Sink>(sink: &mut K, slot: K::Slot, count: u32) {
    if count > 0 {
        sink.set_integer(slot, i64::from(count));
    }
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
