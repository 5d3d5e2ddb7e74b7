//! Single sign-on with an OpenID Connect provider: the authorization code flow with PKCE
//! (RFC 7636, `S256`), the ID token checked against the provider's published keys (issuer,
//! audience, expiry, nonce), and the rules of accounts (SPEC "Authentication" 8):
//!
//! - an account signs in one way only: a user with a password is never signed in by the
//!   provider ("this account signs in with a password"), a user without one only by it;
//! - the ID token's `preferred_username` (or the configured claim; then `email`) names the
//!   account; at its first SSO sign-in the account is linked to the provider's identity
//!   (`issuer#sub`), and later sign-ins must come from that identity;
//! - an unknown name gets an account only when the settings name a role for new accounts.
//!
//! The settings live in the catalog ([`SSO_SETTINGS_KEY`]); the gateway runs the browser's
//! side of the flow (`trawl_gateway::sso`).

use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::Digest;
use trawl_catalog::{
    CatalogError, Directory, Principal, PrincipalKind, SSO_IMPORTED_KEY, SSO_SETTINGS_KEY, SsoSettings,
};
use trawl_common::role::Role;

/// Scopes asked for when the settings name none.
pub const DEFAULT_SCOPES: &str = "openid profile email";
/// How long a call to the provider may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest document read from the provider.
const MAX_PROVIDER_BYTES: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    /// The person cannot sign in this way; the text is for them.
    #[error("{0}")]
    Refused(String),
    /// The provider did not answer as OpenID Connect says.
    #[error("the identity provider: {0}")]
    Provider(String),
    #[error("the account store is unavailable: {0}")]
    Catalog(#[from] CatalogError),
}

/// The stored settings, if any.
pub async fn stored_settings(directory: &dyn Directory) -> Result<Option<SsoSettings>, CatalogError> {
    match directory.setting(SSO_SETTINGS_KEY).await? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| CatalogError::Corrupt(format!("SSO settings: {e}"))),
    }
}

pub async fn store_settings(directory: &dyn Directory, settings: &SsoSettings) -> Result<(), CatalogError> {
    let text = serde_json::to_string(settings).map_err(|e| CatalogError::Corrupt(format!("SSO settings: {e}")))?;
    directory
        .set_setting(SSO_SETTINGS_KEY, &text, trawl_common::time::now_nanos())
        .await
}

/// What is wrong with settings, if anything (settings that are off may be incomplete).
pub fn check_settings(settings: &SsoSettings) -> Result<(), String> {
    let url_ok = |text: &str| {
        url::Url::parse(text)
            .ok()
            .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
    };
    if !settings.issuer.is_empty() && !url_ok(&settings.issuer) {
        return Err(format!("the issuer '{}' is not an http(s) URL", settings.issuer));
    }
    if !settings.redirect_url.is_empty() && !url_ok(&settings.redirect_url) {
        return Err(format!(
            "the redirect URL '{}' is not an http(s) URL",
            settings.redirect_url
        ));
    }
    if !settings.new_user_role.is_empty() && Role::parse(&settings.new_user_role).is_none() {
        return Err(format!(
            "unknown role '{}' for new accounts: admin, maintainer, observer or none",
            settings.new_user_role
        ));
    }
    if settings.enabled && (settings.issuer.is_empty() || settings.client_id.is_empty()) {
        return Err("SSO needs an issuer and a client id to be on".into());
    }
    Ok(())
}

/// Stores `flags` (the deployment's `--oidc-*` settings) at the first start only: later
/// starts do not read them again. Returns whether they were stored.
pub async fn import_once(directory: &dyn Directory, flags: Option<SsoSettings>) -> Result<bool, CatalogError> {
    let now = trawl_common::time::now_nanos();
    if !directory.add_setting(SSO_IMPORTED_KEY, &now.to_string(), now).await? {
        if flags.is_some() {
            tracing::warn!("the --oidc-* settings are read at the first start only; change SSO on the admin page");
        }
        return Ok(false);
    }
    let Some(settings) = flags else {
        return Ok(false);
    };
    if stored_settings(directory).await?.is_some() {
        return Ok(false);
    }
    store_settings(directory, &settings).await?;
    Ok(true)
}

/// The parts of a provider's discovery document the flow uses.
#[derive(Debug, Clone, Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    #[serde(default)]
    userinfo_endpoint: Option<String>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Vec<String>,
}

fn client() -> Result<&'static reqwest::Client, SsoError> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client);
    }
    let client = reqwest::Client::builder()
        .timeout(PROVIDER_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .map_err(|e| SsoError::Provider(format!("cannot make an HTTP client: {e}")))?;
    Ok(CLIENT.get_or_init(|| client))
}

