//! The meta service's gRPC face (9560): databases, tables and views (tombstoned deletes,
//! restore within a window), ingest tokens, users, service accounts, roles and access
//! tokens, cluster members; gRPC reflection on.
//!
//! Every call is authenticated: either a cluster service with the token derived from the
//! master key, or a request the gateway signed (with the caller's name and role). Catalog
//! changes (databases, tables, views, ingest tokens) need the role `admin` or `maintainer`;
//! account changes need `admin`
//! (anyone may make tokens for themselves and set their own password); reading needs no
//! role. Member registration is for cluster services only. Refusals: UNAUTHENTICATED,
//! PERMISSION_DENIED.

use std::sync::Arc;

use crate::membership::{HEARTBEAT, Proof, Registered, Registry, TTL};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tonic::{Response as GrpcResponse, Status};
use trawl_auth::accounts::{AuthError, issue_ingest_token};
use trawl_auth::service::{MasterKeys, SERVICE_TOKEN_HEADER};
use trawl_auth::signatures::SignatureCheck;
use trawl_auth::token::{Identity, Role};
use trawl_catalog::{
    Directory, GatewayKeyRecord, Library, ObjectKind, Objects, PrincipalKind, SavedQuery, SignalTables,
};
use trawl_proto::meta as pb;

use crate::meta_messages::*;
use trawl_proto::meta::meta_service_server::{MetaService, MetaServiceServer};

#[path = "meta_accounts.rs"]
mod accounts;

/// Who called the meta service.
#[derive(Debug, Clone)]
pub enum Caller {
    /// A cluster service (master-key token).
    Service,
    /// A user or service account, through the gateway.
    Signed(Identity),
    /// A membership call without the service token: a service with no master key (ingest),
    /// proven only by the key in its member record.
    SelfKeyed,
}

/// What the meta face needs.
#[derive(Debug, Clone)]
pub struct MetaState {
    pub directory: Arc<dyn Directory>,
    pub objects: Arc<dyn Objects>,
    /// Saved queries.
    pub library: Arc<dyn Library>,
    pub signatures: Arc<SignatureCheck>,
    pub master: MasterKeys,
    /// How long a deleted object can be restored.
    pub restore_window: std::time::Duration,
    /// The cluster's members.
    pub registry: Arc<Registry>,
}

/// The meta service's routes (the service and reflection), authenticated.
pub fn router(state: MetaState) -> Result<axum::Router, tonic_reflection::server::Error> {
    let api = MetaApi {
        directory: state.directory.clone(),
        objects: state.objects.clone(),
        library: state.library.clone(),
        restore_window: state.restore_window,
        registry: state.registry.clone(),
    };
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(trawl_proto::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    // gRPC-web too, for browsers (through the gateway).
    let service = tower::Layer::layer(&tonic_web::GrpcWebLayer::new(), MetaServiceServer::new(api));
    let routes = tonic::service::Routes::new(service)
        .add_service(reflection)
        .into_axum_router();
    Ok(routes.layer(axum::middleware::from_fn_with_state(Arc::new(state), authenticate)))
}

/// Methods a caller without the service token may call, proven by a self-made key.
const SELF_KEYED_METHODS: &[&str] = &[
    "/trawl.meta.v1.MetaService/RegisterMember",
    "/trawl.meta.v1.MetaService/DeregisterMember",
];

/// Largest request the meta service reads.
const MAX_BODY: usize = 1 << 20;

async fn authenticate(State(state): State<Arc<MetaState>>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let service_token = parts.headers.get(SERVICE_TOKEN_HEADER).and_then(|v| v.to_str().ok());
    if let Some(token) = service_token {
        if !state.master.accepts(token) {
            return refuse(16, "the service token is not valid (wrong master key?)");
        }
        parts.extensions.insert(Caller::Service);
        return next.run(Request::from_parts(parts, body)).await;
    }
    // Ingest has no master key: its membership calls carry only its self-made key, which the
    // registry checks. (The gateway refuses these methods from its callers.)
    if SELF_KEYED_METHODS.contains(&parts.uri.path())
        && !parts.headers.contains_key(trawl_auth::token::SIGNATURE_HEADER)
    {
        parts.extensions.insert(Caller::SelfKeyed);
        return next.run(Request::from_parts(parts, body)).await;
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return refuse(8, "the request is too large");
    };
    match state.signatures.check_request(&parts, &body).await {
        Ok(identity) => {
            parts.extensions.insert(Caller::Signed(identity));
            next.run(Request::from_parts(parts, Body::from(body))).await
        }
        Err(error) => refuse(16, &error.to_string()),
    }
}

use trawl_gateway::grpc_reply::grpc_refusal as refuse;

#[derive(Debug, Clone)]
struct MetaApi {
    directory: Arc<dyn Directory>,
    objects: Arc<dyn Objects>,
    library: Arc<dyn Library>,
    restore_window: std::time::Duration,
    registry: Arc<Registry>,
}

fn caller<T>(request: &tonic::Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated("the request is not authenticated"))
}

