//! `POST /v2/rest/query` in progressive mode: a query that fails before any row went out is
//! answered with its error status and an `{error: ...}` body, as in non-progressive mode.

use axum::http::StatusCode;
use serde_json::{Value as Json, json};

use crate::TestResult;
use crate::query_http::port;

fn progressive(csl: &str, options: Json) -> Json {
    let mut all = json!({"results_progressive_enabled": true});
    if let (Some(all), Some(more)) = (all.as_object_mut(), options.as_object()) {
        all.extend(more.clone());
    }
    json!({"db": "default", "csl": csl, "properties": {"Options": all}})
}

#[tokio::test]
async fn progressive_failures_before_rows_are_error_statuses() -> TestResult {
    let port = port().await?;
    // Analysis fails: 400.
    let (status, body) = port
        .call("POST", "/v2/rest/query", Some(progressive("nope | take 1", json!({}))))
        .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "General_BadRequest");
    assert_eq!(body["error"]["@type"], "Kusto.Data.Exceptions.SemanticException");
    assert!(body["error"]["message"].is_string(), "{body}");

    // Running fails before the first row fragment: 400 too, not frames in a 200.
    let (status, body) = port
        .call(
            "POST",
            "/v2/rest/query",
            Some(progressive(
                "default | extend x = 1 / (strlen(severity_text) - strlen(severity_text))",
                json!({}),
            )),
        )
        .await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap_or_default().contains("divides"),
        "{body}"
    );
    assert_eq!(body["error"]["@type"], "Kusto.Data.Exceptions.KustoBadRequestException");

    // A server-side failure is a 5xx: out of time before anything ran.
    let (status, body) = port
        .call(
            "POST",
            "/v2/rest/query",
            Some(progressive("default | count", json!({"servertimeout": "00:00:00"}))),
        )
        .await?;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert_eq!(body["error"]["code"], "RequestTimeout");
    assert_eq!(body["error"]["@permanent"], false);
    Ok(())
}

#[tokio::test]
async fn a_progressive_answer_streams_its_frames_once_rows_are_ready() -> TestResult {
    let port = port().await?;
    let (status, frames) = port
        .call(
            "POST",
            "/v2/rest/query",
            Some(progressive("default | where severity_text == 'ERROR' | count", json!({}))),
        )
        .await?;
    assert_eq!(status, StatusCode::OK, "{frames}");
    let frames = frames.as_array().ok_or("an array of frames")?;
    let kinds: Vec<&str> = frames
        .iter()
        .filter_map(|f| f["FrameType"].as_str())
        .filter(|kind| *kind != "TableProgress")
        .collect();
    assert_eq!(
        kinds,
        [
            "DataSetHeader",
            "DataTable",
            "TableHeader",
            "TableFragment",
            "TableCompletion",
            "DataTable",
            "DataSetCompletion"
        ]
    );
    // Of the progress held back before the first fragment, at most the newest report is sent.
    let progress_before_rows = frames
        .iter()
        .take_while(|f| f["FrameType"] != "TableFragment")
        .filter(|f| f["FrameType"] == "TableProgress")
        .count();
    assert!(progress_before_rows <= 1, "{frames:?}");
    let fragment = frames
        .iter()
        .find(|f| f["FrameType"] == "TableFragment")
        .ok_or("a fragment")?;
    assert_eq!(fragment["Rows"], json!([[40]]));
    assert_eq!(
        frames.last(),
        Some(&json!({"FrameType": "DataSetCompletion", "HasErrors": false, "Cancelled": false}))
    );
    Ok(())
}
