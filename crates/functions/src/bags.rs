//! Property bags and dynamic values: `bag_*`, `pack`, `parse_json`, `gettype`,
//! `dynamic_to_json`.

use datafusion::common::exec_err;
use datafusion::error::Result;
use serde_json::{Map, Value};

use crate::dynamic::dynamic_to_string;
use crate::json::{out, out_opt, parse, parse_array, parse_bag, path_steps};
use crate::rowfn::{Out, Val, arg, str_arg};

/// `bag_pack(key1, value1, ...)` / `pack(...)`: keys and values arrive as dynamic values.
pub fn bag_pack(args: &[Val]) -> Result<Out> {
    pack_pairs(args, false)
}

/// `pack_all(true)`: like `bag_pack`, leaving out null values and empty strings.
pub fn bag_pack_dense(args: &[Val]) -> Result<Out> {
    pack_pairs(args, true)
}

fn pack_pairs(args: &[Val], dense: bool) -> Result<Out> {
    if !args.len().is_multiple_of(2) {
        return exec_err!("expects key/value pairs, found an odd number of arguments");
    }
    let mut bag = Map::new();
    for pair in args.chunks(2) {
        let key = match pair[0] {
            Val::Str(text) => dynamic_to_string(Some(text)).into_owned(),
            Val::Null => String::new(),
            other => return exec_err!("a key must be a string, found {other:?}"),
        };
        let value = parse(pair[1]).unwrap_or(Value::Null);
        if dense && (value.is_null() || value.as_str().is_some_and(str::is_empty)) {
            continue;
        }
        bag.insert(key, value);
    }
    Ok(out(Value::Object(bag)))
}

pub fn bag_keys(args: &[Val]) -> Result<Out> {
    Ok(out_opt(parse_bag(arg(args, 0)).map(|bag| {
        Value::Array(bag.keys().map(|k| Value::String(k.clone())).collect())
    })))
}

