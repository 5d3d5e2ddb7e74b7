//! OTLP traces export requests as protobuf: decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::otlp::{PayloadFormat, decode_traces, traces_to_rows};

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = decode_traces(data, PayloadFormat::Protobuf) {
        let _ = traces_to_rows(&request, 1704164645000000000);
    }
});
