//! Who may do what: the one auth layer below every service that checks a caller — the
//! gateway (users' and service accounts' tokens and passwords, the requests it signs), the
//! query service (gateway signatures), meta (service tokens) and ingest (ingest tokens).
//!
//! - [`token`]: token formats, secret hashing, request signing and its check (no I/O).
//! - [`accounts`]: issuing and checking access and ingest tokens, passwords, roles.
//! - [`signatures`]: the query service's check of gateway signatures against published keys.
//! - [`service`]: tokens services derive from the master key to call each other.
//! - [`sso`]: sign-in through an OpenID Connect provider (code flow with PKCE).
//! - [`throttle`]: failed attempts per credential, and the wait they earn.
//!
//! How a refusal reaches the wire is `trawl_common::ErrorCode`'s.

pub mod accounts;
pub mod service;
pub mod signatures;
pub mod sso;
pub mod throttle;
pub mod token;

pub use accounts::{AuthError, Authenticator, issue_access_token, issue_ingest_token};
pub use trawl_common::role::Role;

/// Random bytes from the operating system.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}
