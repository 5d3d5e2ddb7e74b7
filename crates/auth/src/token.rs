//! Token formats, secret hashing and request signatures shared by the gateway, the query
//! service, meta and ingest.
//!
//! - **Tokens** are `trawl_<kind>_<id>_<secret>`: `kind` is `it` (ingest) or `at` (access:
//!   users and service accounts), `id` 16 hex digits (the public lookup key), `secret` 43
//!   base64url characters (256 random bits). Only the SHA-256 of the secret is stored; a
//!   presented secret is compared with it in constant time.
//! - **Signed requests**: the gateway signs every request it forwards with its Ed25519 key
//!   over the method, path, identity, time and body digest ([`canonical_request`]); the query
//!   service checks the signature against the keys the gateway registered ([`verify`]).
//!
//! No I/O here: random bytes come from the caller.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
pub use ed25519_dalek::VerifyingKey;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
pub use trawl_common::role::Role;

/// Headers the gateway sets on forwarded requests (the whole `x-svc-` namespace is the
/// gateway's: it drops whatever callers send in it).
pub const HEADER_PREFIX: &str = "x-svc-";
pub const USERNAME_HEADER: &str = "x-svc-username";
pub const CLIENT_HEADER: &str = "x-svc-client-name";
pub const ROLE_HEADER: &str = "x-svc-role";
pub const KEY_ID_HEADER: &str = "x-svc-key-id";
pub const ISSUED_AT_HEADER: &str = "x-svc-issued-at";
pub const SIGNATURE_HEADER: &str = "x-svc-signature";
/// A random value per signed request (32 hex digits): a signature is accepted once.
pub const NONCE_HEADER: &str = "x-svc-nonce";

/// How far a signature's time may be from the verifier's clock, in seconds.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

/// What a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Sends telemetry; routes it to a database and table.
    Ingest,
    /// Signs in a user or service account at the gateway.
    Access,
}

impl TokenKind {
    fn tag(self) -> &'static str {
        match self {
            TokenKind::Ingest => "it",
            TokenKind::Access => "at",
        }
    }
}

/// A token as presented: its kind, public id and secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ParsedToken {
    pub kind: TokenKind,
    pub id: String,
    pub secret: String,
}

impl std::fmt::Debug for ParsedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedToken")
            .field("kind", &self.kind)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let value = header?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The password of an `Authorization: Basic <base64(user:password)>` header value. Log
/// shippers that only speak basic authentication send the ingest token as the password.
pub fn basic_password(header: Option<&str>) -> Option<String> {
    let value = header?.trim();
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    text.split_once(':').map(|(_, password)| password.to_string())
}

/// Builds a token's text from 8 random bytes (the id) and 32 (the secret).
pub fn token_text(kind: TokenKind, id: [u8; 8], secret: [u8; 32]) -> (String, ParsedToken) {
    let parsed = ParsedToken {
        kind,
        id: hex::encode(id),
        secret: URL_SAFE_NO_PAD.encode(secret),
    };
    (format!("trawl_{}_{}_{}", kind.tag(), parsed.id, parsed.secret), parsed)
}

/// Parses a token's text; `None` when it is not one.
pub fn parse_token(text: &str) -> Option<ParsedToken> {
    let rest = text.trim().strip_prefix("trawl_")?;
    let (tag, rest) = rest.split_once('_')?;
    let kind = match tag {
        "it" => TokenKind::Ingest,
        "at" => TokenKind::Access,
        _ => return None,
    };
    let (id, secret) = rest.split_once('_')?;
    let id_ok = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    let secret_ok = secret.len() == 43 && URL_SAFE_NO_PAD.decode(secret).is_ok_and(|bytes| bytes.len() == 32);
    (id_ok && secret_ok).then(|| ParsedToken {
        kind,
        id: id.to_string(),
        secret: secret.to_string(),
    })
}

/// Lower-case hex text of `bytes`.
pub fn hex_text(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// The stored form of a secret: hex SHA-256. Secrets are 256 random bits, so a fast hash
/// is enough (passwords use argon2id instead).
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Whether `secret` hashes to `stored`, compared in constant time.
pub fn secret_matches(secret: &str, stored: &str) -> bool {
    let presented = hash_secret(secret);
    presented.as_bytes().ct_eq(stored.as_bytes()).into()
}

/// Hex SHA-256 of a request body.
pub fn body_digest(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// Who a signed request is for, as the gateway established it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    pub username: String,
    pub client: String,
    pub role: String,
}

/// The text a gateway signs for one request. `nonce` is random per request, so no two
/// requests have the same signature and the query service can refuse a replayed one.
pub fn canonical_request(
    method: &str,
    path_and_query: &str,
    identity: &Identity,
    issued_at: i64,
    nonce: &str,
    body_digest: &str,
) -> String {
    format!(
        "trawl-gateway-v2\n{method}\n{path_and_query}\n{}\n{}\n{}\n{issued_at}\n{nonce}\n{body_digest}",
        identity.username, identity.client, identity.role
    )
}

/// A gateway's signing key (Ed25519) and its id.
#[derive(Clone)]
pub struct GatewayKey {
    pub key_id: String,
    key: SigningKey,
}

impl std::fmt::Debug for GatewayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayKey")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl GatewayKey {
    /// A key from 32 random bytes; its id is derived from the public key.
    pub fn from_seed(seed: [u8; 32]) -> GatewayKey {
        let key = SigningKey::from_bytes(&seed);
        let key_id = hex::encode(&Sha256::digest(key.verifying_key().as_bytes())[..8]);
        GatewayKey { key_id, key }
    }

    /// The public key, base64url.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.verifying_key().as_bytes())
    }

    /// The signature of `canonical`, base64url.
    pub fn sign(&self, canonical: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(canonical.as_bytes()).to_bytes())
    }
}

