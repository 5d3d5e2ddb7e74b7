//! The parser never panics: every prefix of real queries, and random byte soup.

use crate::support::corpus_queries;

const SAMPLES: &[&str] = &[
    "let f = (a:long, b:string = \"x\") { T | where a > 1 | project b };\nf(1, 'y') | summarize count() by bin(timestamp, 5m)",
    "T | where resource['service.name'] =~ \"api\" and message has_cs 'error' or x !in~ ('a', 'b')",
    "T | extend d = dynamic({\"a\": [1, 2, {\"b\": null}]}), t = datetime(2024-01-01T10:00:00Z), g = guid(74be27de-1e4e-49d9-b579-fe0b331d3642)",
    "T | top 5 by x desc nulls last | project-reorder a* granny-asc | project-rename a = b | sort by c asc",
    "T | where x between (1 .. 10) and y !between (time(1d) .. 2d) | distinct * | take 10",
    "['a b'] | where @'x' == ```y``` and h\"z\" != 'w\\'' | count",
];

fn must_not_panic(text: &str) {
    let result = std::panic::catch_unwind(|| trawl_kql::parse(text));
    assert!(result.is_ok(), "parser panicked on {text:?}");
}

#[test]
fn every_prefix_of_sample_queries() {
    for sample in SAMPLES {
        for (end, _) in sample.char_indices() {
            must_not_panic(&sample[..end]);
        }
    }
}

#[test]
fn every_prefix_of_some_corpus_queries() {
    for (_, query) in corpus_queries().iter().step_by(7) {
        for (end, _) in query.char_indices() {
            must_not_panic(&query[..end]);
        }
    }
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_byte_soup() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let alphabet: Vec<char> = "abT |()[]{}'\"@`.,;:=!<>~-+*/%0123456789 \n\\$hdms_xyzé{}inhas"
        .chars()
        .collect();
    for _ in 0..3_000 {
        let length = (random.next() % 60) as usize;
        let text: String = (0..length)
            .map(|_| alphabet[(random.next() % alphabet.len() as u64) as usize])
            .collect();
        must_not_panic(&text);
    }
    for _ in 0..1_000 {
        let length = (random.next() % 40) as usize;
        let bytes: Vec<u8> = (0..length).map(|_| (random.next() % 256) as u8).collect();
        must_not_panic(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for opener in ["(", "-", "f(", "dynamic([", "x in ("] {
        let text = format!("print {}", opener.repeat(5_000));
        let result = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || trawl_kql::parse(&text).is_err())
            .map(|handle| handle.join());
        assert!(
            matches!(result, Ok(Ok(true))),
            "deep nesting with {opener:?} must fail cleanly"
        );
    }
    let text = format!("T | where {}1{}", "(".repeat(50), ")".repeat(50));
    assert!(trawl_kql::parse(&text).is_ok());
}

#[test]
fn random_token_soup() {
    let words = [
        "T",
        "|",
        "where",
        "project",
        "extend",
        "summarize",
        "by",
        "count",
        "(",
        ")",
        "[",
        "]",
        ",",
        "=",
        "==",
        "and",
        "or",
        "has",
        "!",
        "in",
        "~",
        "between",
        "..",
        "1",
        "1.5",
        "1d",
        "'s'",
        "datetime",
        "dynamic",
        "{",
        "}",
        ":",
        "let",
        ";",
        "x",
        "take",
        "sort",
        "asc",
        "nulls",
        "first",
        "-",
        "*",
        "typeof",
        "long",
        "not",
        "top",
    ];
    let mut random = Random(42);
    for _ in 0..5_000 {
        let length = (random.next() % 25) as usize;
        let text: Vec<&str> = (0..length)
            .map(|_| words[(random.next() % words.len() as u64) as usize])
            .collect();
        must_not_panic(&text.join(" "));
    }
}

/// The error message of parsing `text`, or "" when it parses.
fn parse_error(text: &str) -> String {
    trawl_kql::parse(text).err().map(|e| e.to_string()).unwrap_or_default()
}

/// A kind of chain and the query of `n` links of it.
type Chain = (&'static str, fn(usize) -> String);

#[test]
fn chains_parse_up_to_the_tree_bound_and_are_refused_past_it() {
    let under = trawl_kql::MAX_TREE_DEPTH - 10;
    let over = trawl_kql::MAX_TREE_DEPTH + 1;
    let chains: [Chain; 5] = [
        ("binary", |n| format!("print {}", vec!["1"; n + 1].join(" + "))),
        ("pipeline", |n| format!("print x = 1 {}", "| where x == 1 ".repeat(n))),
        ("members", |n| {
            format!("print d = dynamic({{}}) | extend e = d{}", ".a".repeat(n))
        }),
        ("indexes", |n| {
            format!("print d = dynamic([]) | extend e = d{}", "[0]".repeat(n))
        }),
        ("mixed", |n| {
            format!("print x = 1 {}", "| extend y = 1 + 2 ".repeat(n / 2))
        }),
    ];
    for (name, chain) in chains {
        assert_eq!(parse_error(&chain(under)), "", "{name} under the bound");
    }
    for (name, chain) in chains.iter().take(4) {
        let error = parse_error(&chain(over));
        assert!(error.contains("query is too long"), "{name} over the bound: {error:?}");
    }
    // Nesting counts towards the same bound as the chains inside it.
    let nested = format!(
        "print {}{}{}",
        "(1 + ".repeat(30),
        vec!["1"; 950].join(" + "),
        ")".repeat(30)
    );
    assert!(
        parse_error(&nested).contains("query is too long"),
        "{}",
        parse_error(&nested)
    );
}

#[test]
fn huge_chains_are_refused_without_building_them() {
    let text = format!("print {}", vec!["1"; 200_000].join(" or "));
    assert!(parse_error(&text).contains("query is too long"));
    let text = format!("print {}1", "-".repeat(100_000));
    assert!(parse_error(&text).contains("nested too deeply"));
}

/// Inputs the fuzzer found (`fuzz/`, target `kql_parse`): each once panicked.
#[test]
fn fuzz_findings_parse_or_fail_without_panicking() {
    let findings = [
        // A clock timespan with a negative part: `minutes * 60` overflowed.
        "time(682:-2222222222222222222)0222",
    ];
    for text in findings {
        must_not_panic(text);
    }
    assert!(trawl_kql::parse("print time(682:-5)").is_err());
    assert!(trawl_kql::parse("print time(1.02:03:04)").is_ok());
}
