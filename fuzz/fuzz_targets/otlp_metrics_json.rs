//! OTLP metrics export requests as json: decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::otlp::{PayloadFormat, decode_metrics, metrics_to_rows};

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = decode_metrics(data, PayloadFormat::Json) {
        let _ = metrics_to_rows(&request, 1704164645000000000);
    }
});
