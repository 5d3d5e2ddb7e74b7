//! The gateway's HTTP face (9500): authenticate, strip `x-svc-*`, sign, forward.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{any, get, post};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use trawl_auth::token::{self as auth, GatewayKey, Identity};
use trawl_catalog::{Directory, GatewayKeyRecord, Principal, PrincipalKind};
use trawl_common::ErrorCode;
use trawl_common::error::grpc_code;
use trawl_common::metrics::{METRICS, label};

use crate::grpc_reply::{grpc_refusal, is_grpc};
use crate::session::{self, Sessions};
use trawl_auth::accounts::{AuthError, Authenticator, issue_access_token};

/// Gateway settings.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The query nodes, such as `http://127.0.0.1:9510`.
    pub upstream: crate::Upstreams,
    /// The meta service, such as `http://127.0.0.1:9560`.
    pub meta_upstream: String,
    /// Largest request body forwarded.
    pub max_body_bytes: usize,
    /// Reported by `/info`.
    pub version: String,
    /// Reported by `/info`: the commit the binary was built from.
    pub commit: String,
    /// What browser sessions are encrypted under (derived from the master key, the same on
    /// every gateway); `None`: a random key, so sessions end when the gateway restarts.
    pub session_secret: Option<[u8; 32]>,
}

/// The gateway; cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) auth: Authenticator,
    pub(crate) directory: Arc<dyn Directory>,
    pub(crate) key: GatewayKey,
    config: GatewayConfig,
    pub(crate) sessions: Sessions,
    http1: Client<HttpConnector, Full<Bytes>>,
    http2: Client<HttpConnector, Full<Bytes>>,
    ready: AtomicBool,
    /// The readiness last asked for, the warm-up started, and the warm-up done (see
    /// [`Gateway::set_ready`]).
    wanted_ready: AtomicBool,
    warming: AtomicBool,
    warmed: AtomicBool,
    /// Failed credential checks by account name and token id (see `throttle.rs`).
    pub(crate) throttle: trawl_auth::throttle::Throttle,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("key_id", &self.inner.key.key_id)
            .field("upstream", &self.inner.config.upstream.list())
            .finish_non_exhaustive()
    }
}

/// The longest the gateway's warm-up may hold back its readiness.
pub const WARM_UP_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The user name the gateway's warm-up queries run as (`.show queries` lists them so).
pub const WARM_UP_USER: &str = "warm-up";

/// The most of a warm-up query's answer the gateway reads.
const WARM_UP_ANSWER_BYTES: usize = 1 << 20;

/// Request headers that belong to one connection, never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

impl Gateway {
    pub fn new(directory: Arc<dyn Directory>, key: GatewayKey, config: GatewayConfig) -> Gateway {
        let http1 = Client::builder(TokioExecutor::new()).build_http();
        let http2 = Client::builder(TokioExecutor::new()).http2_only(true).build_http();
        let secret = config
            .session_secret
            .or_else(|| trawl_auth::random_bytes::<32>().ok())
            .unwrap_or([0; 32]);
        Gateway {
            inner: Arc::new(Inner {
                sessions: Sessions::new(secret),
                auth: Authenticator::new(directory.clone()),
                directory,
                key,
                config,
                http1,
                http2,
                ready: AtomicBool::new(false),
                wanted_ready: AtomicBool::new(false),
                warming: AtomicBool::new(false),
                warmed: AtomicBool::new(false),
                throttle: trawl_auth::throttle::Throttle::default(),
            }),
        }
    }

    /// Registers the signing key with the catalog; the gateway is ready once the catalog
    /// lists it.
    pub async fn register(&self, now: i64) -> Result<(), AuthError> {
        let key = &self.inner.key;
        self.inner
            .directory
            .register_gateway_key(&GatewayKeyRecord {
                key_id: key.key_id.clone(),
                public_key: key.public_key(),
                created_at: now,
            })
            .await?;
        let listed = self.inner.directory.gateway_keys().await?;
        let ready = listed.iter().any(|k| k.key_id == key.key_id);
        self.inner.ready.store(ready, Ordering::Release);
        Ok(())
    }

