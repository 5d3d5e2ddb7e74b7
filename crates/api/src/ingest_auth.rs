//! Ingest needs a token by default (SPEC "Authentication"): `Authorization: Bearer <ingest
//! token>` on OTLP and log push. The token decides the database and table. Without a valid
//! token: 401 over HTTP, UNAUTHENTICATED over gRPC. Anonymous ingest (to the default
//! table) only when both settings allow it.

use std::sync::Arc;

use trawl_catalog::Directory;
use trawl_common::auth::{TokenKind, bearer, parse_token, secret_matches};
use trawl_common::{ErrorCode, TrawlError};

/// Where a request's rows go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestRoute {
    pub database: String,
    pub table: String,
    /// Whether records may choose their table with the resource attribute `trawl.table`.
    pub allow_table_override: bool,
}

/// Checks ingest tokens.
#[derive(Debug, Clone)]
pub struct IngestAuth {
    directory: Arc<dyn Directory>,
    /// The route of requests without a token, when anonymous ingest is on.
    anonymous: Option<IngestRoute>,
}

impl IngestAuth {
    /// Tokens required.
    pub fn required(directory: Arc<dyn Directory>) -> IngestAuth {
        IngestAuth {
            directory,
            anonymous: None,
        }
    }

    /// Requests without a token go to `database.table`; tokens still route theirs.
    pub fn anonymous(directory: Arc<dyn Directory>, database: &str, table: &str) -> IngestAuth {
        IngestAuth {
            directory,
            anonymous: Some(IngestRoute {
                database: database.to_string(),
                table: table.to_string(),
                allow_table_override: false,
            }),
        }
    }

    /// The route of a request with this `Authorization` header value.
    pub async fn route(&self, authorization: Option<&str>) -> Result<IngestRoute, TrawlError> {
        let refused = |message: &str| TrawlError::new(ErrorCode::Unauthenticated, message);
        let Some(text) = bearer(authorization) else {
            return match (&self.anonymous, authorization) {
                (Some(route), None) => Ok(route.clone()),
                _ => Err(refused(
                    "ingest needs a token: send 'Authorization: Bearer <ingest token>'",
                )),
            };
        };
        let token = parse_token(text)
            .filter(|t| t.kind == TokenKind::Ingest)
            .ok_or_else(|| refused("the ingest token is not valid"))?;
        let record = self
            .directory
            .ingest_token(&token.id)
            .await
            .map_err(|e| TrawlError::unavailable(format!("cannot check the ingest token: {e}")))?;
        match record {
            Some(record) if secret_matches(&token.secret, &record.secret_hash) && record.revoked_at.is_none() => {
                Ok(IngestRoute {
                    database: record.database,
                    table: record.table,
                    allow_table_override: record.allow_table_override,
                })
            }
            _ => Err(refused("the ingest token is not valid")),
        }
    }
}
