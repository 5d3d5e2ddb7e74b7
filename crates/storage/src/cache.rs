//! A bounded cache of segment bytes on the local disk, in front of a remote object store.
//!
//! Segments are immutable, so a byte once read never changes: reads are cut into blocks of
//! [`BLOCK_BYTES`] aligned to the object's start, and each block fetched from the store is
//! kept as a file under the cache directory, so the next read of it (a footer, a column chunk
//! another query reads too) comes from the disk. Blocks that were read least recently are
//! evicted when the cache would pass its size. The directory survives restarts: at start-up
//! it is scanned and every whole block is served again.
//!
//! Objects written through this store are kept as they are written: new segments are what
//! queries read most.
//!
//! A deleted segment is never served: a delete through this store evicts the object's blocks
//! before it returns, and reads are only of the paths the catalog lists (a merged or dropped
//! segment leaves the catalog before its object is deleted, after a grace period no query
//! outlives). Other processes' deletes (the janitor of a cluster) need no notice for the same
//! reason. A block whose file is missing or the wrong length is fetched again.
//!
//! Layout: `<dir>/<sha256 of the object path>/object.json` (path, size, modification time,
//! ETag) and one file per block named by its index. Writes go to a temporary name and are
//! renamed into place, so a crash leaves no torn block.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use trawl_common::metrics::{METRICS, label};

use crate::read_hint::ReadHint;

/// Bytes per cached block: large enough that a column chunk is a few requests, small enough
/// that a footer read does not fetch much beside it.
pub const BLOCK_BYTES: u64 = 1 << 20;

const OBJECT_FILE: &str = "object.json";
const TEMPORARY_SUFFIX: &str = ".tmp";

/// What the cache keeps about an object besides its blocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Described {
    path: String,
    size: u64,
    last_modified: DateTime<Utc>,
    e_tag: Option<String>,
}

impl Described {
    fn of(meta: &ObjectMeta) -> Described {
        Described {
            path: meta.location.to_string(),
            size: meta.size,
            last_modified: meta.last_modified,
            e_tag: meta.e_tag.clone(),
        }
    }

    fn meta(&self) -> ObjectMeta {
        ObjectMeta {
            location: Path::from(self.path.as_str()),
            last_modified: self.last_modified,
            size: self.size,
            e_tag: self.e_tag.clone(),
            version: None,
        }
    }

    /// The length of block `index` of this object.
    fn block_len(&self, index: u64) -> u64 {
        self.size.saturating_sub(index * BLOCK_BYTES).min(BLOCK_BYTES)
    }

    fn blocks(&self) -> u64 {
        self.size.div_ceil(BLOCK_BYTES)
    }
}

#[derive(Debug, Default)]
struct Cached {
    described: Option<Described>,
    /// Block index → (bytes, last use).
    blocks: HashMap<u64, (u64, u64)>,
}

/// The in-memory index of the cache directory.
#[derive(Debug, Default)]
struct Index {
    objects: HashMap<String, Cached>,
    /// Last use → (object key, block index): the least recently used first.
    by_use: BTreeMap<u64, (String, u64)>,
    bytes: u64,
    clock: u64,
}

impl Index {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Marks a block used; `false` when it is not cached.
    fn touch(&mut self, key: &str, block: u64) -> bool {
        let now = self.tick();
        let Some((_, used)) = self.objects.get_mut(key).and_then(|o| o.blocks.get_mut(&block)) else {
            return false;
        };
        let before = std::mem::replace(used, now);
        self.by_use.remove(&before);
        self.by_use.insert(now, (key.to_string(), block));
        true
    }

    fn insert(&mut self, key: &str, block: u64, len: u64) {
        let now = self.tick();
        let object = self.objects.entry(key.to_string()).or_default();
        if let Some((old_len, used)) = object.blocks.insert(block, (len, now)) {
            self.bytes -= old_len;
            self.by_use.remove(&used);
        }
        self.bytes += len;
        self.by_use.insert(now, (key.to_string(), block));
    }