    /// Sets readiness: in a cluster, whether meta lists this gateway with its key and there
    /// is a query node. The first time it becomes ready, the gateway warms up first
    /// ([`Gateway::warm_up`], at most [`WARM_UP_LIMIT`]) and says it is ready only then.
    pub fn set_ready(&self, ready: bool) {
        let inner = &self.inner;
        inner.wanted_ready.store(ready, Ordering::Release);
        if !ready || inner.warmed.load(Ordering::Acquire) {
            inner.ready.store(ready, Ordering::Release);
            return;
        }
        if inner.warming.swap(true, Ordering::AcqRel) {
            return;
        }
        let gateway = self.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            if tokio::time::timeout(WARM_UP_LIMIT, gateway.warm_up()).await.is_err() {
                tracing::info!("the gateway's warm-up stopped at its time limit");
            }
            tracing::info!(millis = started.elapsed().as_millis() as u64, "gateway warmed up");
            let inner = &gateway.inner;
            inner.warmed.store(true, Ordering::Release);
            inner
                .ready
                .store(inner.wanted_ready.load(Ordering::Acquire), Ordering::Release);
        });
    }

    /// Sends one small query to each query node, signed for the gateway's own warm-up
    /// identity, so that the first callers after a start do not pay for what happens once
    /// per process: the connections to the query nodes, their loading of this gateway's key,
    /// and the first run of the query faces behind them (a first query took 20-30 ms more
    /// than the next without it). An answer other than 200 only shows in the log.
    pub async fn warm_up(&self) {
        let identity = Identity {
            username: WARM_UP_USER.to_string(),
            client: "trawl-gateway".to_string(),
            role: trawl_common::role::Role::Observer.as_str().to_string(),
        };
        let body = Bytes::from_static(br#"{"db":"default","csl":"print warm = 1"}"#);
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for _ in self.inner.config.upstream.list() {
            let response = send_signed(
                self,
                false,
                &http::Method::POST,
                "/v2/rest/query".to_string(),
                &identity,
                &headers,
                body.clone(),
            )
            .await;
            let status = response.status();
            if let Err(error) = axum::body::to_bytes(response.into_body(), WARM_UP_ANSWER_BYTES).await {
                tracing::debug!(%error, "cannot read a warm-up answer");
            }
            if status != StatusCode::OK {
                tracing::info!(%status, "a warm-up query was refused");
            }
        }
    }

    /// The id and public key (base64url) the gateway signs with.
    pub fn signing_key(&self) -> (String, String) {
        (self.inner.key.key_id.clone(), self.inner.key.public_key())
    }

    pub fn upstreams(&self) -> &crate::Upstreams {
        &self.inner.config.upstream
    }

    pub fn is_ready(&self) -> bool {
        self.inner.ready.load(Ordering::Acquire)
    }

    pub fn key_id(&self) -> &str {
        &self.inner.key.key_id
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/health", get(|| async { Json(json!({"status": "ok"})) }))
            .route("/health/ready", get(ready))
            .route("/info", get(info))
            .route("/api/gateway-keys", get(gateway_keys))
            .route("/api/sign-in", post(sign_in))
            .route("/api/ui/sign-in", post(session::sign_in))
            .route("/api/ui/sign-out", post(session::sign_out))
            .route("/api/ui/session", get(session::current))
            .route("/admin", get(session::admin_page))
            .route("/api/ui/sso", get(crate::sso::status))
            .route("/api/ui/sso/start", get(crate::sso::start))
            .route(crate::sso::CALLBACK_PATH, get(crate::sso::callback))
            .route("/v1/rest/query", post(forward_same))
            .route("/v2/rest/query", post(forward_same))
            .route("/api/runs/{id}", get(forward_same))
            .route("/v1/rest/mgmt", post(forward_same))
            // What the caller may read of the catalog (the query service filters it).
            .route("/catalog", get(forward_same))
            .route("/v1/datasources", get(forward_same))
            .route("/api/grpc/{*method}", any(forward_grpc))
            // Stubs generated from the .proto call the bare method path; it is the same.
            .route("/trawl.query.v1.QueryService/{method}", any(forward_same))
            .route("/trawl.meta.v1.MetaService/{method}", any(forward_same))
            .route("/grpc.reflection.v1.ServerReflection/{method}", any(forward_same))
            // Every other path: the web UI's pages and files.
            .merge(trawl_ui::router())
            .with_state(self.clone())
    }
}

