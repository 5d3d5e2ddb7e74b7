//! `trawl database|table|view|token|service-account|user|whoami`: the meta service through
//! the gateway, with a bearer token (`--token`, `TRAWL_TOKEN`, or the local bootstrap admin
//! token).

use std::io::Read;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use trawl_proto::meta as pb;
use trawl_proto::meta::meta_service_client::MetaServiceClient;

/// Where the gateway is and who we are.
#[derive(Debug, Args)]
pub struct Connection {
    /// Gateway URL.
    #[arg(long, global = true, env = "TRAWL_URL", default_value = "http://127.0.0.1:9500")]
    pub url: String,
    /// Bearer token. Default: the admin token of `<data-dir>/bootstrap.json` when the
    /// gateway is on this machine.
    #[arg(long, global = true, env = "TRAWL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Data directory of a local server.
    #[arg(long, global = true, env = "TRAWL_DATA_DIR", default_value = "./trawl-data")]
    pub data_dir: std::path::PathBuf,
}

/// What `trawl database|table|view` does.
#[derive(Debug, Subcommand)]
pub enum ObjectCommand {
    /// Create it.
    Create {
        name: String,
        /// Tables and views: their database.
        #[arg(long, default_value = "default")]
        database: String,
        /// Tables: drop rows older than this (`30d`, `12h`, or seconds).
        #[arg(long)]
        retention: Option<String>,
        /// Views: the tables they unite (comma-separated).
        #[arg(long, value_delimiter = ',')]
        tables: Vec<String>,
    },
    /// List them (`--all`: deleted ones still in their restore window too).
    List {
        #[arg(long, default_value = "default")]
        database: String,
        #[arg(long)]
        all: bool,
    },
    /// Delete it (a tombstone: restore brings it back within the restore window).
    Delete {
        name: String,
        #[arg(long, default_value = "default")]
        database: String,
        /// Delete its live children too (a database's tables and views, a table's views).
        #[arg(long)]
        cascade: bool,
    },
    /// Bring a deleted one back.
    Restore {
        name: String,
        #[arg(long, default_value = "default")]
        database: String,
    },
    /// Tables: change the retention (`none` keeps everything).
    Retention {
        name: String,
        retention: String,
        #[arg(long, default_value = "default")]
        database: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make an ingest token (printed once) routed to a database and table.
    Create {
        #[arg(long, default_value = "ingest")]
        name: String,
        #[arg(long, default_value = "default")]
        database: String,
        #[arg(long, default_value = "default")]
        table: String,
        /// Let records choose their table with the resource attribute `trawl.table`.
        #[arg(long)]
        allow_table_override: bool,
        /// Vendor intake: the table for logs (default: --table).
        #[arg(long)]
        logs_table: Option<String>,
        /// Vendor intake: the table for metric series and sketches (default: --table).
        #[arg(long)]
        metrics_table: Option<String>,
        /// Vendor intake: the table for spans (default: --table).
        #[arg(long)]
        traces_table: Option<String>,
    },
    /// List ingest tokens (never their secrets).
    List,
    /// Revoke an ingest token by id.
    Revoke { id: String },
    /// Lift a revocation (within the restore window).
    Restore { id: String },
}

#[derive(Debug, Subcommand)]
pub enum ServiceAccountCommand {
    /// Make a service account.
    Create {
        name: String,
        /// admin, maintainer or observer.
        #[arg(long, default_value = "observer")]
        role: String,
    },
    /// List users and service accounts.
    List,
    /// Give an account a role.
    Grant { name: String, role: String },
    /// Access tokens of an account.
    #[command(subcommand)]
    Token(AccessTokenCommand),
}

#[derive(Debug, Subcommand)]
pub enum AccessTokenCommand {
    /// Make an access token (printed once).
    Create {
        name: String,
        /// Lifetime, such as `30d`, `12h`, `90m` or seconds; none: never expires.
        #[arg(long)]
        expires_in: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Make a user who signs in with a password (read from standard input), or with `--sso`
    /// through the identity provider.
    Create {
        name: String,
        #[arg(long, default_value = "observer")]
        role: String,
        /// The user signs in through SSO (no password is read).
        #[arg(long)]
        sso: bool,
    },
    /// Set a user's password (read from standard input).
    SetPassword { name: String },
    /// Make a password user sign in through SSO: the password goes, sessions and role stay.
    SwitchToSso { name: String },
}

/// Seconds of a lifetime such as `30d`, `12h`, `90m`, `45s` or `3600`.
pub fn parse_lifetime(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&text[..i], c),
        _ => (text, 's'),
    };
    let value: u64 = digits.parse().ok()?;
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    value.checked_mul(scale).filter(|s| *s > 0)
}

