//! Shredded keys (decision 002): single keys of property bags copied into hidden columns of
//! their own at write time, so queries that read them need not decode whole bags.
//!
//! A hidden column `shredded_column(bag, key)` holds, for every row, exactly what
//! `json_as_text(bag, key)` gives: a JSON string decoded, any other value as its JSON text,
//! null when the key is absent or null. Queries may therefore read the column in place of the
//! bag. Hidden columns never show in schemas, `project *` or results.

/// Prefix of every hidden column's name.
pub const HIDDEN_PREFIX: &str = "__trawl_shred:";

/// The keys shredded out of each bag column (when that column is `dynamic`).
pub const SHREDDED_KEYS: &[(&str, &[&str])] = &[
    (
        "resource",
        &[
            "service.name",
            "service.namespace",
            "host.name",
            "deployment.environment",
            "k8s.namespace.name",
        ],
    ),
    (
        "attributes",
        &[
            "http.route",
            "http.status_code",
            "http.response.status_code",
            "http.method",
            "http.request.method",
        ],
    ),
];

/// Name of the hidden column that holds `key` of `bag`.
pub fn shredded_column(bag: &str, key: &str) -> String {
    format!("{HIDDEN_PREFIX}{bag}:{key}")
}

/// The bag and key of a hidden column's name.
pub fn parse_shredded_column(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(HIDDEN_PREFIX)?.split_once(':')
}

/// Whether `name` is a hidden column (never shown to users).
pub fn is_hidden_column(name: &str) -> bool {
    name.starts_with(HIDDEN_PREFIX)
}

/// The keys shredded out of the bag column `bag`.
pub fn shredded_keys(bag: &str) -> &'static [&'static str] {
    SHREDDED_KEYS
        .iter()
        .find(|(name, _)| *name == bag)
        .map_or(&[], |(_, keys)| keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let name = shredded_column("resource", "service.name");
        assert!(is_hidden_column(&name));
        assert_eq!(parse_shredded_column(&name), Some(("resource", "service.name")));
        assert_eq!(parse_shredded_column("resource"), None);
        assert!(!is_hidden_column("resource"));
        assert_eq!(shredded_keys("attributes")[0], "http.route");
        assert!(shredded_keys("body").is_empty());
    }
}