async fn ready(State(gateway): State<Gateway>) -> Response {
    if gateway.is_ready() {
        Json(json!({"status": "ready"})).into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "starting"}))).into_response()
    }
}

async fn info(State(gateway): State<Gateway>) -> Json<serde_json::Value> {
    let config = &gateway.inner.config;
    Json(json!({"version": config.version, "commit": config.commit, "role": "gateway"}))
}

/// `GET /api/gateway-keys`: the public keys gateways sign with, as a JWK set.
async fn gateway_keys(State(gateway): State<Gateway>) -> Response {
    match gateway.inner.directory.gateway_keys().await {
        Ok(keys) => Json(json!({
            "keys": keys.iter().map(|k| json!({
                "kid": k.key_id, "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "x": k.public_key,
            })).collect::<Vec<_>>()
        }))
        .into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot list gateway keys");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"error": "the catalog is unavailable"})),
            )
                .into_response()
        }
    }
}

/// Forwards to the same path on the query service.
/// Lifetime of the access token a password sign-in gives.
pub const SESSION_LIFETIME_SECS: i64 = 24 * 3600;

#[derive(Debug, serde::Deserialize)]
struct SignIn {
    name: String,
    password: String,
}

/// `POST /api/sign-in` `{name, password}`: a user with a password gets an access token for
/// 24 hours. Wrong names and wrong passwords get the same answer; service accounts sign in
/// with tokens only.
async fn sign_in(State(gateway): State<Gateway>, body: Bytes) -> Response {
    let principal = match password_principal(&gateway, &body).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    let now = trawl_common::time::now_nanos();
    let expires_at = now + SESSION_LIFETIME_SECS * 1_000_000_000;
    match issue_access_token(gateway.inner.directory.as_ref(), &principal.id, Some(expires_at), now).await {
        Ok(token) => Json(json!({
            "token": token,
            "expires_at": trawl_common::time::format_datetime(expires_at),
            "name": principal.name,
            "role": principal.role.as_str(),
        }))
        .into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot issue a session token");
            refuse(false, ErrorCode::Unavailable, "the account store is unavailable")
        }
    }
}

/// The user a `{name, password}` body names, if the password is theirs; otherwise the
/// answer to send (wrong names and wrong passwords get the same one, failures are throttled
/// per name).
pub(crate) async fn password_principal(gateway: &Gateway, body: &[u8]) -> Result<Principal, Response> {
    let Ok(request) = serde_json::from_slice::<SignIn>(body) else {
        return Err(refuse(
            false,
            ErrorCode::BadRequest,
            "expected {\"name\": ..., \"password\": ...}",
        ));
    };
    let throttle = &gateway.inner.throttle;
    let key = format!("name:{}", request.name.to_lowercase());
    let started = std::time::Instant::now();
    if let Err(retry_after) = throttle.check(&key, started) {
        auth_failure("throttled");
        return Err(too_many_failures(false, retry_after));
    }
    let refused = || {
        auth_failure("sign_in");
        throttle.failed(&key, started);
        refuse(false, ErrorCode::Unauthenticated, "the name or the password is wrong")
    };
    let directory = gateway.inner.directory.as_ref();
    let principal = match directory.principal_by_name(&request.name).await {
        Ok(principal) => principal,
        Err(error) => {
            tracing::error!(%error, "cannot look up an account");
            return Err(refuse(
                false,
                ErrorCode::Unavailable,
                "the account store is unavailable",
            ));
        }
    };
    let Some(principal) = principal else {
        // As long as a real check, so timing does not tell which names exist.
        let _ = trawl_auth::accounts::password_matches(&request.password, DECOY_HASH);
        return Err(refused());
    };
    if principal.kind != PrincipalKind::User {
        return Err(refuse(
            false,
            ErrorCode::Unauthenticated,
            "this account is a service account: it signs in with tokens only",
        ));
    }
    let Some(hash) = principal.password_hash.as_deref() else {
        return Err(refuse(
            false,
            ErrorCode::Unauthenticated,
            "this account signs in with SSO, not a password",
        ));
    };
    if !trawl_auth::accounts::password_matches(&request.password, hash) {
        return Err(refused());
    }
    throttle.succeeded(&key);
    Ok(principal)
}

