//! Vendor intake log bodies (JSON): decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::vendor::logs;

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = logs::decode(data) {
        let _ = logs::to_rows(entries, 1704164645000000000);
    }
});