    /// Removes the least recently used blocks until `incoming` more bytes fit in `capacity`;
    /// returns what to delete from disk: the removed blocks, or (`None`) the whole directory
    /// of an object that has no block left.
    fn make_room(&mut self, incoming: u64, capacity: u64) -> Vec<(String, Option<u64>)> {
        let mut evicted = Vec::new();
        while self.bytes + incoming > capacity {
            let Some((_, (key, block))) = self.by_use.pop_first() else {
                break;
            };
            let Some(object) = self.objects.get_mut(&key) else {
                continue;
            };
            if let Some((len, _)) = object.blocks.remove(&block) {
                self.bytes -= len;
                METRICS.storage_cache_evicted_bytes.inc_by(len);
            }
            if object.blocks.is_empty() {
                self.objects.remove(&key);
                evicted.push((key, None));
            } else {
                evicted.push((key, Some(block)));
            }
        }
        evicted
    }

    /// Forgets an object; returns whether it was cached.
    fn remove_object(&mut self, key: &str) -> bool {
        let Some(object) = self.objects.remove(key) else {
            return false;
        };
        for (len, used) in object.blocks.into_values() {
            self.bytes -= len;
            self.by_use.remove(&used);
        }
        true
    }
}

/// The cache's directory and index, shared by every store that reads through it.
#[derive(Debug)]
pub struct SegmentCache {
    dir: PathBuf,
    capacity: u64,
    index: Mutex<Index>,
}