/// An argon2id hash of a random password, checked against when a name is unknown.
const DECOY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$3r7m7MoOMlxKQNkFfx2VWWXh+RRlkWl6Nv3cWRA4oN8";

async fn forward_same(State(gateway): State<Gateway>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    forward(&gateway, path, request).await
}

async fn forward_grpc(State(gateway): State<Gateway>, Path(method): Path<String>, request: Request) -> Response {
    forward(&gateway, format!("/{method}"), request).await
}

/// Meta methods only cluster services may call.
const MEMBERSHIP_METHODS: &[&str] = &[
    "/trawl.meta.v1.MetaService/RegisterMember",
    "/trawl.meta.v1.MetaService/DeregisterMember",
];

/// The service a path goes to: the meta service for its methods and reflection, else the
/// query service.
/// 429 (gRPC `RESOURCE_EXHAUSTED`) with `Retry-After`, for credentials that failed too often.
fn too_many_failures(grpc: bool, retry_after: std::time::Duration) -> Response {
    let message = format!(
        "too many failed attempts with these credentials; try again in {} s",
        retry_after.as_secs()
    );
    let mut response = refuse(grpc, ErrorCode::TooManyRequests, &message);
    if let Ok(value) = HeaderValue::from_str(&retry_after.as_secs().to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A refused request, by reason, for the operator's metrics.
fn auth_failure(reason: &str) {
    METRICS
        .gateway_auth_failures
        .get_or_create(&label("reason", reason))
        .inc();
}

/// The metrics label of a forwarded path.
fn route_of(path: &str) -> &'static str {
    if path.starts_with("/v1/rest/mgmt") {
        "mgmt"
    } else if path.starts_with("/v1/rest/") {
        "v1"
    } else if path.starts_with("/v2/rest/") {
        "v2"
    } else if path.starts_with("/trawl.meta.") {
        "meta"
    } else if path.starts_with("/api/runs/") {
        "runs"
    } else if path.starts_with("/catalog") || path.starts_with("/v1/datasources") {
        "catalog"
    } else {
        "grpc"
    }
}

/// Whether a request to `path` only reads (a query), so running it twice changes nothing.
fn reads_only(path: &str) -> bool {
    matches!(route_of(path), "v1" | "v2" | "runs" | "catalog") || path.starts_with("/trawl.query.")
}

/// The services a path may go to, in the order to try them: meta for its methods and
/// reflection, else the query nodes in turn.
fn upstreams_of(config: &GatewayConfig, target: &str) -> Vec<String> {
    if target.starts_with("/trawl.meta.v1.MetaService/") || target.starts_with("/grpc.reflection.") {
        vec![config.meta_upstream.clone()]
    } else {
        config.upstream.rotation()
    }
}

fn is_grpc_web(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc-web"))
}

/// gRPC-web callers see refusals as HTTP statuses too (403 for PERMISSION_DENIED, 401 for
/// UNAUTHENTICATED), not only in `grpc-status`.
fn grpc_web_status(mut response: Response) -> Response {
    let code = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok());
    match code {
        Some(grpc_code::PERMISSION_DENIED) => *response.status_mut() = StatusCode::FORBIDDEN,
        Some(grpc_code::UNAUTHENTICATED) => *response.status_mut() = StatusCode::UNAUTHORIZED,
        _ => {}
    }
    response
}

