//! The token index: for every block of [`BLOCK_ROWS`] rows of a segment and every string and
//! dynamic column, a split-block bloom filter (Parquet's [`Sbbf`]) over the column's terms as `has`
//! sees them ([`trawl_functions::tokenizer`]), ASCII-folded so one filter serves `has` and
//! `has_cs`.
//!
//! The segment encoder writes it into the Parquet file itself, after the last chunk and
//! before the footer (`ArrowWriter::write_all`: other readers skip such bytes), and records
//! where in the footer's key-value entry [`INDEX_KEY`] (`"<offset>:<length>"`). A segment
//! written before the index existed has no entry and is read as before; a merge writes the
//! index of its output anew.
//!
//! A scan turns its filters into a [`Need`] (`has`, `has_cs`, `==`, `in`, `has_any`,
//! `has_all`, `search` on string columns; `!has` and other conditions cannot prune) and asks
//! each segment's index which blocks may hold a passing row ([`chunk_rows`]). The others are
//! not read: a chunk whose blocks all fail is skipped, a chunk with some is read as a row
//! selection, and the reader fetches only the pages of the selected rows (the page index
//! tells it where they are). The lookup runs where the scan runs, on the worker in a
//! distributed query. Parsed indexes are kept in a cache of bounded size ([`CACHE_BYTES`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};

use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::Session;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Expr, Operator};
use datafusion::parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use datafusion::parquet::bloom_filter::Sbbf;
use datafusion::parquet::file::metadata::ParquetMetaData;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;
use trawl_catalog::SegmentMeta;
use trawl_functions::tokenizer::terms;

use crate::chunks::Chunks;
use crate::store::SegmentStore;

/// Rows per block: the unit the index can skip. A divisor of `CHUNK_ROWS`, so blocks do not
/// straddle chunks.
pub const BLOCK_ROWS: usize = 1024;

/// The footer's key-value entry that locates the index.
pub const INDEX_KEY: &str = "trawl.tokens";

/// Target false-positive rate of a block's filter. At 1 % a rare term still matched 2.4 % of
/// the benchmark's blocks (100 true, 236 false of 9,766): each false block costs a page read
/// of every column the query needs, so the filters are sized for 0.2 % (about 40 % larger).
const FPP: f64 = 0.002;

const MAGIC: &[u8; 4] = b"TRTX";
const VERSION: u8 = 1;

/// Largest index a reader accepts, whatever a damaged footer claims.
const MAX_INDEX_BYTES: u64 = 1 << 30;

/// Parsed indexes kept in memory, in bytes of filters.
pub const CACHE_BYTES: usize = 256 << 20;

mod write;
pub(crate) use write::TokenIndexBuilder;

// ---------------------------------------------------------------------------------------------
// Reading

/// A segment's parsed index.
#[derive(Debug)]
pub struct TokenIndex {
    block_rows: usize,
    rows: u64,
    /// Per indexed column, one filter per block (`None`: the block has no terms).
    columns: HashMap<String, Vec<Option<Sbbf>>>,
    bytes: usize,
}

