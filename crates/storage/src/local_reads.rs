//! Segment reads from a local directory that the page cache can answer at once.
//!
//! `object_store`'s local store runs every read on a blocking thread: the scan's task waits
//! for a thread hand-off and a wake-up even when the bytes are in memory, and on a 2-core
//! machine both query workers sat idle for those waits (a query of 2 columns over the
//! benchmark's logs made about 300 reads; together they waited 44 ms of an 80 ms query, and
//! reading them in place took that query's median from 78-98 ms to 62-77 ms).
//! [`LocalReads`] first tries each read on the calling thread with `preadv2(RWF_NOWAIT)`,
//! which copies what the page cache holds and refuses to wait for the disk; a read the cache
//! cannot answer whole goes to the local store's blocking thread as before. Everything else
//! is the local store's. The segment cache in front of a remote store reads its block files
//! the same way ([`cached_file`]).

use std::fmt;
use std::fs::File;
use std::io::{self, IoSliceMut};
use std::num::NonZeroU64;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use rustix::fs::Advice;

use crate::read_hint::ReadHint;

/// Most bytes one read copies on the calling thread: longer reads (a merge's whole segment)
/// go to a blocking thread, where a long copy holds up no other task.
const MOST_INLINE_BYTES: u64 = 8 << 20;

/// A local store whose range reads are served on the calling thread when the page cache
/// holds them; see the module documentation.
#[derive(Debug)]
pub(crate) struct LocalReads {
    local: Arc<LocalFileSystem>,
    /// Cleared when the file system does not support non-blocking reads.
    inline: AtomicBool,
}

impl LocalReads {
    pub(crate) fn new(local: Arc<LocalFileSystem>) -> LocalReads {
        LocalReads {
            local,
            inline: AtomicBool::new(true),
        }
    }

    /// `ranges` of `location` from the page cache, or `None` when some byte of them is not
    /// there (or past the end of the file, or the file is missing: the local store then
    /// gives the error it gives).
    fn cached(&self, location: &Path, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
        if !self.inline.load(Ordering::Relaxed) {
            return None;
        }
        // A backwards range gets the local store's error.
        if ranges.iter().any(|r| r.end < r.start) {
            return None;
        }
        let total = ranges
            .iter()
            .fold(0u64, |total, r| total.saturating_add(r.end - r.start));
        if total > MOST_INLINE_BYTES {
            return None;
        }
        let path = self.local.path_to_filesystem(location).ok()?;
        let file = File::open(path).ok()?;
        match cached_ranges(&file, ranges) {
            Ok(bytes) => bytes,
            Err(e) => {
                if e.raw_os_error() == Some(rustix::io::Errno::OPNOTSUPP.raw_os_error()) {
                    self.inline.store(false, Ordering::Relaxed);
                }
                None
            }
        }
    }
}

/// The whole file at `path` when it is `len` bytes long and the page cache holds all of it
/// (a block of [`crate::cache::SegmentCache`]); `None` sends the caller to a blocking read.
pub(crate) fn cached_file(path: &std::path::Path, len: u64) -> Option<Bytes> {
    if len > MOST_INLINE_BYTES {
        return None;
    }
    let file = File::open(path).ok()?;
    if file.metadata().ok()?.len() != len {
        return None;
    }
    cached_ranges(&file, std::slice::from_ref(&(0..len)))
        .ok()
        .flatten()?
        .pop()
}

/// `ranges` of `file` as far as the page cache holds them: `Ok(None)` when some byte is not
/// there or the file ends first.
fn cached_ranges(file: &File, ranges: &[Range<u64>]) -> io::Result<Option<Vec<Bytes>>> {
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        let Ok(len) = usize::try_from(range.end.saturating_sub(range.start)) else {
            return Ok(None);
        };
        let mut buffer = BytesMut::zeroed(len);
        if !read_cached(file, &mut buffer, range.start)? {
            return Ok(None);
        }
        out.push(buffer.freeze());
    }
    Ok(Some(out))
}

