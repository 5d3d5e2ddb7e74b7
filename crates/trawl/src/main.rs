//! `trawl`: the one binary. `trawl serve` runs every service in one process on the embedded
//! default (segments on the local disk, catalog in SQLite); `trawl query` is the command-line
//! client.

mod bootstrap;
mod query;
mod serve;

use clap::{Parser, Subcommand};

/// mimalloc: the ingest path allocates and frees many small values per row; with it the server
/// spends less CPU in the allocator and returns freed memory instead of keeping per-thread arenas.
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
    Serve(serve::ServeArgs),
    /// Run a KQL query and print the result.
    Query(query::QueryArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Query(args) => query::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
