//! A catalog, an ingestor and an ingest token routed to one table, for tests of ingest faces.

use std::sync::Arc;
use std::time::Duration;

use trawl_api::IngestState;
use trawl_api::state::Readiness;
use trawl_auth::token::{self as auth, TokenKind};
use trawl_catalog::{Catalog, Directory, IngestTokenRecord, SignalTables, SqlCatalog};
use trawl_ingest::{ByteBudget, Door, IngestAuth, IngestConfig, Ingestor};
use trawl_storage::{SegmentStore, SegmentWriter};

/// Serves `router` on a free local port; its base URL.
pub async fn serve(router: axum::Router) -> Result<String, std::io::Error> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(format!("http://{address}"))
}

pub struct IngestSetup {
    pub _dir: tempfile::TempDir,
    pub catalog: Arc<dyn Catalog>,
    pub state: IngestState,
    /// An ingest token routed to `default.<table>`.
    pub token: String,
}

impl IngestSetup {
    /// Rows stored in `default.<table>`.
    pub async fn rows(&self, table: &str) -> Result<u64, trawl_catalog::CatalogError> {
        Ok(self
            .catalog
            .live_segments("default", table, None)
            .await?
            .iter()
            .map(|s| s.rows)
            .sum())
    }
}

/// Tokens required; the one made routes to `default.<table>`.
pub async fn ingest_setup(table: &str) -> Result<IngestSetup, Box<dyn std::error::Error>> {
    ingest_setup_routed(table, SignalTables::default()).await
}

/// As [`ingest_setup`], with a token that names tables for single signals.
pub async fn ingest_setup_routed(
    table: &str,
    signal_tables: SignalTables,
) -> Result<IngestSetup, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let sqlite = Arc::new(SqlCatalog::open_sqlite(&dir.path().join("catalog.db")).await?);
    let catalog: Arc<dyn Catalog> = sqlite.clone();
    let directory: Arc<dyn Directory> = sqlite.clone();
    let (token, parsed) = auth::token_text(TokenKind::Ingest, [3; 8], [4; 32]);
    directory
        .add_ingest_token(&IngestTokenRecord {
            id: parsed.id.clone(),
            secret_hash: auth::hash_secret(&parsed.secret),
            name: "test".into(),
            database: "default".into(),
            table: table.into(),
            allow_table_override: false,
            signal_tables,
            created_at: 0,
            revoked_at: None,
        })
        .await?;
    let store = SegmentStore::local(&dir.path().join("segments"))?;
    let config = IngestConfig {
        flush_interval: Duration::from_millis(20),
        ..IngestConfig::default()
    };
    let state = IngestState {
        door: Door::new(
            Ingestor::start(SegmentWriter::new(store), catalog.clone(), config).await,
            IngestAuth::required(directory, sqlite),
            ByteBudget::new(64 << 20),
        ),
        max_body_bytes: 1 << 20,
        readiness: Arc::new(Readiness::default()),
        info: trawl_api::ServiceInfo::new("test"),
    };
    Ok(IngestSetup {
        _dir: dir,
        catalog,
        state,
        token,
    })
}