/// Fills `buffer` from `file` at `offset` without waiting for the disk: `Ok(false)` when the
/// page cache does not hold all of it or the file ends first.
fn read_cached(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buffer.len() {
        let at = offset + filled as u64;
        let mut slices = [IoSliceMut::new(&mut buffer[filled..])];
        match rustix::io::preadv2(file, &mut slices, at, rustix::io::ReadWriteFlags::NOWAIT) {
            Ok(0) => return Ok(false),
            Ok(n) => filled += n,
            Err(rustix::io::Errno::AGAIN) => return Ok(false),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// Ranges the page cache lacks are read ahead by the kernel: `posix_fadvise(WILLNEED)` starts
/// their reads without waiting for them. It can wait for the disk's queue, so it runs on a
/// blocking thread; ranges already in memory are not hinted at all (see [`already_cached`]).
impl ReadHint for LocalReads {
    fn will_read(&self, location: &Path, ranges: Vec<Range<u64>>) {
        let Ok(path) = self.local.path_to_filesystem(location) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Ok(file) = File::open(path) else {
            return;
        };
        if already_cached(&file, &ranges) {
            return;
        }
        runtime.spawn_blocking(move || {
            for range in ranges {
                let Some(len) = NonZeroU64::new(range.end.saturating_sub(range.start)) else {
                    continue;
                };
                if rustix::fs::fadvise(&file, range.start, Some(len), Advice::WillNeed).is_err() {
                    return;
                }
            }
        });
    }
}

/// Whether the page cache holds the first bytes of the first and the last of `ranges`: a scan's
/// column chunks are read, and dropped from the cache, together, so then it holds the rest too
/// and a hint would only cost the blocking thread's time. (A byte the cache lacks, or a read
/// that fails, says no.)
fn already_cached(file: &File, ranges: &[Range<u64>]) -> bool {
    let (Some(first), Some(last)) = (ranges.first(), ranges.last()) else {
        return true;
    };
    [first.start, last.start].into_iter().all(|offset| {
        let mut byte = [0u8; 1];
        matches!(read_cached(file, &mut byte, offset), Ok(true))
    })
}

impl fmt::Display for LocalReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalReads({})", self.local)
    }
}

#[async_trait]
impl ObjectStore for LocalReads {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.local.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.local.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.local.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if let Some(bytes) = self.cached(location, ranges) {
            return Ok(bytes);
        }
        self.local.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.local.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.local.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.local.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.local.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.local.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.local.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use object_store::ObjectStoreExt;

    use super::*;

    fn store(dir: &std::path::Path) -> Result<LocalReads> {
        Ok(LocalReads::new(Arc::new(LocalFileSystem::new_with_prefix(dir)?)))
    }

    #[tokio::test]
    async fn ranges_in_the_page_cache_are_read_in_place() -> std::result::Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = store(dir.path())?;
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let location = Path::from("segments/a.parquet");
        store.put(&location, Bytes::from(bytes.clone()).into()).await?;
        let ranges = [0..10, 99_990..100_000, 4_096..70_000, 5..5];
        // Just written, so in the page cache: read on this thread.
        let file = File::open(dir.path().join("segments/a.parquet"))?;
        let read = match cached_ranges(&file, &ranges) {
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::OPNOTSUPP.raw_os_error()) => {
                eprintln!("this file system cannot read without waiting: only the fallback is tested");
                None
            }
            read => Some(read?.ok_or("not read in place")?),
        };
        let got = store.get_ranges(&location, &ranges).await?;
        for (i, range) in ranges.iter().enumerate() {
            let want = &bytes[range.start as usize..range.end as usize];
            assert_eq!(got[i].as_ref(), want);
            if let Some(read) = &read {
                assert_eq!(read[i].as_ref(), want);
            }
        }
        // Past the end: not in place, and the local store's error.
        assert!(!matches!(
            cached_ranges(&file, std::slice::from_ref(&(99_000..100_001))),
            Ok(Some(_))
        ));
        assert!(
            store
                .get_ranges(&location, std::slice::from_ref(&(99_000..100_001)))
                .await
                .is_err()
        );
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = store.get_ranges(&location, std::slice::from_ref(&(10..5))).await;
        assert!(backwards.is_err(), "{backwards:?}");
        // A missing file is the local store's "not found".
        let missing = store
            .get_ranges(&Path::from("segments/b.parquet"), std::slice::from_ref(&(0..1)))
            .await;
        assert!(
            matches!(missing, Err(object_store::Error::NotFound { .. })),
            "{missing:?}"
        );
        // A whole file of the expected length, and not one of another.
        let path = dir.path().join("segments/a.parquet");
        if read.is_some() {
            assert_eq!(cached_file(&path, 100_000).as_deref(), Some(&bytes[..]));
        }
        assert!(cached_file(&path, 99_999).is_none());
        Ok(())
    }

    #[tokio::test]
    async fn hints_of_cached_missing_or_empty_ranges_are_let_go() -> std::result::Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let store = store(dir.path())?;
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
        let location = Path::from("segments/a.parquet");
        store.put(&location, Bytes::from(bytes.clone()).into()).await?;
        let file = File::open(dir.path().join("segments/a.parquet"))?;
        let ranges = vec![0..4_096, 100_000..150_000, 150_000..150_000];
        // Just written: in the page cache, unless this file system cannot tell.
        if store.inline.load(Ordering::Relaxed) && cached_ranges(&file, &ranges).is_ok() {
            assert!(already_cached(&file, &ranges));
        }
        assert!(already_cached(&file, &[]));
        // Past the end: not held, so it would be hinted (and the kernel ignores it).
        let past_end = 300_000..300_010;
        assert!(!already_cached(&file, std::slice::from_ref(&past_end)));
        store.will_read(&location, ranges.clone());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 10..5;
        store.will_read(&location, vec![past_end, backwards]);
        store.will_read(&Path::from("segments/missing.parquet"), ranges.clone());
        // Whatever the hints did, the bytes read are the file's.
        let got = store.get_ranges(&location, &ranges).await?;
        for (range, got) in ranges.iter().zip(&got) {
            assert_eq!(got.as_ref(), &bytes[range.start as usize..range.end as usize]);
        }
        Ok(())
    }
}
