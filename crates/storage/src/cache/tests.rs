//! The segment cache over an in-memory store: hits, restarts, eviction, deletes, damage.
use object_store::memory::InMemory;

use super::*;

type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// An object of `len` bytes whose every byte says where it is.
fn content(len: u64) -> Bytes {
    (0..len).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into()
}

async fn put(store: &dyn ObjectStore, path: &str, bytes: Bytes) -> Result<PutResult> {
    store.put(&Path::from(path), bytes.into()).await
}

struct Setup {
    dir: tempfile::TempDir,
    backend: Arc<InMemory>,
    cache: Arc<SegmentCache>,
    store: CachedStore,
}

fn setup(capacity: u64) -> std::result::Result<Setup, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let backend = Arc::new(InMemory::new());
    let cache = Arc::new(SegmentCache::open(dir.path(), capacity)?);
    let store = CachedStore::new(backend.clone(), Arc::clone(&cache));
    Ok(Setup {
        dir,
        backend,
        cache,
        store,
    })
}

#[tokio::test]
async fn reads_are_served_from_disk_after_the_first_and_after_a_restart() -> TestResult {
    let s = setup(64 * BLOCK_BYTES)?;
    let bytes = content(2 * BLOCK_BYTES + BLOCK_BYTES / 2);
    let path = Path::from("db/t/a.parquet");
    put(s.backend.as_ref(), "db/t/a.parquet", bytes.clone()).await?;
    let across = BLOCK_BYTES - 10..BLOCK_BYTES + 10;
    let tail = 2 * BLOCK_BYTES..bytes.len() as u64 + 100;
    assert_eq!(
        s.store.get_range(&path, across.clone()).await?,
        bytes.slice(as_usize(&across))
    );
    let ranges = vec![0..5, tail.start..bytes.len() as u64];
    assert_eq!(
        s.store.get_ranges(&path, &ranges).await?,
        vec![bytes.slice(0..5), bytes.slice(as_usize(&ranges[1]))]
    );
    // A range past the end is clamped, as the store clamps it.
    let clamped = s.store.get_range(&path, tail.clone()).await?;
    assert_eq!(clamped, bytes.slice(as_usize(&(tail.start..bytes.len() as u64))));
    assert_eq!(s.cache.bytes(), bytes.len() as u64);

    // Gone from the store: what was read is still served, the rest is not.
    s.backend.delete(&path).await?;
    assert_eq!(
        s.store.get_range(&path, across.clone()).await?,
        bytes.slice(as_usize(&across))
    );
    assert_eq!(s.store.head(&path).await?.size, bytes.len() as u64);
    let whole = s.store.get(&path).await?.bytes().await?;
    assert_eq!(whole, bytes);

    // A new process over the same directory serves the same blocks without the store.
    drop(s.store);
    drop(s.cache);
    let cache = Arc::new(SegmentCache::open(s.dir.path(), 64 * BLOCK_BYTES)?);
    assert_eq!(cache.bytes(), bytes.len() as u64);
    let empty = Arc::new(InMemory::new());
    let store = CachedStore::new(empty, cache);
    assert_eq!(
        store.get_range(&path, across.clone()).await?,
        bytes.slice(as_usize(&across))
    );
    let suffix = store
        .get_opts(
            &path,
            GetOptions {
                range: Some(GetRange::Suffix(8)),
                ..GetOptions::default()
            },
        )
        .await?
        .bytes()
        .await?;
    assert_eq!(suffix, bytes.slice(bytes.len() - 8..));
    Ok(())
}

#[tokio::test]
async fn the_least_recently_read_blocks_are_evicted_to_stay_within_the_size() -> TestResult {
    let s = setup(2 * BLOCK_BYTES)?;
    for name in ["a", "b", "c"] {
        put(s.backend.as_ref(), name, content(BLOCK_BYTES)).await?;
    }
    for name in ["a", "b", "a", "c"] {
        s.store.get_range(&Path::from(name), 0..10).await?;
    }
    assert!(s.cache.bytes() <= 2 * BLOCK_BYTES);
    for name in ["a", "b", "c"] {
        s.backend.delete(&Path::from(name)).await?;
    }
    // `b` was read least recently when `c` came in.
    assert!(s.store.get_range(&Path::from("a"), 0..10).await.is_ok());
    assert!(s.store.get_range(&Path::from("c"), 0..10).await.is_ok());
    assert!(s.store.get_range(&Path::from("b"), 0..10).await.is_err());
    assert!(!s.dir.path().join(SegmentCache::key(&Path::from("b"))).exists());
    Ok(())
}

