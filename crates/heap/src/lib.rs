//! The process's allocator, jemalloc, and the heap profiles it keeps.
//!
//! jemalloc samples allocations (on average one every 2^`lg_prof_sample` bytes, 1 MiB as
//! built here: `.cargo/config.toml` sets `JEMALLOC_SYS_WITH_MALLOC_CONF`) and records the
//! stack of each sampled one; [`take`] asks it for the live sampled allocations and returns
//! them scaled up to estimates of all live allocations, as `jeprof` and Go's heap profiles
//! do. Symbolizing and encoding the profile is the caller's business.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

/// The global allocator the `trawl` binary installs.
pub use tikv_jemallocator::Jemalloc as Allocator;

#[derive(Debug, thiserror::Error)]
pub enum HeapError {
    #[error("heap profiling is off (the allocator was built or started without it)")]
    Disabled,
    #[error("jemalloc refused the dump: {0}")]
    Allocator(#[from] tikv_jemalloc_ctl::Error),
    #[error("cannot write or read the dump file: {0}")]
    Io(#[from] std::io::Error),
    #[error("the dump is not a heap_v2 profile: {0}")]
    Format(String),
}

/// Live allocations that share one stack: estimates of all of them, from the sampled ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Return addresses, innermost first.
    pub addresses: Vec<u64>,
    pub objects: f64,
    pub bytes: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeapProfile {
    /// Average bytes between two sampled allocations.
    pub sample_period: u64,
    pub samples: Vec<Sample>,
}

/// jemalloc's own account of its memory, in bytes (`stats.*` in jemalloc(3)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in live allocations.
    pub allocated: u64,
    /// Bytes in the pages that hold live allocations.
    pub active: u64,
    /// Bytes of physically resident pages jemalloc maps (its metadata and unused dirty pages
    /// included): what it adds to the process's RSS.
    pub resident: u64,
    /// Bytes of virtual memory jemalloc keeps mapped but gave back to the system.
    pub retained: u64,
}

/// The allocator's statistics now.
pub fn stats() -> Result<MemoryStats, HeapError> {
    // The statistics are a snapshot taken when the epoch advances.
    tikv_jemalloc_ctl::epoch::advance()?;
    Ok(MemoryStats {
        allocated: tikv_jemalloc_ctl::stats::allocated::read()? as u64,
        active: tikv_jemalloc_ctl::stats::active::read()? as u64,
        resident: tikv_jemalloc_ctl::stats::resident::read()? as u64,
        retained: tikv_jemalloc_ctl::stats::retained::read()? as u64,
    })
}

/// Bytes jemalloc handed the calling thread so far and bytes the thread freed so far (both
/// counted from the thread's start): two reads of thread-local counters, found once per
/// thread. `None` when jemalloc is not the process's allocator or keeps no statistics.
/// `trawl_common::memory` meters queries with it.
pub fn thread_counters() -> Option<(u64, u64)> {
    type Pointers = Option<(
        tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
        tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
    )>;
    thread_local! {
        static POINTERS: Pointers = match (
            tikv_jemalloc_ctl::thread::allocatedp::read(),
            tikv_jemalloc_ctl::thread::deallocatedp::read(),
        ) {
            (Ok(allocated), Ok(freed)) => Some((allocated, freed)),
            _ => None,
        };
    }
    POINTERS
        .try_with(|pointers| pointers.map(|(allocated, freed)| (allocated.get(), freed.get())))
        .ok()
        .flatten()
}

/// Bytes in live allocations now (`stats.allocated`, refreshed first).
pub fn allocated_bytes() -> Option<u64> {
    tikv_jemalloc_ctl::epoch::advance().ok()?;
    tikv_jemalloc_ctl::stats::allocated::read().ok().map(|bytes| bytes as u64)
}

/// Whether jemalloc keeps heap profiles in this process.
pub fn enabled() -> bool {
    tikv_jemalloc_ctl::profiling::prof::read().unwrap_or(false)
}

/// The live heap now.
pub fn take() -> Result<HeapProfile, HeapError> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    if !enabled() {
        return Err(HeapError::Disabled);
    }
    let _only = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let file = tempfile::Builder::new().prefix("trawl-heap-").tempfile()?;
    let path = CString::new(file.path().as_os_str().as_bytes())
        .map_err(|_| HeapError::Format("the temporary path holds a NUL byte".into()))?;
    // SAFETY: `prof.dump` takes a `const char *` to a NUL-terminated path (jemalloc(3),
    // "prof.dump"); `path` is one and outlives the call, which only reads it.
    #[allow(unsafe_code)]
    unsafe {
        tikv_jemalloc_ctl::raw::write(b"prof.dump\0", path.as_ptr())?;
    }
    parse(&std::fs::read_to_string(file.path())?)
}

