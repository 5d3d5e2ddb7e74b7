//! Vendor intake series v2 payloads (protobuf): decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::vendor::metrics;

fuzz_target!(|data: &[u8]| {
    if let Ok(payload) = metrics::decode_series_v2(data) {
        let _ = metrics::series_v2_to_rows(&payload, 1704164645000000000);
    }
});
