//! The gateway: the one door to the query service. It authenticates callers by bearer token
//! (users and service accounts), drops the whole `x-svc-*` header namespace they send, signs
//! each request it forwards with its own Ed25519 key, and forwards `POST /v1/rest/query`,
//! `POST /v2/rest/query`, `POST /v1/rest/mgmt` and gRPC under `/api/grpc/` to the query
//! service, which refuses anything unsigned.
//!
//! - [`accounts`]: issuing and checking tokens, passwords, roles.
//! - [`server`]: the HTTP face on 9500: forwarding, `GET /api/gateway-keys`, probes.
//!
//! Knows nothing of the engine.

pub mod accounts;
pub mod grpc_reply;
pub mod server;
pub mod service_auth;
pub mod signatures;
pub mod throttle;

pub use accounts::{AuthError, Authenticator, issue_access_token, issue_ingest_token};
pub use server::{Gateway, GatewayConfig};

/// Random bytes from the operating system.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}
