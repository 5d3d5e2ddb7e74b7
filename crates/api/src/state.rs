//! Shared state of the handlers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use trawl_engine::Engine;
use trawl_ingest::Door;

/// What `/info` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServiceInfo {
    pub version: String,
    pub commit: String,
    pub role: String,
}

impl ServiceInfo {
    pub fn new(role: &str) -> ServiceInfo {
        ServiceInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("TRAWL_COMMIT").to_string(),
            role: role.to_string(),
        }
    }

    /// The same, claiming release `version` (tests of mixed versions).
    pub fn with_version(mut self, version: &str) -> ServiceInfo {
        self.version = version.to_string();
        self
    }
}

/// Readiness shared by all ports of a process.
#[derive(Debug, Default)]
pub struct Readiness(AtomicBool);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// State of the ingest faces.
#[derive(Debug, Clone)]
pub struct IngestState {
    /// The write path: who may send, where rows go, the in-flight budget, storing.
    pub door: Door,
    /// Largest accepted request body, after decompression.
    pub max_body_bytes: usize,
    pub readiness: Arc<Readiness>,
    pub info: ServiceInfo,
}

/// State of the query faces.
#[derive(Debug, Clone)]
pub struct QueryState {
    pub engine: Engine,
    pub database: String,
    pub readiness: Arc<Readiness>,
    pub info: ServiceInfo,
    /// Checks the gateway's signature on every request but the probes. `None` only in
    /// tests of the faces themselves.
    pub signatures: Option<Arc<crate::signed::SignatureCheck>>,
    /// Databases, tables and views, for `.drop table` and `.undo drop table`; `None`: those
    /// commands are refused.
    pub objects: Option<Arc<dyn trawl_catalog::Objects>>,
    /// How long a dropped table can be restored.
    pub restore_window: std::time::Duration,
    /// Where results kept for export go; `None`: none are kept.
    pub runs: Option<Arc<crate::runs::RunStore>>,
}