/// Reads a JSON answer of the provider, at most [`MAX_PROVIDER_BYTES`].
async fn json_of<T: for<'de> Deserialize<'de>>(response: reqwest::Response, what: &str) -> Result<T, SsoError> {
    let status = response.status();
    if response.content_length().is_some_and(|n| n > MAX_PROVIDER_BYTES as u64) {
        return Err(SsoError::Provider(format!("its {what} is too large")));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| SsoError::Provider(format!("cannot read its {what}: {e}")))?;
    if bytes.len() > MAX_PROVIDER_BYTES {
        return Err(SsoError::Provider(format!("its {what} is too large")));
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        let text: String = text.chars().take(300).collect();
        return Err(SsoError::Provider(format!("its {what} answered {status}: {text}")));
    }
    serde_json::from_slice(&bytes).map_err(|e| SsoError::Provider(format!("its {what} is not valid: {e}")))
}

async fn discover(settings: &SsoSettings) -> Result<Discovery, SsoError> {
    let issuer = settings.issuer.trim_end_matches('/');
    let url = format!("{issuer}/.well-known/openid-configuration");
    let response = client()?
        .get(&url)
        .send()
        .await
        .map_err(|e| SsoError::Provider(format!("cannot reach {url}: {e}")))?;
    let discovery: Discovery = json_of(response, "discovery document").await?;
    if discovery.issuer.trim_end_matches('/') != issuer {
        return Err(SsoError::Provider(format!(
            "its discovery document names the issuer '{}', not '{issuer}'",
            discovery.issuer
        )));
    }
    Ok(discovery)
}

fn random_text() -> Result<String, SsoError> {
    crate::random_bytes::<32>()
        .map(|bytes| URL_SAFE_NO_PAD.encode(bytes))
        .map_err(|e| SsoError::Provider(format!("no randomness: {e}")))
}

/// A sign-in under way: what the browser must bring back, and where to send it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Pending {
    pub state: String,
    pub nonce: String,
    /// The PKCE code verifier.
    pub verifier: String,
    pub redirect_uri: String,
}

/// Starts a sign-in: the provider's authorization URL to send the browser to, and what to
/// keep until it comes back.
pub async fn begin(settings: &SsoSettings, redirect_uri: &str) -> Result<(String, Pending), SsoError> {
    let discovery = discover(settings).await?;
    let pending = Pending {
        state: random_text()?,
        nonce: random_text()?,
        verifier: random_text()?,
        redirect_uri: redirect_uri.to_string(),
    };
    let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(pending.verifier.as_bytes()));
    let mut url = url::Url::parse(&discovery.authorization_endpoint)
        .map_err(|e| SsoError::Provider(format!("its authorization endpoint is not a URL: {e}")))?;
    let scopes = if settings.scopes.is_empty() {
        DEFAULT_SCOPES
    } else {
        &settings.scopes
    };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &settings.client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", scopes)
        .append_pair("state", &pending.state)
        .append_pair("nonce", &pending.nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    Ok((url.to_string(), pending))
}

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoIdentity {
    /// `issuer#sub`.
    pub subject: String,
    /// The account name the ID token gives.
    pub username: String,
}

#[derive(Debug, Deserialize)]
struct TokenAnswer {
    id_token: String,
    #[serde(default)]
    access_token: Option<String>,
}

/// Algorithms an ID token may be signed with (never `none` or a shared secret).
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Ends a sign-in: trades the code for tokens and checks the ID token.
pub async fn finish(settings: &SsoSettings, pending: &Pending, code: &str) -> Result<SsoIdentity, SsoError> {
    let discovery = discover(settings).await?;
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", pending.redirect_uri.as_str()),
        ("code_verifier", pending.verifier.as_str()),
        ("client_id", settings.client_id.as_str()),
    ];
    let methods = &discovery.token_endpoint_auth_methods_supported;
    let basic = methods.is_empty() || methods.iter().any(|m| m == "client_secret_basic");
    let mut request = client()?.post(&discovery.token_endpoint);
    if !settings.client_secret.is_empty() {
        if basic {
            // RFC 6749 2.3.1: the id and secret are form-encoded before they are joined.
            let encode = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
            request = request.basic_auth(encode(&settings.client_id), Some(encode(&settings.client_secret)));
        } else {
            form.push(("client_secret", settings.client_secret.as_str()));
        }
    }
    let response = request
        .form(&form)
        .send()
        .await
        .map_err(|e| SsoError::Provider(format!("cannot reach its token endpoint: {e}")))?;
    let answer: TokenAnswer = json_of(response, "token endpoint").await?;
    let claims = verify_id_token(settings, &discovery, &answer.id_token).await?;
    if claims.get("nonce").and_then(Value::as_str) != Some(pending.nonce.as_str()) {
        return Err(SsoError::Provider(
            "the ID token is not for this sign-in (nonce)".into(),
        ));
    }
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SsoError::Provider("the ID token has no subject".into()))?;
    // Many providers put profile claims only in the userinfo answer.
    let username = match username_of(settings, &claims) {
        Ok(name) => name,
        Err(missing) => match (&discovery.userinfo_endpoint, &answer.access_token) {
            (Some(endpoint), Some(access_token)) => {
                let info = userinfo(endpoint, access_token).await?;
                if info.get("sub").and_then(Value::as_str) != Some(sub) {
                    return Err(SsoError::Provider(
                        "its userinfo answer is about another subject".into(),
                    ));
                }
                username_of(settings, &info)?
            }
            _ => return Err(missing),
        },
    };
    Ok(SsoIdentity {
        subject: format!("{}#{sub}", discovery.issuer.trim_end_matches('/')),
        username,
    })
}

