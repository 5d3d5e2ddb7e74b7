//! Who may do what: ingest tokens, principals (users and service accounts) with their roles,
//! their access tokens, and the public keys gateways sign with. Secrets are never stored:
//! tokens by the SHA-256 of their secret, passwords as argon2id hashes.

use async_trait::async_trait;
use trawl_common::role::Role;

use crate::Result;

/// An ingest token: where the data it sends goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestTokenRecord {
    pub id: String,
    pub secret_hash: String,
    pub name: String,
    pub database: String,
    pub table: String,
    /// Whether a record may pick its table with the resource attribute `trawl.table`.
    pub allow_table_override: bool,
    /// Tables for single signals on the vendor intake; each unset one uses `table`.
    pub signal_tables: SignalTables,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// Per-signal destination tables of an ingest token (the vendor intake routes logs, metrics
/// and traces separately); `None` means the token's own table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignalTables {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<String>,
}

impl SignalTables {
    pub fn is_empty(&self) -> bool {
        self.logs.is_none() && self.metrics.is_none() && self.traces.is_none()
    }
}

/// Users sign in with a password (or, later, an identity provider); service accounts only
/// with tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    User,
    ServiceAccount,
}

impl PrincipalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::User => "user",
            PrincipalKind::ServiceAccount => "service_account",
        }
    }

    pub fn parse(text: &str) -> Option<PrincipalKind> {
        match text {
            "user" => Some(PrincipalKind::User),
            "service_account" => Some(PrincipalKind::ServiceAccount),
            _ => None,
        }
    }
}

/// A user or service account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: String,
    pub name: String,
    pub kind: PrincipalKind,
    pub role: Role,
    /// argon2id PHC string, for users that sign in with a password. A user without one signs
    /// in through the identity provider (SSO).
    pub password_hash: Option<String>,
    /// The identity provider's `issuer` and `sub` (`issuer#sub`) once an SSO user has signed
    /// in: later sign-ins must come from the same identity.
    pub sso_subject: Option<String>,
    pub created_at: i64,
}

impl Principal {
    /// How the principal signs in: `password`, `sso` or `token` (service accounts).
    pub fn sign_in(&self) -> &'static str {
        match (self.kind, &self.password_hash) {
            (PrincipalKind::ServiceAccount, _) => "token",
            (PrincipalKind::User, Some(_)) => "password",
            (PrincipalKind::User, None) => "sso",
        }
    }
}

/// Single sign-on through an OpenID Connect provider (stored in the catalog under
/// [`SSO_SETTINGS_KEY`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SsoSettings {
    pub enabled: bool,
    /// The provider's issuer URL (its discovery document is under
    /// `/.well-known/openid-configuration`).
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// Where the provider sends the browser back; empty: the gateway's own
    /// `/api/ui/sso/callback` on the host the browser used.
    pub redirect_url: String,
    /// Space-separated; empty: `openid profile email`.
    pub scopes: String,
    /// The ID token claim that names the account; empty: `preferred_username`, then `email`.
    pub username_claim: String,
    /// The role of an account made at its first SSO sign-in; empty: no account is made (an
    /// admin creates SSO accounts first).
    pub new_user_role: String,
    /// The sign-in button's text; empty: "Sign in with SSO".
    pub label: String,
}

/// The catalog setting that holds [`SsoSettings`] (JSON).
pub const SSO_SETTINGS_KEY: &str = "sso";
/// The catalog setting recording that the deployment's `--oidc-*` flags were imported (they
/// are read at the first start only).
pub const SSO_IMPORTED_KEY: &str = "sso.imported";

/// An access token of a principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessTokenRecord {
    pub id: String,
    pub principal_id: String,
    pub secret_hash: String,
    /// Unix nanoseconds; `None` never expires.
    pub expires_at: Option<i64>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

/// A gateway's public signing key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayKeyRecord {
    pub key_id: String,
    /// Ed25519 public key, base64url.
    pub public_key: String,
    pub created_at: i64,
}

/// Storage of tokens, principals and gateway keys.
#[async_trait]
pub trait Directory: Send + Sync + std::fmt::Debug {
    async fn add_ingest_token(&self, token: &IngestTokenRecord) -> Result<()>;
    async fn ingest_token(&self, id: &str) -> Result<Option<IngestTokenRecord>>;
    async fn ingest_tokens(&self) -> Result<Vec<IngestTokenRecord>>;
    /// Revokes a live token; false when there is none with that id.
    async fn revoke_ingest_token(&self, id: &str, at: i64) -> Result<bool>;
    /// Lifts the revocation of a token revoked at or after `not_before` (the restore
    /// window); false when there is none.
    async fn restore_ingest_token(&self, id: &str, not_before: i64) -> Result<bool>;

    /// Adds a principal; false when the name is taken.
    async fn add_principal(&self, principal: &Principal) -> Result<bool>;
    async fn principal(&self, id: &str) -> Result<Option<Principal>>;
    async fn principal_by_name(&self, name: &str) -> Result<Option<Principal>>;
    async fn principals(&self) -> Result<Vec<Principal>>;
    async fn set_role(&self, id: &str, role: Role) -> Result<bool>;
    async fn set_password_hash(&self, id: &str, hash: &str) -> Result<bool>;
    /// Makes a user sign in through SSO: the password goes; tokens and role stay.
    async fn switch_to_sso(&self, id: &str) -> Result<bool>;
    /// Links an SSO user to the provider's identity (`issuer#sub`).
    async fn set_sso_subject(&self, id: &str, subject: &str) -> Result<bool>;

    async fn add_access_token(&self, token: &AccessTokenRecord) -> Result<()>;
    async fn access_token(&self, id: &str) -> Result<Option<AccessTokenRecord>>;
    /// The access tokens of a principal, newest first (revoked and expired ones too).
    async fn access_tokens_of(&self, principal_id: &str) -> Result<Vec<AccessTokenRecord>>;
    /// Revokes an access token (a sign-out); false when it was unknown or revoked already.
    async fn revoke_access_token(&self, id: &str, at: i64) -> Result<bool>;

    /// A service setting (JSON text), if set.
    async fn setting(&self, key: &str) -> Result<Option<String>>;
    async fn set_setting(&self, key: &str, value: &str, now: i64) -> Result<()>;
    /// Sets a setting unless it is set already; false when it was (one process of a cluster
    /// wins).
    async fn add_setting(&self, key: &str, value: &str, now: i64) -> Result<bool>;

    async fn register_gateway_key(&self, key: &GatewayKeyRecord) -> Result<()>;
    async fn gateway_keys(&self) -> Result<Vec<GatewayKeyRecord>>;
}