/// The caller's role: cluster services act as admin.
fn role_of(caller: &Caller) -> Option<Role> {
    match caller {
        Caller::Service => Some(Role::Admin),
        Caller::Signed(identity) => Role::parse(&identity.role),
        Caller::SelfKeyed => None,
    }
}

fn needs(caller: &Caller, allowed: &[Role], what: &str) -> Result<(), Status> {
    match role_of(caller) {
        Some(role) if allowed.contains(&role) => Ok(()),
        _ => {
            let names: Vec<&str> = allowed.iter().map(|r| r.as_str()).collect();
            Err(Status::permission_denied(format!(
                "{what} needs the role {}",
                names.join(" or ")
            )))
        }
    }
}

/// Whether the caller is the principal named `name`.
fn is_self(caller: &Caller, name: &str) -> bool {
    matches!(caller, Caller::Signed(identity) if identity.username == name)
}

fn internal(error: impl std::fmt::Display) -> Status {
    tracing::error!(%error, "meta call failed");
    Status::unavailable("the catalog is unavailable")
}

fn auth_status(error: AuthError) -> Status {
    internal(error)
}

impl MetaApi {
    /// The record of a live object, for answers.
    async fn live_record(&self, kind: ObjectKind, database: &str, name: &str) -> Result<pb::CatalogObject, Status> {
        let records = self.objects.objects(kind, database).await.map_err(internal)?;
        records
            .iter()
            .find(|r| r.name == name && r.deleted_at.is_none())
            .map(object_message)
            .ok_or_else(|| Status::not_found(format!("{} '{name}' does not exist", kind.as_str())))
    }

    /// The earliest deletion time a restore may lift now.
    fn restore_not_before(&self) -> i64 {
        let window = i64::try_from(self.restore_window.as_nanos()).unwrap_or(i64::MAX);
        trawl_common::time::now_nanos().saturating_sub(window)
    }

    fn object_name(kind: ObjectKind, database: &str, name: &str) -> String {
        match kind {
            ObjectKind::Database => format!("database '{database}'"),
            _ => format!("{} '{database}.{name}'", kind.as_str()),
        }
    }
}

#[tonic::async_trait]
impl MetaService for MetaApi {
    async fn create_database(
        &self,
        request: tonic::Request<pb::ObjectRequest>,
    ) -> Result<GrpcResponse<pb::CatalogObject>, Status> {
        needs(&caller(&request)?, CATALOG_CHANGERS, "creating a database")?;
        let body = request.into_inner();
        let name = if body.name.is_empty() {
            &body.database
        } else {
            &body.name
        };
        valid_name(name, "the database")?;
        let now = trawl_common::time::now_nanos();
        let change = self.objects.create_database(name, now).await.map_err(internal)?;
        change_status(change, &Self::object_name(ObjectKind::Database, name, ""))?;
        Ok(GrpcResponse::new(
            self.live_record(ObjectKind::Database, "", name).await?,
        ))
    }

    async fn create_table(
        &self,
        request: tonic::Request<pb::ObjectRequest>,
    ) -> Result<GrpcResponse<pb::CatalogObject>, Status> {
        needs(&caller(&request)?, CATALOG_CHANGERS, "creating a table")?;
        let body = request.into_inner();
        let database = database_argument(&body.database);
        valid_name(database, "the database")?;
        valid_name(&body.name, "the table")?;
        let retention = retention_nanos(body.retention_seconds)?;
        let now = trawl_common::time::now_nanos();
        let change = self
            .objects
            .create_table(database, &body.name, retention, now)
            .await
            .map_err(internal)?;
        change_status(change, &Self::object_name(ObjectKind::Table, database, &body.name))?;
        Ok(GrpcResponse::new(
            self.live_record(ObjectKind::Table, database, &body.name).await?,
        ))
    }

