//! Checking the gateway's signatures (SPEC "Authentication"): the query and meta services
//! answer only requests a registered gateway key signed. Keys are cached and reloaded from
//! the catalog when an unknown key id shows up (at most once a second).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use http::HeaderMap;
use trawl_catalog::Directory;
use trawl_common::auth::{self, Identity, SignatureError, VerifyingKey};

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

    /// The identity a signed request (its head and whole body) carries.
    pub async fn check_request(&self, parts: &http::request::Parts, body: &[u8]) -> Result<Identity, SignatureError> {
        let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        self.check(parts.method.as_str(), path_and_query, &parts.headers, body)
            .await
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
