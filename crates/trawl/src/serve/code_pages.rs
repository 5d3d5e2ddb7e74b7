//! Start-up read-ahead of the server's own code.
//!
//! The kernel loads an executable's pages when they are first run. After a restart on a
//! machine whose page cache no longer holds the binary (a reboot, a new release, memory
//! pressure), the first query runs through hundreds of code paths that have never run in this
//! process, and each of them waits for a read from disk: measured here, a count answered from
//! footers took 30 ms instead of 4 ms, almost all of it page faults. So a query node asks the
//! reads, when it starts, the mapped parts of its executable (code and read-only data, not
//! debug information, which is never mapped) on a thread of its own, in large sequential reads
//! that put them in the page cache (about 140 MiB, a tenth of a second from disk here); the
//! start-up does not wait for it. This is what ClickHouse's `mlock_executable` is for, without
//! pinning the pages: the kernel may drop them again under memory pressure.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Reads the mapped ranges of the running executable into the page cache, on a thread of its
/// own; returns at once. Failure is logged and otherwise harmless: queries fault the pages
/// in as before.
pub fn read_ahead() {
    let spawned = std::thread::Builder::new().name("code-read-ahead".into()).spawn(|| {
        let started = std::time::Instant::now();
        match read_mapped() {
            Ok(bytes) => tracing::info!(
                mib = bytes >> 20,
                millis = started.elapsed().as_millis() as u64,
                "read the executable's code into the page cache"
            ),
            Err(error) => tracing::debug!(%error, "cannot read the executable's code ahead"),
        }
    });
    if let Err(error) = spawned {
        tracing::debug!(%error, "cannot start the code read-ahead");
    }
}

/// Bytes per read: large enough that the disk streams.
const READ_BYTES: usize = 1 << 20;

/// Reads the mapped ranges of the executable once, into a buffer that is thrown away: the
/// pages stay in the page cache. (`posix_fadvise(WILLNEED)` would be the gentler call, but
/// Linux reads only a few MiB of a range it is given.) Returns the bytes read.
fn read_mapped() -> std::io::Result<u64> {
    let executable = std::fs::read_link("/proc/self/exe")?;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let file = File::open(&executable)?;
    let mut buffer = vec![0u8; READ_BYTES];
    let mut read = 0;
    for range in mapped_ranges(&maps, &executable) {
        let mut at = range.start;
        while at < range.end {
            let want = usize::try_from(range.end - at).map_or(READ_BYTES, |left| left.min(READ_BYTES));
            let got = file.read_at(&mut buffer[..want], at)?;
            if got == 0 {
                break;
            }
            at += got as u64;
            read += got as u64;
        }
    }
    Ok(read)
}

/// The file ranges of `executable` that `maps` (the text of `/proc/<pid>/maps`) shows mapped
/// readable. A line: `start-end perms offset dev inode path`, addresses and offset in hex.
fn mapped_ranges(maps: &str, executable: &Path) -> Vec<Range<u64>> {
    let mut ranges = Vec::new();
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(addresses), Some(perms), Some(offset), Some(_device), Some(_inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        // The path is the rest of the line (it may hold spaces).
        let Some(path) = line.find('/').map(|at| &line[at..]) else {
            continue;
        };
        if Path::new(path) != executable || !perms.starts_with('r') {
            continue;
        }
        let Some((start, end)) = addresses.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(start, 16),
            u64::from_str_radix(end, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        if let Some(length) = end.checked_sub(start)
            && let Some(stop) = offset.checked_add(length)
        {
            ranges.push(offset..stop);
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_ranges_are_the_readable_mappings_of_the_executable() {
        let maps = "\
55d0c0000000-55d0c0400000 r--p 00000000 fd:00 1234 /opt/trawl/bin/trawl\n\
55d0c0400000-55d0c7400000 r-xp 00400000 fd:00 1234 /opt/trawl/bin/trawl\n\
55d0c7400000-55d0c8600000 r--p 07400000 fd:00 1234 /opt/trawl/bin/trawl\n\
55d0c8600000-55d0c8700000 rw-p 08600000 fd:00 1234 /opt/trawl/bin/trawl\n\
55d0c8700000-55d0c8800000 ---p 08700000 fd:00 1234 /opt/trawl/bin/trawl\n\
7f1e00000000-7f1e00200000 r-xp 00000000 fd:00 99 /usr/lib/libc.so.6\n\
7f1e00200000-7f1e00300000 rw-p 00000000 00:00 0 \n\
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n\
garbage line\n\
zz-yy r-xp 0 fd:00 1234 /opt/trawl/bin/trawl\n";
        let ranges = mapped_ranges(maps, Path::new("/opt/trawl/bin/trawl"));
        assert_eq!(
            ranges,
            vec![
                0..0x40_0000,
                0x40_0000..0x740_0000,
                0x740_0000..0x860_0000,
                0x860_0000..0x870_0000
            ]
        );
    }

    #[test]
    fn a_path_with_spaces_is_matched_whole() {
        let maps = "1000-3000 r-xp 00001000 fd:00 7 /opt/my tools/trawl\n";
        assert_eq!(
            mapped_ranges(maps, Path::new("/opt/my tools/trawl")),
            vec![0x1000..0x3000]
        );
        assert!(mapped_ranges(maps, Path::new("/opt/my")).is_empty());
    }

    #[test]
    fn the_running_test_binary_has_readable_mappings() -> std::io::Result<()> {
        let executable = std::fs::read_link("/proc/self/exe")?;
        let maps = std::fs::read_to_string("/proc/self/maps")?;
        let ranges = mapped_ranges(&maps, &executable);
        assert!(!ranges.is_empty(), "no mapping of {} in {maps}", executable.display());
        assert!(read_mapped()? > 0);
        Ok(())
    }
}
