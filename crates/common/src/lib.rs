//! Shared vocabulary of every Trawl crate: the user-facing error codes and their HTTP / gRPC
//! mapping ([`ErrorCode`]), KQL column types ([`KqlType`]), the neutral telemetry row model that
//! protocol mappings produce and the write path turns into Arrow ([`Row`], [`Value`]), and time
//! units ([`time`]).
//!
//! This crate does no I/O and knows nothing of DataFusion, storage or the network; of Arrow it
//! knows only the array builders protocol mappings write rows into ([`columns`]).

pub mod adx;
pub mod columns;
pub mod error;
pub mod memory;
pub mod faults;
pub mod metrics;
pub mod role;
pub mod row;
pub mod shred;
pub mod signal;
pub mod threads;
pub mod time;
pub mod types;
pub mod window;

pub use error::{ErrorCode, TrawlError};
pub use row::{Row, Value};
pub use signal::Signal;
pub use types::KqlType;

/// Name of the database every signal lands in unless a token routes it elsewhere.
pub const DEFAULT_DATABASE: &str = "default";
/// Name of the table every signal lands in unless a token routes it elsewhere.
pub const DEFAULT_TABLE: &str = "default";
/// The time column of every table.
pub const TIME_COLUMN: &str = "timestamp";
/// The ingest-time column of every table.
pub const INGEST_TIME_COLUMN: &str = "ingest_time";
