//! The ADX REST request body (`/v1/rest/query`, `/v1/rest/mgmt`, `/v2/rest/query`): decode it
//! and its `properties`, then read what the handlers read: the database, the time limit
//! (`servertimeout`, `norequesttimeout`), the time window options, and the query text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trawl_common::adx::{self, AdxBody};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = AdxBody::parse(data) else {
        return;
    };
    let _ = body.database("default");
    let _ = trawl_kql::parse(&body.csl);
    let Ok(properties) = body.properties() else {
        return;
    };
    let _ = adx::no_request_timeout(&properties);
    if let Some(text) = adx::server_timeout(&properties).and_then(|v| v.as_str()) {
        let _ = trawl_kql::parse_time_limit(text);
    }
    let _ = trawl_common::window::resolve_window(
        adx::option(&properties, "query_datetimescope_from"),
        adx::option(&properties, "query_datetimescope_to"),
        adx::option(&properties, "query_timezone"),
        1_700_000_000_000_000_000,
    );
});
