//! RFC 7807 problem details: `{type, title, status, message, code, error_details}`.

use axum::response::{IntoResponse, Response};
use trawl_common::TrawlError;

/// Base of the `type` URL of every problem.
pub const PROBLEM_TYPE_BASE: &str = "https://trawl.dev/problems/";

/// An error as an HTTP response.
#[derive(Debug)]
pub struct Problem(pub TrawlError);

impl From<TrawlError> for Problem {
    fn from(error: TrawlError) -> Self {
        Problem(error)
    }
}

impl Problem {
    pub fn body(&self) -> serde_json::Value {
        let error = &self.0;
        let mut details = serde_json::Map::new();
        if let Some(location) = &error.location {
            details.insert("location".into(), serde_json::to_value(location).unwrap_or_default());
        }
        if let Some(suggestion) = &error.suggestion {
            details.insert("suggestion".into(), serde_json::Value::String(suggestion.clone()));
        }
        serde_json::json!({
            "type": format!("{PROBLEM_TYPE_BASE}{}", error.code.as_str()),
            "title": error.code.as_str(),
            "status": error.code.http_status(),
            "message": error.message,
            "code": error.code.as_str(),
            "error_details": details,
        })
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = self.body().to_string();
        let mut response = (
            crate::errors::http_status(self.0.code),
            [(axum::http::header::CONTENT_TYPE, "application/problem+json")],
            body,
        )
            .into_response();
        crate::errors::add_retry_after(self.0.code, response.headers_mut());
        response
    }
}
