//! How much memory this process may use, and the memory settings' defaults drawn from it.
//!
//! The limit is the smallest of the machine's memory (`MemTotal`), the memory limits of the
//! process's control group and its ancestors (cgroup v2 `memory.max`, v1
//! `memory.limit_in_bytes`: what a container runtime or systemd sets) and `RLIMIT_AS`. A server
//! in a 2 GiB container so sizes its budgets to 2 GiB, not to the host's memory.

use std::path::{Path, PathBuf};

/// The memory this process may use and where that figure comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessMemory {
    pub bytes: u64,
    pub source: String,
}

/// Limits at or above this are "no limit" (cgroup v1 writes the largest page-aligned i64).
const UNLIMITED: u64 = 1 << 60;

/// The memory this process may use, now.
pub fn process_memory() -> ProcessMemory {
    let mut best = ProcessMemory {
        bytes: mem_total().unwrap_or(4 << 30),
        source: "the machine's memory".to_string(),
    };
    let mut consider = |bytes: u64, source: String| {
        if bytes < best.bytes {
            best = ProcessMemory { bytes, source };
        }
    };
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for (file, bytes) in cgroup_limits(&cgroups, &mounts, |path| std::fs::read_to_string(path).ok()) {
        consider(bytes, format!("the control group's limit ({})", file.display()));
    }
    if let Some(bytes) = rustix::process::getrlimit(rustix::process::Resource::As).current {
        consider(bytes, "RLIMIT_AS".to_string());
    }
    best
}

fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_bytes(&text, "MemTotal:")
}

/// The memory the system has available now (`MemAvailable`), at most `process`.
pub fn available_memory(process: &ProcessMemory) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| meminfo_bytes(&text, "MemAvailable:"))
        .map_or(process.bytes, |available| available.min(process.bytes))
}

fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|line| line.starts_with(key))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))
}

/// The memory limits that apply to this process's control groups: each limit file of the
/// process's cgroup and of its ancestors (up to the mount's root) that sets one, with its
/// bytes. `cgroups` is `/proc/self/cgroup`, `mounts` is `/proc/self/mountinfo`.
fn cgroup_limits(cgroups: &str, mounts: &str, read: impl Fn(&Path) -> Option<String>) -> Vec<(PathBuf, u64)> {
    let mut limits = Vec::new();
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(hierarchy), Some(controllers), Some(path)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let (fs_type, file) = if hierarchy == "0" && controllers.is_empty() {
            ("cgroup2", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("cgroup", "memory.limit_in_bytes")
        } else {
            continue;
        };
        let Some((mount_root, mount_point)) = cgroup_mount(mounts, fs_type) else {
            continue;
        };
        // The cgroup's path as seen inside the mount (in a container the mount's root is
        // often the container's own cgroup).
        let relative = path.strip_prefix(mount_root.as_str()).unwrap_or(path);
        let mut directory = PathBuf::from(&mount_point);
        directory.extend(relative.split('/').filter(|part| !part.is_empty()));
        loop {
            let limit_file = directory.join(file);
            if let Some(bytes) = read(&limit_file).and_then(|text| parse_limit(&text)) {
                limits.push((limit_file, bytes));
            }
            if directory.as_os_str().len() <= mount_point.len() || !directory.pop() {
                break;
            }
        }
    }
    limits
}

/// The root and mount point of the first mount of `fs_type` (`cgroup2`, or a v1 `cgroup`
/// with the memory controller) in `/proc/self/mountinfo`.
fn cgroup_mount(mounts: &str, fs_type: &str) -> Option<(String, String)> {
    mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split_whitespace();
        let kind = after.next()?;
        let _source = after.next();
        let options = after.next().unwrap_or_default();
        let memory = fs_type == "cgroup2" || options.split(',').any(|o| o == "memory");
        if kind != fs_type || !memory {
            return None;
        }
        let fields: Vec<&str> = before.split_whitespace().collect();
        Some((fields.get(3)?.to_string(), fields.get(4)?.to_string()))
    })
}

/// A limit file's bytes; none for `max` or a value meaning no limit.
fn parse_limit(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes > 0 && bytes < UNLIMITED).then_some(bytes)
}

