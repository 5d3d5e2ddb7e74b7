//! Browser sessions of the web UI.
//!
//! Signing in with a password (`POST /api/ui/sign-in`) issues an access token, as
//! `/api/sign-in` does, and hands it to the browser only inside an encrypted cookie
//! ([`COOKIE`]: AES-256-GCM under a key derived from the master key, so every gateway of a
//! cluster opens it; `HttpOnly`, `SameSite=Lax`, `Secure` behind TLS). A request without an
//! `Authorization` header is then authenticated with the cookie's token, but only if it
//! carries [`CSRF_HEADER`]: a page of another origin cannot set that header without the
//! browser asking first (CORS), which the gateway never allows, so a forged request arrives
//! without it and is refused.
//!
//! The page learns who is signed in only from `GET /api/ui/session`: an identity token (a
//! JWT signed with the gateway's Ed25519 key, verifiable against `GET /api/gateway-keys`)
//! valid for [`IDENTITY_SECS`]; the page reloads itself a few minutes before it expires.
//! `POST /api/ui/sign-out` revokes the token and clears the cookie.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cookie::{Cookie, CookieJar, Key, SameSite};
use serde_json::json;
use trawl_auth::accounts::{AuthError, issue_access_token};
use trawl_auth::token::{GatewayKey, parse_token};
use trawl_catalog::directory::Principal;
use trawl_common::ErrorCode;
use trawl_common::role::Role;

use crate::server::{Gateway, password_principal, refuse};

/// The session cookie's name.
pub const COOKIE: &str = "trawl_session";
/// The header a request authenticated by the session cookie must carry (any value).
pub const CSRF_HEADER: &str = "x-trawl-csrf";
/// How long a browser session lasts.
pub const SESSION_SECS: i64 = 7 * 24 * 3600;
/// How long the identity token the page holds lasts.
pub const IDENTITY_SECS: i64 = 24 * 3600;
/// What the session key is derived from the master key for.
pub const SESSION_KEY_PURPOSE: &[u8] = b"trawl-ui-session-v1";

/// Seals and opens session cookies.
#[derive(Clone)]
pub struct Sessions {
    key: Key,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sessions")
    }
}

impl Sessions {
    /// Sessions under a key made from `secret` (32 bytes: see [`SESSION_KEY_PURPOSE`]).
    pub fn new(secret: [u8; 32]) -> Sessions {
        // The cookie crate wants 64 bytes (it uses 32 for encryption); stretch the secret.
        let mut material = [0u8; 64];
        material[..32].copy_from_slice(&secret);
        material[32..].copy_from_slice(&sha256(&secret));
        Sessions {
            key: Key::from(&material),
        }
    }

    /// The `Set-Cookie` value that holds `token` for `max_age_secs`.
    pub fn seal(&self, token: &str, max_age_secs: i64, secure: bool) -> Option<HeaderValue> {
        self.seal_named(COOKIE, "/", token, max_age_secs, secure)
    }

    /// The `Set-Cookie` value of an encrypted cookie `name` holding `value` (`HttpOnly`,
    /// `SameSite=Lax`, for `path`).
    pub fn seal_named(
        &self,
        name: &str,
        path: &str,
        value: &str,
        max_age_secs: i64,
        secure: bool,
    ) -> Option<HeaderValue> {
        let mut jar = CookieJar::new();
        jar.private_mut(&self.key)
            .add(Cookie::new(name.to_string(), value.to_string()));
        let sealed = jar.get(name)?.value().to_string();
        let cookie = Cookie::build((name.to_string(), sealed))
            .path(path.to_string())
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(secure)
            .max_age(cookie::time::Duration::seconds(max_age_secs))
            .build();
        HeaderValue::from_str(&cookie.to_string()).ok()
    }

    /// The `Set-Cookie` value that removes the session cookie.
    pub fn cleared(&self, secure: bool) -> Option<HeaderValue> {
        cleared_named(COOKIE, "/", secure)
    }

    /// The access token in the request's session cookie, if it has one that opens.
    pub fn token(&self, headers: &HeaderMap) -> Option<String> {
        self.open_named(headers, COOKIE)
    }

    /// The value of the encrypted cookie `name`, if the request has one that opens.
    pub fn open_named(&self, headers: &HeaderMap, name: &str) -> Option<String> {
        let mut jar = CookieJar::new();
        for value in headers.get_all(header::COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            for cookie in Cookie::split_parse(text.to_string()).flatten() {
                if cookie.name() == name {
                    jar.add_original(cookie.into_owned());
                }
            }
        }
        jar.private(&self.key)
            .get(name)
            .map(|cookie| cookie.value().to_string())
    }
}

