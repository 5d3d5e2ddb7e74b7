//! The browser's side of SSO sign-in (`trawl_auth::sso` has the protocol and the account
//! rules):
//!
//! - `GET /api/ui/sso`: whether SSO is on, and the sign-in button's text;
//! - `GET /api/ui/sso/start?next=/path`: sends the browser to the provider, keeping the
//!   state, nonce and PKCE verifier in an encrypted cookie ([`FLOW_COOKIE`], 10 minutes,
//!   only sent to `/api/ui/sso`);
//! - `GET /api/ui/sso/callback?code&state`: checks the state, trades the code, checks the ID
//!   token, finds (or links, or makes) the account, and starts a browser session as a
//!   password sign-in does. Any refusal goes back to the page as `/?sso_error=<text>`.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde_json::json;
use trawl_auth::sso::{self, Pending, SsoError};
use trawl_catalog::SsoSettings;

use crate::server::Gateway;
use crate::session::{cleared_named, over_tls};

/// The cookie that carries a sign-in under way.
pub const FLOW_COOKIE: &str = "trawl_sso";
const FLOW_PATH: &str = "/api/ui/sso";
/// How long a sign-in may take at the provider.
const FLOW_SECS: i64 = 600;
/// The callback's path on the gateway.
pub const CALLBACK_PATH: &str = "/api/ui/sso/callback";

/// What the flow cookie holds.
#[derive(Debug, serde::Serialize, Deserialize)]
struct Flow {
    pending: Pending,
    /// Where to go once signed in (a path of this site).
    next: String,
}

async fn settings(gateway: &Gateway) -> Result<Option<SsoSettings>, SsoError> {
    let settings = sso::stored_settings(gateway.inner.directory.as_ref()).await?;
    Ok(settings.filter(|s| s.enabled && !s.issuer.is_empty() && !s.client_id.is_empty()))
}

/// `GET /api/ui/sso`: `{enabled, label}` for the sign-in page.
pub(crate) async fn status(State(gateway): State<Gateway>) -> Response {
    match settings(&gateway).await {
        Ok(Some(settings)) => {
            let label = if settings.label.is_empty() {
                "Sign in with SSO".to_string()
            } else {
                settings.label
            };
            Json(json!({"enabled": true, "label": label})).into_response()
        }
        Ok(None) => Json(json!({"enabled": false})).into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot read the SSO settings");
            Json(json!({"enabled": false})).into_response()
        }
    }
}

/// A path of this site to go to after signing in; anything else (another site, `//host`)
/// becomes `/`.
fn local_path(next: Option<&str>) -> String {
    match next {
        Some(path) if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') => path.to_string(),
        _ => "/".to_string(),
    }
}

/// The callback URL: the configured one, else this gateway's on the host the browser used.
fn redirect_uri(settings: &SsoSettings, headers: &HeaderMap) -> String {
    if !settings.redirect_url.is_empty() {
        return settings.redirect_url.clone();
    }
    let scheme = if over_tls(headers) { "https" } else { "http" };
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(header::HOST))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    format!("{scheme}://{host}{CALLBACK_PATH}")
}

/// A 303 to `location`, with `cookie` set if given.
fn redirect(location: &str, cookie: Option<HeaderValue>) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Back to the sign-in page with `message`, the flow cookie removed.
fn refused(message: &str, secure: bool) -> Response {
    let text: String = url::form_urlencoded::byte_serialize(message.as_bytes()).collect();
    redirect(
        &format!("/?sso_error={text}"),
        cleared_named(FLOW_COOKIE, FLOW_PATH, secure),
    )
}

