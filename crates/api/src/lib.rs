//! The network faces of Trawl: thin axum and tonic handlers that extract, call, and map
//! errors. Protocol mappings live in `trawl-intake`, durability in `trawl-ingest`, query
//! execution in `trawl-engine`.
//!
//! - [`otlp_http`]: OTLP/HTTP on 4318 (`/v1/logs`, `/v1/traces`, `/v1/metrics`).
//! - [`otlp_grpc`]: OTLP/gRPC `Export` services on 4317.
//! - [`query_http`]: the query service's HTTP routes on 9510 (`/query`, `/catalog`, ADX REST).
//! - [`query_grpc`]: `QueryService.ExecuteQuery` on the same port.
//! - [`operator`]: the operator port 9511 (`/metrics`).
//! - [`probes`]: `/health`, `/health/ready`, `/info`, served on every HTTP port.
//! - [`runs`]: results kept for export (`GET /api/runs/{id}`).
//! - [`problem`]: RFC 7807 problem details, the error body of the query service.

pub mod adx;
pub mod adx_mgmt;
pub mod compression;
pub mod datasources;
pub mod errors;
pub mod ingest_metrics;
pub mod log_push;
pub mod member_agent;
pub mod membership;
pub mod meta_grpc;
mod meta_messages;
pub mod operator;
pub mod otlp_grpc;
pub mod otlp_http;
pub mod panics;
pub mod pprof;
pub mod pprof_heap;
pub mod probes;
pub mod problem;
pub mod query_grpc;
pub mod query_http;
pub mod runs;
pub mod signed;
pub mod state;
pub mod timeline;
pub mod vendor;
pub mod worker;
pub mod worker_channels;

pub use state::{IngestState, QueryState, ServiceInfo};
