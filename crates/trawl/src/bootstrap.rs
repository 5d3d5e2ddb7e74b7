//! Day one of the embedded default: on first start, a master key, an admin token and an
//! ingest token are made and written to `<data-dir>/bootstrap.json` (mode 0600, keys
//! `master_key`, `admin_token`, `ingest_token`); later starts read it. Only the path is
//! printed, never the secrets.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::json;
use trawl_catalog::{Directory, Principal, PrincipalKind};
use trawl_common::role::Role;

/// File name under the data directory.
pub const FILE: &str = "bootstrap.json";
/// Name of the administrator service account made on first start.
pub const ADMIN: &str = "admin";

/// The secrets of `bootstrap.json`.
#[derive(Clone, serde::Deserialize, serde::Serialize)]
pub struct Bootstrap {
    /// Empty when the master key comes from the environment (a cluster's meta).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub master_key: String,
    pub admin_token: String,
    pub ingest_token: String,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bootstrap { .. }")
    }
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

/// Reads `bootstrap.json` of `data_dir`, if there is one.
pub fn read(data_dir: &Path) -> anyhow::Result<Option<Bootstrap>> {
    let path = path(data_dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is not a valid bootstrap file", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Reads the bootstrap file, or makes the day-one secrets and writes it (with a new master key
/// unless `master_key_given`: a cluster's key comes from `BZRK_MASTER_KEY` and is not written).
pub async fn ensure(
    data_dir: &Path,
    directory: &dyn Directory,
    master_key_given: bool,
) -> anyhow::Result<(Bootstrap, bool)> {
    if let Some(existing) = read(data_dir)? {
        return Ok((existing, false));
    }
    let now = trawl_common::time::now_nanos();
    let master: [u8; 32] = trawl_auth::random_bytes().context("no randomness for the master key")?;
    let admin = match directory.principal_by_name(ADMIN).await? {
        Some(admin) => admin,
        None => {
            let admin = Principal {
                id: uuid::Uuid::new_v4().to_string(),
                name: ADMIN.into(),
                kind: PrincipalKind::ServiceAccount,
                role: Role::Admin,
                password_hash: None,
                sso_subject: None,
                created_at: now,
            };
            directory.add_principal(&admin).await?;
            admin
        }
    };
    let admin_token = trawl_auth::issue_access_token(directory, &admin.id, None, now).await?;
    let (_, ingest_token) = trawl_auth::issue_ingest_token(
        directory,
        "default",
        trawl_common::DEFAULT_DATABASE,
        trawl_common::DEFAULT_TABLE,
        true,
        trawl_catalog::SignalTables::default(),
        now,
    )
    .await?;
    let bootstrap = Bootstrap {
        master_key: if master_key_given {
            String::new()
        } else {
            trawl_auth::token::hex_text(&master)
        },
        admin_token,
        ingest_token,
    };
    write(&path(data_dir), &bootstrap)?;
    Ok((bootstrap, true))
}

/// Writes the file readable by its owner only, created new (never over another).
fn write(path: &Path, bootstrap: &Bootstrap) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let text = serde_json::to_string_pretty(&json!(bootstrap))?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(())
}