fn sso_refusal(error: &SsoError, secure: bool) -> Response {
    match error {
        SsoError::Refused(text) => refused(text, secure),
        SsoError::Provider(_) => {
            tracing::warn!(%error, "an SSO sign-in failed at the identity provider");
            refused(&format!("SSO sign-in failed: {error}"), secure)
        }
        SsoError::Catalog(_) => {
            tracing::error!(%error, "an SSO sign-in failed");
            refused("the account store is unavailable; try again", secure)
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct StartParams {
    next: Option<String>,
}

/// `GET /api/ui/sso/start`: off to the provider.
pub(crate) async fn start(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    Query(params): Query<StartParams>,
) -> Response {
    let secure = over_tls(&headers);
    let settings = match settings(&gateway).await {
        Ok(Some(settings)) => settings,
        Ok(None) => return refused("SSO is not set up", secure),
        Err(error) => return sso_refusal(&error, secure),
    };
    let (url, pending) = match sso::begin(&settings, &redirect_uri(&settings, &headers)).await {
        Ok(begun) => begun,
        Err(error) => return sso_refusal(&error, secure),
    };
    let flow = Flow {
        pending,
        next: local_path(params.next.as_deref()),
    };
    let Ok(text) = serde_json::to_string(&flow) else {
        return refused("cannot start the sign-in", secure);
    };
    let cookie = gateway
        .inner
        .sessions
        .seal_named(FLOW_COOKIE, FLOW_PATH, &text, FLOW_SECS, secure);
    if cookie.is_none() {
        return refused("cannot start the sign-in", secure);
    }
    redirect(&url, cookie)
}

#[derive(Debug, Deserialize)]
pub(crate) struct CallbackParams {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /api/ui/sso/callback`: back from the provider.
pub(crate) async fn callback(
    State(gateway): State<Gateway>,
    headers: HeaderMap,
    Query(params): Query<CallbackParams>,
) -> Response {
    let secure = over_tls(&headers);
    if let Some(error) = &params.error {
        let detail = params.error_description.as_deref().unwrap_or(error);
        return refused(&format!("the identity provider refused the sign-in: {detail}"), secure);
    }
    let flow: Option<Flow> = gateway
        .inner
        .sessions
        .open_named(&headers, FLOW_COOKIE)
        .and_then(|text| serde_json::from_str(&text).ok());
    let Some(flow) = flow else {
        return refused(
            "the sign-in took too long or began in another browser; try again",
            secure,
        );
    };
    let (Some(code), Some(state)) = (params.code.as_deref(), params.state.as_deref()) else {
        return refused("the identity provider sent no code", secure);
    };
    if state != flow.pending.state {
        return refused("the sign-in does not match this browser's; try again", secure);
    }
    let settings = match settings(&gateway).await {
        Ok(Some(settings)) => settings,
        Ok(None) => return refused("SSO is not set up", secure),
        Err(error) => return sso_refusal(&error, secure),
    };
    let directory = gateway.inner.directory.as_ref();
    let now = trawl_common::time::now_nanos();
    let principal = match sso::finish(&settings, &flow.pending, code).await {
        Ok(identity) => match sso::account(directory, &settings, &identity, now).await {
            Ok(principal) => principal,
            Err(error) => return sso_refusal(&error, secure),
        },
        Err(error) => return sso_refusal(&error, secure),
    };
    let session = match crate::session::start_session(&gateway, &principal, secure).await {
        Ok(cookie) => cookie,
        Err(_) => return refused("cannot start the session; try again", secure),
    };
    let mut response = redirect(&flow.next, Some(session));
    if let Some(cleared) = cleared_named(FLOW_COOKIE, FLOW_PATH, secure) {
        response.headers_mut().append(header::SET_COOKIE, cleared);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_followed() {
        assert_eq!(local_path(Some("/?q=x")), "/?q=x");
        assert_eq!(local_path(Some("//evil.example")), "/");
        assert_eq!(local_path(Some("https://evil.example")), "/");
        assert_eq!(local_path(Some("/\\evil.example")), "/");
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn the_callback_is_on_the_host_the_browser_used() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("trawl.example:9500"));
        let settings = SsoSettings::default();
        assert_eq!(
            redirect_uri(&settings, &headers),
            "http://trawl.example:9500/api/ui/sso/callback"
        );
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert_eq!(
            redirect_uri(&settings, &headers),
            "https://trawl.example:9500/api/ui/sso/callback"
        );
        let fixed = SsoSettings {
            redirect_url: "https://trawl.example/api/ui/sso/callback".into(),
            ..SsoSettings::default()
        };
        assert_eq!(redirect_uri(&fixed, &headers), fixed.redirect_url);
    }
}