impl SegmentCache {
    /// Opens (creating) the cache in `dir`, holding at most `capacity` bytes, with the blocks
    /// an earlier run left there.
    pub fn open(dir: &FsPath, capacity: u64) -> std::io::Result<SegmentCache> {
        std::fs::create_dir_all(dir)?;
        let cache = SegmentCache {
            dir: dir.to_path_buf(),
            capacity,
            index: Mutex::new(Index::default()),
        };
        cache.load()?;
        let evicted = {
            let mut index = cache.lock();
            index.make_room(0, capacity)
        };
        cache.delete_files(evicted);
        cache.publish_size();
        Ok(cache)
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes held now.
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    fn lock(&self) -> MutexGuard<'_, Index> {
        // A panic while the lock was held leaves a consistent index (every change is one
        // statement's worth), so a poisoned lock is taken as it is.
        self.index.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish_size(&self) {
        let bytes = self.bytes();
        METRICS
            .storage_cache_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    fn key(path: &Path) -> String {
        hex::encode(Sha256::digest(path.as_ref().as_bytes()))
    }

    fn object_dir(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    fn block_file(&self, key: &str, block: u64) -> PathBuf {
        self.object_dir(key).join(block.to_string())
    }

    /// Rebuilds the index from the directory: objects with a readable description, blocks of
    /// the right length; the rest (and temporary files of interrupted writes) is removed.
    /// Blocks are ordered for eviction by their files' modification times.
    fn load(&self) -> std::io::Result<()> {
        let mut found: Vec<(std::time::SystemTime, String, u64, u64)> = Vec::new();
        let mut described = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let key = entry.file_name().to_string_lossy().into_owned();
            let dir = entry.path();
            if !entry.file_type()?.is_dir() {
                remove_quietly(&dir);
                continue;
            }
            let object = std::fs::read(dir.join(OBJECT_FILE))
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Described>(&bytes).ok())
                .filter(|d| Self::key(&Path::from(d.path.as_str())) == key);
            let Some(object) = object else {
                remove_dir_quietly(&dir);
                continue;
            };
            for file in std::fs::read_dir(&dir)? {
                let file = file?;
                let name = file.file_name().to_string_lossy().into_owned();
                if name == OBJECT_FILE {
                    continue;
                }
                let metadata = file.metadata()?;
                match name.parse::<u64>() {
                    Ok(block) if block < object.blocks() && metadata.len() == object.block_len(block) => {
                        let modified = metadata.modified().unwrap_or(std::time::UNIX_EPOCH);
                        found.push((modified, key.clone(), block, metadata.len()));
                    }
                    _ => remove_quietly(&file.path()),
                }
            }
            described.push((key, object));
        }
        found.sort();
        let mut index = self.lock();
        for (key, object) in described {
            index.objects.entry(key).or_default().described = Some(object);
        }
        for (_, key, block, len) in found {
            index.insert(&key, block, len);
        }
        Ok(())
    }

    fn delete_files(&self, evicted: Vec<(String, Option<u64>)>) {
        for (key, block) in evicted {
            match block {
                Some(block) => remove_quietly(&self.block_file(&key, block)),
                None => remove_dir_quietly(&self.object_dir(&key)),
            }
        }
    }

    /// What the cache knows of the object at `path`.
    fn described(&self, key: &str) -> Option<Described> {
        self.lock().objects.get(key).and_then(|o| o.described.clone())
    }

    /// Records the object's description (on disk first, so a block is never without one).
    async fn describe(&self, key: &str, meta: &ObjectMeta) {
        if self.described(key).is_some() {
            return;
        }
        let described = Described::of(meta);
        let dir = self.object_dir(key);
        let written = match serde_json::to_vec(&described) {
            Ok(bytes) => write_atomically(&dir, OBJECT_FILE, bytes.into()).await,
            Err(e) => Err(std::io::Error::other(e)),
        };
        match written {
            Ok(()) => self.lock().objects.entry(key.to_string()).or_default().described = Some(described),
            Err(error) => tracing::warn!(%error, dir = %dir.display(), "cannot write to the segment cache"),
        }
    }

    /// The cached blocks among `blocks` (marked used), read from disk.
    async fn read_cached(&self, key: &str, blocks: &BTreeSet<u64>) -> HashMap<u64, Bytes> {
        let (described, present): (Option<Described>, Vec<u64>) = {
            let mut index = self.lock();
            let described = index.objects.get(key).and_then(|o| o.described.clone());
            (
                described,
                blocks.iter().copied().filter(|&b| index.touch(key, b)).collect(),
            )
        };
        let mut read = HashMap::new();
        let Some(described) = described else {
            return read;
        };
        for block in present {
            // A block evicted since, or damaged, is fetched again.
            let file = self.block_file(key, block);
            let len = described.block_len(block);
            if let Some(bytes) = crate::local_reads::cached_file(&file, len) {
                read.insert(block, bytes);
                continue;
            }
            match tokio::fs::read(file).await {
                Ok(bytes) if bytes.len() as u64 == len => {
                    read.insert(block, Bytes::from(bytes));
                }
                _ => {}
            }
        }
        read
    }

    /// Keeps `bytes` as block `block` of the object `key`.
    async fn keep(&self, key: &str, block: u64, bytes: Bytes) {
        let len = bytes.len() as u64;
        if len > self.capacity {
            return;
        }
        let dir = self.object_dir(key);
        if let Err(error) = write_atomically(&dir, &block.to_string(), bytes).await {
            tracing::warn!(%error, dir = %dir.display(), "cannot write to the segment cache");
            return;
        }
        let evicted = {
            let mut index = self.lock();
            let evicted = index.make_room(len, self.capacity);
            index.insert(key, block, len);
            evicted
        };
        self.delete_files(evicted);
        self.publish_size();
    }

    /// Keeps a whole object just written (its blocks that fit).
    async fn keep_object(&self, path: &Path, put: &PutResult, bytes: Bytes) {
        if bytes.is_empty() || bytes.len() as u64 > self.capacity {
            return;
        }
        let key = Self::key(path);
        let meta = ObjectMeta {
            location: path.clone(),
            last_modified: Utc::now(),
            size: bytes.len() as u64,
            e_tag: put.e_tag.clone(),
            version: put.version.clone(),
        };
        self.describe(&key, &meta).await;
        let described = Described::of(&meta);
        for block in 0..described.blocks() {
            let start = usize::try_from(block * BLOCK_BYTES).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(described.block_len(block)).unwrap_or(0));
            if let Some(piece) = (end <= bytes.len()).then(|| bytes.slice(start..end)) {
                self.keep(&key, block, piece).await;
            }
        }
    }

