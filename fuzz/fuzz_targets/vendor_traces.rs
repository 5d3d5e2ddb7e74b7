//! Vendor intake trace payloads (classic and indexed protobuf): decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::vendor::traces;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = traces::decode(data) {
        let _ = traces::to_rows(&payload, 1704164645000000000);
    }
});
