//! The gateway: the one door to the query service. It authenticates callers by bearer token
//! (users and service accounts), drops the whole `x-svc-*` header namespace they send, signs
//! each request it forwards with its own Ed25519 key, and forwards `POST /v1/rest/query`,
//! `POST /v2/rest/query`, `POST /v1/rest/mgmt` and gRPC under `/api/grpc/` to the query
//! service, which refuses anything unsigned.
//!
//! - [`server`]: the HTTP face on 9500: forwarding, `GET /api/gateway-keys`, probes.
//! - [`session`]: browser sessions of the web UI (an encrypted cookie, an identity token).
//! - [`upstreams`]: the query nodes it forwards to, round-robin, passing over dead ones.
//!
//! Tokens, passwords and signatures are `trawl_auth`'s; the gateway is a forwarder that uses
//! them. Knows nothing of the engine.

pub mod grpc_reply;
pub mod server;
pub mod session;
pub mod sso;
pub mod upstreams;

pub use server::{Gateway, GatewayConfig, WARM_UP_LIMIT, WARM_UP_USER};
pub use upstreams::Upstreams;
