//! Log push Snappy-compressed protobuf bodies: decode, then map to rows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_intake::logpush::{decode_protobuf, streams_to_rows};

fuzz_target!(|data: &[u8]| {
    if let Ok(streams) = decode_protobuf(data) {
        let _ = streams_to_rows(&streams, 1704164645000000000);
    }
});