async fn userinfo(endpoint: &str, access_token: &str) -> Result<Map<String, Value>, SsoError> {
    let response = client()?
        .get(endpoint)
        .bearer_auth(access_token)
        .send()
        .await
        .map_err(|e| SsoError::Provider(format!("cannot reach its userinfo endpoint: {e}")))?;
    json_of(response, "userinfo answer").await
}

async fn verify_id_token(
    settings: &SsoSettings,
    discovery: &Discovery,
    id_token: &str,
) -> Result<Map<String, Value>, SsoError> {
    let header = jsonwebtoken::decode_header(id_token)
        .map_err(|e| SsoError::Provider(format!("the ID token is not a JWT: {e}")))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(SsoError::Provider(format!(
            "the ID token is signed with {:?}, which is not accepted",
            header.alg
        )));
    }
    let response = client()?
        .get(&discovery.jwks_uri)
        .send()
        .await
        .map_err(|e| SsoError::Provider(format!("cannot reach its keys: {e}")))?;
    let keys: JwkSet = json_of(response, "key set").await?;
    let jwk = match &header.kid {
        Some(kid) => keys.find(kid),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or_else(|| SsoError::Provider("the ID token's key is not in its key set".into()))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| SsoError::Provider(format!("its key cannot be used: {e}")))?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[discovery.issuer.as_str()]);
    validation.set_audience(&[settings.client_id.as_str()]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.leeway = 60;
    jsonwebtoken::decode::<Map<String, Value>>(id_token, &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| SsoError::Provider(format!("the ID token is not valid: {e}")))
}

/// The account name in the ID token's claims.
fn username_of(settings: &SsoSettings, claims: &Map<String, Value>) -> Result<String, SsoError> {
    let wanted: Vec<&str> = if settings.username_claim.is_empty() {
        vec!["preferred_username", "email"]
    } else {
        vec![settings.username_claim.as_str()]
    };
    let name = wanted
        .iter()
        .find_map(|claim| claims.get(*claim).and_then(Value::as_str))
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            SsoError::Refused(format!(
                "the identity provider gave no {} for this account",
                wanted.join(" or ")
            ))
        })?;
    let valid = name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
    if !valid {
        return Err(SsoError::Refused(format!(
            "the name '{name}' from the identity provider is not a valid account name"
        )));
    }
    Ok(name.to_string())
}

