//! The meta service's account calls that are more than a lookup: creating users and service
//! accounts, passwords, access tokens and the switch to SSO, with who may do each.

use tonic::{Response as GrpcResponse, Status};
use trawl_auth::accounts::{hash_password, issue_access_token};
use trawl_auth::token::Role;
use trawl_catalog::{Principal, PrincipalKind, SsoSettings};
use trawl_proto::meta as pb;

use super::{Caller, MetaApi, auth_status, caller, internal, is_self, needs};
use crate::meta_messages::*;

/// Refuses a service account where only users make sense (passwords, SSO).
fn signs_in_as_user(principal: &Principal) -> Result<(), Status> {
    if principal.kind == PrincipalKind::User {
        return Ok(());
    }
    Err(Status::failed_precondition(format!(
        "'{}' is a service account: it signs in with tokens only",
        principal.name
    )))
}

impl MetaApi {
    pub(super) async fn principal_named(&self, name: &str) -> Result<Principal, Status> {
        self.directory
            .principal_by_name(name)
            .await
            .map_err(internal)?
            .ok_or_else(|| Status::not_found(format!("no user or service account named '{name}'")))
    }

    pub(super) async fn create_principal(
        &self,
        request: tonic::Request<pb::CreatePrincipalRequest>,
        kind: PrincipalKind,
    ) -> Result<GrpcResponse<pb::Principal>, Status> {
        let caller = caller(&request)?;
        needs(&caller, &[Role::Admin], "creating users and service accounts")?;
        let body = request.into_inner();
        valid_name(&body.name, "the name")?;
        let role = role_argument(&body.role)?;
        let password_hash = match kind {
            PrincipalKind::User if body.sso => {
                if !body.password.is_empty() {
                    return Err(Status::invalid_argument(
                        "an SSO user has no password: an account signs in one way only",
                    ));
                }
                None
            }
            PrincipalKind::User => {
                if body.password.chars().count() < MIN_PASSWORD_LEN {
                    return Err(Status::invalid_argument(format!(
                        "a user's password needs at least {MIN_PASSWORD_LEN} characters"
                    )));
                }
                Some(hash_password(&body.password).map_err(auth_status)?)
            }
            PrincipalKind::ServiceAccount => None,
        };
        let principal = Principal {
            id: uuid::Uuid::new_v4().to_string(),
            name: body.name.clone(),
            kind,
            role,
            password_hash,
            sso_subject: None,
            created_at: trawl_common::time::now_nanos(),
        };
        if !self.directory.add_principal(&principal).await.map_err(internal)? {
            return Err(Status::already_exists(format!("'{}' exists already", body.name)));
        }
        Ok(GrpcResponse::new(principal_message(&principal)))
    }

    /// The account `name`, when the caller is that account or an admin (else `what` is
    /// refused).
    async fn own_or_admin(&self, caller: &Caller, name: &str, what: &str) -> Result<Principal, Status> {
        if !is_self(caller, name) {
            needs(caller, &[Role::Admin], what)?;
        }
        self.principal_named(name).await
    }

