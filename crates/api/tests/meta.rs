//! The meta service: who may call it (master-key service tokens, gateway-signed callers) and
//! what each role may change; membership only for cluster services; reflection on.

use std::sync::Arc;

use tonic::transport::Channel;
use trawl_api::meta_grpc::MetaState;
use trawl_auth::issue_access_token;
use trawl_auth::service::{MasterKeys, SERVICE_TOKEN_HEADER};
use trawl_auth::signatures::SignatureCheck;
use trawl_auth::token::{GatewayKey, Role};
use trawl_catalog::{Directory, Principal, PrincipalKind, SqlCatalog};
use trawl_gateway::{Gateway, GatewayConfig};
use trawl_proto::meta as pb;
use trawl_proto::meta::meta_service_client::MetaServiceClient;

use crate::TestResult;
use crate::support::serve;

struct Setup {
    meta_url: String,
    gateway_url: String,
    master: MasterKeys,
    admin_token: String,
    observer_token: String,
}

async fn setup() -> Result<Setup, Box<dyn std::error::Error>> {
    let sqlite = Arc::new(SqlCatalog::in_memory().await?);
    let directory: Arc<dyn Directory> = sqlite.clone();
    let objects: Arc<dyn trawl_catalog::Objects> = sqlite.clone();
    let library: Arc<dyn trawl_catalog::Library> = sqlite;
    let now = trawl_common::time::now_nanos();
    let mut tokens = Vec::new();
    for (name, role) in [("adm", Role::Admin), ("obs", Role::Observer)] {
        let id = format!("id-{name}");
        directory
            .add_principal(&Principal {
                id: id.clone(),
                name: name.into(),
                kind: PrincipalKind::ServiceAccount,
                role,
                password_hash: None,
                sso_subject: None,
                created_at: now,
            })
            .await?;
        tokens.push(issue_access_token(directory.as_ref(), &id, None, now).await?);
    }
    let master = MasterKeys::new(&"m".repeat(32), None)?;
    let meta_url = serve(trawl_api::meta_grpc::router(MetaState {
        directory: directory.clone(),
        objects,
        library,
        signatures: SignatureCheck::new(directory.clone()),
        master: master.clone(),
        restore_window: std::time::Duration::from_secs(3600),
        registry: Arc::new(trawl_api::membership::Registry::new(VERSION)),
    })?)
    .await?;
    let gateway = Gateway::new(
        directory.clone(),
        GatewayKey::from_seed([1; 32]),
        GatewayConfig {
            upstream: trawl_gateway::Upstreams::fixed(["http://127.0.0.1:9".to_string()]),
            meta_upstream: meta_url.clone(),
            max_body_bytes: 1 << 20,
            version: "test".into(),
            commit: "test".into(),
            session_secret: None,
        },
    );
    gateway.register(now).await?;
    let gateway_url = serve(gateway.router()).await?;
    Ok(Setup {
        meta_url,
        gateway_url,
        master,
        admin_token: tokens.remove(0),
        observer_token: tokens.remove(0),
    })
}

async fn client(url: &str) -> Result<MetaServiceClient<Channel>, tonic::transport::Error> {
    MetaServiceClient::connect(url.to_string()).await
}

fn with<T>(header: &str, value: &str, message: T) -> Result<tonic::Request<T>, Box<dyn std::error::Error>> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        tonic::metadata::MetadataKey::from_bytes(header.as_bytes())?,
        value.parse()?,
    );
    Ok(request)
}

fn bearer<T>(token: &str, message: T) -> Result<tonic::Request<T>, Box<dyn std::error::Error>> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    Ok(request)
}

const VERSION: &str = "9.9.9";

fn member() -> pb::Member {
    pb::Member {
        id: "0123456789abcdef0123456789abcdef".into(),
        role: "ingest".into(),
        address: "127.0.0.1:4317".into(),
        version: VERSION.into(),
        ..pb::Member::default()
    }
}

