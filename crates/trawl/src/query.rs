//! `trawl query 'KQL'`.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use trawl_client::{ClientError, QueryClient, render_aligned, render_csv};

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The KQL query.
    pub query: String,
    /// Gateway URL.
    #[arg(long, env = "TRAWL_URL", default_value = "http://127.0.0.1:9500")]
    pub url: String,
    /// Start of the time range: ISO 8601 or relative (`1h`, `30m`).
    #[arg(long, alias = "from")]
    pub since: Option<String>,
    /// End of the time range.
    #[arg(long, alias = "to")]
    pub until: Option<String>,
    /// Time zone of naive datetimes in --since/--until (IANA name).
    #[arg(long)]
    pub timezone: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Bearer token (a user's or service account's). Default: the admin token of
    /// `<data-dir>/bootstrap.json` when the gateway is on this machine.
    #[arg(long, env = "TRAWL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Data directory of a local server, whose bootstrap file holds the admin token.
    #[arg(long, env = "TRAWL_DATA_DIR", default_value = "./trawl-data")]
    pub data_dir: std::path::PathBuf,
}

/// The token to send: `token` (`--token`/`TRAWL_TOKEN`), else the bootstrap admin token of
/// `data_dir` when `url` is on this machine.
pub fn local_token(url: &str, token: Option<&str>, data_dir: &std::path::Path) -> anyhow::Result<Option<String>> {
    if let Some(token) = token {
        return Ok(Some(token.to_string()));
    }
    let local = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|prefix| url.starts_with(prefix));
    if !local {
        return Ok(None);
    }
    Ok(crate::bootstrap::read(data_dir)?.map(|b| b.admin_token))
}

pub async fn run(args: QueryArgs) -> anyhow::Result<ExitCode> {
    let token = local_token(&args.url, args.token.as_deref(), &args.data_dir)?;
    let client = QueryClient::new(&args.url).with_token(token);
    let response = match client
        .query(
            &args.query,
            args.since.as_deref(),
            args.until.as_deref(),
            args.timezone.as_deref(),
        )
        .await
    {
        Ok(response) => response,
        Err(ClientError::Problem {
            code,
            message,
            location,
            ..
        }) => {
            eprintln!("{code}: {message}");
            if let Some(location) = location {
                let line = location["start_line"].as_u64().unwrap_or(0);
                let column = location["start_column"].as_u64().unwrap_or(0);
                eprintln!("  at line {line}, column {column}");
            }
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "tables": response.tables.iter().map(|t| serde_json::json!({
                    "name": t.name,
                    "columns": t.columns.iter().map(|c| serde_json::json!({"name": c.column_name, "type": c.column_type})).collect::<Vec<_>>(),
                    "rows": t.rows,
                })).collect::<Vec<_>>()
            }))?
        ),
        Format::Table | Format::Csv => {
            for table in &response.tables {
                if table.name == "@Warnings" {
                    for row in &table.rows {
                        eprintln!("warning: {}", row.first().and_then(|m| m.as_str()).unwrap_or_default());
                    }
                    continue;
                }
                let text = match args.format {
                    Format::Csv => render_csv(table),
                    _ => render_aligned(table),
                };
                print!("{text}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