    pub(super) async fn change_password(
        &self,
        request: tonic::Request<pb::SetPasswordRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        let caller = caller(&request)?;
        let body = request.into_inner();
        let principal = self
            .own_or_admin(&caller, &body.name, "setting another account's password")
            .await?;
        signs_in_as_user(&principal)?;
        if principal.password_hash.is_none() {
            return Err(Status::failed_precondition(format!(
                "'{}' signs in with SSO: an account signs in one way only",
                body.name
            )));
        }
        if body.password.chars().count() < MIN_PASSWORD_LEN {
            return Err(Status::invalid_argument(format!(
                "a password needs at least {MIN_PASSWORD_LEN} characters"
            )));
        }
        let hash = hash_password(&body.password).map_err(auth_status)?;
        self.directory
            .set_password_hash(&principal.id, &hash)
            .await
            .map_err(internal)?;
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    pub(super) async fn issue_token(
        &self,
        request: tonic::Request<pb::CreateAccessTokenRequest>,
    ) -> Result<GrpcResponse<pb::CreatedToken>, Status> {
        let caller = caller(&request)?;
        let body = request.into_inner();
        let principal = self
            .own_or_admin(&caller, &body.name, "making a token for another account")
            .await?;
        let now = trawl_common::time::now_nanos();
        let expires_at = match body.expires_in_seconds {
            0 => None,
            seconds => {
                let nanos = i64::try_from(seconds)
                    .ok()
                    .and_then(|s| s.checked_mul(1_000_000_000))
                    .and_then(|n| n.checked_add(now))
                    .ok_or_else(|| Status::invalid_argument("expires_in_seconds is too large"))?;
                Some(nanos)
            }
        };
        let token = issue_access_token(self.directory.as_ref(), &principal.id, expires_at, now)
            .await
            .map_err(auth_status)?;
        let id = trawl_auth::token::parse_token(&token).map(|t| t.id).unwrap_or_default();
        Ok(GrpcResponse::new(pb::CreatedToken {
            id,
            token,
            expires_at: expires_at.unwrap_or(0),
        }))
    }

    pub(super) async fn tokens_of(
        &self,
        request: tonic::Request<pb::ListAccessTokensRequest>,
    ) -> Result<GrpcResponse<pb::ListAccessTokensResponse>, Status> {
        let caller = caller(&request)?;
        let body = request.into_inner();
        let principal = self
            .own_or_admin(&caller, &body.name, "listing another account's tokens")
            .await?;
        let tokens = self.directory.access_tokens_of(&principal.id).await.map_err(internal)?;
        Ok(GrpcResponse::new(pb::ListAccessTokensResponse {
            tokens: tokens
                .iter()
                .map(|t| pb::AccessToken {
                    id: t.id.clone(),
                    expires_at: t.expires_at.unwrap_or(0),
                    created_at: t.created_at,
                    revoked_at: t.revoked_at.unwrap_or(0),
                })
                .collect(),
        }))
    }

    pub(super) async fn revoke_token(
        &self,
        request: tonic::Request<pb::RevokeAccessTokenRequest>,
    ) -> Result<GrpcResponse<pb::Empty>, Status> {
        let caller = caller(&request)?;
        let body = request.into_inner();
        let unknown = || Status::not_found(format!("no live access token '{}'", body.id));
        let token = self
            .directory
            .access_token(&body.id)
            .await
            .map_err(internal)?
            .ok_or_else(unknown)?;
        let owner = self.directory.principal(&token.principal_id).await.map_err(internal)?;
        if !owner.as_ref().is_some_and(|p| is_self(&caller, &p.name)) {
            needs(&caller, &[Role::Admin], "revoking another account's token")?;
        }
        let now = trawl_common::time::now_nanos();
        if !self
            .directory
            .revoke_access_token(&body.id, now)
            .await
            .map_err(internal)?
        {
            return Err(unknown());
        }
        Ok(GrpcResponse::new(pb::Empty {}))
    }

    pub(super) async fn move_to_sso(
        &self,
        request: tonic::Request<pb::SwitchToSsoRequest>,
    ) -> Result<GrpcResponse<pb::Principal>, Status> {
        let caller = caller(&request)?;
        needs(&caller, &[Role::Admin], "switching an account to SSO")?;
        let body = request.into_inner();
        let mut principal = self.principal_named(&body.name).await?;
        signs_in_as_user(&principal)?;
        self.directory.switch_to_sso(&principal.id).await.map_err(internal)?;
        principal.password_hash = None;
        Ok(GrpcResponse::new(principal_message(&principal)))
    }

    pub(super) async fn store_sso_settings(
        &self,
        request: tonic::Request<pb::SsoSettings>,
    ) -> Result<GrpcResponse<pb::SsoSettings>, Status> {
        needs(&caller(&request)?, &[Role::Admin], "changing the SSO settings")?;
        let body = request.into_inner();
        let stored = trawl_auth::sso::stored_settings(self.directory.as_ref())
            .await
            .map_err(internal)?
            .unwrap_or_default();
        let settings = SsoSettings {
            enabled: body.enabled,
            issuer: body.issuer.trim().trim_end_matches('/').to_string(),
            client_id: body.client_id.trim().to_string(),
            client_secret: if body.client_secret.is_empty() {
                stored.client_secret
            } else {
                body.client_secret
            },
            redirect_url: body.redirect_url.trim().to_string(),
            scopes: body.scopes.trim().to_string(),
            username_claim: body.username_claim.trim().to_string(),
            new_user_role: body.new_user_role.trim().to_string(),
            label: body.label.trim().to_string(),
        };
        trawl_auth::sso::check_settings(&settings).map_err(Status::invalid_argument)?;
        trawl_auth::sso::store_settings(self.directory.as_ref(), &settings)
            .await
            .map_err(internal)?;
        Ok(GrpcResponse::new(sso_message(&settings)))
    }
}
