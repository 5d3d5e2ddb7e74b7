//! `GET /debug/pprof/heap` on the operator port: the live heap, from jemalloc's sampled
//! allocations (`trawl_heap`), in the pprof format Go's `/debug/pprof/heap` has — sample
//! types `inuse_objects` and `inuse_space`, each value an estimate of all live allocations
//! made at that stack:
//!
//! ```sh
//! go tool pprof -http :8080 http://127.0.0.1:9511/debug/pprof/heap
//! ```
//!
//! Addresses are symbolized in the process (with their inlined functions), so the profile
//! needs no binary beside it.

use std::collections::HashMap;
use std::io::Write;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prost::Message;
use trawl_heap::{HeapError, HeapProfile};
use trawl_proto::pprof as pb;

use crate::pprof::Strings;

/// The handler.
pub async fn heap() -> Response {
    match tokio::task::spawn_blocking(take).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"heap.pb.gz\""),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(HeapError::Disabled)) => (
            StatusCode::NOT_IMPLEMENTED,
            "heap profiles are off: this binary's allocator keeps none (built with the mimalloc feature, \
             or started with MALLOC_CONF=prof:false)\n",
        )
            .into_response(),
        Ok(Err(error)) => {
            tracing::error!(%error, "cannot take a heap profile");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot take a heap profile: {error}\n"),
            )
                .into_response()
        }
        Err(error) => {
            tracing::error!(%error, "the heap profiler stopped unexpectedly");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the heap profiler stopped unexpectedly\n",
            )
                .into_response()
        }
    }
}

fn take() -> Result<Vec<u8>, HeapError> {
    let profile = trawl_heap::take()?;
    let encoded = encode(&profile, &mut resolve).encode_to_vec();
    // Symbolizing parses the binary's debug information, and the parse is cached: hundreds
    // of MiB held for good after the first profile unless released.
    backtrace::clear_symbol_cache();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&encoded)?;
    Ok(gzip.finish()?)
}

/// One function of a frame: name, file, line.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    name: String,
    file: String,
    line: i64,
}

/// The functions at `address` (a return address), innermost inlined one first.
fn resolve(address: u64) -> Vec<Frame> {
    let mut frames = Vec::new();
    // The call instruction is just before the return address.
    let call = address.saturating_sub(1) as usize as *mut std::ffi::c_void;
    backtrace::resolve(call, |symbol| {
        frames.push(Frame {
            name: symbol.name().map(|n| format!("{n:#}")).unwrap_or_default(),
            file: symbol.filename().map(|f| f.display().to_string()).unwrap_or_default(),
            line: symbol.lineno().map_or(0, i64::from),
        });
    });
    if frames.is_empty() {
        frames.push(Frame {
            name: format!("{address:#x}"),
            file: String::new(),
            line: 0,
        });
    }
    frames
}

/// A frame of the allocator or of jemalloc's sampling, not of the allocating code: by name,
/// or by source file for jemalloc's internal functions and for the standard library's
/// allocation layer (inlined frames are named without their path, `with_capacity_in`).
fn is_allocator_frame(frame: &Frame) -> bool {
    const PREFIXES: &[&str] = &[
        "je_",
        "_rjem_",
        "prof_",
        "imalloc",
        "ialloc",
        "irealloc",
        "irallocx",
        "do_rallocx",
        "malloc",
        "calloc",
        "realloc",
        "posix_memalign",
        "aligned_alloc",
        "__rust_",
        "__rustc::",
        "__rdl_",
        "tikv_jemallocator::",
        "<tikv_jemallocator::",
        "trawl_heap::",
        "<trawl_heap::",
        "alloc::alloc::",
        "alloc::raw_vec::",
        "<alloc::raw_vec::",
    ];
    const FILES: &[&str] = &[
        "/tikv-jemalloc-sys-",
        "/tikv-jemallocator-",
        "library/alloc/src/alloc.rs",
        "library/alloc/src/raw_vec/",
    ];
    frame.name.is_empty()
        || PREFIXES.iter().any(|prefix| frame.name.starts_with(prefix))
        || FILES.iter().any(|file| frame.file.contains(file))
}