struct Meta {
    client: MetaServiceClient<Channel>,
    authorization: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Meta {
    async fn connect(connection: &Connection) -> anyhow::Result<Meta> {
        let token = crate::query::local_token(&connection.url, connection.token.as_deref(), &connection.data_dir)?;
        let authorization = match token {
            Some(token) => Some(format!("Bearer {token}").parse()?),
            None => None,
        };
        let client = MetaServiceClient::connect(connection.url.clone())
            .await
            .map_err(|e| anyhow::anyhow!("cannot reach the gateway at {}: {e}", connection.url))?;
        Ok(Meta { client, authorization })
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(value) = &self.authorization {
            request.metadata_mut().insert("authorization", value.clone());
        }
        request
    }
}

fn read_password() -> anyhow::Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    Ok(text.trim_end_matches(['\n', '\r']).to_string())
}

fn print_rows(headers: &[&str], rows: Vec<Vec<String>>) {
    let table = trawl_client::Table {
        name: String::new(),
        columns: headers
            .iter()
            .map(|h| trawl_client::Column {
                column_name: h.to_string(),
                column_type: "string".into(),
            })
            .collect(),
        rows: rows
            .into_iter()
            .map(|row| row.into_iter().map(serde_json::Value::String).collect())
            .collect(),
    };
    print!("{}", trawl_client::render_aligned(&table));
}

fn time_text(nanos: i64) -> String {
    if nanos == 0 {
        return String::new();
    }
    trawl_common::time::format_datetime(nanos)
}

/// Runs a meta command; a refused call prints its code and message and exits with 2.
async fn run_with(
    connection: &Connection,
    work: impl AsyncFnOnce(&mut Meta) -> Result<(), tonic::Status>,
) -> anyhow::Result<ExitCode> {
    let mut meta = Meta::connect(connection).await?;
    match work(&mut meta).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(status) => {
            eprintln!("{:?}: {}", status.code(), status.message());
            Ok(ExitCode::from(2))
        }
    }
}

fn lifetime_argument(text: &str, what: &str) -> Result<u64, tonic::Status> {
    if text == "none" {
        return Ok(0);
    }
    parse_lifetime(text).ok_or_else(|| {
        tonic::Status::invalid_argument(format!("{what} '{text}' is not a duration such as 30d, 12h or 90m"))
    })
}

/// `trawl database|table|view ...`.
pub async fn objects(connection: Connection, kind: &str, command: ObjectCommand) -> anyhow::Result<ExitCode> {
    let kind = kind.to_string();
    run_with(&connection, async |meta| {
        match command {
            ObjectCommand::Create {
                name,
                database,
                retention,
                tables,
            } => {
                if kind != "table" && retention.is_some() {
                    return Err(tonic::Status::invalid_argument("--retention is for tables"));
                }
                if kind != "view" && !tables.is_empty() {
                    return Err(tonic::Status::invalid_argument("--tables is for views"));
                }
                let retention_seconds = match retention.as_deref() {
                    Some(text) => lifetime_argument(text, "--retention")?,
                    None => 0,
                };
                let request = pb::ObjectRequest {
                    kind: kind.clone(),
                    database: if kind == "database" { name.clone() } else { database },
                    name: if kind == "database" { String::new() } else { name },
                    retention_seconds,
                    members: tables,
                };
                let made = match kind.as_str() {
                    "database" => meta.client.create_database(meta.request(request)).await?,
                    "table" => meta.client.create_table(meta.request(request)).await?,
                    _ => meta.client.create_view(meta.request(request)).await?,
                }
                .into_inner();
                print_objects(vec![made]);
            }
            ObjectCommand::List { database, all } => {
                let request = meta.request(pb::ListObjectsRequest {
                    kind: kind.clone(),
                    database,
                    include_deleted: all,
                });
                let objects = meta.client.list_objects(request).await?.into_inner().objects;
                print_objects(objects);
            }
            ObjectCommand::Delete {
                name,
                database,
                cascade,
            } => {
                let request = pb::DeleteObjectRequest {
                    kind: kind.clone(),
                    database,
                    name: name.clone(),
                    cascade,
                };
                meta.client.delete_object(meta.request(request)).await?;
                eprintln!("deleted {kind} {name} (restore it with `trawl {kind} restore {name}`)");
            }
            ObjectCommand::Restore { name, database } => {
                let request = pb::ObjectRequest {
                    kind: kind.clone(),
                    database,
                    name: name.clone(),
                    ..Default::default()
                };
                meta.client.restore_object(meta.request(request)).await?;
                eprintln!("restored {kind} {name}");
            }
            ObjectCommand::Retention {
                name,
                retention,
                database,
            } => {
                if kind != "table" {
                    return Err(tonic::Status::invalid_argument("retention is set on tables"));
                }
                let request = pb::ObjectRequest {
                    kind: kind.clone(),
                    database,
                    name,
                    retention_seconds: lifetime_argument(&retention, "the retention")?,
                    members: Vec::new(),
                };
                let changed = meta.client.set_retention(meta.request(request)).await?.into_inner();
                print_objects(vec![changed]);
            }
        }
        Ok(())
    })
    .await
}

