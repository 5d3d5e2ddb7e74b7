//! OTLP/gRPC on port 4317: the `Export` methods of the logs, trace and metrics services.
//!
//! Requests are taken as raw bytes (a pass-through codec) and go through the same
//! decode-and-map path as OTLP/HTTP ([`crate::otlp_http::map_request`]), so an undecodable
//! request is INVALID_ARGUMENT (tonic's generated servers would answer INTERNAL), and both
//! transports share one mapping. gzip-compressed requests are accepted. Data that could not
//! be stored is UNAVAILABLE (the exporter retries).

use std::convert::Infallible;
use std::marker::PhantomData;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut};
use futures::future::BoxFuture;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EnabledCompressionEncodings, EncodeBuf, Encoder};
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};
use trawl_common::{ErrorCode, Signal, TrawlError};
use trawl_ingest::{Credentials, RequestKey};
use trawl_intake::otlp::PayloadFormat;

use crate::errors::grpc_status;
use crate::otlp_http::{ExportResponse, map_request};
use crate::state::IngestState;

/// A codec that passes message bytes through untouched.
#[derive(Debug, Default, Clone, Copy)]
pub struct RawCodec;

#[derive(Debug, Default, Clone, Copy)]
pub struct RawEncoder;

#[derive(Debug, Default, Clone, Copy)]
pub struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut bytes = vec![0; src.remaining()];
        src.copy_to_slice(&mut bytes);
        Ok(Some(bytes))
    }
}

/// One OTLP service: its gRPC name, method path and signal.
pub trait OtlpService: Send + Sync + 'static {
    const NAME: &'static str;
    const PATH: &'static str;
    const SIGNAL: Signal;
}

#[derive(Debug, Clone, Copy)]
pub struct Logs;
#[derive(Debug, Clone, Copy)]
pub struct Traces;
#[derive(Debug, Clone, Copy)]
pub struct Metrics;

impl OtlpService for Logs {
    const NAME: &'static str = "opentelemetry.proto.collector.logs.v1.LogsService";
    const PATH: &'static str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
    const SIGNAL: Signal = Signal::Logs;
}

impl OtlpService for Traces {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
    const PATH: &'static str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    const SIGNAL: Signal = Signal::Traces;
}

impl OtlpService for Metrics {
    const NAME: &'static str = "opentelemetry.proto.collector.metrics.v1.MetricsService";
    const PATH: &'static str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    const SIGNAL: Signal = Signal::Metrics;
}

/// The gRPC server of one OTLP service.
#[derive(Debug)]
pub struct OtlpGrpcServer<S> {
    state: IngestState,
    signal: PhantomData<S>,
}

impl<S> Clone for OtlpGrpcServer<S> {
    fn clone(&self) -> Self {
        OtlpGrpcServer {
            state: self.state.clone(),
            signal: PhantomData,
        }
    }
}

impl<S: OtlpService> OtlpGrpcServer<S> {
    pub fn new(state: IngestState) -> OtlpGrpcServer<S> {
        OtlpGrpcServer {
            state,
            signal: PhantomData,
        }
    }
}

impl<S: OtlpService> NamedService for OtlpGrpcServer<S> {
    const NAME: &'static str = S::NAME;
}

impl<S: OtlpService> tower::Service<http::Request<tonic::body::Body>> for OtlpGrpcServer<S> {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        if request.uri().path() != S::PATH {
            return Box::pin(async { Ok(Status::unimplemented("unknown method").into_http()) });
        }
        let handler = ExportHandler {
            state: self.state.clone(),
            signal: S::SIGNAL,
        };
        let max_body = self.state.max_body_bytes;
        Box::pin(async move {
            let mut accept = EnabledCompressionEncodings::default();
            accept.enable(CompressionEncoding::Gzip);
            accept.enable(CompressionEncoding::Zstd);
            let mut grpc = Grpc::new(RawCodec)
                .apply_compression_config(accept, EnabledCompressionEncodings::default())
                .apply_max_message_size_config(Some(max_body), None);
            Ok(permanent_when_too_large(grpc.unary(handler, request).await))
        })
    }
}

/// tonic refuses a message over the size limit with OUT_OF_RANGE, which OTLP exporters retry
/// forever; an oversized request is a permanent error (RESOURCE_EXHAUSTED, as
/// [`status_of`] maps `PayloadTooLarge`). On this path OUT_OF_RANGE has no other source.
fn permanent_when_too_large(mut response: http::Response<tonic::body::Body>) -> http::Response<tonic::body::Body> {
    let out_of_range = (tonic::Code::OutOfRange as i32).to_string();
    if response
        .headers()
        .get(Status::GRPC_STATUS)
        .is_some_and(|v| v.as_bytes() == out_of_range.as_bytes())
    {
        let exhausted = (tonic::Code::ResourceExhausted as i32).into();
        response.headers_mut().insert(Status::GRPC_STATUS, exhausted);
    }
    response
}

/// Handles one `Export` call.
#[derive(Debug, Clone)]
struct ExportHandler {
    state: IngestState,
    signal: Signal,
}

impl UnaryService<Vec<u8>> for ExportHandler {
    type Response = Vec<u8>;
    type Future = BoxFuture<'static, Result<Response<Vec<u8>>, Status>>;

    fn call(&mut self, request: Request<Vec<u8>>) -> Self::Future {
        let state = self.state.clone();
        let signal = self.signal;
        Box::pin(async move {
            let bytes = request.get_ref().len() as u64;
            let answer = export(&state, signal, request).await;
            let status = match &answer {
                Ok(_) => axum::http::StatusCode::OK,
                Err(status) => grpc_http_status(status.code()),
            };
            crate::ingest_metrics::record("otlp_grpc", status, bytes);
            answer
        })
    }
}

/// The HTTP status an OTLP/HTTP client would have got for a gRPC status (for metrics).
fn grpc_http_status(code: tonic::Code) -> axum::http::StatusCode {
    use axum::http::StatusCode;
    match code {
        tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => StatusCode::UNAUTHORIZED,
        tonic::Code::ResourceExhausted => StatusCode::PAYLOAD_TOO_LARGE,
        tonic::Code::InvalidArgument => StatusCode::BAD_REQUEST,
        tonic::Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// One OTLP/gRPC export: authenticate, bound, map, store.
async fn export(state: &IngestState, signal: Signal, request: Request<Vec<u8>>) -> Result<Response<Vec<u8>>, Status> {
    if request.get_ref().len() > state.max_body_bytes {
        return Err(grpc_status(&TrawlError::new(
            ErrorCode::PayloadTooLarge,
            format!("the request is larger than {} bytes", state.max_body_bytes),
        )));
    }
    let authorization = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
    let admitted = state
        .door
        .admit(Credentials { authorization }, signal)
        .await
        .map_err(|error| grpc_status(&error))?;
    let _held = state
        .door
        .hold(request.get_ref().len())
        .map_err(|error| grpc_status(&error))?;
    let now = trawl_common::time::now_nanos();
    let mapped =
        map_request(signal, request.get_ref(), PayloadFormat::Protobuf, now).map_err(|error| grpc_status(&error))?;
    // The same key as the same request over OTLP/HTTP.
    let key = RequestKey::of_body(&format!("otlp/{signal:?}"), request.get_ref());
    drop(request); // the rows own everything they need; free the payload while they wait
    let (ack, message) = mapped
        .store(&admitted, key)
        .await
        .map_err(|error| grpc_status(&error))?;
    Ok(Response::new(
        ExportResponse::new(signal, ack.refused, message).encode_to_vec(),
    ))
}