impl TokenIndex {
    /// Parses serialized index bytes; an error says what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<TokenIndex, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != MAGIC {
            return Err("not a token index".into());
        }
        let version = r.take(1)?[0];
        if version != VERSION {
            return Err(format!("token index version {version} is not known"));
        }
        let block_rows = r.u32()? as usize;
        if block_rows == 0 {
            return Err("token index blocks of 0 rows".into());
        }
        let rows = r.u64()?;
        let expected_blocks = rows.div_ceil(block_rows as u64);
        let column_count = r.u32()?;
        let mut columns = HashMap::new();
        for _ in 0..column_count {
            let name_len = r.u32()? as usize;
            let name = std::str::from_utf8(r.take(name_len)?)
                .map_err(|_| "a column name is not UTF-8".to_string())?
                .to_string();
            let block_count = u64::from(r.u32()?);
            if block_count != expected_blocks {
                return Err(format!(
                    "column {name} has {block_count} blocks, {rows} rows need {expected_blocks}"
                ));
            }
            let blocks_len = usize::try_from(r.u64()?).map_err(|_| "blocks too long".to_string())?;
            let mut blocks = Reader {
                bytes: r.take(blocks_len)?,
                at: 0,
            };
            let mut filters = Vec::with_capacity(block_count as usize);
            for _ in 0..block_count {
                let len = blocks.u32()? as usize;
                if !len.is_multiple_of(32) {
                    return Err(format!("a filter of column {name} is {len} bytes, not whole blocks"));
                }
                let bitset = blocks.take(len)?;
                filters.push((len > 0).then(|| Sbbf::new(bitset)));
            }
            if blocks.at != blocks.bytes.len() {
                return Err(format!("column {name} has bytes after its last filter"));
            }
            columns.insert(name, filters);
        }
        Ok(TokenIndex {
            block_rows,
            rows,
            columns,
            bytes: bytes.len(),
        })
    }

    /// Whether block `block` may hold a row of `column` with every one of `terms` (lowercased).
    /// A column without an index may.
    fn may_hold(&self, column: &str, block: usize, terms: &[Vec<u8>]) -> bool {
        self.may_hold_counted(column, block, terms, &mut 0)
    }

    /// [`TokenIndex::may_hold`], adding the bytes of the filter it evaluated to `evaluated`.
    fn may_hold_counted(&self, column: &str, block: usize, terms: &[Vec<u8>], evaluated: &mut u64) -> bool {
        let Some(filters) = self.columns.get(column) else {
            return true;
        };
        match filters.get(block) {
            Some(Some(filter)) => {
                *evaluated += filter.num_blocks() as u64 * 32;
                terms.iter().all(|term| filter.check(&term[..]))
            }
            Some(None) => false,
            None => true,
        }
    }

    /// Whether block `block` may hold a row whose `column` has `term` (any case): what a
    /// query asks of the index, for reports of its false-positive rate.
    pub fn may_hold_term(&self, column: &str, block: usize, term: &str) -> bool {
        self.may_hold(column, block, &[term.to_ascii_lowercase().into_bytes()])
    }

    /// The indexed columns, with the bytes of their filters and how many of their blocks
    /// hold terms.
    pub fn columns(&self) -> Vec<(String, usize, usize)> {
        let mut columns: Vec<(String, usize, usize)> = self
            .columns
            .iter()
            .map(|(name, filters)| {
                let bytes = filters.iter().flatten().map(|f| f.num_blocks() * 32).sum();
                (name.clone(), bytes, filters.iter().flatten().count())
            })
            .collect();
        columns.sort();
        columns
    }

    /// The number of blocks.
    pub fn blocks(&self) -> usize {
        usize::try_from(self.rows.div_ceil(self.block_rows as u64)).unwrap_or(usize::MAX)
    }

    /// Bytes of the serialized index.
    pub fn size(&self) -> usize {
        self.bytes
    }

    /// Whether `column` is indexed.
    pub fn has_column(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }
}

/// A bounds-checked reader of little-endian fields.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.bytes.len());
        let Some(end) = end else {
            return Err("the token index is cut short".into());
        };
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut raw = [0u8; 4];
        raw.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(raw))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(raw))
    }
}

/// Where the footer says the index is: `(offset, length)`.
pub fn location(footer: &ParquetMetaData, file_bytes: u64) -> Option<(u64, u64)> {
    let entries = footer.file_metadata().key_value_metadata()?;
    let value = entries.iter().find(|kv| kv.key == INDEX_KEY)?.value.as_deref()?;
    let (offset, length) = value.split_once(':')?;
    let (offset, length) = (offset.parse::<u64>().ok()?, length.parse::<u64>().ok()?);
    let end = offset.checked_add(length)?;
    (end <= file_bytes && length <= MAX_INDEX_BYTES).then_some((offset, length))
}

