//! `trawl`: the one binary. `trawl serve` runs every service in one process on the embedded
//! default (segments on the local disk, catalog in SQLite); `trawl query` is the command-line
//! client.

mod admin;
mod bootstrap;
mod query;
mod serve;

use clap::{Parser, Subcommand};

/// jemalloc, with sampled heap profiles (`/debug/pprof/heap`); see `crates/heap` and
/// `docs/decisions/009-allocator.md`. The `mimalloc` feature builds with mimalloc instead
/// (no heap profiles), for comparing the two.
#[cfg(not(feature = "mimalloc"))]
#[global_allocator]
static ALLOCATOR: trawl_heap::Allocator = trawl_heap::Allocator;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "trawl", version, about = "Telemetry store: OTLP in, KQL out")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the service (ingest, query and operator ports) in one process.
    Serve(Box<serve::ServeArgs>),
    /// Run a KQL query and print the result.
    Query(query::QueryArgs),
    /// Databases: create, list, delete, restore.
    Database {
        #[command(subcommand)]
        command: admin::ObjectCommand,
        #[command(flatten)]
        connection: admin::Connection,
    },
    /// Tables: create (with a retention), list, delete, restore, change the retention.
    Table {
        #[command(subcommand)]
        command: admin::ObjectCommand,
        #[command(flatten)]
        connection: admin::Connection,
    },
    /// Views (named unions of tables): create, list, delete, restore.
    View {
        #[command(subcommand)]
        command: admin::ObjectCommand,
        #[command(flatten)]
        connection: admin::Connection,
    },
    /// Ingest tokens: create, list, revoke.
    Token {
        #[command(subcommand)]
        command: admin::TokenCommand,
        #[command(flatten)]
        connection: admin::Connection,
    },
    /// Service accounts: create, list, grant a role, make access tokens.
    ServiceAccount {
        #[command(subcommand)]
        command: admin::ServiceAccountCommand,
        #[command(flatten)]
        connection: admin::Connection,
    },
    /// Users who sign in with a password: create, set-password (password on standard input).
    User {
        #[command(subcommand)]
        command: admin::UserCommand,
        #[command(flatten)]
        connection: admin::Connection,
    },
    /// Show who the token belongs to.
    Whoami {
        #[command(flatten)]
        connection: admin::Connection,
    },
}

/// How long the process waits, after a clean stop, for runtime work that is still running.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Stack of each runtime thread (workers and blocking threads).
pub(crate) const RUNTIME_THREAD_STACK: usize = 16 << 20;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Queries are metered by the allocator's per-thread counters, and the heap watch reads
    // its live bytes (`trawl_common::memory`, decision 012).
    #[cfg(not(feature = "mimalloc"))]
    {
        trawl_common::memory::install_thread_counters(trawl_heap::thread_counters);
        trawl_common::memory::install_heap_reader(trawl_heap::allocated_bytes);
    }
    // Query plans are bounded in depth (see `trawl_planner::limits`), but running one polls
    // and evaluates recursively: 16 MiB stacks (reserved, touched only as used) leave room.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(RUNTIME_THREAD_STACK)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(*args).await,
            Command::Query(args) => query::run(args).await,
            Command::Database { command, connection } => admin::objects(connection, "database", command).await,
            Command::Table { command, connection } => admin::objects(connection, "table", command).await,
            Command::View { command, connection } => admin::objects(connection, "view", command).await,
            Command::Token { command, connection } => admin::token(connection, command).await,
            Command::ServiceAccount { command, connection } => admin::service_account(connection, command).await,
            Command::User { command, connection } => admin::user(connection, command).await,
            Command::Whoami { connection } => admin::whoami(connection).await,
        }
    });
    // Everything durable is flushed by now; work still running (a query's planning on a
    // blocking thread) is not waited for past this.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_text(&error));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each once: many errors (the object store's among them) repeat
/// their source's text in their own, so a cause already said is left out.
fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    /// An error that says its source's text and also returns it as its source.
    #[derive(Debug)]
    struct Wrapping(std::io::Error);

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "request failed: {}", self.0)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn each_cause_is_said_once() {
        let inner = std::io::Error::other("connection refused");
        let error = anyhow::Error::from(Wrapping(inner)).context("cannot reach the store");
        assert_eq!(
            error_text(&error),
            "cannot reach the store: request failed: connection refused"
        );
        let plain = anyhow::anyhow!("disk full").context("cannot write");
        assert_eq!(error_text(&plain), "cannot write: disk full");
    }
}
