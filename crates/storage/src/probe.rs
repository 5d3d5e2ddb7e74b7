//! Segments a query cannot read are left out of it and reported, not fatal.
//!
//! Before a scan is planned, the footer of every segment it would read is fetched (through
//! DataFusion's footer cache, which the scan's reader shares, so the scan does not fetch it
//! again) and checked: the object exists, its footer and page index are well-formed Thrift
//! ([`crate::thrift_check`]) and decode, its Arrow schema decodes, and every column chunk lies
//! inside the file. A segment that fails is *unreadable*: the query goes on without it and names it
//! in its partial failures (`ScanCounters::unreadable`). A store that cannot be reached is a
//! different thing — every segment would fail alike — and fails the query, so the caller
//! learns the store is unavailable instead of getting an empty answer.
//!
//! A segment never changes, so a decoded footer found sound is not checked again while it
//! stays in the cache ([`SOUND`]): decoding the Arrow schema of every segment for every query
//! took a sixth of the CPU of a count answered from the footers.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::catalog::Session;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::metadata::ParquetMetaData;
use futures::StreamExt;
use object_store::ObjectMeta;
use object_store::path::Path as ObjectPath;
use trawl_catalog::SegmentMeta;

use crate::checked::SegmentDamage;
use crate::store::SegmentStore;

/// Footers fetched at once.
const CONCURRENT_FETCHES: usize = 16;

/// The decoded footers found sound, by segment path: the address of the decoded footer (a
/// footer fetched again, after the cache dropped it, is checked again).
static SOUND: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Mutex::default);

/// Footers remembered as sound at most (about 100 bytes each); past it the memory starts over.
const MOST_SOUND: usize = 1 << 20;

/// [`problem_in`], skipped for a decoded footer found sound before.
fn checked_problem(path: &str, footer: &Arc<ParquetMetaData>, bytes: u64) -> Option<String> {
    let address = Arc::as_ptr(footer) as usize;
    if SOUND.lock().is_ok_and(|sound| sound.get(path) == Some(&address)) {
        return None;
    }
    let problem = problem_in(footer, bytes);
    if problem.is_none()
        && let Ok(mut sound) = SOUND.lock()
    {
        if sound.len() >= MOST_SOUND {
            sound.clear();
        }
        sound.insert(path.to_string(), address);
    }
    problem
}

/// A segment left out of a query, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableSegment {
    pub id: String,
    pub message: String,
}

/// The footer of `segment`, from the cache when an earlier query or scan fetched it. The
/// object's identity is the one `PartitionedFile::new` gives it, so the scan finds the entry.
pub(crate) async fn footer(state: &dyn Session, segment: &SegmentMeta) -> DfResult<Arc<ParquetMetaData>> {
    let url = SegmentStore::url().map_err(|e| DataFusionError::External(Box::new(e)))?;
    let store = state.runtime_env().object_store(url)?;
    let object = ObjectMeta {
        location: ObjectPath::from(segment.path.as_str()),
        last_modified: chrono::DateTime::from_timestamp_nanos(0),
        size: segment.bytes,
        e_tag: None,
        version: None,
    };
    let cache = state.runtime_env().cache_manager.get_file_metadata_cache();
    crate::checked::checked_footer(store.as_ref(), &object, Some(cache), None).await
}

/// `segments` split into the readable ones (in their order) and the unreadable ones; an
/// error when the store itself fails.
pub(crate) async fn readable(
    state: &dyn Session,
    segments: Vec<SegmentMeta>,
) -> DfResult<(Vec<SegmentMeta>, Vec<UnreadableSegment>)> {
    let checked: Vec<(SegmentMeta, DfResult<Option<String>>)> = futures::stream::iter(segments)
        .map(|segment| async move {
            let problem = match footer(state, &segment).await {
                Ok(footer) => Ok(checked_problem(&segment.path, &footer, segment.bytes)),
                Err(error) => unreadable_because(error),
            };
            (segment, problem)
        })
        .buffered(CONCURRENT_FETCHES)
        .collect()
        .await;
    let mut readable = Vec::with_capacity(checked.len());
    let mut unreadable = Vec::new();
    for (segment, problem) in checked {
        match problem? {
            None => readable.push(segment),
            Some(message) => {
                tracing::warn!(segment = %segment.id, path = %segment.path, %message, "a query leaves out an unreadable segment");
                unreadable.push(UnreadableSegment {
                    id: segment.id,
                    message,
                });
            }
        }
    }
    Ok((readable, unreadable))
}

