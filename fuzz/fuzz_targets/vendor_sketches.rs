//! Vendor intake sketch payloads (protobuf): decode, then re-bin and map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::vendor::metrics;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = metrics::decode_sketches(data) {
        let _ = metrics::sketches_to_rows(&payload, 1704164645000000000);
    }
});