fn print_objects(objects: Vec<pb::CatalogObject>) {
    let rows = objects
        .into_iter()
        .map(|o| {
            let retention = match o.retention_seconds {
                0 => String::new(),
                s if s % 86_400 == 0 => format!("{}d", s / 86_400),
                s if s % 3_600 == 0 => format!("{}h", s / 3_600),
                s => format!("{s}s"),
            };
            vec![
                o.kind,
                o.database,
                o.name,
                retention,
                o.members.join(","),
                time_text(o.created_at),
                time_text(o.deleted_at),
            ]
        })
        .collect();
    print_rows(
        &["kind", "database", "name", "retention", "tables", "created", "deleted"],
        rows,
    );
}

pub async fn token(connection: Connection, command: TokenCommand) -> anyhow::Result<ExitCode> {
    run_with(&connection, async |meta| {
        match command {
            TokenCommand::Create {
                name,
                database,
                table,
                allow_table_override,
                logs_table,
                metrics_table,
                traces_table,
            } => {
                let request = meta.request(pb::CreateIngestTokenRequest {
                    name,
                    database,
                    table,
                    allow_table_override,
                    logs_table: logs_table.unwrap_or_default(),
                    metrics_table: metrics_table.unwrap_or_default(),
                    traces_table: traces_table.unwrap_or_default(),
                });
                let created = meta.client.create_ingest_token(request).await?.into_inner();
                eprintln!("ingest token {} (shown once; keep it secret):", created.id);
                println!("{}", created.token);
            }
            TokenCommand::List => {
                let request = meta.request(pb::ListIngestTokensRequest {});
                let tokens = meta.client.list_ingest_tokens(request).await?.into_inner().tokens;
                let rows = tokens
                    .into_iter()
                    .map(|t| {
                        let signals: Vec<String> = [
                            ("logs", &t.logs_table),
                            ("metrics", &t.metrics_table),
                            ("traces", &t.traces_table),
                        ]
                        .into_iter()
                        .filter(|(_, table)| !table.is_empty())
                        .map(|(signal, table)| format!("{signal}={table}"))
                        .collect();
                        vec![
                            t.id,
                            t.name,
                            t.database,
                            t.table,
                            if signals.is_empty() {
                                "-".to_owned()
                            } else {
                                signals.join(",")
                            },
                            t.allow_table_override.to_string(),
                            time_text(t.created_at),
                            time_text(t.revoked_at),
                        ]
                    })
                    .collect();
                print_rows(
                    &[
                        "id",
                        "name",
                        "database",
                        "table",
                        "signal_tables",
                        "table_override",
                        "created",
                        "revoked",
                    ],
                    rows,
                );
            }
            TokenCommand::Revoke { id } => {
                meta.client
                    .revoke_ingest_token(meta.request(pb::RevokeIngestTokenRequest { id: id.clone() }))
                    .await?;
                eprintln!("revoked ingest token {id} (undo with `trawl token restore {id}`)");
            }
            TokenCommand::Restore { id } => {
                meta.client
                    .restore_ingest_token(meta.request(pb::RevokeIngestTokenRequest { id: id.clone() }))
                    .await?;
                eprintln!("restored ingest token {id}");
            }
        }
        Ok(())
    })
    .await
}