/// Looks up a JSONPath-like key in a value.
fn lookup<'v>(value: &'v Value, steps: &[String]) -> Option<&'v Value> {
    let mut current = value;
    for step in steps {
        current = match current {
            Value::Object(map) => map.get(step)?,
            Value::Array(items) => items.get(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

pub fn bag_has_key(args: &[Val]) -> Result<Out> {
    let Some(bag) = parse_bag(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let steps = path_steps(str_arg(args, 1));
    Ok(Out::Bool(lookup(&Value::Object(bag), &steps).is_some()))
}

/// `bag_merge(bag1, bag2, ...)`: the first bag holding a key wins.
pub fn bag_merge(args: &[Val]) -> Result<Out> {
    let mut merged = Map::new();
    for v in args {
        let Some(bag) = parse_bag(*v) else {
            return Ok(Out::Null);
        };
        for (key, value) in bag {
            merged.entry(key).or_insert(value);
        }
    }
    Ok(out(Value::Object(merged)))
}

fn remove_path(value: &mut Value, steps: &[String]) {
    let Some((last, parents)) = steps.split_last() else {
        return;
    };
    let mut current = value;
    for step in parents {
        current = match current {
            Value::Object(map) => match map.get_mut(step) {
                Some(next) => next,
                None => return,
            },
            _ => return,
        };
    }
    if let Value::Object(map) = current {
        map.shift_remove(last);
    }
}

/// `bag_remove_keys(bag, keys)`: keys may be JSONPath (`$.a.b`).
pub fn bag_remove_keys(args: &[Val]) -> Result<Out> {
    let (Some(bag), Some(keys)) = (parse_bag(arg(args, 0)), parse_array(arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let mut value = Value::Object(bag);
    for key in keys {
        if let Value::String(key) = key {
            remove_path(&mut value, &path_steps(&key));
        }
    }
    Ok(out(value))
}

/// `bag_set_key(bag, key, value)`: sets (or creates) the key; JSONPath keys create nested bags.
pub fn bag_set_key(args: &[Val]) -> Result<Out> {
    let Some(bag) = parse_bag(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let steps = path_steps(str_arg(args, 1));
    let new_value = parse(arg(args, 2)).unwrap_or(Value::Null);
    let mut root = Value::Object(bag);
    let Some((last, parents)) = steps.split_last() else {
        return Ok(out(root));
    };
    let mut current = &mut root;
    for step in parents {
        let Value::Object(map) = current else {
            return Ok(Out::Null);
        };
        let next = map.entry(step.clone()).or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        current = next;
    }
    if let Value::Object(map) = current {
        map.insert(last.clone(), new_value);
    }
    Ok(out(root))
}

/// `bag_zip(keys, values)`: non-string keys are skipped, missing values are null; values that
/// are not an array leave every key null.
pub fn bag_zip(args: &[Val]) -> Result<Out> {
    let Some(keys) = parse_array(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let values = parse_array(arg(args, 1)).unwrap_or_default();
    let mut bag = Map::new();
    for (i, key) in keys.into_iter().enumerate() {
        if let Value::String(key) = key {
            bag.insert(key, values.get(i).cloned().unwrap_or(Value::Null));
        }
    }
    Ok(out(Value::Object(bag)))
}

/// `extract_json(path, text)` / `extractjson(...)`: the element of the JSON `text` at the
/// JSONPath `path` (`$.a.b`, `$['a'][0]`): a string as its text, anything else as JSON; ""
/// when the text is not JSON or the path leads nowhere.
pub fn extract_json(args: &[Val]) -> Result<Out> {
    let Ok(root) = serde_json::from_str::<Value>(str_arg(args, 1)) else {
        return Ok(Out::Str(String::new()));
    };
    let mut node = &root;
    for step in path_steps(str_arg(args, 0)) {
        let next = match node {
            Value::Object(map) => map.get(&step),
            Value::Array(items) => step.trim().parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            return Ok(Out::Str(String::new()));
        };
        node = next;
    }
    Ok(Out::Str(match node {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }))
}

/// `treepath(value)`: the paths of a dynamic value, in order: `['key']` per property and
/// `[0]` once per array (whatever its length), each followed by the paths inside.
pub fn treepath(args: &[Val]) -> Result<Out> {
    let Some(value) = parse(arg(args, 0)) else {
        return Ok(Out::Null);
    };
    let mut paths: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut stack: Vec<(&Value, String)> = vec![(&value, String::new())];
    // Depth-first, keeping the order of keys and elements.
    while let Some((node, prefix)) = stack.pop() {
        let mut children: Vec<(&Value, String)> = Vec::new();
        match node {
            Value::Object(map) => {
                for (key, child) in map {
                    let path = format!("{prefix}['{key}']");
                    children.push((child, path));
                }
            }
            Value::Array(items) if !items.is_empty() => {
                let path = format!("{prefix}[0]");
                for item in items {
                    children.push((item, path.clone()));
                }
            }
            _ => {}
        }
        for (child, path) in children.into_iter().rev() {
            stack.push((child, path));
        }
        if !prefix.is_empty() && seen.insert(prefix.clone()) {
            paths.push(prefix);
        }
    }
    Ok(out(Value::Array(paths.into_iter().map(Value::String).collect())))
}

/// `parse_json(text)` / `todynamic(text)`: invalid JSON gives the text as a dynamic string, an
/// empty text null.
pub fn parse_json(args: &[Val]) -> Result<Out> {
    let text = str_arg(args, 0);
    Ok(match serde_json::from_str::<Value>(text) {
        Ok(value) => out(value),
        // An empty text is no value (`gettype(parse_json(''))` is `null`).
        Err(_) if text.trim().is_empty() => out(Value::Null),
        Err(_) => out(Value::String(text.to_string())),
    })
}

/// The KQL type name of a dynamic value (`gettype`).
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "long",
        Value::Number(_) => "real",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "dictionary",
    }
}

/// `__gettype_dynamic(value)`: the type of a dynamic value (the planner answers `gettype` of
/// typed values itself): `null`, `bool`, `int` (a whole number within 32 bits), `long`,
/// `real`, `string`, `array` or `dictionary`; text that is not JSON is a `string`.
pub fn gettype_dynamic(args: &[Val]) -> Result<Out> {
    let name = match arg(args, 0) {
        Val::Null => "null",
        Val::Bool(_) => "bool",
        Val::Long(n) if i32::try_from(n).is_ok() => "int",
        Val::Long(_) => "long",
        Val::Real(_) => "real",
        Val::DateTime(_) => "datetime",
        Val::Timespan(_) => "timespan",
        Val::Str(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Number(n)) if n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => "int",
            Ok(v) => json_type(&v),
            Err(_) => "string",
        },
    };
    Ok(Out::Str(name.to_string()))
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// `dynamic_to_json(value)`: JSON text with the keys of every bag sorted.
pub fn dynamic_to_json(args: &[Val]) -> Result<Out> {
    Ok(Out::Str(match parse(arg(args, 0)) {
        Some(value) => sorted(value).to_string(),
        None => "null".to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use crate::testing::{d, fails, null_dyn, run, s};

    #[test]
    fn json_paths_extract_elements() {
        let text = r#"{"a": {"b": [10, {"c": "x"}]}, "s": "text"}"#;
        assert_eq!(run("extract_json", &[s("$.a.b[0]"), s(text)]), "10");
        assert_eq!(run("extract_json", &[s("$.a.b[1].c"), s(text)]), "x");
        assert_eq!(run("extract_json", &[s("$['s']"), s(text)]), "text");
        assert_eq!(run("extract_json", &[s("$.a.b"), s(text)]), r#"[10,{"c":"x"}]"#);
        assert_eq!(run("extract_json", &[s("$.nope"), s(text)]), "");
        assert_eq!(run("extract_json", &[s("$.a"), s("not json")]), "");
    }

    #[test]
    fn paths_of_a_tree() {
        assert_eq!(run("treepath", &[d(r#"{"a":"b", "c":123}"#)]), r#"["['a']","['c']"]"#);
        assert_eq!(
            run("treepath", &[d(r#"{"prop1":[1,2,3,4], "prop2":"value2"}"#)]),
            r#"["['prop1']","['prop1'][0]","['prop2']"]"#
        );
        assert_eq!(
            run("treepath", &[d(r#"{"listProperty":[100,200,300,"abcde",{"x":"y"}]}"#)]),
            r#"["['listProperty']","['listProperty'][0]","['listProperty'][0]['x']"]"#
        );
        assert_eq!(run("treepath", &[d("5")]), "[]");
    }

    #[test]
    fn packing() {
        let r = run("bag_pack", &[d("\"Level\""), d("\"Information\""), d("\"n\""), d("5")]);
        assert_eq!(r, "{\"Level\":\"Information\",\"n\":5}");
        assert_eq!(run("pack", &[d("\"a\""), null_dyn()]), "{\"a\":null}");
        assert!(fails("bag_pack", &[d("\"a\"")]));
        let dense = run(
            "__bag_pack_dense",
            &[d("\"a\""), d("\"\""), d("\"b\""), null_dyn(), d("\"c\""), d("0")],
        );
        assert_eq!(dense, "{\"c\":0}");
    }

    #[test]
    fn keys() {
        let bag = d("{\"a\":1,\"b\":{\"c\":2},\"d\":[1]}");
        assert_eq!(run("bag_keys", std::slice::from_ref(&bag)), "[\"a\",\"b\",\"d\"]");
        assert_eq!(run("bag_keys", &[d("[1]")]), "null");
        assert_eq!(run("bag_has_key", &[bag.clone(), s("a")]), "true");
        assert_eq!(run("bag_has_key", &[bag.clone(), s("c")]), "false");
        assert_eq!(run("bag_has_key", &[bag.clone(), s("$.b.c")]), "true");
        assert_eq!(run("bag_has_key", &[bag, s("$['b']['x']")]), "false");
    }

    #[test]
    fn merging_and_editing() {
        let r = run("bag_merge", &[d("{\"A1\":12,\"B1\":2}"), d("{\"A1\":1,\"C1\":3}")]);
        assert_eq!(r, "{\"A1\":12,\"B1\":2,\"C1\":3}");
        let r = run(
            "bag_remove_keys",
            &[
                d("{\"key1\":123,\"key2\":\"abc\",\"key3\":{\"x\":1,\"y\":2}}"),
                d("[\"key2\",\"$.key3.x\"]"),
            ],
        );
        assert_eq!(r, "{\"key1\":123,\"key3\":{\"y\":2}}");
        assert_eq!(
            run("bag_set_key", &[d("{\"a\":1}"), s("b"), d("2")]),
            "{\"a\":1,\"b\":2}"
        );
        assert_eq!(
            run("bag_set_key", &[d("{\"a\":1}"), s("a"), d("\"x\"")]),
            "{\"a\":\"x\"}"
        );
        assert_eq!(
            run("bag_set_key", &[d("{\"a\":{\"b\":1}}"), s("$.a.c.d"), d("3")]),
            "{\"a\":{\"b\":1,\"c\":{\"d\":3}}}"
        );
        let r = run("bag_zip", &[d("[\"a\",\"b\",\"c\",1]"), d("[1,\"2\"]")]);
        assert_eq!(r, "{\"a\":1,\"b\":\"2\",\"c\":null}");
        let r = run("bag_zip", &[d("[\"a\",8,\"b\"]"), d("1")]);
        assert_eq!(r, "{\"a\":null,\"b\":null}");
    }

    #[test]
    fn parsing_and_types() {
        assert_eq!(run("parse_json", &[s("{\"a\": [1, 2]}")]), "{\"a\":[1,2]}");
        assert_eq!(run("todynamic", &[s("not json")]), "\"not json\"");
        assert_eq!(run("parse_json", &[s("5")]), "5");
        let gettype = |value| run("__gettype_dynamic", &[value]);
        assert_eq!(gettype(d("[1]")), "array");
        assert_eq!(gettype(d("{}")), "dictionary");
        assert_eq!(gettype(d("1")), "int");
        assert_eq!(gettype(d("12345678901")), "long");
        assert_eq!(gettype(d("1.5")), "real");
        assert_eq!(gettype(d("\"abc\"")), "string");
        assert_eq!(gettype(d("null")), "null");
        assert_eq!(gettype(null_dyn()), "null");
        assert_eq!(gettype(d("true")), "bool");
    }

    #[test]
    fn to_json_sorts_keys() {
        let r = run(
            "dynamic_to_json",
            &[d("{\"b\":1,\"a\":{\"d\":1,\"c\":[{\"z\":1,\"y\":2}]}}")],
        );
        assert_eq!(r, "{\"a\":{\"c\":[{\"y\":2,\"z\":1}],\"d\":1},\"b\":1}");
        assert_eq!(run("dynamic_to_json", &[d("[1,\"a\"]")]), "[1,\"a\"]");
    }
}
