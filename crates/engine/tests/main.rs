//! Engine tests: rows written as real segments, queried through the KQL front end.

mod chunks;
mod damaged;
mod distributed;
mod events;
mod fixture;
mod golden;
mod kql_subset;
mod limits;
mod merge;
mod plugins;
mod shredded;
mod telemetry;
mod tokens;
mod warm;