/// Parses jemalloc's `heap_v2` dump: a header with the sample period, then per stack a line
/// `@ 0x… 0x…` followed by `  t*: <objects>: <bytes> [<objects>: <bytes>]` (the sampled live
/// allocations of all threads) and one such line per thread; the process's mappings follow.
pub fn parse(text: &str) -> Result<HeapProfile, HeapError> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let sample_period = header
        .strip_prefix("heap_v2/")
        .and_then(|period| period.trim().parse::<u64>().ok())
        .ok_or_else(|| HeapError::Format(format!("unexpected header {header:?}")))?;
    let mut samples = Vec::new();
    let mut stack: Option<Vec<u64>> = None;
    for line in lines {
        if line.starts_with("MAPPED_LIBRARIES:") {
            break;
        }
        if let Some(addresses) = line.strip_prefix("@ ") {
            let parsed: Option<Vec<u64>> = addresses
                .split_whitespace()
                .map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
                .collect();
            stack = Some(parsed.ok_or_else(|| HeapError::Format(format!("a bad stack line {line:?}")))?);
            continue;
        }
        let Some(totals) = line.trim_start().strip_prefix("t*:") else {
            continue;
        };
        // The totals of all threads belong to the stack above; the header's come before any.
        let Some(addresses) = stack.take() else {
            continue;
        };
        let mut numbers = totals.split([':', '[']).map(str::trim);
        let objects = numbers.next().and_then(|n| n.parse::<u64>().ok());
        let bytes = numbers.next().and_then(|n| n.parse::<u64>().ok());
        let (Some(objects), Some(bytes)) = (objects, bytes) else {
            return Err(HeapError::Format(format!("a bad totals line {line:?}")));
        };
        if objects == 0 {
            continue;
        }
        let scale = unsampling_scale(objects, bytes, sample_period);
        samples.push(Sample {
            addresses,
            objects: objects as f64 * scale,
            bytes: bytes as f64 * scale,
        });
    }
    Ok(HeapProfile { sample_period, samples })
}

/// How many allocations one sampled allocation of this stack stands for: an allocation of
/// `size` bytes is sampled with probability 1 - e^(-size/period).
fn unsampling_scale(objects: u64, bytes: u64, period: u64) -> f64 {
    if period == 0 || objects == 0 {
        return 1.0;
    }
    let average = bytes as f64 / objects as f64;
    let probability = 1.0 - (-average / period as f64).exp();
    if probability > 0.0 { 1.0 / probability } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The tests run on jemalloc, as the binary does.
    #[global_allocator]
    static ALLOCATOR: Allocator = Allocator;

    #[test]
    fn the_thread_counters_see_this_threads_allocations_and_frees() {
        let Some(before) = thread_counters() else {
            panic!("jemalloc keeps no thread counters");
        };
        let block = std::hint::black_box(vec![7u8; 1 << 20]);
        let Some(held) = thread_counters() else {
            panic!("the counters went away");
        };
        assert!(held.0 - before.0 >= 1 << 20, "{before:?} → {held:?}");
        drop(block);
        let Some(after) = thread_counters() else {
            panic!("the counters went away");
        };
        assert!(after.1 - held.1 >= 1 << 20, "{held:?} → {after:?}");
        // Another thread has counters of its own.
        let other = std::thread::spawn(thread_counters).join().ok().flatten();
        assert!(other.is_some_and(|other| other.0 < after.0));
        assert!(allocated_bytes().is_some_and(|bytes| bytes > 0));
    }

    const DUMP: &str = "heap_v2/524288
  t*: 3: 1572864 [0: 0]
  t0: 3: 1572864 [0: 0]
@ 0x55d0c0a01ab5 0x55d0c0a01b93 0x7f95a368724a
  t*: 2: 1048576 [0: 0]
  t0: 2: 1048576 [0: 0]
@ 0x10 0x20
  t*: 1: 64 [0: 0]
  t3: 1: 64 [0: 0]
@ 0x30
  t*: 0: 0 [0: 0]

MAPPED_LIBRARIES:
55d0c09e8000-55d0c0a4d000 r--p 00000000 fe:00 10015643   /usr/bin/trawl
";

    #[test]
    fn stacks_come_with_unsampled_estimates() -> Result<(), HeapError> {
        let profile = parse(DUMP)?;
        assert_eq!(profile.sample_period, 524_288);
        assert_eq!(profile.samples.len(), 2, "a stack with no live allocation is left out");
        let big = &profile.samples[0];
        assert_eq!(big.addresses, vec![0x55d0c0a01ab5, 0x55d0c0a01b93, 0x7f95a368724a]);
        // Two 512 KiB allocations: each was sampled with probability 1 - 1/e.
        let scale = 1.0 / (1.0 - (-1.0f64).exp());
        assert!((big.objects - 2.0 * scale).abs() < 1e-9);
        assert!((big.bytes - 1_048_576.0 * scale).abs() < 1e-6);
        // A 64-byte allocation stands for about 8,192 of them.
        let small = &profile.samples[1];
        assert!((small.objects - 8192.5).abs() < 1.0, "{}", small.objects);
        Ok(())
    }

    #[test]
    fn the_allocator_counts_a_live_allocation() -> Result<(), HeapError> {
        // The test binary allocates through the C `malloc`, which is jemalloc's here.
        let before = stats()?;
        let block = vec![7u8; 64 << 20];
        let during = stats()?;
        assert!(
            during.allocated >= before.allocated + (60 << 20),
            "{before:?} {during:?}"
        );
        assert!(
            during.resident >= during.allocated && during.active >= during.allocated,
            "{during:?}"
        );
        drop(block);
        assert!(stats()?.allocated < during.allocated);
        Ok(())
    }

    #[test]
    fn other_text_is_refused() {
        assert!(matches!(parse("heap_v1/1\n"), Err(HeapError::Format(_))));
        assert!(matches!(parse(""), Err(HeapError::Format(_))));
        assert!(matches!(parse("heap_v2/524288\n@ 0xzz\n"), Err(HeapError::Format(_))));
        assert!(matches!(
            parse("heap_v2/524288\n@ 0x1\n  t*: x: 1 [0: 0]\n"),
            Err(HeapError::Format(_))
        ));
    }
}