/// Why a failed footer fetch makes the segment unreadable, or the error itself when the store
/// failed (the query then fails as unavailable).
fn unreadable_because(error: DataFusionError) -> DfResult<Option<String>> {
    match find_cause::<object_store::Error>(&error) {
        Some(object_store::Error::NotFound { .. }) => Ok(Some("the segment's object is missing".to_string())),
        Some(_) => Err(error),
        None if let Some(damage) = find_cause::<SegmentDamage>(&error) => {
            Ok(Some(format!("the segment cannot be read: {damage}")))
        }
        // DataFusion formats some store errors into text instead of keeping them as a source.
        None if error.to_string().contains("Object Store error") => Err(error),
        None => Ok(Some(format!(
            "the segment cannot be read: its footer does not decode: {error}"
        ))),
    }
}

/// The first error of type `T` among `error`'s causes: where DataFusion keeps a store's,
/// catalog's or Parquet reader's own error (directly, as an external error, or inside the
/// Parquet reader's external error when it fetched a footer or pages).
pub fn find_cause<T: std::error::Error + 'static>(error: &DataFusionError) -> Option<&T> {
    error.iter().find_map(|cause| match cause {
        DataFusionError::ObjectStore(e) => (e.as_ref() as &(dyn std::error::Error + 'static)).downcast_ref::<T>(),
        DataFusionError::External(inner) => inner.downcast_ref::<T>(),
        DataFusionError::ParquetError(parquet) => match parquet.as_ref() {
            ParquetError::External(inner) => inner.downcast_ref::<T>(),
            _ => None,
        },
        // A scan's error, shared among the partitions that met it.
        DataFusionError::Shared(inner) => find_cause::<T>(inner),
        _ => None,
    })
}

/// What is wrong with a decoded footer of a file of `bytes` bytes, if anything.
fn problem_in(footer: &Arc<ParquetMetaData>, bytes: u64) -> Option<String> {
    for group in footer.row_groups() {
        for column in group.columns() {
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset());
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(column.compressed_size()).ok())
                .and_then(|(start, length)| start.checked_add(length));
            if end.is_none_or(|end| end > bytes) {
                return Some(format!(
                    "the segment cannot be read: its column chunk '{}' lies outside the file",
                    column.column_path().string()
                ));
            }
        }
    }
    // The Arrow schema embedded in the footer is decoded by the scan; a damaged one can
    // panic the decoder, so it is tried here first.
    let decoded =
        std::panic::catch_unwind(|| ArrowReaderMetadata::try_new(Arc::clone(footer), ArrowReaderOptions::new()));
    match decoded {
        Ok(Ok(_)) => None,
        Ok(Err(error)) => Some(format!(
            "the segment cannot be read: its schema does not decode: {error}"
        )),
        Err(_) => Some("the segment cannot be read: its schema does not decode".to_string()),
    }
}

/// What [`warm_footers`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Warmed {
    pub segments: usize,
    /// Memory the footers take in the cache.
    pub bytes: usize,
    /// Token indexes read into their cache, and the memory they take.
    pub indexes: usize,
    pub index_bytes: usize,
}

/// Reads the footers of `segments`, in their order, into the footer cache the scans share,
/// until their size reaches half the cache (the rest stays for the queries' own); then the
/// token indexes of the same segments, in the same order, until they fill half the index
/// cache. Each footer is checked as a query would check it. A segment whose footer or index
/// cannot be read is passed over: the query that reads it reports it (or reads it without its
/// index).
pub async fn warm_footers(state: &dyn Session, segments: Vec<SegmentMeta>) -> Warmed {
    let budget = state
        .runtime_env()
        .cache_manager
        .get_file_metadata_cache()
        .cache_limit()
        / 2;
    let mut warmed = Warmed::default();
    let mut read = Vec::new();
    {
        let mut footers = futures::stream::iter(segments)
            .map(|segment| async move {
                let fetched = footer(state, &segment).await;
                (segment, fetched)
            })
            .buffered(CONCURRENT_FETCHES);
        while let Some((segment, fetched)) = footers.next().await {
            if let Ok(footer) = fetched {
                // Checked now, so the first query does not check it again.
                let _ = checked_problem(&segment.path, &footer, segment.bytes);
                warmed.segments += 1;
                warmed.bytes += footer.memory_size();
                read.push((segment, footer));
            }
            if warmed.bytes >= budget {
                break;
            }
        }
    }
    let mut indexes = futures::stream::iter(read)
        .map(|(segment, footer)| async move { crate::tokens::warm_index(state, &segment, &footer).await })
        .buffered(CONCURRENT_FETCHES);
    while let Some(size) = indexes.next().await {
        if let Some(size) = size {
            warmed.indexes += 1;
            warmed.index_bytes += size;
        }
        if warmed.index_bytes >= crate::tokens::CACHE_BYTES / 2 {
            break;
        }
    }
    warmed
}