/// Parsed indexes by segment id, oldest first out when over [`CACHE_BYTES`].
#[derive(Default)]
struct IndexCache {
    entries: HashMap<String, Arc<TokenIndex>>,
    order: VecDeque<String>,
    bytes: usize,
}

static CACHE: LazyLock<Mutex<IndexCache>> = LazyLock::new(Mutex::default);

impl IndexCache {
    fn insert(&mut self, id: &str, index: Arc<TokenIndex>) {
        if self.entries.contains_key(id) || index.size() > CACHE_BYTES {
            return;
        }
        while self.bytes + index.size() > CACHE_BYTES {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(evicted) = self.entries.remove(&oldest) {
                self.bytes -= evicted.size();
            }
        }
        self.bytes += index.size();
        self.order.push_back(id.to_string());
        self.entries.insert(id.to_string(), index);
    }
}

/// The index of `segment` (whose footer is `footer`), from the cache or the store; `None` when
/// the segment has none or it cannot be read (the scan then reads every block: the index
/// only ever saves work).
async fn index_of(state: &dyn Session, segment: &SegmentMeta, footer: &ParquetMetaData) -> Option<Arc<TokenIndex>> {
    if let Some(index) = CACHE
        .lock()
        .ok()
        .and_then(|cache| cache.entries.get(&segment.id).cloned())
    {
        return Some(index);
    }
    let (offset, length) = location(footer, segment.bytes)?;
    let url = SegmentStore::url().ok()?;
    let store = state.runtime_env().object_store(url).ok()?;
    let path = ObjectPath::from(segment.path.as_str());
    let bytes = match store.get_range(&path, offset..offset + length).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(segment = %segment.id, %error, "the token index cannot be read; the scan reads every block");
            return None;
        }
    };
    let index = match TokenIndex::parse(&bytes) {
        Ok(index) => Arc::new(index),
        Err(message) => {
            tracing::warn!(segment = %segment.id, %message, "the token index is damaged; the scan reads every block");
            return None;
        }
    };
    if index.rows != segment.rows {
        tracing::warn!(segment = %segment.id, "the token index does not match the segment's rows; it is not used");
        return None;
    }
    if let Ok(mut cache) = CACHE.lock() {
        cache.insert(&segment.id, Arc::clone(&index));
    }
    Some(index)
}

/// Reads the index of `segment` into the cache (start-up warming); the memory it takes, or
/// `None` when the segment has none or it cannot be read.
pub(crate) async fn warm_index(state: &dyn Session, segment: &SegmentMeta, footer: &ParquetMetaData) -> Option<usize> {
    index_of(state, segment, footer).await.map(|index| index.size())
}

// ---------------------------------------------------------------------------------------------
// Asking

/// What a passing row's string columns must hold, as far as the index can tell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Need {
    /// `column` holds every one of `terms` (lowercased) as whole terms.
    Terms {
        column: String,
        terms: Vec<Vec<u8>>,
    },
    All(Vec<Need>),
    Any(Vec<Need>),
}

impl Need {
    /// What the conjunction of `filters` needs; `None` when the index cannot tell.
    pub(crate) fn of_filters(filters: &[Expr]) -> Option<Need> {
        Need::all(filters.iter().filter_map(need_of).collect())
    }

    /// The conjunction of `needs` (those the index cannot tell are already left out).
    fn all(mut needs: Vec<Need>) -> Option<Need> {
        match needs.len() {
            0 => None,
            1 => needs.pop(),
            _ => Some(Need::All(needs)),
        }
    }

    #[cfg(test)]
    fn may_match(&self, index: &TokenIndex, block: usize) -> bool {
        self.may_match_counted(index, block, &mut 0)
    }

