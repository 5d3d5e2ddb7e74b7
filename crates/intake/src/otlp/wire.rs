//! Reading protobuf fields straight from a request's bytes, for the mappings that borrow keys,
//! strings and ids from the body instead of decoding a message of owned `String`s and `Vec`s
//! per record.
//!
//! The reader accepts only what it can read exactly as prost would; anything else is
//! [`Unusual`], and the caller decodes the whole body with prost instead. Prost then gives the
//! same rows or the error, so both paths have prost's semantics. Unusual here: a malformed
//! varint, tag or length, a wire type other than the field's, invalid UTF-8 in a string, a
//! group, a singular message field given twice (prost merges the two), an `AnyValue` with two
//! values, and nested arrays and key-value lists (their depth counts against prost's recursion
//! limit, which this reader does not track).

use trawl_proto::otlp::common::v1::{InstrumentationScope, KeyValue};
use trawl_proto::otlp::resource::v1::Resource;
use trawl_proto::prost::Message;

use crate::otlp::common::{Attribute, ValueRef};
use crate::otlp::sink::SharedBags;

/// The body holds something this reader leaves to prost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unusual;

/// One field's value, by wire type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Wire<'a> {
    pub(crate) fn varint(self) -> Result<u64, Unusual> {
        match self {
            Wire::Varint(value) => Ok(value),
            _ => Err(Unusual),
        }
    }

    pub(crate) fn fixed64(self) -> Result<u64, Unusual> {
        match self {
            Wire::Fixed64(value) => Ok(value),
            _ => Err(Unusual),
        }
    }

    pub(crate) fn fixed32(self) -> Result<u32, Unusual> {
        match self {
            Wire::Fixed32(value) => Ok(value),
            _ => Err(Unusual),
        }
    }

    pub(crate) fn bytes(self) -> Result<&'a [u8], Unusual> {
        match self {
            Wire::Len(bytes) => Ok(bytes),
            _ => Err(Unusual),
        }
    }

    /// A string field's text (SIMD validation: bodies are long enough for it to pay).
    pub(crate) fn text(self) -> Result<&'a str, Unusual> {
        simdutf8::basic::from_utf8(self.bytes()?).map_err(|_| Unusual)
    }
}

/// Strings of one request already found to be UTF-8, by a slot their length and end bytes
/// pick: a string equal to the one in its slot is given that one's text instead of being
/// checked again. Attribute keys and many values repeat from record to record, and checking
/// each short string on its own was about 4% of the CPU of log ingest.
pub(crate) struct Known<'a> {
    slots: [&'a str; 64],
}

impl Default for Known<'_> {
    fn default() -> Self {
        Known { slots: [""; 64] }
    }
}

impl<'a> Known<'a> {
    /// A string field's text (`wire.text()`, from the slot when the same bytes are there).
    pub(crate) fn text(&mut self, wire: Wire<'a>) -> Result<&'a str, Unusual> {
        let bytes = wire.bytes()?;
        let (first, last) = (bytes.first().copied(), bytes.last().copied());
        let slot = (bytes.len().wrapping_mul(31)
            ^ usize::from(first.unwrap_or(0))
            ^ usize::from(last.unwrap_or(0)).wrapping_mul(5))
            & 63;
        let Some(known) = self.slots.get_mut(slot) else {
            return wire.text();
        };
        if known.as_bytes() == bytes {
            return Ok(*known);
        }
        let text = wire.text()?;
        *known = text;
        Ok(text)
    }
}

/// The fields of one message, in the order they are written.
pub(crate) struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(message: &'a [u8]) -> Fields<'a> {
        Fields { rest: message }
    }

    /// The next field's number and value; `None` at the end of the message.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Wire<'a>)>, Unusual> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| Unusual)?;
        if number == 0 {
            return Err(Unusual);
        }
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(self.take()?)),
            2 => {
                let length = usize::try_from(self.varint()?).map_err(|_| Unusual)?;
                if length > self.rest.len() {
                    return Err(Unusual);
                }
                let (bytes, rest) = self.rest.split_at(length);
                self.rest = rest;
                Wire::Len(bytes)
            }
            5 => Wire::Fixed32(u32::from_le_bytes(self.take()?)),
            _ => return Err(Unusual), // groups (3, 4) and wire types prost refuses
        };
        Ok(Some((number, wire)))
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], Unusual> {
        let (head, rest) = self.rest.split_first_chunk::<N>().ok_or(Unusual)?;
        self.rest = rest;
        Ok(*head)
    }

    /// A base-128 varint of at most ten bytes, the tenth at most 1 (as prost reads them).
    #[inline]
    fn varint(&mut self) -> Result<u64, Unusual> {
        // Keys, lengths and small numbers take one or two bytes: most varints of a request.
        match *self.rest {
            [first, ref rest @ ..] if first < 0x80 => {
                self.rest = rest;
                return Ok(u64::from(first));
            }
            [first, second, ref rest @ ..] if second < 0x80 => {
                self.rest = rest;
                return Ok(u64::from(first & 0x7f) | (u64::from(second) << 7));
            }
            _ => {}
        }
        let mut value = 0u64;
        for (index, &byte) in self.rest.iter().enumerate().take(10) {
            if index == 9 && byte > 1 {
                return Err(Unusual);
            }
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte < 0x80 {
                self.rest = &self.rest[index + 1..];
                return Ok(value);
            }
        }
        Err(Unusual)
    }
}

