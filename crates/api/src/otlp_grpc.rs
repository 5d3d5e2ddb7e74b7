//! OTLP/gRPC on port 4317: the `Export` methods of the logs, trace and metrics services.
//! gzip-compressed requests are accepted. A malformed request is INVALID_ARGUMENT; data
//! that could not be stored is UNAVAILABLE (the exporter retries).

use tonic::codec::CompressionEncoding;
use tonic::{Request, Response, Status};
use trawl_common::{ErrorCode, TrawlError};
use trawl_proto::otlp::collector::logs::v1::logs_service_server::{LogsService, LogsServiceServer};
use trawl_proto::otlp::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use trawl_proto::otlp::collector::metrics::v1::metrics_service_server::{MetricsService, MetricsServiceServer};
use trawl_proto::otlp::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use trawl_proto::otlp::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use trawl_proto::otlp::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};

use crate::state::IngestState;

/// Maps a Trawl error to a gRPC status.
pub fn status_of(error: &TrawlError) -> Status {
    let code = match error.code {
        ErrorCode::Unavailable => tonic::Code::Unavailable,
        ErrorCode::Unauthenticated => tonic::Code::Unauthenticated,
        ErrorCode::PermissionDenied => tonic::Code::PermissionDenied,
        ErrorCode::PayloadTooLarge => tonic::Code::ResourceExhausted,
        ErrorCode::Internal => tonic::Code::Internal,
        ErrorCode::Timeout => tonic::Code::DeadlineExceeded,
        ErrorCode::NotFound => tonic::Code::NotFound,
        _ => tonic::Code::InvalidArgument,
    };
    Status::new(code, error.message.clone())
}

/// The OTLP gRPC service implementation.
#[derive(Debug, Clone)]
pub struct OtlpGrpc {
    state: IngestState,
}

impl OtlpGrpc {
    pub fn new(state: IngestState) -> OtlpGrpc {
        OtlpGrpc { state }
    }

    pub fn logs_server(&self) -> LogsServiceServer<OtlpGrpc> {
        LogsServiceServer::new(self.clone())
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(self.state.max_body_bytes)
    }

    pub fn trace_server(&self) -> TraceServiceServer<OtlpGrpc> {
        TraceServiceServer::new(self.clone())
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(self.state.max_body_bytes)
    }

    pub fn metrics_server(&self) -> MetricsServiceServer<OtlpGrpc> {
        MetricsServiceServer::new(self.clone())
            .accept_compressed(CompressionEncoding::Gzip)
            .max_decoding_message_size(self.state.max_body_bytes)
    }

    async fn store(&self, mapped: trawl_intake::IntakeOutput) -> Result<(i64, String), Status> {
        use std::sync::atomic::Ordering::Relaxed;
        let counters = &self.state.counters;
        counters.requests.fetch_add(1, Relaxed);
        let rows = mapped.rows.len() as u64;
        if let Err(error) = self
            .state
            .ingestor
            .submit(&self.state.database, &self.state.table, mapped.rows)
            .await
        {
            counters.failed_requests.fetch_add(1, Relaxed);
            return Err(status_of(&error));
        }
        counters.rows.fetch_add(rows, Relaxed);
        counters.rejected_rows.fetch_add(mapped.rejected.max(0) as u64, Relaxed);
        Ok((mapped.rejected, mapped.error_message))
    }
}

fn now() -> i64 {
    trawl_common::time::now_nanos()
}

#[tonic::async_trait]
impl LogsService for OtlpGrpc {
    async fn export(
        &self,
        request: Request<ExportLogsServiceRequest>,
    ) -> Result<Response<ExportLogsServiceResponse>, Status> {
        let mapped = trawl_intake::otlp::logs_to_rows(request.get_ref(), now());
        let (rejected, error_message) = self.store(mapped).await?;
        let partial = rejected > 0 || !error_message.is_empty();
        Ok(Response::new(ExportLogsServiceResponse {
            partial_success: partial.then_some(ExportLogsPartialSuccess {
                rejected_log_records: rejected,
                error_message,
            }),
        }))
    }
}

#[tonic::async_trait]
impl TraceService for OtlpGrpc {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mapped = trawl_intake::otlp::traces_to_rows(request.get_ref(), now());
        let (rejected, error_message) = self.store(mapped).await?;
        let partial = rejected > 0 || !error_message.is_empty();
        Ok(Response::new(ExportTraceServiceResponse {
            partial_success: partial.then_some(ExportTracePartialSuccess {
                rejected_spans: rejected,
                error_message,
            }),
        }))
    }
}

#[tonic::async_trait]
impl MetricsService for OtlpGrpc {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let mapped = trawl_intake::otlp::metrics_to_rows(request.get_ref(), now());
        let (rejected, error_message) = self.store(mapped).await?;
        let partial = rejected > 0 || !error_message.is_empty();
        Ok(Response::new(ExportMetricsServiceResponse {
            partial_success: partial.then_some(ExportMetricsPartialSuccess {
                rejected_data_points: rejected,
                error_message,
            }),
        }))
    }
}