/// The profile in pprof's message: one location per address (its inlined functions as
/// lines), the allocator's own frames left off the top of each stack.
fn encode(profile: &HeapProfile, resolve: &mut dyn FnMut(u64) -> Vec<Frame>) -> pb::Profile {
    let mut strings = Strings::new();
    let mut functions: HashMap<(String, String), u64> = HashMap::new();
    let mut function_list: Vec<pb::Function> = Vec::new();
    let mut locations: HashMap<u64, (u64, bool)> = HashMap::new();
    let mut location_list: Vec<pb::Location> = Vec::new();
    let mut samples = Vec::with_capacity(profile.samples.len());
    for sample in &profile.samples {
        let mut location_ids = Vec::with_capacity(sample.addresses.len());
        for &address in &sample.addresses {
            let (id, allocator) = match locations.get(&address) {
                Some(&known) => known,
                None => {
                    let frames = resolve(address);
                    let allocator = !frames.is_empty() && frames.iter().all(is_allocator_frame);
                    let lines = frames
                        .iter()
                        .map(|frame| {
                            let key = (frame.name.clone(), frame.file.clone());
                            let function_id = *functions.entry(key).or_insert_with(|| {
                                let id = function_list.len() as u64 + 1;
                                function_list.push(pb::Function {
                                    id,
                                    name: strings.of(&frame.name),
                                    system_name: strings.of(&frame.name),
                                    filename: strings.of(&frame.file),
                                    start_line: 0,
                                });
                                id
                            });
                            pb::Line {
                                function_id,
                                line: frame.line,
                                column: 0,
                            }
                        })
                        .collect();
                    let id = location_list.len() as u64 + 1;
                    location_list.push(pb::Location {
                        id,
                        mapping_id: 0,
                        address,
                        line: lines,
                        is_folded: false,
                    });
                    locations.insert(address, (id, allocator));
                    (id, allocator)
                }
            };
            // Allocator frames are left off the top of the stack only.
            if location_ids.is_empty() && allocator {
                continue;
            }
            location_ids.push(id);
        }
        samples.push(pb::Sample {
            location_id: location_ids,
            value: vec![sample.objects.round() as i64, sample.bytes.round() as i64],
            label: Vec::new(),
        });
    }
    let sample_type = vec![
        pb::ValueType {
            r#type: strings.of("inuse_objects"),
            unit: strings.of("count"),
        },
        pb::ValueType {
            r#type: strings.of("inuse_space"),
            unit: strings.of("bytes"),
        },
    ];
    let period_type = Some(pb::ValueType {
        r#type: strings.of("space"),
        unit: strings.of("bytes"),
    });
    let default_sample_type = strings.of("inuse_space");
    let time_nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
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
        duration_nanos: 0,
        period_type,
        period: i64::try_from(profile.sample_period).unwrap_or(i64::MAX),
        comment: Vec::new(),
        default_sample_type,
    }
}

#[cfg(test)]
mod tests {
    use trawl_heap::Sample;

    use super::*;

    fn frame(name: &str, line: i64) -> Frame {
        Frame {
            name: name.into(),
            file: "src/lib.rs".into(),
            line,
        }
    }

    #[test]
    fn stacks_start_at_the_allocating_code_and_share_locations() {
        let profile = HeapProfile {
            sample_period: 524_288,
            samples: vec![
                Sample {
                    addresses: vec![1, 2, 3],
                    objects: 2.4,
                    bytes: 1_000.6,
                },
                Sample {
                    addresses: vec![1, 5, 4, 3],
                    objects: 1.0,
                    bytes: 10.0,
                },
            ],
        };
        let mut resolve = |address: u64| match address {
            1 => vec![
                frame("prof_alloc_prep", 1),
                Frame {
                    name: "irallocx_prof".into(),
                    file: "/x/tikv-jemalloc-sys-0123/out/build/src/jemalloc.c".into(),
                    line: 2458,
                },
            ],
            5 => vec![Frame {
                name: "with_capacity_in<u8>".into(),
                file: "/rustc/0123/library/alloc/src/raw_vec/mod.rs".into(),
                line: 589,
            }],
            2 => vec![
                frame("trawl_ingest::Buffer::push", 10),
                frame("trawl_ingest::Buffer::grow", 20),
            ],
            3 => vec![frame("main", 30)],
            _ => Vec::new(),
        };
        let profile = encode(&profile, &mut resolve);
        let name = |index: i64| profile.string_table[index as usize].clone();
        assert_eq!(name(profile.default_sample_type), "inuse_space");
        assert_eq!(profile.period, 524_288);
        assert_eq!(profile.sample.len(), 2);
        assert_eq!(
            profile.sample[0].location_id,
            vec![2, 3],
            "the allocator frame is left off"
        );
        assert_eq!(profile.sample[0].value, vec![2, 1_001]);
        // The standard library's growth frame (known by its file) is left off as well; address
        // 4 resolves to nothing: its location (the fifth) is still there, with no lines.
        assert_eq!(profile.sample[1].location_id, vec![5, 3]);
        let inlined = &profile.location[1];
        assert_eq!(inlined.address, 2);
        let names: Vec<String> = inlined
            .line
            .iter()
            .map(|line| name(profile.function[line.function_id as usize - 1].name))
            .collect();
        assert_eq!(names, vec!["trawl_ingest::Buffer::push", "trawl_ingest::Buffer::grow"]);
    }
}