#[tokio::test]
async fn only_the_master_key_or_the_gateway_gets_in() -> TestResult {
    let setup = setup().await?;
    let mut direct = client(&setup.meta_url).await?;
    let code = |r: Result<tonic::Response<pb::RegisterMemberResponse>, tonic::Status>| r.err().map(|s| s.code());
    // A wrong master key: UNAUTHENTICATED; so is anything but membership without a credential.
    let wrong = MasterKeys::new(&"w".repeat(32), None)?.token();
    let request = with(SERVICE_TOKEN_HEADER, &wrong, member())?;
    assert_eq!(
        code(direct.register_member(request).await),
        Some(tonic::Code::Unauthenticated)
    );
    let listed = direct.list_members(pb::Empty {}).await;
    assert_eq!(listed.err().map(|s| s.code()), Some(tonic::Code::Unauthenticated));
    let listed = direct.list_members(bearer(&setup.admin_token, pb::Empty {})?).await;
    assert_eq!(listed.err().map(|s| s.code()), Some(tonic::Code::Unauthenticated));
    // Without the master key only ingest registers, with a key it made itself, which later
    // calls for the same id must bring.
    assert_eq!(
        code(direct.register_member(member()).await),
        Some(tonic::Code::InvalidArgument),
        "no key"
    );
    let query = pb::Member {
        role: "query".into(),
        key: "ab".repeat(32),
        ..member()
    };
    assert_eq!(
        code(direct.register_member(query).await),
        Some(tonic::Code::PermissionDenied)
    );
    let keyed = pb::Member {
        key: "ab".repeat(32),
        ..member()
    };
    let answer = direct.register_member(keyed.clone()).await?.into_inner();
    assert_eq!(answer.version, VERSION);
    let thief = pb::Member {
        key: "cd".repeat(32),
        ..member()
    };
    assert_eq!(
        code(direct.register_member(thief).await),
        Some(tonic::Code::PermissionDenied)
    );
    // Another release is refused with a clear message.
    let old = pb::Member {
        version: "0.0.1".into(),
        ..keyed.clone()
    };
    let refused = direct.register_member(old).await.err();
    assert_eq!(
        refused.as_ref().map(|s| s.code()),
        Some(tonic::Code::FailedPrecondition)
    );
    assert!(refused.is_some_and(|s| s.message().contains("mixed versions")));
    direct.deregister_member(keyed).await?;
    // The right master key: a cluster service may register members.
    let request = with(SERVICE_TOKEN_HEADER, &setup.master.token(), member())?;
    direct.register_member(request).await?;
    let request = with(SERVICE_TOKEN_HEADER, &setup.master.token(), pb::Empty {})?;
    let listed = direct.list_members(request).await?.into_inner().members;
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0]
            .member
            .as_ref()
            .is_some_and(|m| m.role == "ingest" && m.key.is_empty())
    );
    let bad_id = pb::Member {
        id: "short".into(),
        ..member()
    };
    let request = with(SERVICE_TOKEN_HEADER, &setup.master.token(), bad_id)?;
    assert_eq!(
        code(direct.register_member(request).await),
        Some(tonic::Code::InvalidArgument)
    );
    // Through the gateway, even an admin cannot change membership.
    let mut gateway = client(&setup.gateway_url).await?;
    let request = bearer(&setup.admin_token, member())?;
    assert_eq!(
        code(gateway.register_member(request).await),
        Some(tonic::Code::PermissionDenied)
    );
    let request = bearer(&setup.admin_token, member())?;
    assert_eq!(
        gateway.deregister_member(request).await.err().map(|s| s.code()),
        Some(tonic::Code::PermissionDenied)
    );
    // Reading the members through the gateway is allowed (keys left out).
    let listed = gateway
        .list_members(bearer(&setup.observer_token, pb::Empty {})?)
        .await?
        .into_inner()
        .members;
    assert_eq!(listed.len(), 1);
    Ok(())
}