    /// Forgets the object at `path` and deletes its files.
    fn evict_object(&self, path: &Path) {
        let key = Self::key(path);
        if self.lock().remove_object(&key) {
            remove_dir_quietly(&self.object_dir(&key));
            self.publish_size();
        }
    }
}

async fn write_atomically(dir: &FsPath, name: &str, bytes: Bytes) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    let temporary = dir.join(format!("{name}{TEMPORARY_SUFFIX}"));
    tokio::fs::write(&temporary, &bytes).await?;
    tokio::fs::rename(&temporary, dir.join(name)).await
}

fn remove_quietly(path: &FsPath) {
    if let Err(error) = std::fs::remove_file(path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, path = %path.display(), "cannot remove a segment cache file");
    }
}

fn remove_dir_quietly(path: &FsPath) {
    if let Err(error) = std::fs::remove_dir_all(path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, path = %path.display(), "cannot remove a segment cache directory");
    }
}

/// An object store whose reads go through a [`SegmentCache`]; writes, lists and deletes go to
/// the store (a delete also evicts).
#[derive(Debug)]
pub struct CachedStore {
    store: Arc<dyn ObjectStore>,
    cache: Arc<SegmentCache>,
}

impl CachedStore {
    pub fn new(store: Arc<dyn ObjectStore>, cache: Arc<SegmentCache>) -> CachedStore {
        CachedStore { store, cache }
    }

    /// The bytes of `ranges` of the object at `location`, whose blocks come from the cache
    /// or, for the missing ones, from the store in as few requests as there are gaps.
    async fn read(&self, location: &Path, ranges: &[Range<u64>]) -> Result<(Described, Vec<Bytes>)> {
        let key = SegmentCache::key(location);
        let wanted = blocks_of(ranges);
        let mut blocks = self.cache.read_cached(&key, &wanted).await;
        let mut described = self.cache.described(&key);
        let hit: u64 = blocks.values().map(|b| b.len() as u64).sum();
        let missing: Vec<u64> = wanted.iter().copied().filter(|b| !blocks.contains_key(b)).collect();
        let mut fetched = 0u64;
        for run in runs(&missing) {
            let range = run.start * BLOCK_BYTES..run.end * BLOCK_BYTES;
            let result = self
                .store
                .get_opts(
                    location,
                    GetOptions {
                        range: Some(GetRange::Bounded(range.clone())),
                        ..GetOptions::default()
                    },
                )
                .await?;
            let meta = result.meta.clone();
            let got = result.range.clone();
            let bytes = result.bytes().await?;
            self.cache.describe(&key, &meta).await;
            let object = Described::of(&meta);
            fetched += bytes.len() as u64;
            for block in run {
                let start = block * BLOCK_BYTES;
                if start >= got.end {
                    break;
                }
                let from = usize::try_from(start - got.start).unwrap_or(usize::MAX);
                let to =
                    usize::try_from((start + object.block_len(block)).min(got.end) - got.start).unwrap_or(usize::MAX);
                let Some(piece) = (from <= to && to <= bytes.len()).then(|| bytes.slice(from..to)) else {
                    break;
                };
                if piece.len() as u64 == object.block_len(block) {
                    self.cache.keep(&key, block, piece.clone()).await;
                }
                blocks.insert(block, piece);
            }
            described = Some(object);
        }
        METRICS
            .storage_cache_read_bytes
            .get_or_create(&label("source", "cache"))
            .inc_by(hit);
        METRICS
            .storage_cache_read_bytes
            .get_or_create(&label("source", "store"))
            .inc_by(fetched);
        let described = match described {
            Some(d) => d,
            None => Described::of(&self.store.head(location).await?),
        };
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            out.push(slice(location, &described, &blocks, range)?);
        }
        Ok((described, out))
    }
}

