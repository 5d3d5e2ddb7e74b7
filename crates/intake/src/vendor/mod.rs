//! The vendor-compatible intake (what the Datadog Agent sends; the SPEC's `vx` is the
//! vendor's `dd`, and both spellings are accepted). So far: logs (`/api/v2/logs`). The
//! mapping and the choices the SPEC left open are in `README.md` beside this file.

pub mod logs;