/// A refusal in the caller's protocol: a gRPC status, or an ADX error body; its status, gRPC
/// code, ADX exception and `Retry-After` are the error code's (`trawl_common::ErrorCode`, the
/// one mapping every face uses).
pub(crate) fn refuse(grpc: bool, code: ErrorCode, message: &str) -> Response {
    let mut response = if grpc {
        grpc_refusal(code.grpc_code(), message)
    } else {
        let (adx_code, exception) = code.adx_exception();
        let body = json!({"error": {
            "code": adx_code,
            "message": message,
            "@type": exception,
            "@message": message,
            "@permanent": code.permanent(),
        }});
        let status = StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(body)).into_response()
    };
    if code == ErrorCode::Unauthenticated && !grpc {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if code.retryable() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The client's name for the signed identity: `x-ms-app`, else the user agent; printable
/// ASCII, at most 128 characters.
fn client_name(headers: &HeaderMap) -> String {
    let raw = ["x-ms-app", "user-agent"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .unwrap_or("unknown");
    raw.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(128)
        .collect()
}

async fn forward(gateway: &Gateway, target: String, request: Request) -> Response {
    if is_grpc_web(request.headers()) {
        return grpc_web_status(forward_any(gateway, target, request).await);
    }
    forward_any(gateway, target, request).await
}

async fn forward_any(gateway: &Gateway, target: String, request: Request) -> Response {
    let inner = &gateway.inner;
    let grpc = is_grpc(request.headers());
    if MEMBERSHIP_METHODS.contains(&target.as_str()) {
        auth_failure("membership_change");
        return refuse(
            grpc,
            ErrorCode::PermissionDenied,
            "cluster membership changes are not accepted from callers",
        );
    }
    let now = trawl_common::time::now_nanos();
    // A browser session stands for a bearer token, on requests that carry the anti-forgery
    // header (see `session.rs`).
    let from_session = match request.headers().get(header::AUTHORIZATION) {
        None if session::has_csrf_header(request.headers()) || session::is_download(&request) => inner
            .sessions
            .token(request.headers())
            .map(|token| format!("Bearer {token}")),
        _ => None,
    };
    let authorization = from_session.as_deref().or_else(|| {
        request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
    });
    // Failed token checks are limited per client address (by token id, anyone who saw an id
    // could lock its owner out). Behind a proxy every client shares the proxy's address.
    let token_key = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|peer| format!("addr:{}", peer.0.ip()));
    let checked_at = std::time::Instant::now();
    if let Some(key) = &token_key
        && let Err(retry_after) = inner.throttle.check(key, checked_at)
    {
        auth_failure("throttled");
        return too_many_failures(grpc, retry_after);
    }
    let principal = match inner.auth.principal(authorization, now).await {
        Ok(principal) => {
            if let Some(key) = &token_key {
                inner.throttle.succeeded(key);
            }
            principal
        }
        Err(AuthError::Unavailable(error)) => {
            tracing::error!(%error, "cannot check a token");
            return refuse(grpc, ErrorCode::Unavailable, "the account store is unavailable");
        }
        Err(error) => {
            auth_failure("token");
            if let Some(key) = &token_key
                && matches!(error, AuthError::Invalid)
            {
                inner.throttle.failed(key, checked_at);
            }
            return refuse(grpc, ErrorCode::Unauthenticated, &error.to_string());
        }
    };
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, inner.config.max_body_bytes).await {
        Ok(body) => body,
        Err(_) => {
            let message = format!("the request body is larger than {} bytes", inner.config.max_body_bytes);
            return refuse(grpc, ErrorCode::PayloadTooLarge, &message);
        }
    };
    let path_and_query = match parts.uri.query() {
        Some(query) => format!("{target}?{query}"),
        None => target,
    };
    let identity = Identity {
        username: principal.name.clone(),
        client: client_name(&parts.headers),
        role: principal.role.as_str().to_string(),
    };
    send_signed(
        gateway,
        grpc,
        &parts.method,
        path_and_query,
        &identity,
        &parts.headers,
        body,
    )
    .await
}

