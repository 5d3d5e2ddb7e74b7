//! Checking the gateway's signatures (SPEC "Authentication"): the query and meta services
//! answer only requests a registered gateway key signed. Keys are cached and reloaded from
//! the catalog when an unknown key id shows up (at most once a second; a request waits for
//! the next reload rather than being refused). Each signature is
//! accepted once: the nonces of accepted requests are remembered while their signatures are
//! fresh, so a captured request sent again is refused.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::token::{self as auth, Identity, SignatureError, VerifyingKey};
use http::HeaderMap;
use trawl_catalog::Directory;

/// Least time between two reloads of the keys for an unknown key id.
const RELOAD_PAUSE: Duration = Duration::from_secs(1);
/// Most nonces remembered; past it the oldest are forgotten (their requests could then be
/// replayed until they expire, which only a flood of signed requests can cause).
const MAX_NONCES: usize = 2_000_000;

/// Nonces of accepted requests with their `issued_at`, oldest first.
#[derive(Debug, Default)]
struct Seen {
    nonces: HashSet<String>,
    order: VecDeque<(i64, String)>,
}

impl Seen {
    /// Records `nonce`; false when it was seen already.
    fn first_use(&mut self, nonce: &str, issued_at: i64, now: i64) -> bool {
        // Signatures older than the tolerance are refused as expired: forget their nonces.
        let horizon = now - auth::SIGNATURE_TOLERANCE_SECS;
        while let Some((at, _)) = self.order.front() {
            if *at >= horizon && self.order.len() < MAX_NONCES {
                break;
            }
            if let Some((_, old)) = self.order.pop_front() {
                self.nonces.remove(&old);
            }
        }
        if !self.nonces.insert(nonce.to_string()) {
            return false;
        }
        self.order.push_back((issued_at, nonce.to_string()));
        true
    }
}

/// Checks gateway signatures, with the registered keys cached.
#[derive(Debug)]
pub struct SignatureCheck {
    directory: Arc<dyn Directory>,
    keys: RwLock<HashMap<String, VerifyingKey>>,
    /// When the last reload of the keys started; held while a reload is due or running, so
    /// reloads happen one at a time.
    reloaded: tokio::sync::Mutex<Option<Instant>>,
    seen: Mutex<Seen>,
}

impl SignatureCheck {
    pub fn new(directory: Arc<dyn Directory>) -> Arc<SignatureCheck> {
        Arc::new(SignatureCheck {
            directory,
            keys: RwLock::new(HashMap::new()),
            reloaded: tokio::sync::Mutex::new(None),
            seen: Mutex::new(Seen::default()),
        })
    }

    fn cached(&self, key_id: &str) -> Option<VerifyingKey> {
        self.keys.read().ok().and_then(|keys| keys.get(key_id).copied())
    }

    /// The key `key_id` names. An unknown id reloads the keys from the catalog: a gateway that
    /// just started signs with a key registered a moment ago. Reloads run one at a time, at
    /// most one per [`RELOAD_PAUSE`]; a request that finds one due waits for it rather than
    /// being refused, and one reload started after a request arrived answers for it (so a
    /// flood of unknown ids costs the catalog one query a second, and a request waits about a
    /// second at most).
    async fn key(&self, key_id: &str) -> Option<VerifyingKey> {
        if let Some(key) = self.cached(key_id) {
            return Some(key);
        }
        let arrived = Instant::now();
        let mut last = self.reloaded.lock().await;
        if let Some(key) = self.cached(key_id) {
            return Some(key);
        }
        if last.is_some_and(|started| started > arrived) {
            // A reload that started after this request arrived did not find the key.
            return None;
        }
        if let Some(started) = *last {
            let pause = RELOAD_PAUSE.saturating_sub(started.elapsed());
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        *last = Some(Instant::now());
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
        drop(last);
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
        let (Some(key_id), Some(signature), Some(issued_at), Some(nonce)) = (
            text(auth::KEY_ID_HEADER),
            text(auth::SIGNATURE_HEADER),
            text(auth::ISSUED_AT_HEADER),
            text(auth::NONCE_HEADER),
        ) else {
            return Err(SignatureError::Missing);
        };
        let issued_at: i64 = issued_at.parse().map_err(|_| SignatureError::Invalid)?;
        let identity = Identity {
            username: text(auth::USERNAME_HEADER).unwrap_or_default().to_string(),
            client: text(auth::CLIENT_HEADER).unwrap_or_default().to_string(),
            role: text(auth::ROLE_HEADER).unwrap_or_default().to_string(),
        };
        let canonical = auth::canonical_request(
            method,
            path_and_query,
            &identity,
            issued_at,
            nonce,
            &auth::body_digest(body),
        );
        let key = self.key(key_id).await;
        let now = trawl_common::time::now_nanos().div_euclid(1_000_000_000);
        auth::verify(key.as_ref(), &canonical, signature, issued_at, now)?;
        // Only a valid signature's nonce is recorded, so forged requests cannot fill the set.
        let first = self
            .seen
            .lock()
            .map(|mut seen| seen.first_use(&format!("{key_id}/{nonce}"), issued_at, now))
            .unwrap_or(false);
        if !first {
            return Err(SignatureError::Replayed);
        }
        Ok(identity)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use trawl_catalog::{Directory, GatewayKeyRecord, SqlCatalog};

    use super::*;
    use crate::token::GatewayKey;

    async fn register(directory: &dyn Directory, key: &GatewayKey) -> Result<(), trawl_catalog::CatalogError> {
        directory
            .register_gateway_key(&GatewayKeyRecord {
                key_id: key.key_id.clone(),
                public_key: key.public_key(),
                created_at: 0,
            })
            .await
    }

    #[tokio::test]
    async fn a_gateway_key_registered_a_moment_after_another_is_found() -> Result<(), Box<dyn std::error::Error>> {
        let directory: Arc<dyn Directory> = Arc::new(SqlCatalog::in_memory().await?);
        let check = SignatureCheck::new(directory.clone());
        let (first, second) = (GatewayKey::from_seed([1; 32]), GatewayKey::from_seed([2; 32]));
        register(directory.as_ref(), &first).await?;
        assert!(check.key(&first.key_id).await.is_some());
        // A second gateway starts within the reload pause: its requests wait for the next
        // reload instead of being refused.
        register(directory.as_ref(), &second).await?;
        assert!(check.key(&second.key_id).await.is_some());
        // An id nobody registered is refused, after one reload.
        assert!(check.key("no-such-key").await.is_none());
        Ok(())
    }
}
