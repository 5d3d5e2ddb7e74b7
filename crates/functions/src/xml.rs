//! `parse_xml(text)`: XML as a dynamic value, the way Kusto maps it. An element is a key
//! holding null (`<e/>`), its text (`<e>t</e>`), or an object of its attributes (`@name`),
//! its text (`#text`, when it also has attributes or children) and its children (a child
//! name that repeats holds an array). Only elements, attributes and text count; an invalid
//! document, one over 1 MiB or nested deeper than 512 elements is null.

use datafusion::error::Result;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use serde_json::{Map, Value};

use crate::rowfn::{Out, Val, str_arg};

/// Longest text read.
const MAX_BYTES: usize = 1 << 20;
/// Deepest nesting read.
const MAX_DEPTH: usize = 512;

/// An element being read.
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    text: String,
    /// Children by name, in the order names first appear.
    children: Vec<(String, Vec<Value>)>,
}

impl Element {
    fn open(start: &BytesStart) -> Option<Element> {
        let name = String::from_utf8(start.name().as_ref().to_vec()).ok()?;
        let mut attributes = Vec::new();
        for attribute in start.attributes() {
            let attribute = attribute.ok()?;
            let key = String::from_utf8(attribute.key.as_ref().to_vec()).ok()?;
            attributes.push((key, attribute.unescape_value().ok()?.into_owned()));
        }
        Some(Element {
            name,
            attributes,
            text: String::new(),
            children: Vec::new(),
        })
    }

    fn add_child(&mut self, name: String, value: Value) {
        match self.children.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => self.children.push((name, vec![value])),
        }
    }

    fn into_value(self) -> Value {
        let text = self.text.trim().to_string();
        if self.attributes.is_empty() && self.children.is_empty() {
            return if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
        }
        let mut object = Map::new();
        for (name, value) in self.attributes {
            object.insert(format!("@{name}"), Value::String(value));
        }
        if !text.is_empty() {
            object.insert("#text".into(), Value::String(text));
        }
        for (name, mut values) in self.children {
            let value = match values.len() {
                1 => values.remove(0),
                _ => Value::Array(values),
            };
            object.insert(name, value);
        }
        Value::Object(object)
    }
}

/// Closes the innermost element: into its parent, or as the document's root.
fn close(stack: &mut Vec<Element>, root: &mut Option<Value>) -> Option<()> {
    let element = stack.pop()?;
    let name = element.name.clone();
    let value = element.into_value();
    match stack.last_mut() {
        Some(parent) => parent.add_child(name, value),
        None => {
            let mut document = Map::new();
            document.insert(name, value);
            *root = Some(Value::Object(document));
        }
    }
    Some(())
}

/// The document as a value, `None` when it is not well formed or too large.
fn parse(text: &str) -> Option<Value> {
    if text.len() > MAX_BYTES {
        return None;
    }
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Value> = None;
    loop {
        match reader.read_event().ok()? {
            Event::Start(start) => {
                if stack.len() >= MAX_DEPTH || (stack.is_empty() && root.is_some()) {
                    return None;
                }
                stack.push(Element::open(&start)?);
            }
            Event::Empty(start) => {
                if stack.len() >= MAX_DEPTH || (stack.is_empty() && root.is_some()) {
                    return None;
                }
                stack.push(Element::open(&start)?);
                close(&mut stack, &mut root)?;
            }
            Event::End(_) => close(&mut stack, &mut root)?,
            Event::Text(text) => {
                let content = text.xml_content().ok()?;
                match stack.last_mut() {
                    Some(top) => top.text.push_str(&content),
                    None if content.trim().is_empty() => {}
                    None => return None,
                }
            }
            Event::CData(data) => {
                let content = data.decode().ok()?;
                stack.last_mut()?.text.push_str(&content);
            }
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref().ok()? {
                    Some(c) => c.to_string(),
                    None => quick_xml::escape::resolve_predefined_entity(&reference.decode().ok()?)?.to_string(),
                };
                stack.last_mut()?.text.push_str(&resolved);
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if stack.is_empty() { root } else { None }
}

pub fn parse_xml(args: &[Val]) -> Result<Out> {
    Ok(match parse(str_arg(args, 0)) {
        Some(value) => crate::json::out(value),
        None => Out::Null,
    })
}

#[cfg(test)]
mod tests {
    use crate::testing::{run, s};

    #[test]
    fn elements_attributes_and_text_as_documented() {
        for (xml, json) in [
            ("<e/>", r#"{"e":null}"#),
            ("<e>text</e>", r#"{"e":"text"}"#),
            (r#"<e name="value" />"#, r#"{"e":{"@name":"value"}}"#),
            (
                r#"<e name="value">text</e>"#,
                r##"{"e":{"@name":"value","#text":"text"}}"##,
            ),
            ("<e> <a>text</a> <b>text</b> </e>", r#"{"e":{"a":"text","b":"text"}}"#),
            ("<e> <a>text</a> <a>text</a> </e>", r#"{"e":{"a":["text","text"]}}"#),
            ("<e> text <a>text</a> </e>", r##"{"e":{"#text":"text","a":"text"}}"##),
            (
                "<?xml version=\"1.0\"?><!-- c --><d><v>1 &amp; 2 &#65;</v><![CDATA[<x>]]></d>",
                r##"{"d":{"#text":"<x>","v":"1 & 2 A"}}"##,
            ),
        ] {
            assert_eq!(run("parse_xml", &[s(xml)]), json, "{xml}");
        }
    }

    #[test]
    fn malformed_or_oversized_documents_are_null() {
        for xml in ["<a><b></a>", "<a>", "text", "<a/><b/>", ""] {
            assert_eq!(run("parse_xml", &[s(xml)]), "null", "{xml}");
        }
        let deep = "<a>".repeat(600) + &"</a>".repeat(600);
        assert_eq!(run("parse_xml", &[s(&deep)]), "null");
        let huge = format!("<a>{}</a>", "x".repeat((1 << 20) + 1));
        assert_eq!(run("parse_xml", &[s(&huge)]), "null");
    }
}