/// Signs a request for `identity` and sends it to a query node (the next in turn; on to the
/// next when one cannot be reached before it answers and the request only reads).
async fn send_signed(
    gateway: &Gateway,
    grpc: bool,
    method: &http::Method,
    path_and_query: String,
    identity: &Identity,
    request_headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let inner = &gateway.inner;
    let now = trawl_common::time::now_nanos();
    let issued_at = now.div_euclid(1_000_000_000);
    let Ok(nonce) = trawl_auth::random_bytes::<16>().map(hex::encode) else {
        return refuse(grpc, ErrorCode::Unavailable, "no randomness to sign the request with");
    };
    let canonical = auth::canonical_request(
        method.as_str(),
        &path_and_query,
        identity,
        issued_at,
        &nonce,
        &auth::body_digest(&body),
    );
    let mut headers = HeaderMap::with_capacity(request_headers.len() + 7);
    for (name, value) in request_headers {
        let text = name.as_str();
        if text.starts_with(auth::HEADER_PREFIX)
            || text == "authorization"
            || text == "cookie"
            || HOP_BY_HOP.contains(&text)
        {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    let signed = [
        (auth::USERNAME_HEADER, identity.username.clone()),
        (auth::CLIENT_HEADER, identity.client.clone()),
        (auth::ROLE_HEADER, identity.role.clone()),
        (auth::KEY_ID_HEADER, inner.key.key_id.clone()),
        (auth::ISSUED_AT_HEADER, issued_at.to_string()),
        (auth::NONCE_HEADER, nonce),
        (auth::SIGNATURE_HEADER, inner.key.sign(&canonical)),
    ];
    for (name, value) in signed {
        match HeaderValue::from_str(&value) {
            Ok(value) => {
                headers.insert(HeaderName::from_static(name), value);
            }
            Err(_) => return refuse(grpc, ErrorCode::BadRequest, "the request identity cannot be sent"),
        }
    }
    let client = if grpc { &inner.http2 } else { &inner.http1 };
    METRICS
        .gateway_forwarded
        .get_or_create(&label("route", route_of(&path_and_query)))
        .inc();
    let nodes = upstreams_of(&inner.config, &path_and_query);
    if nodes.is_empty() {
        return refuse(grpc, ErrorCode::Unavailable, "no query node is available");
    }
    for (attempt, node) in nodes.iter().enumerate() {
        let uri = format!("{node}{path_and_query}");
        let mut upstream = match http::Request::builder()
            .method(method.clone())
            .uri(uri)
            .body(Full::new(body.clone()))
        {
            Ok(request) => request,
            Err(error) => return refuse(grpc, ErrorCode::BadRequest, &format!("cannot forward: {error}")),
        };
        *upstream.headers_mut() = headers.clone();
        match client.request(upstream).await {
            Ok(response) => return response.map(Body::new).into_response(),
            // Refused before the first byte: nothing ran there, so the next node may try. A
            // query only reads, so one whose node went away before answering (a pooled
            // connection to a node that died) may run on the next node as well.
            Err(error) if (error.is_connect() || reads_only(&path_and_query)) && attempt + 1 < nodes.len() => {
                tracing::warn!(%node, %error, "a query node cannot be reached; trying the next");
                METRICS.gateway_retries.inc();
            }
            Err(error) => {
                tracing::warn!(%node, %error, "the query service did not answer");
                break;
            }
        }
    }
    refuse(grpc, ErrorCode::Unavailable, "the query service is unavailable")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decoy_hash_is_a_real_argon2id_hash() {
        assert!(argon2::PasswordHash::new(DECOY_HASH).is_ok());
        assert!(!trawl_auth::accounts::password_matches("anything", DECOY_HASH));
    }

    #[test]
    fn only_queries_may_run_again_on_another_node() {
        assert!(reads_only("/v1/rest/query"));
        assert!(reads_only("/v2/rest/query"));
        assert!(reads_only("/trawl.query.v1.QueryService/ExecuteQuery"));
        assert!(reads_only("/catalog"));
        assert!(reads_only("/v1/datasources?limit=5"));
        assert!(!reads_only("/v1/rest/mgmt"));
        assert!(!reads_only("/trawl.meta.v1.MetaService/CreateTable"));
    }
}