pub async fn service_account(connection: Connection, command: ServiceAccountCommand) -> anyhow::Result<ExitCode> {
    run_with(&connection, async |meta| {
        match command {
            ServiceAccountCommand::Create { name, role } => {
                let request = meta.request(pb::CreatePrincipalRequest {
                    name,
                    role,
                    password: String::new(),
                    sso: false,
                });
                let made = meta.client.create_service_account(request).await?.into_inner();
                println!("{} {} {}", made.name, made.kind, made.role);
            }
            ServiceAccountCommand::List => list_principals(meta).await?,
            ServiceAccountCommand::Grant { name, role } => {
                let changed = meta
                    .client
                    .grant_role(meta.request(pb::GrantRoleRequest { name, role }))
                    .await?
                    .into_inner();
                println!("{} {} {}", changed.name, changed.kind, changed.role);
            }
            ServiceAccountCommand::Token(AccessTokenCommand::Create { name, expires_in }) => {
                let expires_in_seconds = match expires_in.as_deref() {
                    None => 0,
                    Some(text) => parse_lifetime(text).ok_or_else(|| {
                        tonic::Status::invalid_argument(format!(
                            "--expires-in '{text}' is not a lifetime such as 30d, 12h or 90m"
                        ))
                    })?,
                };
                let request = meta.request(pb::CreateAccessTokenRequest {
                    name,
                    expires_in_seconds,
                });
                let created = meta.client.create_access_token(request).await?.into_inner();
                let until = if created.expires_at == 0 {
                    "never expires".to_string()
                } else {
                    format!("expires {}", time_text(created.expires_at))
                };
                eprintln!("access token {} ({until}; shown once; keep it secret):", created.id);
                println!("{}", created.token);
            }
        }
        Ok(())
    })
    .await
}

async fn list_principals(meta: &mut Meta) -> Result<(), tonic::Status> {
    let request = meta.request(pb::ListPrincipalsRequest {});
    let principals = meta.client.list_principals(request).await?.into_inner().principals;
    let rows = principals
        .into_iter()
        .map(|p| vec![p.name, p.kind, p.role, p.sign_in, time_text(p.created_at)])
        .collect();
    print_rows(&["name", "kind", "role", "sign_in", "created"], rows);
    Ok(())
}

pub async fn user(connection: Connection, command: UserCommand) -> anyhow::Result<ExitCode> {
    let needs_password = matches!(
        command,
        UserCommand::Create { sso: false, .. } | UserCommand::SetPassword { .. }
    );
    let password = if needs_password {
        read_password()?
    } else {
        String::new()
    };
    run_with(&connection, async |meta| {
        match command {
            UserCommand::Create { name, role, sso } => {
                let request = meta.request(pb::CreatePrincipalRequest {
                    name,
                    role,
                    password,
                    sso,
                });
                let made = meta.client.create_user(request).await?.into_inner();
                println!("{} {} {} {}", made.name, made.kind, made.role, made.sign_in);
            }
            UserCommand::SwitchToSso { name } => {
                let changed = meta
                    .client
                    .switch_to_sso(meta.request(pb::SwitchToSsoRequest { name }))
                    .await?
                    .into_inner();
                println!("{} {} {} {}", changed.name, changed.kind, changed.role, changed.sign_in);
            }
            UserCommand::SetPassword { name } => {
                meta.client
                    .set_password(meta.request(pb::SetPasswordRequest { name, password }))
                    .await?;
                eprintln!("password set");
            }
        }
        Ok(())
    })
    .await
}

pub async fn whoami(connection: Connection) -> anyhow::Result<ExitCode> {
    run_with(&connection, async |meta| {
        let me = meta.client.who_am_i(meta.request(pb::Empty {})).await?.into_inner();
        println!("{} {} {}", me.name, me.kind, me.role);
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes() {
        assert_eq!(parse_lifetime("30d"), Some(30 * 86_400));
        assert_eq!(parse_lifetime("12h"), Some(43_200));
        assert_eq!(parse_lifetime("90m"), Some(5_400));
        assert_eq!(parse_lifetime("45s"), Some(45));
        assert_eq!(parse_lifetime("3600"), Some(3_600));
        assert_eq!(parse_lifetime("0"), None);
        assert_eq!(parse_lifetime("1y"), None);
        assert_eq!(parse_lifetime("h"), None);
    }
}
