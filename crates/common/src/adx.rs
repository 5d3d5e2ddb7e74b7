//! The request body of the Azure Data Explorer REST faces (`POST /v1/rest/query`,
//! `/v1/rest/mgmt`, `/v2/rest/query`): `{db, csl, properties}`, where `properties` is an object
//! or a JSON string holding one (`azure-kusto-data` sends a string), and the request options
//! inside it. Pure decoding; the handlers in `trawl_api::adx` run the query.

use serde::Deserialize;
use serde_json::Value as Json;

use crate::TrawlError;

/// The database name ADX clients send when none was given.
pub const CLIENT_DEFAULT_DATABASE: &str = "NetDefaultDB";

/// A decoded request body.
#[derive(Debug, Deserialize)]
pub struct AdxBody {
    pub db: Option<String>,
    pub csl: String,
    #[serde(default)]
    properties: Option<Json>,
}

impl AdxBody {
    pub fn parse(body: &[u8]) -> Result<AdxBody, TrawlError> {
        serde_json::from_slice(body).map_err(|e| TrawlError::bad_request(format!("the request body is not valid: {e}")))
    }

    /// `properties`, whichever way it was sent (`Null` when absent).
    pub fn properties(&self) -> Result<Json, TrawlError> {
        match &self.properties {
            None | Some(Json::Null) => Ok(Json::Null),
            Some(Json::String(text)) if text.trim().is_empty() => Ok(Json::Null),
            Some(Json::String(text)) => serde_json::from_str(text)
                .map_err(|e| TrawlError::bad_request(format!("'properties' is not a JSON object: {e}"))),
            Some(value) => Ok(value.clone()),
        }
    }

    /// The database the request names, or `default` when it names none (or the clients'
    /// placeholder).
    pub fn database(&self, default: &str) -> String {
        match self.db.as_deref().map(str::trim) {
            None | Some("") | Some(CLIENT_DEFAULT_DATABASE) => default.to_string(),
            Some(name) => name.to_string(),
        }
    }
}

/// A text request option (`properties.Options.<name>`); none when absent or empty.
pub fn option<'a>(properties: &'a Json, name: &str) -> Option<&'a str> {
    properties
        .get("Options")
        .and_then(|options| options.get(name))
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
}

/// Whether `Options.norequesttimeout` asks for no time limit (true or "true").
pub fn no_request_timeout(properties: &Json) -> bool {
    properties
        .pointer("/Options/norequesttimeout")
        .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"))
}

/// `Options.servertimeout` as sent: absent or null is `None`.
pub fn server_timeout(properties: &Json) -> Option<&Json> {
    properties.pointer("/Options/servertimeout").filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_as_clients_send_them() -> Result<(), TrawlError> {
        // azure-kusto-data: properties as a JSON string.
        let body = AdxBody::parse(
            br#"{"db": "NetDefaultDB", "csl": "print 1", "properties": "{\"Options\": {\"servertimeout\": \"00:04:00\", \"query_datetimescope_from\": \"1h\"}}"}"#,
        )?;
        assert_eq!(body.database("default"), "default");
        let properties = body.properties()?;
        assert_eq!(server_timeout(&properties), Some(&Json::from("00:04:00")));
        assert_eq!(option(&properties, "query_datetimescope_from"), Some("1h"));
        assert!(!no_request_timeout(&properties));
        // An object, a database, no time limit.
        let body =
            AdxBody::parse(br#"{"db": "logs", "csl": "T", "properties": {"Options": {"norequesttimeout": true}}}"#)?;
        assert_eq!(body.database("default"), "logs");
        assert!(no_request_timeout(&body.properties()?));
        assert!(AdxBody::parse(br#"{"db": "x"}"#).is_err());
        let bad = AdxBody::parse(br#"{"csl": "T", "properties": "{"}"#)?;
        assert!(bad.properties().is_err());
        Ok(())
    }
}