    async fn create_view(
        &self,
        request: tonic::Request<pb::ObjectRequest>,
    ) -> Result<GrpcResponse<pb::CatalogObject>, Status> {
        needs(&caller(&request)?, CATALOG_CHANGERS, "creating a view")?;
        let body = request.into_inner();
        let database = database_argument(&body.database);
        valid_name(database, "the database")?;
        valid_name(&body.name, "the view")?;
        let now = trawl_common::time::now_nanos();
        let change = self
            .objects
            .create_view(database, &body.name, &body.members, now)
            .await
            .map_err(internal)?;
        change_status(change, &Self::object_name(ObjectKind::View, database, &body.name))?;
        Ok(GrpcResponse::new(
            self.live_record(ObjectKind::View, database, &body.name).await?,
        ))
    }

    async fn set_retention(
        &self,
        request: tonic::Request<pb::ObjectRequest>,
    ) -> Result<GrpcResponse<pb::CatalogObject>, Status> {
        needs(&caller(&request)?, CATALOG_CHANGERS, "changing a table's retention")?;
        let body = request.into_inner();
        let database = database_argument(&body.database);
        let retention = retention_nanos(body.retention_seconds)?;
        let change = self
            .objects
            .set_retention(database, &body.name, retention)
            .await
            .map_err(internal)?;
        change_status(change, &Self::object_name(ObjectKind::Table, database, &body.name))?;
        Ok(GrpcResponse::new(
            self.live_record(ObjectKind::Table, database, &body.name).await?,
        ))
    }

    async fn list_objects(
        &self,
        request: tonic::Request<pb::ListObjectsRequest>,
    ) -> Result<GrpcResponse<pb::ListObjectsResponse>, Status> {
        caller(&request)?;
        let body = request.into_inner();
        let kind = kind_argument(&body.kind)?;
        let records = self
            .objects
            .objects(kind, database_argument(&body.database))
            .await
            .map_err(internal)?;
        let objects = records
            .iter()
            .filter(|r| body.include_deleted || r.deleted_at.is_none())
            .map(object_message)
            .collect();
        Ok(GrpcResponse::new(pb::ListObjectsResponse { objects }))
    }