    /// Whether block `block` may hold a passing row, adding the bytes of the filters it
    /// evaluated to `evaluated` (a filter evaluated for two conditions counts twice).
    fn may_match_counted(&self, index: &TokenIndex, block: usize, evaluated: &mut u64) -> bool {
        match self {
            Need::Terms { column, terms } => index.may_hold_counted(column, block, terms, evaluated),
            Need::All(needs) => needs.iter().all(|n| n.may_match_counted(index, block, evaluated)),
            Need::Any(needs) => needs.iter().any(|n| n.may_match_counted(index, block, evaluated)),
        }
    }

    /// Whether the index of a segment can say anything for this need.
    fn uses(&self, index: &TokenIndex) -> bool {
        match self {
            Need::Terms { column, .. } => index.has_column(column),
            Need::All(needs) => needs.iter().any(|n| n.uses(index)),
            Need::Any(needs) => needs.iter().all(|n| n.uses(index)),
        }
    }
}

/// The need of one filter, when the index can tell.
fn need_of(expr: &Expr) -> Option<Need> {
    match expr {
        Expr::Alias(alias) => need_of(&alias.expr),
        Expr::BinaryExpr(binary) => match binary.op {
            Operator::And => Need::all(
                [&binary.left, &binary.right]
                    .into_iter()
                    .filter_map(|e| need_of(e))
                    .collect(),
            ),
            Operator::Or => Some(Need::Any(vec![need_of(&binary.left)?, need_of(&binary.right)?])),
            Operator::Eq => match (column_of(&binary.left), column_of(&binary.right)) {
                (Some(column), None) => terms_need(column, string_of(&binary.right)?),
                (None, Some(column)) => terms_need(column, string_of(&binary.left)?),
                _ => None,
            },
            _ => None,
        },
        Expr::ScalarFunction(call) if matches!(call.name(), "kql_has" | "kql_has_cs") => match call.args.as_slice() {
            [hay, needle] => terms_need(column_of(hay)?, string_of(needle)?),
            _ => None,
        },
        Expr::InList(list) if !list.negated => {
            let column = column_of(&list.expr)?;
            let any = list
                .list
                .iter()
                .map(|item| terms_need(column, string_of(item)?))
                .collect::<Option<Vec<Need>>>()?;
            Some(Need::Any(any))
        }
        _ => None,
    }
}

fn terms_need(column: &str, text: &str) -> Option<Need> {
    let terms: Vec<Vec<u8>> = terms(text).map(|t| t.to_ascii_lowercase().into_bytes()).collect();
    (!terms.is_empty()).then(|| Need::Terms {
        column: column.to_string(),
        terms,
    })
}

/// The column `expr` reads unchanged (through casts between string types).
fn column_of(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Column(column) => Some(column.name()),
        Expr::Cast(cast) if is_string(cast.field.data_type()) => column_of(&cast.expr),
        Expr::TryCast(cast) if is_string(cast.field.data_type()) => column_of(&cast.expr),
        _ => None,
    }
}

fn string_of(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Literal(
            ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s)),
            _,
        ) => Some(s),
        Expr::Cast(cast) if is_string(cast.field.data_type()) => string_of(&cast.expr),
        _ => None,
    }
}

fn is_string(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}

/// The rows of one chunk that may pass.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChunkRows {
    None,
    All,
    Some(RowSelection),
}

/// The rows of each chunk of `segment` that may pass `need`, by its token index, and the
/// bytes of the index's filters evaluated; `None` when the segment has no index that can tell.
pub(crate) async fn chunk_rows(
    state: &dyn Session,
    segment: &SegmentMeta,
    footer: &ParquetMetaData,
    need: &Need,
) -> Option<(Vec<ChunkRows>, u64)> {
    let index = index_of(state, segment, footer).await?;
    let group_rows: Vec<u64> = footer
        .row_groups()
        .iter()
        .map(|group| u64::try_from(group.num_rows()).unwrap_or(0))
        .collect();
    rows_by_chunk_counted(&index, need, &group_rows)
}

