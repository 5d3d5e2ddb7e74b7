//! Tokens, passwords and who a caller is.

use std::sync::Arc;

use crate::token::{TokenKind, bearer, hash_secret, parse_token, secret_matches, token_text};
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use trawl_catalog::{AccessTokenRecord, Directory, IngestTokenRecord, Principal, SignalTables};

use crate::random_bytes;

/// Why a caller was not let in. Messages never say which part of a token was wrong.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token: send 'Authorization: Bearer <token>'")]
    Missing,
    #[error("the bearer token is not valid")]
    Invalid,
    #[error("the bearer token has expired")]
    Expired,
    #[error("the account store is unavailable: {0}")]
    Unavailable(String),
}

impl From<trawl_catalog::CatalogError> for AuthError {
    fn from(error: trawl_catalog::CatalogError) -> Self {
        AuthError::Unavailable(error.to_string())
    }
}

/// Checks access and ingest tokens against the directory.
#[derive(Debug, Clone)]
pub struct Authenticator {
    directory: Arc<dyn Directory>,
}

impl Authenticator {
    pub fn new(directory: Arc<dyn Directory>) -> Authenticator {
        Authenticator { directory }
    }

    /// The principal an `Authorization` header's access token belongs to.
    pub async fn principal(&self, authorization: Option<&str>, now: i64) -> Result<Principal, AuthError> {
        Ok(self.principal_until(authorization, now).await?.0)
    }

    /// As [`Authenticator::principal`], with when the token expires (Unix nanoseconds;
    /// `None`: never).
    pub async fn principal_until(
        &self,
        authorization: Option<&str>,
        now: i64,
    ) -> Result<(Principal, Option<i64>), AuthError> {
        let text = bearer(authorization).ok_or(AuthError::Missing)?;
        let token = parse_token(text).ok_or(AuthError::Invalid)?;
        if token.kind != TokenKind::Access {
            return Err(AuthError::Invalid);
        }
        let record = self
            .directory
            .access_token(&token.id)
            .await?
            .ok_or(AuthError::Invalid)?;
        if !secret_matches(&token.secret, &record.secret_hash) || record.revoked_at.is_some() {
            return Err(AuthError::Invalid);
        }
        if record.expires_at.is_some_and(|expires| expires <= now) {
            return Err(AuthError::Expired);
        }
        let principal = self
            .directory
            .principal(&record.principal_id)
            .await?
            .ok_or(AuthError::Invalid)?;
        Ok((principal, record.expires_at))
    }

    /// The record of a live ingest token given as `text` (the bearer token, or the password
    /// of basic authentication).
    pub async fn ingest_token(&self, text: &str) -> Result<IngestTokenRecord, AuthError> {
        let token = parse_token(text)
            .filter(|t| t.kind == TokenKind::Ingest)
            .ok_or(AuthError::Invalid)?;
        match self.directory.ingest_token(&token.id).await? {
            Some(record) if secret_matches(&token.secret, &record.secret_hash) && record.revoked_at.is_none() => {
                Ok(record)
            }
            _ => Err(AuthError::Invalid),
        }
    }
}

/// Issues an access token for `principal_id`, expiring at `expires_at` (Unix nanoseconds;
/// `None`: never). Returns the token text, shown once; only its hash is stored.
pub async fn issue_access_token(
    directory: &dyn Directory,
    principal_id: &str,
    expires_at: Option<i64>,
    now: i64,
) -> Result<String, AuthError> {
    let random = |e: getrandom::Error| AuthError::Unavailable(format!("no randomness: {e}"));
    let (text, token) = token_text(
        TokenKind::Access,
        random_bytes().map_err(random)?,
        random_bytes().map_err(random)?,
    );
    directory
        .add_access_token(&AccessTokenRecord {
            id: token.id,
            principal_id: principal_id.to_string(),
            secret_hash: hash_secret(&token.secret),
            expires_at,
            created_at: now,
            revoked_at: None,
        })
        .await?;
    Ok(text)
}

/// Issues an ingest token routed to `database.table`. Returns the token text, shown once.
pub async fn issue_ingest_token(
    directory: &dyn Directory,
    name: &str,
    database: &str,
    table: &str,
    allow_table_override: bool,
    signal_tables: SignalTables,
    now: i64,
) -> Result<(String, String), AuthError> {
    let random = |e: getrandom::Error| AuthError::Unavailable(format!("no randomness: {e}"));
    let (text, token) = token_text(
        TokenKind::Ingest,
        random_bytes().map_err(random)?,
        random_bytes().map_err(random)?,
    );
    directory
        .add_ingest_token(&IngestTokenRecord {
            id: token.id.clone(),
            secret_hash: hash_secret(&token.secret),
            name: name.to_string(),
            database: database.to_string(),
            table: table.to_string(),
            allow_table_override,
            signal_tables,
            created_at: now,
            revoked_at: None,
        })
        .await?;
    Ok((token.id, text))
}

/// An argon2id hash (PHC string) of `password`.
pub fn hash_password(password: &str) -> Result<String, AuthError> {
    let salt_bytes: [u8; 16] = random_bytes().map_err(|e| AuthError::Unavailable(format!("no randomness: {e}")))?;
    let salt = SaltString::encode_b64(&salt_bytes).map_err(|e| AuthError::Unavailable(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| AuthError::Unavailable(e.to_string()))
}

/// Whether `password` matches an argon2id PHC string (constant time inside argon2).
pub fn password_matches(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|hash| Argon2::default().verify_password(password.as_bytes(), &hash).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl_catalog::{PrincipalKind, SqlCatalog};
    use trawl_common::role::Role;

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(None), None);
    }

    #[test]
    fn passwords_hash_with_argon2id() -> Result<(), AuthError> {
        let hash = hash_password("correct horse")?;
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(password_matches("correct horse", &hash));
        assert!(!password_matches("correct horsE", &hash));
        assert!(!password_matches("correct horse", "not a hash"));
        Ok(())
    }

    #[tokio::test]
    async fn access_tokens_sign_in_until_they_expire() -> Result<(), Box<dyn std::error::Error>> {
        let directory: Arc<dyn Directory> = Arc::new(SqlCatalog::in_memory().await?);
        directory
            .add_principal(&Principal {
                id: "p".into(),
                name: "robot".into(),
                kind: PrincipalKind::ServiceAccount,
                role: Role::Observer,
                password_hash: None,
                sso_subject: None,
                created_at: 0,
            })
            .await?;
        let token = issue_access_token(directory.as_ref(), "p", Some(100), 0).await?;
        let auth = Authenticator::new(directory.clone());
        let header = format!("Bearer {token}");
        assert_eq!(auth.principal(Some(&header), 50).await?.name, "robot");
        assert!(matches!(
            auth.principal(Some(&header), 100).await,
            Err(AuthError::Expired)
        ));
        assert!(matches!(auth.principal(None, 50).await, Err(AuthError::Missing)));
        // A changed secret, or an ingest token, is not an access token.
        let mut forged = token.clone();
        let last = forged.pop().map_or('A', |c| if c == 'A' { 'B' } else { 'A' });
        forged.push(last);
        assert!(matches!(
            auth.principal(Some(&format!("Bearer {forged}")), 50).await,
            Err(AuthError::Invalid)
        ));
        let (_, ingest) = issue_ingest_token(
            directory.as_ref(),
            "i",
            "default",
            "default",
            false,
            SignalTables::default(),
            0,
        )
        .await?;
        assert!(matches!(
            auth.principal(Some(&format!("Bearer {ingest}")), 50).await,
            Err(AuthError::Invalid)
        ));
        Ok(())
    }
}
