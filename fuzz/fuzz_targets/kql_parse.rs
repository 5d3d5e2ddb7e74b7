//! The KQL parser: any text parses or fails with an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(query) = trawl_kql::parse(text) {
            // What parses prints, and what prints parses again.
            let printed = query.to_string();
            let _ = trawl_kql::parse(&printed);
        }
    }
});
