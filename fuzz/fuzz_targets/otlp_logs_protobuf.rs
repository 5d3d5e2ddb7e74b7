//! OTLP logs export requests as protobuf: decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::otlp::{PayloadFormat, decode_logs, logs_to_rows};

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = decode_logs(data, PayloadFormat::Protobuf) {
        let _ = logs_to_rows(&request, 1704164645000000000);
    }
});