/// Why a signed request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the request carries no gateway signature; send queries through the gateway")]
    Missing,
    #[error("the request's signing key is unknown")]
    UnknownKey,
    #[error("the request's gateway signature is not valid")]
    Invalid,
    #[error("the request's gateway signature has expired")]
    Expired,
    #[error("the request's gateway signature was used before (a replayed request)")]
    Replayed,
}

/// A public key registered by a gateway, as published (base64url).
pub fn parse_public_key(text: &str) -> Option<VerifyingKey> {
    let bytes: [u8; 32] = URL_SAFE_NO_PAD.decode(text).ok()?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

/// Checks a signature made by [`GatewayKey::sign`] over `canonical` at `issued_at`, with
/// `key`, at time `now` (Unix seconds).
pub fn verify(
    key: Option<&VerifyingKey>,
    canonical: &str,
    signature: &str,
    issued_at: i64,
    now: i64,
) -> Result<(), SignatureError> {
    let key = key.ok_or(SignatureError::UnknownKey)?;
    let bytes: [u8; 64] = URL_SAFE_NO_PAD
        .decode(signature)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SignatureError::Invalid)?;
    key.verify(canonical.as_bytes(), &Signature::from_bytes(&bytes))
        .map_err(|_| SignatureError::Invalid)?;
    if (now - issued_at).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err(SignatureError::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        let (text, parsed) = token_text(TokenKind::Ingest, [1; 8], [2; 32]);
        assert_eq!(parse_token(&text), Some(parsed.clone()));
        assert!(text.starts_with("trawl_it_0101010101010101_"));
        assert_eq!(
            parse_token(&text.replace("_it_", "_at_")).map(|t| t.kind),
            Some(TokenKind::Access)
        );
        for bad in [
            "",
            "trawl_",
            "trawl_xx_0101010101010101_abc",
            &text[..text.len() - 1],
            "Bearer x",
        ] {
            assert_eq!(parse_token(bad), None, "{bad}");
        }
        assert!(
            !format!("{parsed:?}").contains(&parsed.secret),
            "Debug never shows the secret"
        );
    }

    #[test]
    fn basic_passwords() {
        use base64::engine::general_purpose::STANDARD;
        let header = format!("Basic {}", STANDARD.encode("tenant:trawl_it_x"));
        assert_eq!(basic_password(Some(&header)), Some("trawl_it_x".into()));
        assert_eq!(basic_password(Some("Bearer abc")), None);
        assert_eq!(basic_password(Some("Basic !!!")), None);
        assert_eq!(basic_password(None), None);
    }

    #[test]
    fn secrets_match_only_their_hash() {
        let stored = hash_secret("s3cret");
        assert_ne!(stored, "s3cret");
        assert!(secret_matches("s3cret", &stored));
        assert!(!secret_matches("s3creT", &stored));
        assert!(!secret_matches("s3cret", ""));
    }

    #[test]
    fn signatures_bind_everything_signed() {
        let key = GatewayKey::from_seed([7; 32]);
        let public = parse_public_key(&key.public_key());
        let identity = Identity {
            username: "ann".into(),
            client: "cli".into(),
            role: "observer".into(),
        };
        let canonical = canonical_request("POST", "/v2/rest/query", &identity, 1000, "n1", &body_digest(b"{}"));
        let signature = key.sign(&canonical);
        assert_eq!(verify(public.as_ref(), &canonical, &signature, 1000, 1010), Ok(()));
        // Any change to what was signed breaks it.
        let forged = Identity {
            role: "admin".into(),
            ..identity.clone()
        };
        let other = canonical_request("POST", "/v2/rest/query", &forged, 1000, "n1", &body_digest(b"{}"));
        assert_eq!(
            verify(public.as_ref(), &other, &signature, 1000, 1010),
            Err(SignatureError::Invalid)
        );
        let other_body = canonical_request("POST", "/v2/rest/query", &identity, 1000, "n1", &body_digest(b"{ }"));
        // Another nonce is another request.
        let other_nonce = canonical_request("POST", "/v2/rest/query", &identity, 1000, "n2", &body_digest(b"{}"));
        assert_eq!(
            verify(public.as_ref(), &other_nonce, &signature, 1000, 1010),
            Err(SignatureError::Invalid)
        );
        assert_eq!(
            verify(public.as_ref(), &other_body, &signature, 1000, 1010),
            Err(SignatureError::Invalid)
        );
        // Another key's signature, an unknown key, a stale signature.
        let stranger = GatewayKey::from_seed([8; 32]).sign(&canonical);
        assert_eq!(
            verify(public.as_ref(), &canonical, &stranger, 1000, 1010),
            Err(SignatureError::Invalid)
        );
        assert_eq!(
            verify(None, &canonical, &signature, 1000, 1010),
            Err(SignatureError::UnknownKey)
        );
        assert_eq!(
            verify(public.as_ref(), &canonical, &signature, 1000, 2000),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify(public.as_ref(), &canonical, "garbage", 1000, 1010),
            Err(SignatureError::Invalid)
        );
    }
}
