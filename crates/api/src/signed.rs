//! The query service answers only requests the gateway signed (SPEC "Authentication"):
//! every route but `/health*` and `/info` checks the `x-svc-*` signature headers against the
//! keys gateways registered in the catalog. A missing, forged, stale or unknown-key
//! signature is 401 (HTTP) or UNAUTHENTICATED (gRPC).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use trawl_catalog::Directory;
use trawl_common::auth::{self, Identity, SignatureError, VerifyingKey};
use trawl_common::{ErrorCode, TrawlError};

use crate::problem::Problem;

/// Largest request body the check reads (queries are small).
const MAX_SIGNED_BODY: usize = 16 << 20;
/// Least time between two reloads of the keys for an unknown key id.
const RELOAD_PAUSE: Duration = Duration::from_secs(1);

/// Checks gateway signatures, with the registered keys cached.
#[derive(Debug)]
pub struct SignatureCheck {
    directory: Arc<dyn Directory>,
    keys: RwLock<HashMap<String, VerifyingKey>>,
    reloaded: Mutex<Option<Instant>>,
}

impl SignatureCheck {
    pub fn new(directory: Arc<dyn Directory>) -> Arc<SignatureCheck> {
        Arc::new(SignatureCheck {
            directory,
            keys: RwLock::new(HashMap::new()),
            reloaded: Mutex::new(None),
        })
    }

    fn cached(&self, key_id: &str) -> Option<VerifyingKey> {
        self.keys.read().ok().and_then(|keys| keys.get(key_id).copied())
    }

    async fn key(&self, key_id: &str) -> Option<VerifyingKey> {
        if let Some(key) = self.cached(key_id) {
            return Some(key);
        }
        let due = self
            .reloaded
            .lock()
            .map(|mut last| {
                let due = last.is_none_or(|at| at.elapsed() >= RELOAD_PAUSE);
                if due {
                    *last = Some(Instant::now());
                }
                due
            })
            .unwrap_or(false);
        if due {
            match self.directory.gateway_keys().await {
                Ok(records) => {
                    let loaded: HashMap<String, VerifyingKey> = records
                        .iter()
                        .filter_map(|r| auth::parse_public_key(&r.public_key).map(|k| (r.key_id.clone(), k)))
                        .collect();
                    if let Ok(mut keys) = self.keys.write() {
                        *keys = loaded;
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot load gateway keys"),
            }
        }
        self.cached(key_id)
    }

    /// The identity a signed request carries.
    pub async fn check(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Identity, SignatureError> {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let (Some(key_id), Some(signature), Some(issued_at)) = (
            text(auth::KEY_ID_HEADER),
            text(auth::SIGNATURE_HEADER),
            text(auth::ISSUED_AT_HEADER),
        ) else {
            return Err(SignatureError::Missing);
        };
        let issued_at: i64 = issued_at.parse().map_err(|_| SignatureError::Invalid)?;
        let identity = Identity {
            username: text(auth::USERNAME_HEADER).unwrap_or_default().to_string(),
            client: text(auth::CLIENT_HEADER).unwrap_or_default().to_string(),
            role: text(auth::ROLE_HEADER).unwrap_or_default().to_string(),
        };
        let canonical = auth::canonical_request(method, path_and_query, &identity, issued_at, &auth::body_digest(body));
        let key = self.key(key_id).await;
        let now = trawl_common::time::now_nanos().div_euclid(1_000_000_000);
        auth::verify(key.as_ref(), &canonical, signature, issued_at, now)?;
        Ok(identity)
    }
}

/// Paths open without a signature: probes.
fn is_open(path: &str) -> bool {
    path == "/health" || path.starts_with("/health/") || path == "/info"
}

/// Middleware: refuses unsigned requests; passes signed ones on with their body intact and
/// the [`Identity`] in the request's extensions.
pub async fn require_signature(State(check): State<Arc<SignatureCheck>>, request: Request, next: Next) -> Response {
    if is_open(request.uri().path()) {
        return next.run(request).await;
    }
    let grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"));
    let (mut parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_SIGNED_BODY).await else {
        return refuse(
            grpc,
            TrawlError::new(ErrorCode::PayloadTooLarge, "the request body is too large"),
        );
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    match check
        .check(parts.method.as_str(), &path_and_query, &parts.headers, &body)
        .await
    {
        Ok(identity) => {
            parts.extensions.insert(identity);
            next.run(Request::from_parts(parts, Body::from(body))).await
        }
        Err(error) => {
            tracing::debug!(%error, path = %path_and_query, "refused an unsigned request");
            refuse(grpc, TrawlError::new(ErrorCode::Unauthenticated, error.to_string()))
        }
    }
}

fn refuse(grpc: bool, error: TrawlError) -> Response {
    if grpc {
        let mut response = Response::new(Body::empty());
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert("grpc-status", HeaderValue::from(error.code.grpc_code()));
        if let Ok(message) = HeaderValue::from_str(&error.message) {
            headers.insert("grpc-message", message);
        }
        return response;
    }
    Problem(error).into_response()
}
