//! The gRPC `ExecuteQueryRequest`: decode, then parse its query text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use trawl_proto::query::ExecuteQueryRequest;

fuzz_target!(|data: &[u8]| {
    if let Ok(request) = ExecuteQueryRequest::decode(data) {
        let _ = trawl_kql::parse(&request.query);
    }
});
