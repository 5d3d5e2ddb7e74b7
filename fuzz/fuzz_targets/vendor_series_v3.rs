//! Vendor intake series v3 payloads (columnar protobuf): decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::vendor::series_v3;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = series_v3::decode(data) {
        let _ = series_v3::to_rows(&payload, 1704164645000000000);
    }
});