/// The rows of each chunk (of `group_rows` rows each, in order) that may pass `need` by
/// `index`; `None` when the index cannot tell or does not match the chunks.
#[cfg(test)]
pub(crate) fn rows_by_chunk(index: &TokenIndex, need: &Need, group_rows: &[u64]) -> Option<Vec<ChunkRows>> {
    rows_by_chunk_counted(index, need, group_rows).map(|(rows, _)| rows)
}

/// [`rows_by_chunk`], with the bytes of the index's filters evaluated.
pub(crate) fn rows_by_chunk_counted(
    index: &TokenIndex,
    need: &Need,
    group_rows: &[u64],
) -> Option<(Vec<ChunkRows>, u64)> {
    if !need.uses(index) || group_rows.iter().sum::<u64>() != index.rows {
        return None;
    }
    let block_rows = index.block_rows as u64;
    let mut evaluated = 0u64;
    let passing: Vec<bool> = (0..index.blocks())
        .map(|b| need.may_match_counted(index, b, &mut evaluated))
        .collect();
    let mut start = 0u64;
    let mut chunks = Vec::with_capacity(group_rows.len());
    for &rows in group_rows {
        let end = start + rows;
        let mut selectors: Vec<RowSelector> = Vec::new();
        let mut at = start;
        while at < end {
            let block = at / block_rows;
            let block_end = ((block + 1) * block_rows).min(end);
            let pass = passing.get(block as usize).copied().unwrap_or(true);
            let n = usize::try_from(block_end - at).unwrap_or(usize::MAX);
            match selectors.last_mut() {
                Some(last) if last.skip != pass => last.row_count += n,
                _ => selectors.push(if pass {
                    RowSelector::select(n)
                } else {
                    RowSelector::skip(n)
                }),
            }
            at = block_end;
        }
        chunks.push(match selectors.as_slice() {
            [] => ChunkRows::None,
            [only] if only.skip => ChunkRows::None,
            [_] => ChunkRows::All,
            _ => ChunkRows::Some(RowSelection::from(selectors)),
        });
        start = end;
    }
    Some((chunks, evaluated))
}

/// What the index made of a segment's chunks: the chunks to read, row selections of those it
/// narrowed (by chunk index), how many chunks it ruled out, and the bytes of its filters
/// evaluated.
pub(crate) type Narrowed = (Chunks, Vec<(usize, RowSelection)>, usize, u64);

/// How much of the chunks a scan reads its token index selected, summed over segments: a
/// scan whose selections keep few rows evaluates its filters inside the reader
/// ([`Selected::is_narrow`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Selected {
    /// Rows the selections keep.
    kept: u64,
    /// Rows of the chunks read (those without a selection counted whole).
    of: u64,
}

impl Selected {
    /// Adds what the index made of one segment.
    pub(crate) fn add(&mut self, narrowed: &Narrowed) {
        let (chunks, selections, _, _) = narrowed;
        let read = match chunks {
            Chunks::Some { full, partial, .. } => full.len() + partial.len(),
            Chunks::None => 0,
            Chunks::AllFull | Chunks::Unknown => return,
        };
        for (_, selection) in selections {
            let kept = selection.row_count() as u64;
            self.kept += kept;
            self.of += kept + selection.skipped_row_count() as u64;
        }
        let whole = read.saturating_sub(selections.len()) as u64;
        self.kept += whole * crate::segment::CHUNK_ROWS as u64;
        self.of += whole * crate::segment::CHUNK_ROWS as u64;
    }

    /// Whether the selections keep at most an eighth of the rows. The reader then evaluates
    /// the filters on their columns first and decodes the other columns only for the rows
    /// that pass (and the pages that hold them): a needle's few rows cost a few pages. For
    /// filters most rows pass, filtering above the reader is faster.
    pub(crate) fn is_narrow(&self) -> bool {
        self.of > 0 && self.kept.saturating_mul(8) <= self.of
    }

