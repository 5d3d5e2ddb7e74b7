//! `GET /debug/pprof/profile?seconds=N` on the operator port: a CPU profile of the whole
//! process over N seconds (default 30, at most 300), sampled 99 times a second, in the
//! gzip-compressed protobuf format `go tool pprof`, `pprof -http` and profile viewers read —
//! what operators of Go services already know:
//!
//! ```sh
//! go tool pprof -http :8080 http://127.0.0.1:9511/debug/pprof/profile?seconds=30
//! ```
//!
//! One profile is taken at a time; a second request meanwhile gets 409. Sampling uses a
//! timer signal and unwinds the stacks of every thread; stacks are symbolized when the
//! profile is built.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prost::Message;
use serde::Deserialize;
use trawl_proto::pprof as pb;

/// Samples per second: not a divisor of common timer periods, so samples do not line up with
/// periodic work.
const FREQUENCY: i32 = 99;
const DEFAULT_SECONDS: u64 = 30;
const MAX_SECONDS: u64 = 300;

#[derive(Debug, Deserialize)]
pub struct ProfileParams {
    seconds: Option<String>,
}

/// The handler.
pub async fn profile(Query(params): Query<ProfileParams>) -> Response {
    let seconds = match params.seconds.as_deref().map(str::parse::<u64>) {
        None => DEFAULT_SECONDS,
        Some(Ok(seconds)) if (1..=MAX_SECONDS).contains(&seconds) => seconds,
        Some(_) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("seconds must be a whole number from 1 to {MAX_SECONDS}\n"),
            )
                .into_response();
        }
    };
    let taken = tokio::task::spawn_blocking(move || take(Duration::from_secs(seconds))).await;
    match taken {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"profile.pb.gz\""),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(ProfileError::Busy)) => (
            StatusCode::CONFLICT,
            "a profile is being taken already; try again when it is done\n",
        )
            .into_response(),
        Ok(Err(ProfileError::Failed(reason))) => {
            tracing::error!(%reason, "cannot take a CPU profile");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot take a CPU profile: {reason}\n"),
            )
                .into_response()
        }
        Err(error) => {
            tracing::error!(%error, "the profiler stopped unexpectedly");
            (StatusCode::INTERNAL_SERVER_ERROR, "the profiler stopped unexpectedly\n").into_response()
        }
    }
}

enum ProfileError {
    Busy,
    Failed(String),
}

/// Samples for `duration` and returns the gzip-compressed profile.
fn take(duration: Duration) -> Result<Vec<u8>, ProfileError> {
    static RUNNING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let Ok(_only) = RUNNING.try_lock() else {
        return Err(ProfileError::Busy);
    };
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
        .map_err(|e| ProfileError::Failed(e.to_string()))?;
    std::thread::sleep(duration);
    let report = guard
        .report()
        .build()
        .map_err(|e| ProfileError::Failed(e.to_string()))?;
    drop(guard);
    let profile = encode(&report);
    // The symbolization cache (the binary's parsed debug information) is released, as for
    // heap profiles.
    backtrace::clear_symbol_cache();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&profile.encode_to_vec())
        .and_then(|()| gzip.finish())
        .map_err(|e| ProfileError::Failed(e.to_string()))
}

/// Strings of a profile, each stored once (index 0 is "").
pub(crate) struct Strings {
    pub(crate) table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    pub(crate) fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }

    pub(crate) fn of(&mut self, text: &str) -> i64 {
        if let Some(&index) = self.index.get(text) {
            return index;
        }
        let index = self.table.len() as i64;
        self.table.push(text.to_string());
        self.index.insert(text.to_string(), index);
        index
    }
}

/// A frame of the sampling machinery rather than of the sampled code.
fn is_profiler_frame(symbol: &pprof::Symbol) -> bool {
    let name = symbol.name();
    name.starts_with("backtrace::")
        || name.starts_with("pprof::")
        || name.starts_with("<pprof::")
        || name.contains("perf_signal_handler")
        || name == "trace"
        || name.starts_with("__restore_rt")
}

/// The report as a pprof `Profile`: one location per distinct frame (its inlined functions as
/// lines), samples with their count and CPU time, and the thread as a label.
fn encode(report: &pprof::Report) -> pb::Profile {
    let mut strings = Strings::new();
    let mut functions: HashMap<(String, String), u64> = HashMap::new();
    let mut function_list: Vec<pb::Function> = Vec::new();
    let mut locations: HashMap<Vec<(u64, i64)>, u64> = HashMap::new();
    let mut location_list: Vec<pb::Location> = Vec::new();
    let period = 1_000_000_000 / i64::from(report.timing.frequency.max(1));
    let mut samples = Vec::with_capacity(report.data.len());
    let thread_key = strings.of("thread");
    for (frames, count) in &report.data {
        let mut location_ids = Vec::with_capacity(frames.frames.len());
        // The stack starts inside the profiler's own signal handler: leave those frames out.
        let profiled = frames
            .frames
            .iter()
            .skip_while(|frame| frame.iter().any(is_profiler_frame));
        for frame in profiled {
            let lines: Vec<(u64, i64)> = frame
                .iter()
                .map(|symbol| {
                    let name = symbol.name();
                    let file = symbol.filename().into_owned();
                    let key = (name, file);
                    let id = match functions.get(&key) {
                        Some(&id) => id,
                        None => {
                            let id = function_list.len() as u64 + 1;
                            function_list.push(pb::Function {
                                id,
                                name: strings.of(&key.0),
                                system_name: strings.of(&symbol.sys_name()),
                                filename: strings.of(&key.1),
                                start_line: 0,
                            });
                            functions.insert(key, id);
                            id
                        }
                    };
                    (id, i64::from(symbol.lineno()))
                })
                .collect();
            let id = match locations.get(&lines) {
                Some(&id) => id,
                None => {
                    let id = location_list.len() as u64 + 1;
                    location_list.push(pb::Location {
                        id,
                        mapping_id: 0,
                        address: 0,
                        line: lines
                            .iter()
                            .map(|&(function_id, line)| pb::Line {
                                function_id,
                                line,
                                column: 0,
                            })
                            .collect(),
                        is_folded: false,
                    });
                    locations.insert(lines, id);
                    id
                }
            };
            location_ids.push(id);
        }
        let count = *count as i64;
        samples.push(pb::Sample {
            location_id: location_ids,
            value: vec![count, count.saturating_mul(period)],
            label: vec![pb::Label {
                key: thread_key,
                str: strings.of(&frames.thread_name),
                num: 0,
                num_unit: 0,
            }],
        });
    }
    let sample_type = vec![
        pb::ValueType {
            r#type: strings.of("samples"),
            unit: strings.of("count"),
        },
        pb::ValueType {
            r#type: strings.of("cpu"),
            unit: strings.of("nanoseconds"),
        },
    ];
    let period_type = Some(pb::ValueType {
        r#type: strings.of("cpu"),
        unit: strings.of("nanoseconds"),
    });
    // An index into the string table: the name of the sample type viewers show first.
    let default_sample_type = strings.of("cpu");
    let time_nanos = report
        .timing
        .start_time
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    pb::Profile {
        sample_type,
        sample: samples,
        mapping: Vec::new(),
        location: location_list,
        function: function_list,
        string_table: strings.table,
        drop_frames: 0,
        keep_frames: 0,
        time_nanos,
        duration_nanos: i64::try_from(report.timing.duration.as_nanos()).unwrap_or(i64::MAX),
        period_type,
        period,
        comment: Vec::new(),
        default_sample_type,
    }
}
