//! Connections to other query nodes' workers: one per node, reused, and every call carries
//! the headers the cluster's services authenticate each other with (the service token: a
//! worker refuses calls without it).
//!
//! A node that went away must fail the query quickly rather than hold it until its time
//! limit: connecting gives up after [`CONNECT_TIMEOUT`], and HTTP/2 keepalive pings notice a
//! peer that stopped answering mid-query within [`KEEPALIVE_INTERVAL`] + [`KEEPALIVE_TIMEOUT`]
//! (generous: a worker busy with a heavy stage answers pings late, and a ping that goes
//! unanswered closes the connection and fails the query).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use datafusion::error::{DataFusionError, Result};
use datafusion_distributed::grpc::{BoxCloneSyncChannel, create_worker_client};
use datafusion_distributed::{ChannelResolver, WorkerChannel};
use http::{HeaderName, HeaderValue};
use tonic::transport::Endpoint;
use trawl_engine::{ScanProbe, ScanTotals};
use trawl_proto::worker::ReadScansRequest;
use trawl_proto::worker::scans_client::ScansClient;
use url::Url;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Channels to workers, by URL.
pub struct TokenChannels {
    headers: Vec<(HeaderName, HeaderValue)>,
    channels: Mutex<HashMap<Url, BoxCloneSyncChannel>>,
}

impl TokenChannels {
    pub fn new(headers: &[(String, String)]) -> Result<TokenChannels> {
        let headers = headers
            .iter()
            .map(
                |(name, value)| match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                    (Ok(name), Ok(value)) => Ok((name, value)),
                    _ => Err(DataFusionError::Configuration(format!(
                        "the header {name} of calls between query nodes is not valid"
                    ))),
                },
            )
            .collect::<Result<Vec<_>>>()?;
        Ok(TokenChannels {
            headers,
            channels: Mutex::new(HashMap::new()),
        })
    }

    fn channel(&self, url: &Url) -> Result<BoxCloneSyncChannel> {
        let mut channels = self
            .channels
            .lock()
            .map_err(|_| DataFusionError::Internal("the worker channels' lock is poisoned".into()))?;
        if let Some(channel) = channels.get(url) {
            return Ok(channel.clone());
        }
        let endpoint = Endpoint::from_shared(url.to_string())
            .map_err(|e| DataFusionError::Configuration(format!("query node address '{url}': {e}")))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        let headers = self.headers.clone();
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut request: http::Request<tonic::body::Body>| {
                for (name, value) in &headers {
                    request.headers_mut().insert(name.clone(), value.clone());
                }
                request
            })
            .service(endpoint.connect_lazy());
        let channel = BoxCloneSyncChannel::new(service);
        channels.insert(url.clone(), channel.clone());
        Ok(channel)
    }
}

/// Asks other query nodes what a running query's scans read there (`trawl.worker.v1.Scans`),
/// over the same connections.
#[async_trait]
impl ScanProbe for TokenChannels {
    async fn scanned(&self, node: &Url, query: &str) -> std::result::Result<ScanTotals, String> {
        let channel = self.channel(node).map_err(|e| e.to_string())?;
        let answer = ScansClient::new(channel)
            .read(ReadScansRequest {
                query: query.to_string(),
            })
            .await
            .map_err(|status| format!("{}: {}", status.code(), status.message()))?
            .into_inner();
        Ok(ScanTotals {
            rows: answer.rows,
            bytes: answer.bytes,
            chunks_read: answer.chunks_read,
            skipped_range: answer.chunks_skipped_range,
            skipped_bloom: answer.chunks_skipped_bloom,
            skipped_required_fields: answer.chunks_skipped_required_fields,
            skipped_bytes: answer.chunks_skipped_bytes,
            raw_bytes: answer.raw_bytes,
            skipped_raw_bytes: answer.skipped_raw_bytes,
            bloom_bytes: answer.bloom_bytes,
            predicate_checks: answer.predicate_checks,
            scan_nanos: answer.scan_nanos,
        })
    }
}

#[async_trait]
impl ChannelResolver for TokenChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn WorkerChannel>> {
        Ok(create_worker_client(self.channel(url)?))
    }
}