/// The bytes of `range` from `blocks`, clamped to the object's end as a store clamps it.
fn slice(location: &Path, object: &Described, blocks: &HashMap<u64, Bytes>, range: &Range<u64>) -> Result<Bytes> {
    let end = range.end.min(object.size);
    if range.start > end || (range.start == end && range.end > range.start) {
        return Err(object_store::Error::Generic {
            store: "trawl-segment-cache",
            source: format!(
                "range {}..{} of {location} starts past its end ({} bytes)",
                range.start, range.end, object.size
            )
            .into(),
        });
    }
    let mut out = BytesMut::with_capacity(usize::try_from(end - range.start).unwrap_or(0));
    let mut at = range.start;
    while at < end {
        let block = at / BLOCK_BYTES;
        let bytes = blocks.get(&block).ok_or_else(|| object_store::Error::Generic {
            store: "trawl-segment-cache",
            source: format!("block {block} of {location} is missing").into(),
        })?;
        let offset = usize::try_from(at - block * BLOCK_BYTES).unwrap_or(usize::MAX);
        let take = usize::try_from((end - at).min(BLOCK_BYTES - (at - block * BLOCK_BYTES))).unwrap_or(usize::MAX);
        let piece = bytes
            .get(offset..offset.saturating_add(take).min(bytes.len()))
            .filter(|p| !p.is_empty())
            .ok_or_else(|| object_store::Error::Generic {
                store: "trawl-segment-cache",
                source: format!("block {block} of {location} is short").into(),
            })?;
        out.extend_from_slice(piece);
        at += piece.len() as u64;
    }
    Ok(out.freeze())
}

/// The indexes of the blocks that hold `ranges`.
fn blocks_of(ranges: &[Range<u64>]) -> BTreeSet<u64> {
    ranges
        .iter()
        .filter(|r| r.end > r.start)
        .flat_map(|r| r.start / BLOCK_BYTES..=(r.end - 1) / BLOCK_BYTES)
        .collect()
}

/// Sorted block indexes as runs of consecutive ones.
fn runs(blocks: &[u64]) -> Vec<Range<u64>> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for &block in blocks {
        match runs.last_mut() {
            Some(run) if run.end == block => run.end += 1,
            _ => runs.push(block..block + 1),
        }
    }
    runs
}

/// Blocks one fetch of a hint asks for at most ([`CachedStore`]'s [`ReadHint`]).
const HINT_FETCH_BLOCKS: u64 = 4;
/// Fetches of one hint in flight at once.
const HINT_FETCHES: usize = 4;

