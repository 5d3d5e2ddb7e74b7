//! Cluster membership, kept by meta: which processes run which roles where, as of their last
//! heartbeat. Members register at start and again every [`HEARTBEAT`]; one not heard from for
//! [`TTL`] is dropped. The registry lives in meta's memory: after meta restarts, every member
//! is back within one heartbeat.
//!
//! Who may register: a cluster service with the service token (any role); ingest, which has no
//! master key, with a key it made itself (the first registration of an id records the key,
//! later ones for that id must bring it). Members of another release are refused.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use trawl_auth::service::KeyDigest;
use trawl_common::metrics::{METRICS, label};
use trawl_proto::meta as pb;

/// How often members register again.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// How long a silent member stays listed.
pub const TTL: Duration = Duration::from_secs(10);

/// The roles a process may run.
pub const ROLES: &[&str] = &["gateway", "query", "ingest", "meta", "janitor"];

/// How the caller of a membership change was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// The service token derived from the master key.
    ServiceToken,
    /// Nothing but the key in the member record (ingest).
    SelfKey,
}

/// Why a membership change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Denied(String),
    #[error(
        "mixed versions: meta runs release {meta}, this process runs {member}; every process of a \
         cluster runs the same release (upgrade them all, then restart)"
    )]
    Version { meta: String, member: String },
}

impl From<Refusal> for tonic::Status {
    fn from(refusal: Refusal) -> tonic::Status {
        let message = refusal.to_string();
        match refusal {
            Refusal::Invalid(_) => tonic::Status::invalid_argument(message),
            Refusal::Denied(_) => tonic::Status::permission_denied(message),
            Refusal::Version { .. } => tonic::Status::failed_precondition(message),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    member: pb::Member,
    key_digest: Option<KeyDigest>,
    joined: i64,
    last_seen: i64,
}

/// What a registration changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// The id was not listed (or its record changed).
    Joined,
    /// A heartbeat of a listed member.
    Renewed,
}

/// The registry.
#[derive(Debug)]
pub struct Registry {
    version: String,
    ttl_nanos: i64,
    entries: Mutex<HashMap<String, Entry>>,
}

fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The roles of a member record: known names, comma-separated, at least one.
fn check_roles(role: &str) -> Result<Vec<&str>, Refusal> {
    let roles: Vec<&str> = role.split(',').map(str::trim).filter(|r| !r.is_empty()).collect();
    if roles.is_empty() {
        return Err(Refusal::Invalid("a member names its roles".into()));
    }
    match roles.iter().find(|r| !ROLES.contains(r)) {
        Some(unknown) => Err(Refusal::Invalid(format!(
            "unknown role {unknown:?}; roles are {}",
            ROLES.join(", ")
        ))),
        None => Ok(roles),
    }
}

impl Registry {
    pub fn new(version: &str) -> Registry {
        Registry::with_ttl(version, TTL)
    }