    async fn delete_object(
        &self,
        request: tonic::Request<pb::DeleteObjectRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        needs(&caller(&request)?, CATALOG_CHANGERS, "deleting a catalog object")?;
        let body = request.into_inner();
        let kind = kind_argument(&body.kind)?;
        let (database, name) = object_target(kind, &body.database, &body.name);
        let now = trawl_common::time::now_nanos();
        let change = self
            .objects
            .delete_object(kind, database, name, body.cascade, now)
            .await
            .map_err(internal)?;
        change_status(change, &Self::object_name(kind, database, name))?;
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    async fn restore_object(
        &self,
        request: tonic::Request<pb::ObjectRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        needs(&caller(&request)?, CATALOG_CHANGERS, "restoring a catalog object")?;
        let body = request.into_inner();
        let kind = kind_argument(&body.kind)?;
        let (database, name) = object_target(kind, &body.database, &body.name);
        let not_before = self.restore_not_before();
        let change = self
            .objects
            .restore_object(kind, database, name, not_before)
            .await
            .map_err(internal)?;
        change_status(change, &Self::object_name(kind, database, name))?;
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    async fn create_ingest_token(
        &self,
        request: tonic::Request<pb::CreateIngestTokenRequest>,
    ) -> Result<GrpcResponse<pb::CreatedToken>, Status> {
        let caller = caller(&request)?;
        needs(&caller, &[Role::Admin, Role::Maintainer], "creating an ingest token")?;
        let body = request.into_inner();
        let name = if body.name.is_empty() {
            "ingest"
        } else {
            body.name.as_str()
        };
        valid_name(name, "the token name")?;
        let database = if body.database.is_empty() {
            trawl_common::DEFAULT_DATABASE
        } else {
            &body.database
        };
        let table = if body.table.is_empty() {
            trawl_common::DEFAULT_TABLE
        } else {
            &body.table
        };
        valid_name(database, "the database")?;
        valid_name(table, "the table")?;
        let signal_table = |text: String, what: &str| -> Result<Option<String>, Status> {
            if text.is_empty() {
                return Ok(None);
            }
            valid_name(&text, what)?;
            Ok(Some(text))
        };
        let signal_tables = SignalTables {
            logs: signal_table(body.logs_table, "the logs table")?,
            metrics: signal_table(body.metrics_table, "the metrics table")?,
            traces: signal_table(body.traces_table, "the traces table")?,
        };
        let now = trawl_common::time::now_nanos();
        let (id, token) = issue_ingest_token(
            self.directory.as_ref(),
            name,
            database,
            table,
            body.allow_table_override,
            signal_tables,
            now,
        )
        .await
        .map_err(auth_status)?;
        Ok(GrpcResponse::new(pb::CreatedToken {
            id,
            token,
            expires_at: 0,
        }))
    }

    async fn list_ingest_tokens(
        &self,
        request: tonic::Request<pb::ListIngestTokensRequest>,
    ) -> Result<GrpcResponse<pb::ListIngestTokensResponse>, Status> {
        caller(&request)?;
        let tokens = self.directory.ingest_tokens().await.map_err(internal)?;
        Ok(GrpcResponse::new(pb::ListIngestTokensResponse {
            tokens: tokens
                .into_iter()
                .map(|t| pb::IngestToken {
                    id: t.id,
                    name: t.name,
                    database: t.database,
                    table: t.table,
                    allow_table_override: t.allow_table_override,
                    created_at: t.created_at,
                    revoked_at: t.revoked_at.unwrap_or(0),
                    logs_table: t.signal_tables.logs.unwrap_or_default(),
                    metrics_table: t.signal_tables.metrics.unwrap_or_default(),
                    traces_table: t.signal_tables.traces.unwrap_or_default(),
                })
                .collect(),
        }))
    }

    async fn revoke_ingest_token(
        &self,
        request: tonic::Request<pb::RevokeIngestTokenRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        let caller = caller(&request)?;
        needs(&caller, &[Role::Admin, Role::Maintainer], "revoking an ingest token")?;
        let id = request.into_inner().id;
        let now = trawl_common::time::now_nanos();
        if !self.directory.revoke_ingest_token(&id, now).await.map_err(internal)? {
            return Err(Status::not_found(format!("no live ingest token '{id}'")));
        }
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    async fn restore_ingest_token(
        &self,
        request: tonic::Request<pb::RevokeIngestTokenRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        let caller = caller(&request)?;
        needs(&caller, CATALOG_CHANGERS, "restoring an ingest token")?;
        let id = request.into_inner().id;
        let not_before = self.restore_not_before();
        if !self
            .directory
            .restore_ingest_token(&id, not_before)
            .await
            .map_err(internal)?
        {
            return Err(Status::not_found(format!(
                "no ingest token '{id}' revoked within the restore window"
            )));
        }
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    async fn create_service_account(
        &self,
        request: tonic::Request<pb::CreatePrincipalRequest>,
    ) -> Result<GrpcResponse<pb::Principal>, Status> {
        self.create_principal(request, PrincipalKind::ServiceAccount).await
    }

    async fn create_user(
        &self,
        request: tonic::Request<pb::CreatePrincipalRequest>,
    ) -> Result<GrpcResponse<pb::Principal>, Status> {
        self.create_principal(request, PrincipalKind::User).await
    }

    async fn list_principals(
        &self,
        request: tonic::Request<pb::ListPrincipalsRequest>,
    ) -> Result<GrpcResponse<pb::ListPrincipalsResponse>, Status> {
        let caller = caller(&request)?;
        needs(&caller, CATALOG_CHANGERS, "listing users and service accounts")?;
        let principals = self.directory.principals().await.map_err(internal)?;
        Ok(GrpcResponse::new(pb::ListPrincipalsResponse {
            principals: principals.iter().map(principal_message).collect(),
        }))
    }

    async fn grant_role(
        &self,
        request: tonic::Request<pb::GrantRoleRequest>,
    ) -> Result<GrpcResponse<pb::Principal>, Status> {
        let caller = caller(&request)?;
        needs(&caller, &[Role::Admin], "granting a role")?;
        let body = request.into_inner();
        let role =
            Role::parse(&body.role).ok_or_else(|| Status::invalid_argument(format!("unknown role '{}'", body.role)))?;
        let mut principal = self.principal_named(&body.name).await?;
        self.directory.set_role(&principal.id, role).await.map_err(internal)?;
        principal.role = role;
        Ok(GrpcResponse::new(principal_message(&principal)))
    }

    async fn set_password(
        &self,
        request: tonic::Request<pb::SetPasswordRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        self.change_password(request).await
    }

    async fn create_access_token(
        &self,
        request: tonic::Request<pb::CreateAccessTokenRequest>,
    ) -> Result<GrpcResponse<pb::CreatedToken>, Status> {
        self.issue_token(request).await
    }

    async fn list_access_tokens(
        &self,
        request: tonic::Request<pb::ListAccessTokensRequest>,
    ) -> Result<GrpcResponse<pb::ListAccessTokensResponse>, Status> {
        self.tokens_of(request).await
    }

    async fn revoke_access_token(
        &self,
        request: tonic::Request<pb::RevokeAccessTokenRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        self.revoke_token(request).await
    }

    async fn switch_to_sso(
        &self,
        request: tonic::Request<pb::SwitchToSsoRequest>,
    ) -> Result<GrpcResponse<pb::Principal>, Status> {
        self.move_to_sso(request).await
    }

    async fn get_sso_settings(
        &self,
        request: tonic::Request<pb::Empty>,
    ) -> Result<GrpcResponse<pb::SsoSettings>, Status> {
        needs(&caller(&request)?, &[Role::Admin], "reading the SSO settings")?;
        let settings = trawl_auth::sso::stored_settings(self.directory.as_ref())
            .await
            .map_err(internal)?
            .unwrap_or_default();
        Ok(GrpcResponse::new(sso_message(&settings)))
    }

    async fn set_sso_settings(
        &self,
        request: tonic::Request<pb::SsoSettings>,
    ) -> Result<GrpcResponse<pb::SsoSettings>, Status> {
        self.store_sso_settings(request).await
    }

    async fn list_saved_queries(
        &self,
        request: tonic::Request<pb::Empty>,
    ) -> Result<GrpcResponse<pb::ListSavedQueriesResponse>, Status> {
        signed_user(&caller(&request)?)?;
        let queries = self.library.saved_queries().await.map_err(internal)?;
        Ok(GrpcResponse::new(pb::ListSavedQueriesResponse {
            queries: queries.iter().map(saved_query_message).collect(),
        }))
    }

    async fn save_query(
        &self,
        request: tonic::Request<pb::SavedQuery>,
    ) -> Result<GrpcResponse<pb::SavedQuery>, Status> {
        let caller = caller(&request)?;
        let user = signed_user(&caller)?;
        let body = request.into_inner();
        let name = body.name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(Status::invalid_argument(
                "a saved query needs a name of 1-200 characters",
            ));
        }
        if body.query.trim().is_empty() || body.query.len() > MAX_SAVED_QUERY_BYTES {
            return Err(Status::invalid_argument(format!(
                "a saved query needs a query of 1 to {MAX_SAVED_QUERY_BYTES} bytes"
            )));
        }
        let folder = normalized_folder(&body.folder)?;
        if body.description.len() > MAX_SAVED_QUERY_BYTES || body.time_range.len() > 64 || body.database.len() > 256 {
            return Err(Status::invalid_argument(
                "the description, time range or database of the saved query is too long",
            ));
        }
        let now = trawl_common::time::now_nanos();
        let existing = match body.id.as_str() {
            "" => None,
            id => Some(
                self.library
                    .saved_query(id)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| Status::not_found(format!("no saved query '{id}'")))?,
            ),
        };
        if let Some(existing) = &existing
            && existing.owner != user
        {
            needs(&caller, CATALOG_CHANGERS, "changing another user's saved query")?;
        }
        let saved = SavedQuery {
            id: existing
                .as_ref()
                .map_or_else(|| uuid::Uuid::new_v4().simple().to_string(), |e| e.id.clone()),
            name: name.to_string(),
            folder,
            query: body.query,
            database: body.database.trim().to_string(),
            time_range: body.time_range.trim().to_string(),
            description: body.description,
            owner: existing.as_ref().map_or_else(|| user.to_string(), |e| e.owner.clone()),
            created_at: existing.as_ref().map_or(now, |e| e.created_at),
            updated_at: now,
        };
        self.library.save_query(&saved).await.map_err(internal)?;
        Ok(GrpcResponse::new(saved_query_message(&saved)))
    }

    async fn delete_saved_query(
        &self,
        request: tonic::Request<pb::DeleteSavedQueryRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        let caller = caller(&request)?;
        let user = signed_user(&caller)?.to_string();
        let id = request.into_inner().id;
        let unknown = || Status::not_found(format!("no saved query '{id}'"));
        let existing = self
            .library
            .saved_query(&id)
            .await
            .map_err(internal)?
            .ok_or_else(unknown)?;
        if existing.owner != user {
            needs(&caller, CATALOG_CHANGERS, "deleting another user's saved query")?;
        }
        if !self.library.delete_saved_query(&id).await.map_err(internal)? {
            return Err(unknown());
        }
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    async fn who_am_i(&self, request: tonic::Request<pb::Empty>) -> Result<GrpcResponse<pb::Principal>, Status> {
        match caller(&request)? {
            Caller::Service => Ok(GrpcResponse::new(pb::Principal {
                name: "cluster-service".into(),
                kind: "service".into(),
                role: Role::Admin.as_str().into(),
                ..Default::default()
            })),
            Caller::Signed(identity) => {
                let principal = self.principal_named(&identity.username).await?;
                Ok(GrpcResponse::new(principal_message(&principal)))
            }
            Caller::SelfKeyed => Err(Status::unauthenticated("the request is not authenticated")),
        }
    }

    async fn register_member(
        &self,
        request: tonic::Request<pb::Member>,
    ) -> Result<GrpcResponse<pb::RegisterMemberResponse>, Status> {
        let proof = membership_proof(&caller(&request)?)?;
        let member = request.into_inner();
        let now = trawl_common::time::now_nanos();
        // A gateway's signing key is recorded before the gateway is listed: a gateway that
        // meta lists can have its signatures checked.
        if !member.gateway_key_id.is_empty() && proof == Proof::ServiceToken {
            self.directory
                .register_gateway_key(&GatewayKeyRecord {
                    key_id: member.gateway_key_id.clone(),
                    public_key: member.gateway_public_key.clone(),
                    created_at: now,
                })
                .await
                .map_err(internal)?;
        }
        let (id, role, address) = (member.id.clone(), member.role.clone(), member.address.clone());
        if self.registry.register(member, proof, now)? == Registered::Joined {
            tracing::info!(%id, %role, %address, "member joined");
        }
        Ok(GrpcResponse::new(pb::RegisterMemberResponse {
            version: self.registry.version().to_string(),
            heartbeat_ms: u64::try_from(HEARTBEAT.as_millis()).unwrap_or(u64::MAX),
            ttl_ms: u64::try_from(TTL.as_millis()).unwrap_or(u64::MAX),
        }))
    }

    async fn deregister_member(&self, request: tonic::Request<pb::Member>) -> Result<GrpcResponse<pb::Empty>, Status> {
        let proof = membership_proof(&caller(&request)?)?;
        let member = request.into_inner();
        let key = (proof == Proof::SelfKey).then_some(member.key.as_str());
        if self
            .registry
            .deregister(&member.id, key, trawl_common::time::now_nanos())?
        {
            tracing::info!(id = %member.id, role = %member.role, "member left");
        }
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    async fn list_members(
        &self,
        request: tonic::Request<pb::Empty>,
    ) -> Result<GrpcResponse<pb::ListMembersResponse>, Status> {
        if matches!(caller(&request)?, Caller::SelfKeyed) {
            return Err(Status::unauthenticated("listing members needs the service token"));
        }
        Ok(GrpcResponse::new(pb::ListMembersResponse {
            members: self.registry.list(trawl_common::time::now_nanos()),
        }))
    }
}

/// How a membership caller proved itself; signed callers (people) change no membership.
fn membership_proof(caller: &Caller) -> Result<Proof, Status> {
    match caller {
        Caller::Service => Ok(Proof::ServiceToken),
        Caller::SelfKeyed => Ok(Proof::SelfKey),
        Caller::Signed(_) => Err(Status::permission_denied("only cluster services change membership")),
    }
}
