//! Which services a `trawl serve` process runs (`--role`), and the settings each needs.
//!
//! `all` (the default) is the embedded single process. Any other list makes the process one
//! member of a cluster: its catalog must be PostgreSQL and its segments on object storage
//! (every process must see the same ones), it needs the master key unless it runs ingest
//! alone, and it finds the others through meta (`--meta`) unless it runs meta itself.

use std::collections::BTreeSet;

/// One role, as `--role` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum ServiceRole {
    /// Every service in one process (the embedded default).
    All,
    /// Authenticates callers and forwards signed requests to live query nodes (9500).
    Gateway,
    /// Runs queries (9510) and answers the operator port (9511).
    Query,
    /// Takes in telemetry (OTLP 4317/4318, log push, the vendor intake 9552).
    Ingest,
    /// Catalog changes, accounts, tokens and the member registry (9560).
    Meta,
    /// Merges, retention, deletion and orphan sweeps, under a lease (one active per cluster).
    Janitor,
}

impl ServiceRole {
    pub fn name(self) -> &'static str {
        match self {
            ServiceRole::All => "all",
            ServiceRole::Gateway => "gateway",
            ServiceRole::Query => "query",
            ServiceRole::Ingest => "ingest",
            ServiceRole::Meta => "meta",
            ServiceRole::Janitor => "janitor",
        }
    }
}

const EVERY: [ServiceRole; 5] = [
    ServiceRole::Gateway,
    ServiceRole::Query,
    ServiceRole::Ingest,
    ServiceRole::Meta,
    ServiceRole::Janitor,
];

/// The roles of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    set: BTreeSet<ServiceRole>,
    /// The embedded default (`all`): one process, local settings allowed.
    single: bool,
}

/// What the checks need to know of the settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub master_key: bool,
    pub postgres_catalog: bool,
    pub object_storage: bool,
    pub meta_address: bool,
}

impl Roles {
    pub fn new(listed: &[ServiceRole]) -> Roles {
        let single = listed.is_empty() || listed.contains(&ServiceRole::All);
        let set = if single {
            EVERY.into_iter().collect()
        } else {
            listed.iter().copied().collect()
        };
        Roles { set, single }
    }

    pub fn has(&self, role: ServiceRole) -> bool {
        self.set.contains(&role)
    }

    /// The embedded default: every service in one process.
    pub fn single(&self) -> bool {
        self.single
    }

    /// `gateway,query`; `all` for the default.
    pub fn label(&self) -> String {
        if self.single {
            return "all".into();
        }
        self.member_roles()
    }

    /// The roles as a member record lists them (never `all`).
    pub fn member_roles(&self) -> String {
        self.set.iter().map(|r| r.name()).collect::<Vec<_>>().join(",")
    }

    /// Whether the process reads segments or writes them.
    pub fn uses_segments(&self) -> bool {
        [ServiceRole::Query, ServiceRole::Ingest, ServiceRole::Janitor]
            .iter()
            .any(|r| self.has(*r))
    }

    /// Refuses settings the roles cannot run with, naming what is missing.
    pub fn check(&self, settings: Settings) -> Result<(), String> {
        if self.single {
            return Ok(());
        }
        let label = self.label();
        let ingest_only = self.set.iter().all(|r| *r == ServiceRole::Ingest);
        if !ingest_only && !settings.master_key {
            return Err(format!(
                "--role {label} needs the cluster's master key in BZRK_MASTER_KEY (at least 32 \
                 characters); services authenticate each other with it and do not start without it \
                 (only ingest runs without it)"
            ));
        }
        if !settings.postgres_catalog {
            return Err(format!(
                "--role {label} runs as one member of a cluster, whose processes share one catalog: \
                 give --catalog postgres://… (a SQLite file cannot be shared by several nodes)"
            ));
        }
        if self.uses_segments() && !settings.object_storage {
            return Err(format!(
                "--role {label} runs as one member of a cluster, whose processes read and write the \
                 same segments: give --object-store s3://bucket/prefix (file:// storage is one \
                 machine's disk)"
            ));
        }
        if !self.has(ServiceRole::Meta) && !settings.meta_address {
            return Err(format!(
                "--role {label} finds the rest of the cluster through meta: give --meta http://host:9560"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ServiceRole::*;

    const COMPLETE: Settings = Settings {
        master_key: true,
        postgres_catalog: true,
        object_storage: true,
        meta_address: true,
    };

    #[test]
    fn all_is_every_role_in_one_process() {
        let roles = Roles::new(&[All]);
        assert!(roles.single() && EVERY.iter().all(|r| roles.has(*r)));
        assert_eq!(roles.label(), "all");
        assert_eq!(roles.member_roles(), "gateway,query,ingest,meta,janitor");
        assert_eq!(Roles::new(&[]), roles);
        // The embedded default needs none of the cluster's settings.
        let nothing = Settings {
            master_key: false,
            postgres_catalog: false,
            object_storage: false,
            meta_address: false,
        };
        assert_eq!(roles.check(nothing), Ok(()));
    }

    #[test]
    fn members_of_a_cluster_need_shared_settings() {
        let query = Roles::new(&[Query, Gateway, Query]);
        assert_eq!(query.label(), "gateway,query");
        assert!(!query.single());
        assert_eq!(query.check(COMPLETE), Ok(()));
        let missing = |settings: Settings, roles: &Roles| roles.check(settings).err().unwrap_or_default();
        assert!(
            missing(
                Settings {
                    master_key: false,
                    ..COMPLETE
                },
                &query
            )
            .contains("BZRK_MASTER_KEY")
        );
        assert!(
            missing(
                Settings {
                    postgres_catalog: false,
                    ..COMPLETE
                },
                &query
            )
            .contains("postgres://")
        );
        assert!(
            missing(
                Settings {
                    object_storage: false,
                    ..COMPLETE
                },
                &query
            )
            .contains("s3://")
        );
        assert!(
            missing(
                Settings {
                    meta_address: false,
                    ..COMPLETE
                },
                &query
            )
            .contains("--meta")
        );
        // Ingest alone runs without the master key; meta needs no --meta nor object storage.
        let ingest = Roles::new(&[Ingest]);
        assert_eq!(
            ingest.check(Settings {
                master_key: false,
                ..COMPLETE
            }),
            Ok(())
        );
        let meta = Roles::new(&[Meta]);
        assert_eq!(
            meta.check(Settings {
                meta_address: false,
                object_storage: false,
                ..COMPLETE
            }),
            Ok(())
        );
        assert!(
            missing(
                Settings {
                    master_key: false,
                    ..COMPLETE
                },
                &meta
            )
            .contains("BZRK_MASTER_KEY")
        );
        // A gateway reads no segments.
        assert_eq!(
            Roles::new(&[Gateway]).check(Settings {
                object_storage: false,
                ..COMPLETE
            }),
            Ok(())
        );
    }
}
