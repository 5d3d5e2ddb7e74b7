//! The vendor-compatible intake (what the Datadog Agent sends; the SPEC's `vx` is the
//! vendor's `dd`, and both spellings are accepted): logs (`/api/v2/logs`), metric series v2
//! and v3, distribution sketches and APM traces. The mapping tables and the choices the SPEC
//! left open are in `README.md` beside this file.

pub mod logs;
pub mod metrics;
pub mod series_v3;
pub mod sketch;
pub mod traces;