/// The `Set-Cookie` value that removes cookie `name` of `path`.
pub fn cleared_named(name: &str, path: &str, secure: bool) -> Option<HeaderValue> {
    let cookie = Cookie::build((name.to_string(), ""))
        .path(path.to_string())
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(secure)
        .max_age(cookie::time::Duration::ZERO)
        .build();
    HeaderValue::from_str(&cookie.to_string()).ok()
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// Whether the request came over TLS (directly or through a proxy that says so): the
/// cookie is then `Secure`.
pub fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

/// Whether a cookie-authenticated request carries the anti-forgery header.
pub fn has_csrf_header(headers: &HeaderMap) -> bool {
    headers.contains_key(CSRF_HEADER)
}

/// Whether a request is a download of a kept run (`GET /api/runs/{id}`), which the session
/// cookie authenticates without the anti-forgery header: it changes nothing, and what it
/// answers goes to the signed-in browser only (another origin cannot read it), so a plain
/// link can download it.
pub fn is_download<B>(request: &axum::http::Request<B>) -> bool {
    request.method() == axum::http::Method::GET && request.uri().path().starts_with("/api/runs/")
}

/// The identity token of `principal`: a JWT (`EdDSA`) signed by `key`, valid from `now`
/// (Unix seconds) for [`IDENTITY_SECS`] but never past `session_ends` (Unix seconds).
pub fn identity_token(key: &GatewayKey, principal: &Principal, now: i64, session_ends: i64) -> String {
    let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": key.key_id});
    let claims = json!({
        "iss": "trawl-gateway",
        "sub": principal.id,
        "name": principal.name,
        "role": principal.role.as_str(),
        "iat": now,
        "exp": (now + IDENTITY_SECS).min(session_ends),
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(&input);
    format!("{input}.{signature}")
}

/// `POST /api/ui/sign-in` `{name, password}` (with [`CSRF_HEADER`]): a browser session for
/// [`SESSION_SECS`] in the cookie; answers `{name, role}`.
pub(crate) async fn sign_in(State(gateway): State<Gateway>, headers: HeaderMap, body: Bytes) -> Response {
    if !has_csrf_header(&headers) {
        return csrf_refusal();
    }
    let principal = match password_principal(&gateway, &body).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    let cookie = match start_session(&gateway, &principal, over_tls(&headers)).await {
        Ok(cookie) => cookie,
        Err(refused) => return refused,
    };
    let mut response = Json(json!({"name": principal.name, "role": principal.role.as_str()})).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    no_store(&mut response);
    response
}

/// A new browser session of `principal`: an access token for [`SESSION_SECS`] in the
/// session cookie (the `Set-Cookie` value); or the refusal to answer.
pub(crate) async fn start_session(
    gateway: &Gateway,
    principal: &Principal,
    secure: bool,
) -> Result<HeaderValue, Response> {
    let inner = &gateway.inner;
    let now = trawl_common::time::now_nanos();
    let expires_at = now + SESSION_SECS * 1_000_000_000;
    let token = match issue_access_token(inner.directory.as_ref(), &principal.id, Some(expires_at), now).await {
        Ok(token) => token,
        Err(error) => {
            tracing::error!(%error, "cannot issue a browser session");
            return Err(refuse(
                false,
                ErrorCode::Unavailable,
                "the account store is unavailable",
            ));
        }
    };
    inner
        .sessions
        .seal(&token, SESSION_SECS, secure)
        .ok_or_else(|| refuse(false, ErrorCode::Internal, "cannot make the session cookie"))
}

/// `GET /api/ui/session`: who the session cookie signs in, as an identity token; 401 when
/// there is no live session.
pub(crate) async fn current(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    let inner = &gateway.inner;
    let now = trawl_common::time::now_nanos();
    let Some(token) = inner.sessions.token(&headers) else {
        return refuse(false, ErrorCode::Unauthenticated, "not signed in");
    };
    let (principal, expires_at) = match inner.auth.principal_until(Some(&format!("Bearer {token}")), now).await {
        Ok(found) => found,
        Err(AuthError::Unavailable(error)) => {
            tracing::error!(%error, "cannot check a browser session");
            return refuse(false, ErrorCode::Unavailable, "the account store is unavailable");
        }
        Err(_) => {
            return refuse(
                false,
                ErrorCode::Unauthenticated,
                "the session has ended: sign in again",
            );
        }
    };
    let ends = expires_at.unwrap_or(now + SESSION_SECS * 1_000_000_000);
    let (now_secs, ends_secs) = (now.div_euclid(1_000_000_000), ends.div_euclid(1_000_000_000));
    let identity = identity_token(&inner.key, &principal, now_secs, ends_secs);
    let mut response = Json(json!({
        "identity": identity,
        "name": principal.name,
        "role": principal.role.as_str(),
        "expires_at": (now_secs + IDENTITY_SECS).min(ends_secs),
    }))
    .into_response();
    no_store(&mut response);
    response
}

/// `POST /api/ui/sign-out` (with [`CSRF_HEADER`]): ends the session (its token is revoked)
/// and clears the cookie.
/// `GET /admin`: the admin page is for admins and maintainers. Anyone else signed in gets
/// the page with 403 (it then says why); someone not signed in gets it to sign in.
pub(crate) async fn admin_page(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    let inner = &gateway.inner;
    let now = trawl_common::time::now_nanos();
    let allowed = match inner.sessions.token(&headers) {
        None => true,
        Some(token) => match inner.auth.principal(Some(&format!("Bearer {token}")), now).await {
            Ok(principal) => matches!(principal.role, Role::Admin | Role::Maintainer),
            Err(AuthError::Unavailable(error)) => {
                tracing::error!(%error, "cannot check a browser session");
                return refuse(false, ErrorCode::Unavailable, "the account store is unavailable");
            }
            // An ended session signs in again.
            Err(_) => true,
        },
    };
    let mut page = trawl_ui::page(&headers).await;
    if !allowed {
        *page.status_mut() = StatusCode::FORBIDDEN;
    }
    page
}

pub(crate) async fn sign_out(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    if !has_csrf_header(&headers) {
        return csrf_refusal();
    }
    let inner = &gateway.inner;
    if let Some(token) = inner.sessions.token(&headers)
        && let Some(parsed) = parse_token(&token)
        && let Err(error) = inner
            .directory
            .revoke_access_token(&parsed.id, trawl_common::time::now_nanos())
            .await
    {
        tracing::error!(%error, "cannot end a browser session");
        return refuse(false, ErrorCode::Unavailable, "the account store is unavailable");
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Some(cookie) = inner.sessions.cleared(over_tls(&headers)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

fn csrf_refusal() -> Response {
    refuse(
        false,
        ErrorCode::PermissionDenied,
        &format!("a browser session's requests carry the {CSRF_HEADER} header"),
    )
}

fn no_store(response: &mut Response) {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_with_cookie(set_cookie: &HeaderValue) -> HeaderMap {
        let pair = set_cookie
            .to_str()
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .to_string();
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&format!("other=1; {pair}")) {
            headers.insert(header::COOKIE, value);
        }
        headers
    }

    #[test]
    fn a_sealed_cookie_opens_only_under_its_key() {
        let sessions = Sessions::new([7; 32]);
        let Some(sealed) = sessions.seal("trawl_at_abc_secret", 60, false) else {
            panic!("no cookie");
        };
        let text = sealed.to_str().unwrap_or_default();
        assert!(text.contains("HttpOnly") && text.contains("SameSite=Lax") && !text.contains("Secure"));
        assert!(!text.contains("secret"), "the token shows in the cookie: {text}");
        let headers = headers_with_cookie(&sealed);
        assert_eq!(sessions.token(&headers).as_deref(), Some("trawl_at_abc_secret"));
        assert_eq!(Sessions::new([8; 32]).token(&headers), None);
        assert_eq!(sessions.token(&HeaderMap::new()), None);
        let secure = sessions.seal("t", 60, true).unwrap_or(HeaderValue::from_static(""));
        assert!(secure.to_str().unwrap_or_default().contains("Secure"));
    }

    #[test]
    fn the_identity_token_verifies_with_the_published_key() {
        let key = GatewayKey::from_seed([3; 32]);
        let principal = Principal {
            id: "p1".into(),
            name: "ada".into(),
            kind: trawl_catalog::directory::PrincipalKind::User,
            role: trawl_auth::Role::Observer,
            password_hash: None,
            sso_subject: None,
            created_at: 0,
        };
        let token = identity_token(&key, &principal, 1_000, 1_000 + 3600);
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap_or_default()).unwrap_or_default();
        assert_eq!(claims["name"], "ada");
        assert_eq!(claims["exp"], 1_000 + 3600);
        let public = trawl_auth::token::parse_public_key(&key.public_key());
        let input = format!("{}.{}", parts[0], parts[1]);
        assert!(trawl_auth::token::verify(public.as_ref(), &input, parts[2], 1_000, 1_000).is_ok());
    }
}
