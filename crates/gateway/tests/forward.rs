//! The gateway authenticates, drops caller `x-svc-*` headers, signs and forwards.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::response::Json;
use axum::routing::any;
use trawl_auth::issue_access_token;
use trawl_auth::token::{self as auth, GatewayKey, Identity, Role};
use trawl_catalog::{Directory, Principal, PrincipalKind, SqlCatalog};
use trawl_gateway::{Gateway, GatewayConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// An upstream that answers with what it received: method, path, headers, body.
async fn echo(request: Request) -> Json<serde_json::Value> {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let headers: serde_json::Map<String, serde_json::Value> = parts
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::json!(v.to_str().unwrap_or_default())))
        .collect();
    Json(serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
    }))
}

async fn serve(router: Router) -> Result<String, std::io::Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(format!("http://{address}"))
}

/// A catalog with one user, `ann` (id `p`), an observer.
async fn with_ann() -> Result<Arc<dyn Directory>, Box<dyn std::error::Error>> {
    let directory: Arc<dyn Directory> = Arc::new(SqlCatalog::in_memory().await?);
    directory
        .add_principal(&Principal {
            id: "p".into(),
            name: "ann".into(),
            kind: PrincipalKind::User,
            role: Role::Observer,
            password_hash: None,
            sso_subject: None,
            created_at: 0,
        })
        .await?;
    Ok(directory)
}

