//! The worker side of distributed queries on the query port: the `worker.WorkerService` of
//! `datafusion-distributed`, which other query nodes send the stages of their queries to.
//! Only the cluster's services may call it: every call carries the service token derived from
//! the master key (UNAUTHENTICATED otherwise). Gateway signatures do not apply here: these
//! calls come from query nodes, never from clients.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use datafusion_distributed::Worker;
use tonic::{Request as GrpcRequest, Response as GrpcResponse, Status};
use trawl_auth::service::{MasterKeys, SERVICE_TOKEN_HEADER};
use trawl_gateway::grpc_reply::grpc_refusal;
use trawl_proto::worker::scans_server::{Scans, ScansServer};
use trawl_proto::worker::{ReadScansRequest, ScansRead};

/// The worker service and the scans' progress service, behind the service token.
pub fn routes(worker: Worker, keys: MasterKeys) -> Router {
    // Their own paths only, without a fallback: the router is merged into the query port's.
    Router::new()
        .route_service("/worker.WorkerService/{*method}", worker.into_worker_server())
        .route_service("/trawl.worker.v1.Scans/{*method}", ScansServer::new(LiveScans))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(keys),
            require_service_token,
        ))
}

async fn require_service_token(State(keys): State<Arc<MasterKeys>>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(SERVICE_TOKEN_HEADER)
        .and_then(|value| value.to_str().ok());
    match token {
        Some(token) if keys.accepts(token) => next.run(request).await,
        Some(_) => grpc_refusal(16, "the service token is not valid (wrong master key?)"),
        None => grpc_refusal(16, "only the cluster's query nodes may call the worker service"),
    }
}

/// What the scans of a running distributed query read on this node so far, for its
/// coordinator's progress reports.
struct LiveScans;

#[tonic::async_trait]
impl Scans for LiveScans {
    async fn read(&self, request: GrpcRequest<ReadScansRequest>) -> Result<GrpcResponse<ScansRead>, Status> {
        let totals = trawl_engine::scanned_here(&request.into_inner().query);
        Ok(GrpcResponse::new(ScansRead {
            rows: totals.rows,
            bytes: totals.bytes,
            chunks_read: totals.chunks_read,
            chunks_skipped_range: totals.skipped_range,
            chunks_skipped_bloom: totals.skipped_bloom,
            chunks_skipped_required_fields: totals.skipped_required_fields,
            chunks_skipped_bytes: totals.skipped_bytes,
            raw_bytes: totals.raw_bytes,
            skipped_raw_bytes: totals.skipped_raw_bytes,
            bloom_bytes: totals.bloom_bytes,
            predicate_checks: totals.predicate_checks,
            scan_nanos: totals.scan_nanos,
        }))
    }
}