#[tokio::test]
async fn roles_decide_who_changes_what() -> TestResult {
    let setup = setup().await?;
    let mut gateway = client(&setup.gateway_url).await?;
    let ingest = || pb::CreateIngestTokenRequest {
        name: "t".into(),
        database: "default".into(),
        table: "logs".into(),
        allow_table_override: false,
        logs_table: String::new(),
        metrics_table: "vx_metrics".into(),
        traces_table: String::new(),
    };
    // An observer reads but does not change.
    let me = gateway
        .who_am_i(bearer(&setup.observer_token, pb::Empty {})?)
        .await?
        .into_inner();
    assert_eq!((me.name.as_str(), me.role.as_str()), ("obs", "observer"));
    let denied = gateway
        .create_ingest_token(bearer(&setup.observer_token, ingest())?)
        .await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));
    let request = bearer(&setup.observer_token, pb::ListIngestTokensRequest {})?;
    assert!(
        gateway
            .list_ingest_tokens(request)
            .await?
            .into_inner()
            .tokens
            .is_empty()
    );
    let others = pb::CreateAccessTokenRequest {
        name: "adm".into(),
        expires_in_seconds: 60,
    };
    let denied = gateway
        .create_access_token(bearer(&setup.observer_token, others)?)
        .await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));
    let own = pb::CreateAccessTokenRequest {
        name: "obs".into(),
        expires_in_seconds: 60,
    };
    let made = gateway
        .create_access_token(bearer(&setup.observer_token, own)?)
        .await?
        .into_inner();
    assert!(made.token.starts_with("trawl_at_") && made.expires_at > 0);
    let account = pb::CreatePrincipalRequest {
        name: "bot".into(),
        role: "maintainer".into(),
        password: String::new(),
        sso: false,
    };
    let denied = gateway
        .create_service_account(bearer(&setup.observer_token, account.clone())?)
        .await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));

    // An admin changes; a maintainer may make ingest tokens but not accounts.
    let made = gateway
        .create_ingest_token(bearer(&setup.admin_token, ingest())?)
        .await?
        .into_inner();
    assert!(made.token.starts_with("trawl_it_"));
    let listed = gateway
        .list_ingest_tokens(bearer(&setup.admin_token, pb::ListIngestTokensRequest {})?)
        .await?
        .into_inner()
        .tokens;
    let signal_tables: Vec<_> = listed
        .iter()
        .map(|t| (t.logs_table.as_str(), t.metrics_table.as_str(), t.traces_table.as_str()))
        .collect();
    assert_eq!(signal_tables, vec![("", "vx_metrics", "")]);
    let mut bad_signal_table = ingest();
    bad_signal_table.traces_table = "no such name!".into();
    let refused = gateway
        .create_ingest_token(bearer(&setup.admin_token, bad_signal_table)?)
        .await;
    assert_eq!(refused.err().map(|s| s.code()), Some(tonic::Code::InvalidArgument));
    gateway
        .create_service_account(bearer(&setup.admin_token, account.clone())?)
        .await?;
    let duplicate = gateway
        .create_service_account(bearer(&setup.admin_token, account)?)
        .await;
    assert_eq!(duplicate.err().map(|s| s.code()), Some(tonic::Code::AlreadyExists));
    let bot = pb::CreateAccessTokenRequest {
        name: "bot".into(),
        expires_in_seconds: 0,
    };
    let bot_token = gateway
        .create_access_token(bearer(&setup.admin_token, bot)?)
        .await?
        .into_inner()
        .token;
    gateway.create_ingest_token(bearer(&bot_token, ingest())?).await?;
    let user = pb::CreatePrincipalRequest {
        name: "ann".into(),
        role: "observer".into(),
        password: "long enough".into(),
        sso: false,
    };
    let denied = gateway.create_user(bearer(&bot_token, user)?).await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));
    // Granting observer takes the maintainer's rights away.
    let grant = pb::GrantRoleRequest {
        name: "bot".into(),
        role: "observer".into(),
    };
    gateway.grant_role(bearer(&setup.admin_token, grant)?).await?;
    let denied = gateway.create_ingest_token(bearer(&bot_token, ingest())?).await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));
    Ok(())
}

#[tokio::test]
async fn reflection_lists_the_service() -> TestResult {
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let setup = setup().await?;
    let channel = tonic::transport::Endpoint::from_shared(setup.meta_url.clone())?
        .connect()
        .await?;
    let mut reflection = ServerReflectionClient::new(channel);
    let ask = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let request = with(
        SERVICE_TOKEN_HEADER,
        &setup.master.token(),
        futures::stream::iter([ask]),
    )?;
    let mut answers = reflection.server_reflection_info(request).await?.into_inner();
    let Some(answer) = answers.message().await? else {
        return Err("no reflection answer".into());
    };
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        return Err("not a service list".into());
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"trawl.meta.v1.MetaService".to_string()), "{names:?}");
    Ok(())
}

/// One gRPC-web call through the gateway: (HTTP status, `grpc-status` header, body).
async fn grpc_web(
    url: &str,
    token: &str,
    method: &str,
    message: &impl prost::Message,
) -> Result<(u16, Option<String>, Vec<u8>), Box<dyn std::error::Error>> {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let payload = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&u32::try_from(payload.len())?.to_be_bytes());
    framed.extend_from_slice(&payload);
    let request = http::Request::post(format!("{url}/trawl.meta.v1.MetaService/{method}"))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(bytes::Bytes::from(framed)))?;
    let client = Client::builder(TokioExecutor::new()).build_http();
    let response = client.request(request).await?;
    let status = response.status().as_u16();
    let grpc_status = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.into_body().collect().await?.to_bytes().to_vec();
    Ok((status, grpc_status, body))
}