    pub fn with_ttl(version: &str, ttl: Duration) -> Registry {
        Registry {
            version: version.to_string(),
            ttl_nanos: i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX),
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    fn entries(&self, now: i64) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        let mut entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ttl = self.ttl_nanos;
        entries.retain(|_, entry| now.saturating_sub(entry.last_seen) <= ttl);
        for role in ROLES {
            let count = entries.values().filter(|entry| has_role(&entry.member, role)).count();
            METRICS
                .cluster_members
                .get_or_create(&label("role", *role))
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        entries
    }

    /// Registers `member` (a heartbeat when it is listed already).
    pub fn register(&self, member: pb::Member, proof: Proof, now: i64) -> Result<Registered, Refusal> {
        if !is_hex(&member.id, 32) {
            return Err(Refusal::Invalid("a member id is 32 hex characters".into()));
        }
        let roles = check_roles(&member.role)?;
        if member.version != self.version {
            return Err(Refusal::Version {
                meta: self.version.clone(),
                member: if member.version.is_empty() {
                    "an unknown release".into()
                } else {
                    member.version.clone()
                },
            });
        }
        let key_digest = match proof {
            Proof::ServiceToken => None,
            Proof::SelfKey => {
                if roles != ["ingest"] {
                    return Err(Refusal::Denied(
                        "only ingest registers without the service token (the master key)".into(),
                    ));
                }
                if !is_hex(&member.key, 64) {
                    return Err(Refusal::Invalid(
                        "a member without the service token brings its own key, 64 hex characters".into(),
                    ));
                }
                Some(KeyDigest::of(&member.key))
            }
        };
        let mut entries = self.entries(now);
        if let Some(existing) = entries.get(&member.id) {
            self.same_owner(existing, key_digest.as_ref())?;
        }
        let mut member = member;
        member.key.clear();
        let outcome = match entries.get_mut(&member.id) {
            Some(entry) if entry.member == member => {
                entry.last_seen = now;
                Registered::Renewed
            }
            Some(entry) => {
                entry.member = member;
                entry.last_seen = now;
                Registered::Joined
            }
            None => {
                entries.insert(
                    member.id.clone(),
                    Entry {
                        member,
                        key_digest,
                        joined: now,
                        last_seen: now,
                    },
                );
                Registered::Joined
            }
        };
        Ok(outcome)
    }

    /// Whether a caller with `key` (none: the service token) may change `entry`.
    fn same_owner(&self, entry: &Entry, key: Option<&KeyDigest>) -> Result<(), Refusal> {
        match (entry.key_digest, key) {
            // The service token may change any record.
            (_, None) => Ok(()),
            (Some(recorded), Some(presented)) if recorded.matches(presented) => Ok(()),
            _ => Err(Refusal::Denied("this member id is registered with another key".into())),
        }
    }

    /// Removes member `id` (a clean stop). Self-keyed callers must bring the member's key.
    pub fn deregister(&self, id: &str, key: Option<&str>, now: i64) -> Result<bool, Refusal> {
        let mut entries = self.entries(now);
        let Some(entry) = entries.get(id) else {
            return Ok(false);
        };
        let presented = key.map(KeyDigest::of);
        self.same_owner(entry, presented.as_ref())?;
        entries.remove(id);
        Ok(true)
    }

    /// The live members, oldest first (keys are never listed).
    pub fn list(&self, now: i64) -> Vec<pb::MemberStatus> {
        let entries = self.entries(now);
        let mut listed: Vec<pb::MemberStatus> = entries
            .values()
            .map(|entry| pb::MemberStatus {
                member: Some(entry.member.clone()),
                joined_unix_nanos: entry.joined,
                last_seen_unix_nanos: entry.last_seen,
            })
            .collect();
        listed.sort_by(|a, b| {
            (a.joined_unix_nanos, a.member.as_ref().map(|m| &m.id))
                .cmp(&(b.joined_unix_nanos, b.member.as_ref().map(|m| &m.id)))
        });
        listed
    }
}

/// Whether a member's role list includes `role`.
pub fn has_role(member: &pb::Member, role: &str) -> bool {
    member.role.split(',').any(|r| r.trim() == role)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000_000;

    fn member(id: &str, role: &str) -> pb::Member {
        pb::Member {
            id: id.repeat(32 / id.len()),
            role: role.into(),
            address: "http://127.0.0.1:9510".into(),
            version: "1.0.0".into(),
            ..pb::Member::default()
        }
    }

    #[test]
    fn members_come_and_go_with_their_heartbeats() -> Result<(), Refusal> {
        let registry = Registry::with_ttl("1.0.0", Duration::from_secs(10));
        assert_eq!(
            registry.register(member("a", "query"), Proof::ServiceToken, 0)?,
            Registered::Joined
        );
        assert_eq!(
            registry.register(member("b", "gateway,query"), Proof::ServiceToken, SECOND)?,
            Registered::Joined
        );
        assert_eq!(
            registry.register(member("a", "query"), Proof::ServiceToken, 8 * SECOND)?,
            Registered::Renewed
        );
        let ids = |now| -> Vec<String> {
            registry
                .list(now)
                .into_iter()
                .filter_map(|s| s.member.map(|m| m.id))
                .collect()
        };
        assert_eq!(ids(9 * SECOND), vec!["a".repeat(32), "b".repeat(32)]);
        // b fell silent 11 s ago: dropped; a was heard 3 s ago.
        assert_eq!(ids(12 * SECOND), vec!["a".repeat(32)]);
        assert!(registry.deregister(&"a".repeat(32), None, 12 * SECOND)?);
        assert!(ids(12 * SECOND).is_empty());
        Ok(())
    }

    #[test]
    fn ingest_registers_with_its_own_key_and_nothing_else_does() -> Result<(), Refusal> {
        let registry = Registry::new("1.0.0");
        let key = "0f".repeat(32);
        let ingest = pb::Member {
            key: key.clone(),
            ..member("c", "ingest")
        };
        registry.register(ingest.clone(), Proof::SelfKey, 0)?;
        // The key is never listed.
        assert!(
            registry
                .list(0)
                .iter()
                .all(|s| s.member.as_ref().is_some_and(|m| m.key.is_empty()))
        );
        // Another key cannot take the id over or remove it; the same key renews.
        let thief = pb::Member {
            key: "1e".repeat(32),
            ..member("c", "ingest")
        };
        assert!(matches!(
            registry.register(thief, Proof::SelfKey, 1),
            Err(Refusal::Denied(_))
        ));
        assert!(matches!(
            registry.deregister(&ingest.id, Some(&"1e".repeat(32)), 1),
            Err(Refusal::Denied(_))
        ));
        assert_eq!(
            registry.register(ingest.clone(), Proof::SelfKey, 2)?,
            Registered::Renewed
        );
        // Without the master key only ingest registers, and only with a real key.
        let query = pb::Member {
            key: key.clone(),
            ..member("d", "query")
        };
        assert!(matches!(
            registry.register(query, Proof::SelfKey, 3),
            Err(Refusal::Denied(_))
        ));
        let keyless = member("e", "ingest");
        assert!(matches!(
            registry.register(keyless, Proof::SelfKey, 3),
            Err(Refusal::Invalid(_))
        ));
        assert!(registry.deregister(&ingest.id, Some(&key), 4)?);
        Ok(())
    }

    #[test]
    fn bad_records_and_other_releases_are_refused() {
        let registry = Registry::new("1.0.0");
        let short = pb::Member {
            id: "abc".into(),
            ..member("a", "query")
        };
        assert!(matches!(
            registry.register(short, Proof::ServiceToken, 0),
            Err(Refusal::Invalid(_))
        ));
        assert!(matches!(
            registry.register(member("a", "query,cook"), Proof::ServiceToken, 0),
            Err(Refusal::Invalid(_))
        ));
        assert!(matches!(
            registry.register(member("a", ""), Proof::ServiceToken, 0),
            Err(Refusal::Invalid(_))
        ));
        let old = pb::Member {
            version: "0.9.0".into(),
            ..member("a", "query")
        };
        let refusal = registry.register(old, Proof::ServiceToken, 0);
        assert!(
            matches!(&refusal, Err(Refusal::Version { member, .. }) if member == "0.9.0"),
            "{refusal:?}"
        );
        let status = tonic::Status::from(refusal.err().unwrap_or(Refusal::Invalid(String::new())));
        assert_eq!(status.code(), tonic::Code::FailedPrecondition);
        assert!(status.message().contains("mixed versions"), "{}", status.message());
        assert!(registry.list(0).is_empty());
    }
}