#[tokio::test]
async fn forwards_signed_requests_and_never_the_callers_identity_headers() -> TestResult {
    let directory = with_ann().await?;
    let now = trawl_common::time::now_nanos();
    let token = issue_access_token(directory.as_ref(), "p", Some(now + 3_600_000_000_000), now).await?;
    let expired = issue_access_token(directory.as_ref(), "p", Some(now - 1), now).await?;
    let upstream = serve(Router::new().fallback(any(echo))).await?;
    let key = GatewayKey::from_seed([9; 32]);
    let gateway = Gateway::new(
        directory.clone(),
        key.clone(),
        GatewayConfig {
            upstream: trawl_gateway::Upstreams::fixed([upstream.clone()]),
            meta_upstream: upstream,
            max_body_bytes: 1 << 20,
            version: "test".into(),
            commit: "test".into(),
            session_secret: None,
        },
    );
    assert!(!gateway.is_ready(), "not ready before its key is registered");
    gateway.register(now).await?;
    assert!(gateway.is_ready());
    let base = serve(gateway.router()).await?;
    let http = reqwest_free::Client::new();

    // No token, a wrong token, an expired token: 401 with an ADX error body.
    for authorization in [
        None,
        Some("Bearer trawl_at_0000000000000000_x".to_string()),
        Some(format!("Bearer {expired}")),
    ] {
        let (status, body) = http
            .post(&format!("{base}/v2/rest/query"), authorization.as_deref(), "{}")
            .await?;
        assert_eq!(status, 401, "{authorization:?}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }

    // A valid token: forwarded, the caller's x-svc-* headers dropped, the gateway's signed.
    let (status, echoed) = http
        .post_with(
            &format!("{base}/v2/rest/query?x=1"),
            Some(&format!("Bearer {token}")),
            r#"{"csl": "print 1"}"#,
            &[
                ("x-svc-username", "root"),
                ("x-svc-role", "admin"),
                ("x-svc-anything", "1"),
            ],
        )
        .await?;
    assert_eq!(status, 200);
    let headers = &echoed["headers"];
    assert_eq!(headers["x-svc-username"], "ann");
    assert_eq!(headers["x-svc-role"], "observer");
    assert!(headers.get("x-svc-anything").is_none(), "{headers}");
    assert!(
        headers.get("authorization").is_none(),
        "the caller's token is not forwarded"
    );
    assert_eq!(echoed["path"], "/v2/rest/query?x=1");
    let identity = Identity {
        username: "ann".into(),
        client: headers["x-svc-client-name"].as_str().unwrap_or_default().into(),
        role: "observer".into(),
    };
    let issued_at: i64 = headers["x-svc-issued-at"].as_str().unwrap_or_default().parse()?;
    let nonce = headers["x-svc-nonce"].as_str().unwrap_or_default();
    assert_eq!(nonce.len(), 32, "{headers}");
    let canonical = auth::canonical_request(
        "POST",
        "/v2/rest/query?x=1",
        &identity,
        issued_at,
        nonce,
        &auth::body_digest(br#"{"csl": "print 1"}"#),
    );
    let public = auth::parse_public_key(&key.public_key());
    let signature = headers["x-svc-signature"].as_str().unwrap_or_default();
    assert_eq!(
        auth::verify(public.as_ref(), &canonical, signature, issued_at, issued_at),
        Ok(())
    );

    // gRPC paths lose their prefix.
    let (status, echoed) = http
        .post(
            &format!("{base}/api/grpc/trawl.query.v1.QueryService/ExecuteQuery"),
            Some(&format!("Bearer {token}")),
            "",
        )
        .await?;
    assert_eq!(status, 200);
    assert_eq!(echoed["path"], "/trawl.query.v1.QueryService/ExecuteQuery");

    // Every forwarding route, with every identity header a caller might smuggle: the upstream
    // sees the gateway's values, a fresh nonce and signature, and no other x-svc-* header.
    let smuggled = [
        ("x-svc-username", "root"),
        ("x-svc-role", "admin"),
        ("x-svc-client-name", "forged"),
        ("x-svc-key-id", "forged"),
        ("x-svc-issued-at", "1"),
        ("x-svc-nonce", "00000000000000000000000000000000"),
        ("x-svc-signature", "forged"),
        ("X-SVC-Username", "root"),
        ("x-svc-", "empty"),
    ];
    let routes = [
        ("/v1/rest/query", "/v1/rest/query"),
        ("/v2/rest/query", "/v2/rest/query"),
        ("/v1/rest/mgmt", "/v1/rest/mgmt"),
        (
            "/api/grpc/trawl.query.v1.QueryService/ExecuteQuery",
            "/trawl.query.v1.QueryService/ExecuteQuery",
        ),
        (
            "/trawl.query.v1.QueryService/ExecuteQuery",
            "/trawl.query.v1.QueryService/ExecuteQuery",
        ),
        (
            "/trawl.meta.v1.MetaService/CreateTable",
            "/trawl.meta.v1.MetaService/CreateTable",
        ),
        (
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        ),
    ];
    let mut nonces = std::collections::HashSet::new();
    for (route, forwarded) in routes {
        let (status, echoed) = http
            .post_with(
                &format!("{base}{route}"),
                Some(&format!("Bearer {token}")),
                "{}",
                &smuggled,
            )
            .await?;
        assert_eq!(status, 200, "{route}");
        assert_eq!(echoed["path"], forwarded, "{route}");
        let headers = echoed["headers"].as_object().ok_or("no headers")?;
        let identity: Vec<_> = headers.keys().filter(|k| k.starts_with("x-svc-")).cloned().collect();
        let mut identity = identity;
        identity.sort();
        assert_eq!(
            identity,
            [
                "x-svc-client-name",
                "x-svc-issued-at",
                "x-svc-key-id",
                "x-svc-nonce",
                "x-svc-role",
                "x-svc-signature",
                "x-svc-username"
            ],
            "{route}"
        );
        assert_eq!(headers["x-svc-username"], "ann", "{route}");
        assert_eq!(headers["x-svc-role"], "observer", "{route}");
        assert_ne!(headers["x-svc-client-name"], "forged", "{route}");
        assert_eq!(headers["x-svc-key-id"], key.key_id.as_str(), "{route}");
        assert_ne!(headers["x-svc-signature"], "forged", "{route}");
        assert!(
            nonces.insert(headers["x-svc-nonce"].to_string()),
            "{route}: a nonce used twice"
        );
        // The same smuggled headers without a token are refused before forwarding.
        let (status, _) = http.post_with(&format!("{base}{route}"), None, "{}", &smuggled).await?;
        assert_eq!(status, 401, "{route}");
    }

    // The published keys hold this gateway's key.
    let (status, keys) = http.get(&format!("{base}/api/gateway-keys")).await?;
    assert_eq!(status, 200);
    assert_eq!(keys["keys"][0]["kid"], key.key_id.as_str());
    assert_eq!(keys["keys"][0]["x"], key.public_key().as_str());
    Ok(())
}

#[tokio::test]
async fn a_query_node_that_cannot_be_reached_is_passed_over() -> TestResult {
    let directory = with_ann().await?;
    let now = trawl_common::time::now_nanos();
    let token = issue_access_token(directory.as_ref(), "p", None, now).await?;
    // A port nothing listens on (bound, then closed), and a live node.
    let dead = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        format!("http://{}", listener.local_addr()?)
    };
    let live = serve(Router::new().fallback(any(echo))).await?;
    let upstreams = trawl_gateway::Upstreams::fixed([dead.clone(), live.clone()]);
    let gateway = Gateway::new(
        directory.clone(),
        GatewayKey::from_seed([3; 32]),
        GatewayConfig {
            upstream: upstreams.clone(),
            meta_upstream: live.clone(),
            max_body_bytes: 1 << 20,
            version: "test".into(),
            commit: "test".into(),
            session_secret: None,
        },
    );
    gateway.register(now).await?;
    let base = serve(gateway.router()).await?;
    let http = reqwest_free::Client::new();
    let bearer = format!("Bearer {token}");
    // Whichever node a request starts at, it is answered (by the live one).
    for _ in 0..4 {
        let (status, echoed) = http.post(&format!("{base}/v2/rest/query"), Some(&bearer), "{}").await?;
        assert_eq!(status, 200);
        assert_eq!(echoed["path"], "/v2/rest/query");
    }
    // No node at all: 503, retryable.
    upstreams.set(Vec::new());
    let (status, body) = http.post(&format!("{base}/v2/rest/query"), Some(&bearer), "{}").await?;
    assert_eq!(status, 503, "{body}");
    upstreams.set(vec![dead]);
    let (status, _) = http.post(&format!("{base}/v2/rest/query"), Some(&bearer), "{}").await?;
    assert_eq!(status, 503);
    Ok(())
}

#[tokio::test]
async fn the_first_readiness_waits_for_a_signed_warm_up_query_to_each_query_node() -> TestResult {
    let directory = with_ann().await?;
    // Query nodes that record what reaches them.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<serde_json::Value>::new()));
    let mut nodes = Vec::new();
    for _ in 0..2 {
        let seen = seen.clone();
        let record = move |request: Request| {
            let seen = seen.clone();
            async move {
                let Json(echoed) = echo(request).await;
                if let Ok(mut seen) = seen.lock() {
                    seen.push(echoed.clone());
                }
                Json(echoed)
            }
        };
        nodes.push(serve(Router::new().fallback(any(record))).await?);
    }
    let key = GatewayKey::from_seed([5; 32]);
    let gateway = Gateway::new(
        directory.clone(),
        key.clone(),
        GatewayConfig {
            upstream: trawl_gateway::Upstreams::fixed(nodes.clone()),
            meta_upstream: nodes[0].clone(),
            max_body_bytes: 1 << 20,
            version: "test".into(),
            commit: "test".into(),
            session_secret: None,
        },
    );
    gateway.set_ready(true);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gateway.is_ready() {
        assert!(std::time::Instant::now() < deadline, "the gateway never became ready");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let seen = seen.lock().map(|seen| seen.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 2, "one warm-up query per node: {seen:?}");
    let public = auth::parse_public_key(&key.public_key());
    for echoed in &seen {
        assert_eq!(echoed["path"], "/v2/rest/query");
        let body = echoed["body"].as_str().unwrap_or_default();
        let request: serde_json::Value = serde_json::from_str(body)?;
        assert!(
            request["csl"].as_str().is_some_and(|csl| csl.starts_with("print")),
            "{request}"
        );
        // Signed like any forwarded request, for the warm-up identity.
        let headers = &echoed["headers"];
        assert_eq!(headers["x-svc-username"], trawl_gateway::WARM_UP_USER);
        let identity = Identity {
            username: trawl_gateway::WARM_UP_USER.into(),
            client: headers["x-svc-client-name"].as_str().unwrap_or_default().into(),
            role: headers["x-svc-role"].as_str().unwrap_or_default().into(),
        };
        let issued_at: i64 = headers["x-svc-issued-at"].as_str().unwrap_or_default().parse()?;
        let canonical = auth::canonical_request(
            "POST",
            "/v2/rest/query",
            &identity,
            issued_at,
            headers["x-svc-nonce"].as_str().unwrap_or_default(),
            &auth::body_digest(body.as_bytes()),
        );
        let signature = headers["x-svc-signature"].as_str().unwrap_or_default();
        assert_eq!(
            auth::verify(public.as_ref(), &canonical, signature, issued_at, issued_at),
            Ok(())
        );
    }
    // Later changes of readiness take effect at once, with no second warm-up.
    gateway.set_ready(false);
    assert!(!gateway.is_ready());
    gateway.set_ready(true);
    assert!(gateway.is_ready());
    Ok(())
}

/// A minimal HTTP/1 client on hyper, so the test needs no other HTTP stack.
mod reqwest_free {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use hyper_util::client::legacy::Client as Hyper;
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::TokioExecutor;

    pub struct Client(Hyper<HttpConnector, Full<Bytes>>);

    type Answer = Result<(u16, serde_json::Value), Box<dyn std::error::Error>>;

    impl Client {
        pub fn new() -> Client {
            Client(Hyper::builder(TokioExecutor::new()).build_http())
        }

        pub async fn post(&self, url: &str, authorization: Option<&str>, body: &str) -> Answer {
            self.post_with(url, authorization, body, &[]).await
        }

        pub async fn post_with(
            &self,
            url: &str,
            authorization: Option<&str>,
            body: &str,
            headers: &[(&str, &str)],
        ) -> Answer {
            let mut request = http::Request::post(url).header("content-type", "application/json");
            if let Some(value) = authorization {
                request = request.header("authorization", value);
            }
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            self.send(request.body(Full::new(Bytes::from(body.to_string())))?).await
        }

        pub async fn get(&self, url: &str) -> Answer {
            self.send(http::Request::get(url).body(Full::new(Bytes::new()))?).await
        }

        async fn send(&self, request: http::Request<Full<Bytes>>) -> Answer {
            let response = self.0.request(request).await?;
            let status = response.status().as_u16();
            let bytes = response.into_body().collect().await?.to_bytes();
            Ok((
                status,
                serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
            ))
        }
    }
}