/// The blocks of hinted ranges that the cache lacks are fetched and kept in the background, a
/// few requests at a time, so that a cold scan over object storage does not wait for one
/// request after another. A read that wants a block while its hinted fetch is in flight
/// fetches it too (each block is fetched at most twice); a failed fetch is only a missed hint.
/// One hint fetches at most an eighth of the cache's size.
impl ReadHint for CachedStore {
    fn will_read(&self, location: &Path, ranges: Vec<Range<u64>>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let key = SegmentCache::key(location);
        let wanted = blocks_of(&ranges);
        let mut missing: Vec<u64> = {
            let index = self.cache.lock();
            let cached = index.objects.get(&key);
            wanted
                .into_iter()
                .filter(|block| !cached.is_some_and(|object| object.blocks.contains_key(block)))
                .collect()
        };
        // Fetched ahead, a small cache's blocks would push out those the scan reads now.
        missing.truncate(usize::try_from(self.cache.capacity / 8 / BLOCK_BYTES).unwrap_or(usize::MAX));
        if missing.is_empty() {
            return;
        }
        let store = CachedStore::new(Arc::clone(&self.store), Arc::clone(&self.cache));
        let location = location.clone();
        runtime.spawn(async move {
            let fetches: Vec<Range<u64>> = runs(&missing)
                .into_iter()
                .flat_map(|run| {
                    (run.start..run.end)
                        .step_by(HINT_FETCH_BLOCKS as usize)
                        .map(move |start| start * BLOCK_BYTES..(start + HINT_FETCH_BLOCKS).min(run.end) * BLOCK_BYTES)
                })
                .collect();
            let store = &store;
            let location = &location;
            futures::stream::iter(fetches)
                .map(|range| async move { store.read(location, std::slice::from_ref(&range)).await })
                .buffer_unordered(HINT_FETCHES)
                .for_each(|fetched| async move {
                    if let Err(error) = fetched {
                        tracing::debug!(%error, %location, "a hinted read ahead of the segment cache failed");
                    }
                })
                .await;
        });
    }
}

impl fmt::Display for CachedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cached({}, {})", self.store, self.cache.dir.display())
    }
}

#[async_trait]
impl ObjectStore for CachedStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        // A path is written once; a stale copy of an earlier object there must not be served.
        self.cache.evict_object(location);
        let bytes: Bytes = payload.clone().into();
        let result = self.store.put_opts(location, payload, opts).await?;
        // New segments are what queries read most: keep them from the start.
        self.cache.keep_object(location, &result, bytes).await;
        Ok(result)
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.cache.evict_object(location);
        self.store.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let plain = options.if_match.is_none()
            && options.if_none_match.is_none()
            && options.if_modified_since.is_none()
            && options.if_unmodified_since.is_none()
            && options.version.is_none();
        let key = SegmentCache::key(location);
        if options.head && plain {
            if let Some(described) = self.cache.described(&key) {
                return Ok(GetResult {
                    payload: GetResultPayload::Stream(futures::stream::empty().boxed()),
                    meta: described.meta(),
                    range: 0..0,
                    attributes: Attributes::default(),
                });
            }
            return self.store.get_opts(location, options).await;
        }
        // A read whose end depends on the object's size needs the size first.
        let size = self.cache.described(&key).map(|d| d.size);
        let range = match (&options.range, size) {
            _ if !plain || options.head => None,
            (Some(GetRange::Bounded(range)), _) => Some(range.clone()),
            (None, Some(size)) => Some(0..size),
            (Some(GetRange::Offset(from)), Some(size)) => Some(*from..size),
            (Some(GetRange::Suffix(n)), Some(size)) => Some(size.saturating_sub(*n)..size),
            _ => None,
        };
        let Some(range) = range.filter(|r| r.end > r.start) else {
            return self.store.get_opts(location, options).await;
        };
        let (described, mut bytes) = self.read(location, std::slice::from_ref(&range)).await?;
        let bytes = bytes.pop().unwrap_or_default();
        let got = range.start..range.start + bytes.len() as u64;
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::once(async move { Ok(bytes) }).boxed()),
            meta: described.meta(),
            range: got,
            attributes: Attributes::default(),
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if ranges.iter().all(|r| r.end <= r.start) {
            return Ok(ranges.iter().map(|_| Bytes::new()).collect());
        }
        Ok(self.read(location, ranges).await?.1)
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        // Evicted before the store deletes, so no read after the delete can find the blocks.
        let cache = Arc::clone(&self.cache);
        let locations = locations
            .map(move |location| {
                if let Ok(path) = &location {
                    cache.evict_object(path);
                }
                location
            })
            .boxed();
        self.store.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.store.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, Result<ObjectMeta>> {
        self.store.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.store.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.cache.evict_object(to);
        self.store.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.cache.evict_object(from);
        self.cache.evict_object(to);
        self.store.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests;