/// The memory settings' defaults for a process that may use `process` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryDefaults {
    /// All queries at once.
    pub queries: usize,
    /// One query.
    pub per_query: usize,
    /// One grouping summarize.
    pub summarize: usize,
    /// The process's live heap past which the query holding the most is stopped.
    pub heap: u64,
}

/// Three eighths of the process's memory for queries (at most 2 GiB), half of that for one
/// query (at most 1 GiB), half of one query's spilling share for a grouping summarize (at
/// most 512 MiB), and three quarters of the process's memory as the heap's last-guard cap.
/// Ingest's in-flight budget (a quarter of the available memory) and the caches fit beside.
pub fn defaults(process: u64) -> MemoryDefaults {
    let queries = (process / 8 * 3).clamp(64 << 20, 2 << 30);
    let per_query = (queries / 2).min(1 << 30);
    MemoryDefaults {
        queries: queries as usize,
        per_query: per_query as usize,
        summarize: summarize_default(per_query as usize),
        heap: process / 4 * 3,
    }
}

/// One grouping `summarize` may hold three eighths of its query's memory (half of the three
/// quarters at which the query's operators spill), at most 512 MiB.
pub fn summarize_default(per_query: usize) -> usize {
    (per_query / 8 * 3).min(512 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
24 30 0:22 / /sys/fs/cgroup rw,nosuid shared:9 - tmpfs tmpfs ro,mode=755
30 24 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw
33 24 0:29 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory
34 24 0:30 / /sys/fs/cgroup/cpu rw,nosuid shared:15 - cgroup cgroup rw,cpu
";

    #[test]
    fn the_limits_of_the_cgroup_and_its_ancestors_are_found_in_both_versions() {
        let cgroups = "4:memory:/jobs/web\n1:cpu:/\n0::/user.slice/app\n";
        let files = |path: &Path| -> Option<String> {
            match path.to_str()? {
                "/sys/fs/cgroup/memory/jobs/web/memory.limit_in_bytes" => Some("2147483648\n".into()),
                "/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes" => Some("9223372036854771712\n".into()),
                "/sys/fs/cgroup/memory/memory.limit_in_bytes" => Some("9223372036854771712\n".into()),
                "/sys/fs/cgroup/unified/user.slice/app/memory.max" => Some("max\n".into()),
                "/sys/fs/cgroup/unified/user.slice/memory.max" => Some("3221225472\n".into()),
                _ => None,
            }
        };
        let limits = cgroup_limits(cgroups, MOUNTS, files);
        assert_eq!(
            limits,
            vec![
                (PathBuf::from("/sys/fs/cgroup/memory/jobs/web/memory.limit_in_bytes"), 2 << 30),
                (PathBuf::from("/sys/fs/cgroup/unified/user.slice/memory.max"), 3 << 30),
            ]
        );
    }

    #[test]
    fn a_container_sees_its_own_cgroup_as_the_mount_root() {
        let mounts = "1187 1185 0:26 /kubepods/pod1/c1 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n";
        let cgroups = "0::/kubepods/pod1/c1\n";
        let files = |path: &Path| -> Option<String> {
            (path == Path::new("/sys/fs/cgroup/memory.max")).then(|| "1073741824".to_string())
        };
        assert_eq!(
            cgroup_limits(cgroups, mounts, files),
            vec![(PathBuf::from("/sys/fs/cgroup/memory.max"), 1 << 30)]
        );
    }

    #[test]
    fn defaults_fit_a_small_container_and_keep_their_caps_on_a_large_machine() {
        let small = defaults(2 << 30);
        assert_eq!(small.queries, 768 << 20);
        assert_eq!(small.per_query, 384 << 20);
        assert_eq!(small.summarize, 144 << 20);
        assert_eq!(small.heap, 1536 << 20);
        let large = defaults(64 << 30);
        assert_eq!((large.queries, large.per_query, large.summarize), (2 << 30, 1 << 30, 384 << 20));
        let tiny = defaults(64 << 20);
        assert!(tiny.per_query <= tiny.queries && tiny.summarize < tiny.per_query);
        // This machine's figure is one of the sources, and positive.
        let here = process_memory();
        assert!(here.bytes > 0, "{here:?}");
    }
}
