//! `POST /timeline-query {query, since, until, timezone}`: the query's rows counted by
//! severity over time.
//!
//! The bin size is the smallest of 1s, 5s, 10s, 30s, 1m, 5m, 10m, 30m, 1h, 3h, 6h, 12h, 1d,
//! 7d that gives at most 200 bins over the window (`since`..`until`, or the data's own time
//! range). Answer: `{"bin": "<timespan>", "Tables": [PrimaryResult(timestamp: datetime,
//! severity: string, count: long), @Warnings]}`, sorted by time then severity; rows without
//! a severity count under `""`.

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Json, Response};
use trawl_common::TrawlError;
use trawl_common::time::{NANOS_PER_SECOND, format_timespan};
use trawl_engine::{QueryRequest, resolve_window_now};

use crate::problem::Problem;
use crate::query_http::{QueryBody, parse_body, tables_json};
use crate::state::QueryState;

const LADDER_SECONDS: &[i64] = &[
    1, 5, 10, 30, 60, 300, 600, 1800, 3600, 10800, 21600, 43200, 86400, 604800,
];
const MAX_BINS: i64 = 200;

/// The bin size for a window of `span` nanoseconds.
pub fn bin_for(span: i64) -> i64 {
    for seconds in LADDER_SECONDS {
        let size = seconds * NANOS_PER_SECOND;
        if span / size < MAX_BINS {
            return size;
        }
    }
    LADDER_SECONDS[LADDER_SECONDS.len() - 1] * NANOS_PER_SECOND
}

pub async fn timeline(State(state): State<QueryState>, body: Bytes) -> Response {
    match run(&state, &body).await {
        Ok(body) => Json(body).into_response(),
        Err(error) => Problem(error).into_response(),
    }
}

async fn run(state: &QueryState, body: &[u8]) -> Result<serde_json::Value, TrawlError> {
    let body: QueryBody = parse_body(body)?;
    let window = resolve_window_now(body.since.as_deref(), body.until.as_deref(), body.timezone.as_deref())?;
    let request = |text: String| QueryRequest {
        text,
        database: state.database.clone(),
        window,
        parameters: Default::default(),
    };
    let user = body.query.trim().trim_end_matches(';');
    let (start, end) = match (window.since, window.until) {
        (Some(since), Some(until)) => (since, until),
        _ => {
            let range = state
                .engine
                .execute(&request(format!(
                    "{user}\n| summarize first = min(timestamp), last = max(timestamp)"
                )))
                .await?;
            let row = range.tables.first().map(|t| t.json_rows()).unwrap_or_default();
            let read = |i: usize| {
                row.first()
                    .and_then(|r| r.get(i))
                    .and_then(|v| v.as_str())
                    .and_then(trawl_common::time::parse_datetime)
            };
            (
                window.since.or(read(0)).unwrap_or(0),
                window.until.or(read(1)).unwrap_or(0),
            )
        }
    };
    let bin = bin_for(end.saturating_sub(start).max(0));
    let span = format_timespan(bin);
    let text = format!(
        "{user}\n| summarize count = count() by timestamp = bin(timestamp, timespan({span})), severity = severity_text\n| sort by timestamp asc, severity asc"
    );
    let output = state.engine.execute(&request(text)).await?;
    let mut answer = tables_json(&output);
    if let Some(object) = answer.as_object_mut() {
        object.insert("bin".into(), serde_json::Value::String(span));
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_follow_the_ladder() {
        assert_eq!(bin_for(60 * NANOS_PER_SECOND), NANOS_PER_SECOND);
        assert_eq!(bin_for(3600 * NANOS_PER_SECOND), 30 * NANOS_PER_SECOND);
        assert_eq!(bin_for(86_400 * NANOS_PER_SECOND), 600 * NANOS_PER_SECOND);
        assert_eq!(bin_for(i64::MAX), 604_800 * NANOS_PER_SECOND);
    }
}