/// Calls `item` with each item of an export request of logs or spans (log records, spans), the
/// cells of its resource and scope, and its place: the indices of its resource, scope and
/// item. Both signals number their levels alike: the request's resource lists are field 1; a
/// resource list has its resource (1), scope lists (2) and schema URL (3); a scope list its
/// scope (1), items (2) and schema URL (3).
pub(crate) fn each_item<'a>(
    body: &'a [u8],
    mut item: impl FnMut(&SharedBags, &'a [u8], [usize; 3]) -> Result<(), Unusual>,
) -> Result<(), Unusual> {
    let mut resource_index = 0;
    let mut request = Fields::new(body);
    while let Some((number, wire)) = request.next_field()? {
        if number != 1 {
            continue;
        }
        let mut resource: Option<Resource> = None;
        let mut shared: Option<SharedBags> = None;
        let mut scope_index = 0;
        let mut resource_list = Fields::new(wire.bytes()?);
        while let Some((number, wire)) = resource_list.next_field()? {
            match number {
                // Once, before the scopes (prost merges a repeated one; a late one applies to
                // the scopes before it).
                1 if resource.is_none() && shared.is_none() => {
                    resource = Some(Resource::decode(wire.bytes()?).map_err(|_| Unusual)?);
                }
                1 => return Err(Unusual),
                2 => {
                    let shared = shared.get_or_insert_with(|| SharedBags::for_resource(resource.as_ref()));
                    let mut scope: Option<InstrumentationScope> = None;
                    let mut scope_set = false;
                    let mut item_index = 0;
                    let mut scope_list = Fields::new(wire.bytes()?);
                    while let Some((number, wire)) = scope_list.next_field()? {
                        match number {
                            1 if scope.is_none() && !scope_set => {
                                scope = Some(InstrumentationScope::decode(wire.bytes()?).map_err(|_| Unusual)?);
                            }
                            1 => return Err(Unusual),
                            2 => {
                                if !scope_set {
                                    shared.set_scope(scope.as_ref());
                                    scope_set = true;
                                }
                                item(shared, wire.bytes()?, [resource_index, scope_index, item_index])?;
                                item_index += 1;
                            }
                            3 => {
                                wire.text()?;
                            }
                            _ => {}
                        }
                    }
                    scope_index += 1;
                }
                3 => {
                    wire.text()?;
                }
                _ => {}
            }
        }
        resource_index += 1;
    }
    Ok(())
}

/// How many items [`each_item`] would call its function with (to size column builders).
pub(crate) fn count_items(body: &[u8]) -> Result<usize, Unusual> {
    let mut items = 0;
    let mut request = Fields::new(body);
    while let Some((number, wire)) = request.next_field()? {
        if number != 1 {
            continue;
        }
        let mut resource_list = Fields::new(wire.bytes()?);
        while let Some((number, wire)) = resource_list.next_field()? {
            if number != 2 {
                continue;
            }
            let mut scope_list = Fields::new(wire.bytes()?);
            while let Some((number, _)) = scope_list.next_field()? {
                items += usize::from(number == 2);
            }
        }
    }
    Ok(items)
}

/// A `KeyValue` borrowed from the body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyView<'a> {
    key: &'a str,
    value: Option<ValueRef<'a>>,
    key_strindex: i32,
}

impl Attribute for KeyView<'_> {
    fn key(&self) -> &str {
        self.key
    }

    fn value(&self) -> Option<ValueRef<'_>> {
        self.value
    }
}

impl KeyView<'_> {
    /// The pair as prost's message.
    pub(crate) fn to_key_value(self) -> KeyValue {
        KeyValue {
            key: self.key.to_owned(),
            value: self.value.map(ValueRef::to_any_value),
            key_strindex: self.key_strindex,
        }
    }
}

/// Reads an encoded `KeyValue`, its strings checked through `known`.
pub(crate) fn key_value<'a>(message: &'a [u8], known: &mut Known<'a>) -> Result<KeyView<'a>, Unusual> {
    let mut view = KeyView {
        key: "",
        value: None,
        key_strindex: 0,
    };
    let mut fields = Fields::new(message);
    while let Some((number, wire)) = fields.next_field()? {
        match number {
            1 => view.key = known.text(wire)?,
            2 if view.value.is_none() => view.value = Some(any_value(wire.bytes()?, known)?),
            2 => return Err(Unusual),
            3 => view.key_strindex = wire.varint()? as i32,
            _ => {}
        }
    }
    Ok(view)
}

/// Reads an encoded `AnyValue` holding a scalar (or nothing), its string checked through
/// `known`.
pub(crate) fn any_value<'a>(message: &'a [u8], known: &mut Known<'a>) -> Result<ValueRef<'a>, Unusual> {
    let mut value = ValueRef::Unset;
    let mut fields = Fields::new(message);
    let mut seen = false;
    while let Some((number, wire)) = fields.next_field()? {
        if (1..=8).contains(&number) {
            if seen {
                return Err(Unusual);
            }
            seen = true;
        }
        value = match number {
            1 => ValueRef::Str(known.text(wire)?),
            2 => ValueRef::Bool(wire.varint()? != 0),
            3 => ValueRef::Int(wire.varint()? as i64),
            4 => ValueRef::Double(f64::from_bits(wire.fixed64()?)),
            7 => ValueRef::Bytes(wire.bytes()?),
            8 => ValueRef::Strindex(wire.varint()? as i32),
            // 5, 6: arrays and key-value lists.
            5 | 6 => return Err(Unusual),
            _ => value,
        };
    }
    Ok(value)
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