    /// `source`, filtering inside the reader when the selections are narrow.
    ///
    /// Without the reader's predicate cache: to keep the filter columns' values for the
    /// output it widens every selected block to a whole batch (8,192 rows), so a needle
    /// search fetched and decompressed the pages around each block the index picked too
    /// (`body has "<rare>" | project body` on the benchmark data: 227 reads of 12.4 MB
    /// with the cache, 122 of 6.8 MB without). Reading the few passing rows' pages again
    /// costs less.
    ///
    /// The reader makes one filter of each conjunct of the predicate; the engine's
    /// [`crate::row_filter::JoinRowFilters`] joins those that read the same columns.
    pub(crate) fn filtering_in_reader(
        &self,
        source: datafusion::datasource::physical_plan::ParquetSource,
    ) -> datafusion::datasource::physical_plan::ParquetSource {
        if !self.is_narrow() {
            return source;
        }
        let mut options = source.table_parquet_options().clone();
        options.global.max_predicate_cache_size = Some(0);
        source.with_table_parquet_options(options).with_pushdown_filters(true)
    }
}

/// `chunks` of `segment` (classified by statistics) narrowed by its token index for `need`:
/// chunks the index rules out are left out, chunks it narrows become partial (the filters
/// apply to them) and are read as the row selection returned beside.
pub(crate) async fn narrowed(
    state: &dyn Session,
    segment: &SegmentMeta,
    need: &Need,
    chunks: Chunks,
) -> datafusion::error::Result<Narrowed> {
    if chunks == Chunks::None {
        return Ok((chunks, Vec::new(), 0, 0));
    }
    let footer = crate::probe::footer(state, segment).await?;
    let Some((rows, evaluated)) = chunk_rows(state, segment, &footer, need).await else {
        return Ok((chunks, Vec::new(), 0, 0));
    };
    let count = rows.len();
    let (was_full, was_partial): (Vec<usize>, Vec<usize>) = match &chunks {
        Chunks::None => return Ok((chunks, Vec::new(), 0, evaluated)),
        Chunks::AllFull => ((0..count).collect(), Vec::new()),
        Chunks::Unknown => (Vec::new(), (0..count).collect()),
        Chunks::Some {
            count: classified,
            full,
            partial,
            ..
        } => {
            if *classified != count {
                return Ok((chunks, Vec::new(), 0, evaluated));
            }
            (full.clone(), partial.clone())
        }
    };
    let (mut full, mut partial, mut selections) = (Vec::new(), Vec::new(), Vec::new());
    let mut ruled_out = 0;
    for (chunk, was_full) in was_full
        .iter()
        .map(|&c| (c, true))
        .chain(was_partial.iter().map(|&c| (c, false)))
    {
        match rows.get(chunk) {
            Some(ChunkRows::None) => ruled_out += 1,
            Some(ChunkRows::All) | None if was_full => full.push(chunk),
            Some(ChunkRows::All) | None => partial.push(chunk),
            Some(ChunkRows::Some(selection)) => {
                partial.push(chunk);
                selections.push((chunk, selection.clone()));
            }
        }
    }
    if full.is_empty() && partial.is_empty() {
        return Ok((Chunks::None, Vec::new(), ruled_out, evaluated));
    }
    partial.sort_unstable();
    let full_rows = full
        .iter()
        .filter_map(|&chunk| footer.row_groups().get(chunk))
        .map(|group| u64::try_from(group.num_rows()).unwrap_or(0))
        .sum();
    Ok((
        Chunks::Some {
            count,
            full,
            full_rows,
            partial,
        },
        selections,
        ruled_out,
        evaluated,
    ))
}

/// Bytes and blocks of indexes in the cache (for tests and reports).
pub fn cached() -> (usize, usize) {
    CACHE.lock().map(|c| (c.bytes, c.entries.len())).unwrap_or((0, 0))
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
