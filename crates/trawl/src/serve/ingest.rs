//! The ingest role's faces: OTLP/HTTP (with log push), OTLP/gRPC and the vendor intake, on
//! one [`Door`] to the ingestor.

use std::sync::Arc;

use anyhow::Context;
use tokio::sync::watch;
use trawl_api::state::Readiness;
use trawl_api::{IngestState, ServiceInfo};
use trawl_catalog::{Directory, Objects};
use trawl_ingest::{ByteBudget, Door, IngestAuth, Ingestor};

use super::{ServeArgs, bind, serve_http, wait_for};

/// The ingest faces: OTLP/HTTP (with log push), OTLP/gRPC and, when on, the vendor intake.
#[allow(clippy::too_many_arguments)]
pub(super) async fn serve_ingest(
    args: &ServeArgs,
    ingestor: &Ingestor,
    directory: &Arc<dyn Directory>,
    objects: &Arc<dyn Objects>,
    readiness: &Arc<Readiness>,
    info: &ServiceInfo,
    servers: &mut tokio::task::JoinSet<anyhow::Result<()>>,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let ingest_auth = if args.default_ingest_token_enabled && !args.require_auth {
        tracing::warn!("anonymous ingest is on: requests without a token go to the default table");
        IngestAuth::anonymous(
            directory.clone(),
            objects.clone(),
            trawl_common::DEFAULT_DATABASE,
            trawl_common::DEFAULT_TABLE,
        )
    } else {
        IngestAuth::required(directory.clone(), objects.clone())
    };
    let budget = match args.ingest_inflight_bytes {
        Some(bytes) => ByteBudget::new(bytes),
        None => ByteBudget::new(
            (super::memory::available_memory(&super::memory::process_memory()) / 4).clamp(64 << 20, 2 << 30) as usize,
        ),
    };
    let ingest_state = IngestState {
        door: Door::new(ingestor.clone(), ingest_auth, budget),
        max_body_bytes: args.max_body_bytes,
        readiness: readiness.clone(),
        info: info.clone(),
    };
    let otlp_http_listener = bind(args.otlp_http_bind, "OTLP/HTTP").await?;
    let otlp_grpc_listener = bind(args.otlp_grpc_bind, "OTLP/gRPC").await?;
    servers.spawn(serve_http(
        otlp_http_listener,
        trawl_api::otlp_http::router(ingest_state.clone()),
        stop.clone(),
    ));
    if args.vendor_intake {
        servers.spawn(serve_http(
            bind(args.vendor_bind, "vendor intake").await?,
            trawl_api::vendor::router(ingest_state.clone()),
            stop.clone(),
        ));
        tracing::info!(vendor_intake = %args.vendor_bind, "the vendor-compatible intake is on");
    }
    use trawl_api::otlp_grpc::{Logs, Metrics, OtlpGrpcServer, Traces};
    let (logs, traces, metrics) = (
        OtlpGrpcServer::<Logs>::new(ingest_state.clone()),
        OtlpGrpcServer::<Traces>::new(ingest_state.clone()),
        OtlpGrpcServer::<Metrics>::new(ingest_state),
    );
    let grpc_stop = wait_for(stop.clone());
    servers.spawn(async move {
        tonic::transport::Server::builder()
            .add_service(logs)
            .add_service(traces)
            .add_service(metrics)
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(otlp_grpc_listener),
                grpc_stop,
            )
            .await
            .context("OTLP/gRPC server failed")
    });
    Ok(())
}