/// The account `identity` signs in as, by the rules above (making or linking it if they say
/// so).
pub async fn account(
    directory: &dyn Directory,
    settings: &SsoSettings,
    identity: &SsoIdentity,
    now: i64,
) -> Result<Principal, SsoError> {
    let Some(principal) = directory.principal_by_name(&identity.username).await? else {
        let Some(role) = Role::parse(&settings.new_user_role) else {
            return Err(SsoError::Refused(format!(
                "there is no account named '{}'; an admin makes it first (as an SSO account)",
                identity.username
            )));
        };
        let principal = Principal {
            id: uuid::Uuid::new_v4().to_string(),
            name: identity.username.clone(),
            kind: PrincipalKind::User,
            role,
            password_hash: None,
            sso_subject: Some(identity.subject.clone()),
            created_at: now,
        };
        if directory.add_principal(&principal).await? {
            return Ok(principal);
        }
        // Made by a concurrent sign-in: take that one through the checks below.
        return Box::pin(account(directory, &SsoSettings::default(), identity, now)).await;
    };
    if principal.kind != PrincipalKind::User {
        return Err(SsoError::Refused(
            "this account is a service account: it signs in with tokens only".into(),
        ));
    }
    if principal.password_hash.is_some() {
        return Err(SsoError::Refused("this account signs in with a password".into()));
    }
    match &principal.sso_subject {
        Some(subject) if *subject != identity.subject => Err(SsoError::Refused(
            "this account is linked to another identity at the provider".into(),
        )),
        Some(_) => Ok(principal),
        None => {
            directory.set_sso_subject(&principal.id, &identity.subject).await?;
            Ok(Principal {
                sso_subject: Some(identity.subject.clone()),
                ..principal
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use trawl_catalog::SqlCatalog;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn identity(name: &str, sub: &str) -> SsoIdentity {
        SsoIdentity {
            subject: format!("https://idp#{sub}"),
            username: name.into(),
        }
    }

    fn user(name: &str, password_hash: Option<&str>) -> Principal {
        Principal {
            id: format!("id-{name}"),
            name: name.into(),
            kind: PrincipalKind::User,
            role: Role::Maintainer,
            password_hash: password_hash.map(str::to_string),
            sso_subject: None,
            created_at: 1,
        }
    }

    fn refusal(result: Result<Principal, SsoError>) -> String {
        match result {
            Err(SsoError::Refused(text)) => text,
            other => format!("not refused: {other:?}"),
        }
    }

    #[tokio::test]
    async fn accounts_sign_in_one_way_only() -> TestResult {
        let catalog = Arc::new(SqlCatalog::in_memory().await?);
        let directory: &dyn Directory = catalog.as_ref();
        let settings = SsoSettings::default();
        directory.add_principal(&user("local", Some("$argon2id$x"))).await?;
        directory.add_principal(&user("sso", None)).await?;
        let refused = account(directory, &settings, &identity("local", "1"), 2).await;
        assert_eq!(refusal(refused), "this account signs in with a password");
        // The first SSO sign-in links the identity; another identity is refused after.
        let linked = account(directory, &settings, &identity("sso", "2"), 2).await?;
        assert_eq!(
            (linked.role, linked.sso_subject.as_deref()),
            (Role::Maintainer, Some("https://idp#2"))
        );
        let other = account(directory, &settings, &identity("sso", "3"), 2).await;
        assert!(refusal(other).contains("linked to another identity"));
        // Unknown names: refused, unless new accounts get a role.
        assert!(refusal(account(directory, &settings, &identity("new", "4"), 2).await).contains("no account"));
        let open = SsoSettings {
            new_user_role: "observer".into(),
            ..SsoSettings::default()
        };
        let made = account(directory, &open, &identity("new", "4"), 2).await?;
        assert_eq!((made.role, made.sign_in()), (Role::Observer, "sso"));
        Ok(())
    }

    #[tokio::test]
    async fn flags_are_imported_at_the_first_start_only() -> TestResult {
        let catalog = Arc::new(SqlCatalog::in_memory().await?);
        let directory: &dyn Directory = catalog.as_ref();
        let flags = |issuer: &str| SsoSettings {
            enabled: true,
            issuer: issuer.into(),
            client_id: "trawl".into(),
            ..SsoSettings::default()
        };
        assert!(import_once(directory, Some(flags("https://first"))).await?);
        assert!(!import_once(directory, Some(flags("https://second"))).await?);
        let stored = stored_settings(directory).await?;
        assert_eq!(stored.map(|s| s.issuer), Some("https://first".to_string()));
        // A first start without flags counts too.
        let empty = Arc::new(SqlCatalog::in_memory().await?);
        assert!(!import_once(empty.as_ref(), None).await?);
        assert!(!import_once(empty.as_ref(), Some(flags("https://late"))).await?);
        assert_eq!(stored_settings(empty.as_ref()).await?, None);
        Ok(())
    }

    #[test]
    fn settings_are_checked() {
        let mut settings = SsoSettings {
            enabled: true,
            ..SsoSettings::default()
        };
        assert!(check_settings(&settings).is_err());
        settings.issuer = "ftp://idp".into();
        settings.client_id = "trawl".into();
        assert!(check_settings(&settings).is_err());
        settings.issuer = "https://idp.example.com/realms/x".into();
        assert!(check_settings(&settings).is_ok());
        settings.new_user_role = "owner".into();
        assert!(check_settings(&settings).is_err());
    }

    #[test]
    fn usernames_come_from_the_claim_or_email() {
        let claims: Map<String, Value> =
            serde_json::from_str(r#"{"email": "ann@example.com", "nick": "bad name!"}"#).unwrap_or_default();
        let settings = SsoSettings::default();
        assert_eq!(username_of(&settings, &claims).ok().as_deref(), Some("ann@example.com"));
        let nick = SsoSettings {
            username_claim: "nick".into(),
            ..SsoSettings::default()
        };
        assert!(matches!(username_of(&nick, &claims), Err(SsoError::Refused(_))));
    }
}
