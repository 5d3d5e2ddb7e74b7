//! Trawl's benchmarks and deterministic data generator.
//!
//! - [`generator`]: seeded OTLP log and trace export requests (`trawl-gen` writes them out).
//! - `ingest-bench` (binary): OTLP/HTTP ingest throughput and peak RSS of `trawl serve`.
//! - `dynamic-encoding` (binary): bytes and query times of dynamic-column encodings.
//!
//! See `bench/README.md`.

pub mod generator;
pub mod prng;
pub mod proc;