#[tokio::test]
async fn grpc_web_callers_get_403_for_a_refused_change() -> TestResult {
    let setup = setup().await?;
    let table = pb::ObjectRequest {
        kind: "table".into(),
        database: "default".into(),
        name: "web".into(),
        ..Default::default()
    };
    let (status, grpc_status, _) = grpc_web(&setup.gateway_url, &setup.observer_token, "CreateTable", &table).await?;
    assert_eq!((status, grpc_status.as_deref()), (403, Some("7")));
    let (status, _, body) = grpc_web(&setup.gateway_url, &setup.admin_token, "CreateTable", &table).await?;
    assert_eq!(status, 200);
    // A data frame with the created table, then the trailer frame with grpc-status 0.
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("web") && text.contains("grpc-status:0"), "{text}");
    Ok(())
}

#[tokio::test]
async fn the_query_library_and_access_tokens_follow_their_owners() -> TestResult {
    let setup = setup().await?;
    let mut gateway = client(&setup.gateway_url).await?;
    // Anyone signed in saves and lists; the folder is tidied.
    let saved = gateway
        .save_query(bearer(
            &setup.observer_token,
            pb::SavedQuery {
                name: "errors".into(),
                folder: " team// web ".into(),
                query: "logs | where severity_text == 'ERROR'".into(),
                time_range: "1h".into(),
                ..pb::SavedQuery::default()
            },
        )?)
        .await?
        .into_inner();
    assert_eq!((saved.owner.as_str(), saved.folder.as_str()), ("obs", "team/web"));
    assert_eq!(saved.id.len(), 32);
    let listed = gateway
        .list_saved_queries(bearer(&setup.admin_token, pb::Empty {})?)
        .await?
        .into_inner()
        .queries;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].query, saved.query);
    let empty = gateway
        .save_query(bearer(&setup.observer_token, pb::SavedQuery::default())?)
        .await;
    assert_eq!(empty.err().map(|s| s.code()), Some(tonic::Code::InvalidArgument));
    // Its owner changes it; an admin may too, and the owner stays.
    let renamed = gateway
        .save_query(bearer(
            &setup.admin_token,
            pb::SavedQuery {
                name: "all errors".into(),
                ..saved.clone()
            },
        )?)
        .await?
        .into_inner();
    assert_eq!((renamed.name.as_str(), renamed.owner.as_str()), ("all errors", "obs"));
    assert_eq!(renamed.created_at, saved.created_at);
    let unknown = gateway
        .delete_saved_query(bearer(
            &setup.observer_token,
            pb::DeleteSavedQueryRequest { id: "0".repeat(32) },
        )?)
        .await;
    assert_eq!(unknown.err().map(|s| s.code()), Some(tonic::Code::NotFound));
    gateway
        .delete_saved_query(bearer(
            &setup.observer_token,
            pb::DeleteSavedQueryRequest { id: saved.id.clone() },
        )?)
        .await?;

    // Accounts are listed for admins and maintainers only.
    let denied = gateway
        .list_principals(bearer(&setup.observer_token, pb::ListPrincipalsRequest {})?)
        .await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));
    // Tokens: yours, or anyone's for an admin; revoked tokens stop working.
    let made = gateway
        .create_access_token(bearer(
            &setup.admin_token,
            pb::CreateAccessTokenRequest {
                name: "obs".into(),
                expires_in_seconds: 0,
            },
        )?)
        .await?
        .into_inner();
    let tokens = gateway
        .list_access_tokens(bearer(
            &setup.observer_token,
            pb::ListAccessTokensRequest { name: "obs".into() },
        )?)
        .await?
        .into_inner()
        .tokens;
    assert_eq!(tokens.len(), 2);
    assert!(tokens.iter().any(|t| t.id == made.id && t.revoked_at == 0));
    let denied = gateway
        .list_access_tokens(bearer(
            &setup.observer_token,
            pb::ListAccessTokensRequest { name: "adm".into() },
        )?)
        .await;
    assert_eq!(denied.err().map(|s| s.code()), Some(tonic::Code::PermissionDenied));
    gateway
        .revoke_access_token(bearer(
            &setup.admin_token,
            pb::RevokeAccessTokenRequest { id: made.id.clone() },
        )?)
        .await?;
    let refused = gateway.who_am_i(bearer(&made.token, pb::Empty {})?).await;
    assert_eq!(refused.err().map(|s| s.code()), Some(tonic::Code::Unauthenticated));
    let again = gateway
        .revoke_access_token(bearer(
            &setup.admin_token,
            pb::RevokeAccessTokenRequest { id: made.id },
        )?)
        .await;
    assert_eq!(again.err().map(|s| s.code()), Some(tonic::Code::NotFound));
    Ok(())
}
