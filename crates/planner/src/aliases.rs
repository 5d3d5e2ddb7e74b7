//! Deprecated function names Kusto still accepts, and the functions they stand for. A name is
//! read as its current one unless the query binds the name itself (`let makelist = ...`).

/// `(deprecated, current)`: the same function under its old name, same arguments.
const ALIASES: &[(&str, &str)] = &[
    ("anyif", "take_anyif"),
    ("argmax", "arg_max"),
    ("argmin", "arg_min"),
    ("arraylength", "array_length"),
    ("base64_decodestring", "base64_decode_tostring"),
    ("base64_encodestring", "base64_encode_tostring"),
    ("columnifexists", "column_ifexists"),
    ("datepart", "datetime_part"),
    ("extractall", "extract_all"),
    ("extractjson", "extract_json"),
    ("make_dictionary", "make_bag"),
    ("make_string", "unicode_codepoints_to_string"),
    ("makelist", "make_list"),
    ("makeset", "make_set"),
    ("notempty", "isnotempty"),
    ("notnull", "isnotnull"),
    ("pack_dictionary", "bag_pack"),
    ("parsejson", "parse_json"),
    ("parseurl", "parse_url"),
    ("parseurlquery", "parse_urlquery"),
    ("to_utf8", "unicode_codepoints_from_string"),
    ("toobject", "todynamic"),
    ("totime", "totimespan"),
];

/// The current name of a deprecated function name.
pub fn current_name(name: &str) -> Option<&'static str> {
    ALIASES.iter().find(|(old, _)| *old == name).map(|(_, new)| *new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_sorted_and_point_at_other_names() {
        let names: Vec<&str> = ALIASES.iter().map(|(old, _)| *old).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
        for (old, new) in ALIASES {
            assert!(current_name(new).is_none(), "{old} -> {new} -> another alias");
        }
    }
}
