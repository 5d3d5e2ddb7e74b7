//! How much of the public conformance corpus parses. Run with `--nocapture` to see failures.

use crate::support::corpus_queries;

#[test]
fn count_corpus_queries_that_parse() {
    let queries = corpus_queries();
    let mut failures = Vec::new();
    for (id, query) in &queries {
        if let Err(error) = trawl_kql::parse(query) {
            let location = error.location;
            failures.push(format!(
                "{id} ({}:{}): {}",
                location.start_line, location.start_column, error.message
            ));
        }
    }
    for failure in &failures {
        println!("FAIL {failure}");
    }
    println!(
        "corpus: {} of {} queries parse",
        queries.len() - failures.len(),
        queries.len()
    );
}
