//! A process's side of membership: register with meta at start, again every heartbeat, and
//! deregister on a clean stop. With the service token it also reads the member list after each
//! heartbeat (the gateway routes queries by it). A meta of another release, or one that
//! refuses this process's release, ends the agent with [`AgentError::MixedVersions`]: the
//! process stops with that message rather than serve beside processes it cannot trust.

use std::time::Duration;

use tokio::sync::watch;
use tonic::transport::{Channel, Endpoint};
use trawl_auth::service::SERVICE_TOKEN_HEADER;
use trawl_proto::meta as pb;
use trawl_proto::meta::meta_service_client::MetaServiceClient;

use crate::membership::HEARTBEAT;

/// How a member proves itself to meta.
#[derive(Clone)]
pub enum Credential {
    /// The token derived from the master key.
    ServiceToken(String),
    /// A key the process made itself (ingest, which has no master key); sent in the record.
    SelfKey(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::ServiceToken(_) => f.write_str("ServiceToken(..)"),
            Credential::SelfKey(_) => f.write_str("SelfKey(..)"),
        }
    }
}

/// Why the agent stopped for good.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    MixedVersions(String),
    #[error("meta refused this process: {0}")]
    Refused(String),
    #[error("the meta address {0:?} is not a valid URL")]
    BadAddress(String),
}

/// What the last heartbeat learned.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The live members (with the service token; empty without).
    pub members: Vec<pb::MemberStatus>,
    /// Whether meta lists this process (with its gateway key, if it has one).
    pub listed: bool,
}

impl View {
    /// Addresses of live members running `role`, in the order meta lists them.
    pub fn addresses(&self, role: &str) -> Vec<String> {
        self.members
            .iter()
            .filter_map(|status| status.member.as_ref())
            .filter(|member| crate::membership::has_role(member, role))
            .map(|member| member.address.clone())
            .collect()
    }
}

/// Registers one process with meta.
#[derive(Debug)]
pub struct MemberAgent {
    meta: String,
    member: pb::Member,
    credential: Credential,
}

fn request<T>(credential: &Credential, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(Duration::from_secs(5));
    if let Credential::ServiceToken(token) = credential
        && let Ok(value) = token.parse()
    {
        request.metadata_mut().insert(SERVICE_TOKEN_HEADER, value);
    }
    request
}

impl MemberAgent {
    /// `member.version` should be this build's release; its `key` is filled from a self key.
    pub fn new(meta: &str, mut member: pb::Member, credential: Credential) -> MemberAgent {
        if let Credential::SelfKey(key) = &credential {
            member.key = key.clone();
        }
        MemberAgent {
            meta: meta.trim_end_matches('/').to_string(),
            member,
            credential,
        }
    }

    pub fn member(&self) -> &pb::Member {
        &self.member
    }

    fn client(&self) -> Result<MetaServiceClient<Channel>, AgentError> {
        let endpoint = Endpoint::from_shared(self.meta.clone())
            .map_err(|_| AgentError::BadAddress(self.meta.clone()))?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(5));
        Ok(MetaServiceClient::new(endpoint.connect_lazy()))
    }

    /// One heartbeat: register, then list the members when the credential allows.
    /// `Ok(None)`: meta did not answer (it may be restarting); errors are for good.
    async fn beat(&self, client: &mut MetaServiceClient<Channel>) -> Result<Option<View>, AgentError> {
        let answer = match client
            .register_member(request(&self.credential, self.member.clone()))
            .await
        {
            Ok(answer) => answer.into_inner(),
            Err(status) => return classify(status).map(|()| None),
        };
        if answer.version != self.member.version {
            return Err(AgentError::MixedVersions(format!(
                "mixed versions: meta runs release {}, this process runs {}; every process of a \
                 cluster runs the same release",
                answer.version, self.member.version
            )));
        }
        if matches!(self.credential, Credential::SelfKey(_)) {
            return Ok(Some(View {
                members: Vec::new(),
                listed: true,
            }));
        }
        let members = match client.list_members(request(&self.credential, pb::Empty {})).await {
            Ok(listed) => listed.into_inner().members,
            Err(status) => return classify(status).map(|()| None),
        };
        let listed = members
            .iter()
            .filter_map(|s| s.member.as_ref())
            .any(|m| m.id == self.member.id && m.gateway_key_id == self.member.gateway_key_id);
        Ok(Some(View { members, listed }))
    }

    /// Heartbeats until `stop`, calling `seen` after every answered one; deregisters on stop.
    pub async fn run(self, mut seen: impl FnMut(&View) + Send, stop: watch::Receiver<bool>) -> Result<(), AgentError> {
        let mut client = self.client()?;
        let mut reachable = true;
        let mut registered = false;
        loop {
            let beat = match self.beat(&mut client).await {
                // Refused after having been a member (meta restarted with other keys, say):
                // said loudly, and tried again; refused from the start: a setting is wrong.
                Err(AgentError::Refused(reason)) if registered => {
                    tracing::error!(meta = %self.meta, %reason, "meta refuses this process's heartbeat");
                    None
                }
                beat => beat?,
            };
            match beat {
                Some(view) => {
                    registered = true;
                    if !reachable {
                        tracing::info!(meta = %self.meta, "meta answers again");
                        reachable = true;
                    }
                    seen(&view);
                }
                None if reachable => {
                    tracing::warn!(meta = %self.meta, "meta does not answer; will keep trying");
                    reachable = false;
                }
                None => {}
            }
            let mut stopped = stop.clone();
            tokio::select! {
                _ = stopped.wait_for(|stop| *stop) => break,
                _ = tokio::time::sleep(HEARTBEAT) => {}
            }
        }
        let mut leaving = self.member.clone();
        leaving.gateway_public_key.clear();
        if let Err(status) = client.deregister_member(request(&self.credential, leaving)).await {
            tracing::debug!(%status, "could not deregister; meta drops this member on its own");
        }
        Ok(())
    }
}

/// A refusal that ends the agent, or `Ok` for one worth retrying.
fn classify(status: tonic::Status) -> Result<(), AgentError> {
    match status.code() {
        tonic::Code::FailedPrecondition => Err(AgentError::MixedVersions(status.message().to_string())),
        tonic::Code::InvalidArgument | tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => {
            Err(AgentError::Refused(status.message().to_string()))
        }
        _ => {
            tracing::debug!(%status, "heartbeat not answered");
            Ok(())
        }
    }
}