#[tokio::test]
async fn a_deleted_object_is_never_served_and_damaged_blocks_are_fetched_again() -> TestResult {
    let s = setup(64 * BLOCK_BYTES)?;
    let path = Path::from("db/t/d.parquet");
    put(s.backend.as_ref(), "db/t/d.parquet", content(100)).await?;
    assert_eq!(s.store.get_range(&path, 0..100).await?, content(100));
    s.store.delete(&path).await?;
    assert!(matches!(
        s.store.get_range(&path, 0..100).await,
        Err(object_store::Error::NotFound { .. })
    ));
    assert_eq!(s.cache.bytes(), 0);

    // A block file cut short on disk is not served: it is fetched again.
    put(s.backend.as_ref(), "db/t/d.parquet", content(100)).await?;
    s.store.get_range(&path, 0..100).await?;
    let block = s.dir.path().join(SegmentCache::key(&path)).join("0");
    std::fs::write(&block, b"short")?;
    assert_eq!(s.store.get_range(&path, 0..100).await?, content(100));
    assert_eq!(std::fs::read(&block)?.len(), 100);
    // And at start-up, a block of the wrong length and stray files are removed.
    std::fs::write(&block, b"short")?;
    std::fs::write(s.dir.path().join("stray"), b"x")?;
    let reopened = SegmentCache::open(s.dir.path(), 64 * BLOCK_BYTES)?;
    assert_eq!(reopened.bytes(), 0);
    assert!(!block.exists());
    assert!(!s.dir.path().join("stray").exists());
    Ok(())
}

#[tokio::test]
async fn an_object_written_through_the_cache_is_kept() -> TestResult {
    let s = setup(64 * BLOCK_BYTES)?;
    let path = Path::from("db/t/new.parquet");
    let bytes = content(BLOCK_BYTES + 7);
    put(&s.store, "db/t/new.parquet", bytes.clone()).await?;
    assert_eq!(s.cache.bytes(), bytes.len() as u64);
    s.backend.delete(&path).await?;
    assert_eq!(s.store.get(&path).await?.bytes().await?, bytes);
    Ok(())
}

fn as_usize(range: &Range<u64>) -> Range<usize> {
    range.start as usize..range.end as usize
}

#[tokio::test]
async fn hinted_blocks_are_fetched_ahead_and_kept() -> TestResult {
    let s = setup(64 * BLOCK_BYTES)?;
    let bytes = content(6 * BLOCK_BYTES + 100);
    let path = Path::from("db/t/hinted.parquet");
    put(s.backend.as_ref(), "db/t/hinted.parquet", bytes.clone()).await?;
    // Blocks 0, 2, 3 and the short last one (6); not 1, 4 or 5.
    let hinted = vec![
        10..20,
        2 * BLOCK_BYTES + 5..4 * BLOCK_BYTES - 5,
        6 * BLOCK_BYTES..6 * BLOCK_BYTES + 100,
    ];
    s.store.will_read(&path, hinted.clone());
    let want = 3 * BLOCK_BYTES + 100;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while s.cache.bytes() < want && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(s.cache.bytes(), want);
    // Gone from the store: the hinted ranges are served from the cache, the others are not.
    s.backend.delete(&path).await?;
    let got = s.store.get_ranges(&path, &hinted).await?;
    for (range, got) in hinted.iter().zip(&got) {
        assert_eq!(got, &bytes.slice(as_usize(range)));
    }
    assert!(s.store.get_range(&path, BLOCK_BYTES..BLOCK_BYTES + 1).await.is_err());
    // Hints of what is cached, of nothing, or of a missing object change nothing.
    s.store.will_read(&path, hinted.clone());
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 10..5;
    s.store.will_read(&path, vec![backwards]);
    s.store.will_read(&Path::from("db/t/missing.parquet"), hinted.clone());
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(s.cache.bytes(), want);
    Ok(())
}
