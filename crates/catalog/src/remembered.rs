//! Reads of the embedded catalog remembered between writes.
//!
//! Every query asks the catalog the same things: who its token belongs to (the gateway), the
//! database's tables and views, and the live segments of the tables it reads. On SQLite each
//! is a statement run on one of the pool's connection threads (two thread hand-offs, the
//! rows copied twice): five of them made up about a quarter of the CPU of a count answered
//! from statistics. Every ingest request asks two more: its token, and whether the table it
//! writes is deleted (three or four statements, about 4% of the server's CPU at 250 requests a
//! second). The embedded catalog's file belongs to one process, and every write goes
//! through a [`SqlCatalog`](crate::SqlCatalog) of that process, so the answers stay true until
//! one of them writes: writes that change what is remembered take a [`Writing`] guard,
//! whose end moves the catalog's generation on and makes everything remembered before it
//! stale. A read takes the generation before it asks the database and keeps its answer under
//! it, so an answer read while a write commits is never kept past that write's end.
//!
//! Three generations: one for tables, views and segments, one for which of them exist and
//! are deleted, one for tokens and principals (a segment committed every second by ingest
//! does not make the gateway read tokens again, nor ingest ask whether its table is deleted).
//! Every `SqlCatalog` of one process on one file shares them. As a guard against a writer
//! outside this process, nothing is kept longer than [`LONGEST`]. A PostgreSQL catalog is
//! shared by the processes of a cluster and remembers nothing.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::Result;
use crate::directory::{AccessTokenRecord, IngestTokenRecord, Principal};
use crate::model::{SegmentMeta, TableInfo};

/// A database's views: names and member tables.
type Views = Arc<Vec<(String, Vec<String>)>>;

/// The longest an answer is kept, whatever the generation says.
pub(crate) const LONGEST: Duration = Duration::from_secs(1);

/// The most answers of one kind kept; when full, the oldest half is dropped.
const MOST: usize = 4096;

/// The generations of each catalog file of this process, by path.
static GENERATIONS: LazyLock<Mutex<HashMap<String, Arc<Generations>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

#[derive(Debug, Default)]
pub(crate) struct Generations {
    objects: AtomicU64,
    names: AtomicU64,
    accounts: AtomicU64,
}

/// Which generation a write moves on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Area {
    /// Tables, columns, views, databases and segments.
    Objects,
    /// Which databases, tables and views exist and which are deleted (what ingest asks of
    /// every request; a segment commit does not move it).
    Names,
    /// Tokens and principals.
    Accounts,
}

/// Ends a write: moves its area's generation on when dropped (after the write, however it
/// ended).
#[must_use]
pub(crate) struct Writing<'a> {
    generations: Option<&'a Generations>,
    area: Area,
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        if let Some(generations) = self.generations {
            generations.counter(self.area).fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Generations {
    fn counter(&self, area: Area) -> &AtomicU64 {
        match area {
            Area::Objects => &self.objects,
            Area::Names => &self.names,
            Area::Accounts => &self.accounts,
        }
    }
}

#[derive(Debug)]
struct Kept<V> {
    value: V,
    generation: u64,
    at: Instant,
}

/// Answers of one kind, by key.
#[derive(Debug)]
struct Answers<K, V> {
    area: Area,
    kept: Mutex<HashMap<K, Kept<V>>>,
}

impl<K: Eq + Hash, V: Clone> Answers<K, V> {
    fn new(area: Area) -> Self {
        Answers {
            area,
            kept: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, generations: &Generations, key: &K) -> Option<V> {
        let now = generations.counter(self.area).load(Ordering::Acquire);
        let kept = self.kept.lock().ok()?;
        let answer = kept.get(key)?;
        (answer.generation == now && answer.at.elapsed() < LONGEST).then(|| answer.value.clone())
    }

    fn put(&self, key: K, value: V, generation: u64) {
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        if kept.len() >= MOST {
            // Drop the stale and the oldest half: a flood of distinct keys cannot grow it.
            let mut ages: Vec<Instant> = kept.values().map(|k| k.at).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            kept.retain(|_, k| k.at > cut && k.at.elapsed() < LONGEST);
        }
        kept.insert(
            key,
            Kept {
                value,
                generation,
                at: Instant::now(),
            },
        );
    }
}

/// What a catalog remembers (nothing when it is shared with other processes).
#[derive(Debug)]
pub(crate) struct Remembered {
    generations: Option<Arc<Generations>>,
    tables: Answers<String, Arc<Vec<TableInfo>>>,
    views: Answers<String, Views>,
    segments: Answers<(String, String), Arc<Vec<SegmentMeta>>>,
    tokens: Answers<String, AccessTokenRecord>,
    principals: Answers<String, Principal>,
    ingest_tokens: Answers<String, IngestTokenRecord>,
    /// Whether a table takes ingest (neither it nor its database is deleted): asked on every
    /// ingest request.
    writable: Answers<(String, String), bool>,
}

impl Remembered {
    /// Remembers answers of the catalog file `path`, with the other catalogs of this process
    /// on the same file.
    pub(crate) fn for_file(path: &str) -> Remembered {
        let generations = GENERATIONS
            .lock()
            .map(|mut all| all.entry(path.to_string()).or_default().clone())
            .ok();
        Remembered::with(generations)
    }

    /// Remembers answers of a catalog only this value reaches (an in-memory database).
    pub(crate) fn private() -> Remembered {
        Remembered::with(Some(Arc::default()))
    }

    /// Remembers nothing (a catalog other processes write).
    pub(crate) fn nothing() -> Remembered {
        Remembered::with(None)
    }

    fn with(generations: Option<Arc<Generations>>) -> Remembered {
        Remembered {
            generations,
            tables: Answers::new(Area::Objects),
            views: Answers::new(Area::Objects),
            segments: Answers::new(Area::Objects),
            tokens: Answers::new(Area::Accounts),
            principals: Answers::new(Area::Accounts),
            ingest_tokens: Answers::new(Area::Accounts),
            writable: Answers::new(Area::Names),
        }
    }

    /// A guard to hold over a write that changes `area`.
    pub(crate) fn writing(&self, area: Area) -> Writing<'_> {
        Writing {
            generations: self.generations.as_deref(),
            area,
        }
    }

    /// Guards to hold over a write that creates, deletes or restores databases, tables or
    /// views: it changes both the objects and their names.
    pub(crate) fn renaming(&self) -> [Writing<'_>; 2] {
        [self.writing(Area::Objects), self.writing(Area::Names)]
    }

    /// The generation of `area` now, to keep an answer read after this under (none: nothing
    /// is remembered).
    pub(crate) fn generation(&self, area: Area) -> Option<u64> {
        self.generations
            .as_ref()
            .map(|g| g.counter(area).load(Ordering::Acquire))
    }

    /// The database's tables: remembered, or asked with `ask` and remembered.
    pub(crate) async fn tables_or(
        &self,
        database: &str,
        ask: impl Future<Output = Result<Vec<TableInfo>>>,
    ) -> Result<Vec<TableInfo>> {
        self.per_database(&self.tables, database, ask).await
    }

    /// The database's views: remembered, or asked with `ask` and remembered.
    pub(crate) async fn views_or(
        &self,
        database: &str,
        ask: impl Future<Output = Result<Vec<(String, Vec<String>)>>>,
    ) -> Result<Vec<(String, Vec<String>)>> {
        self.per_database(&self.views, database, ask).await
    }

    async fn per_database<V: Clone>(
        &self,
        answers: &Answers<String, Arc<V>>,
        database: &str,
        ask: impl Future<Output = Result<V>>,
    ) -> Result<V> {
        let key = database.to_string();
        let generations = self.generations.as_deref();
        if let Some(known) = generations.and_then(|g| answers.get(g, &key)) {
            return Ok(known.as_ref().clone());
        }
        let generation = generations.map(|g| g.counter(answers.area).load(Ordering::Acquire));
        let value = ask.await?;
        if let Some(generation) = generation {
            answers.put(key, Arc::new(value.clone()), generation);
        }
        Ok(value)
    }

    /// All live segments of a table, in the catalog's order.
    pub(crate) fn segments(&self, database: &str, table: &str) -> Option<Arc<Vec<SegmentMeta>>> {
        self.segments
            .get(self.generations.as_deref()?, &(database.to_string(), table.to_string()))
    }

    pub(crate) fn keep_segments(
        &self,
        database: &str,
        table: &str,
        segments: Arc<Vec<SegmentMeta>>,
        generation: Option<u64>,
    ) {
        if let Some(generation) = generation {
            self.segments
                .put((database.to_string(), table.to_string()), segments, generation);
        }
    }

    pub(crate) fn token(&self, id: &str) -> Option<AccessTokenRecord> {
        self.tokens.get(self.generations.as_deref()?, &id.to_string())
    }

    /// Keeps a token that exists (an unknown id is asked again: a new token is seen at once).
    pub(crate) fn keep_token(&self, token: &AccessTokenRecord, generation: Option<u64>) {
        if let Some(generation) = generation {
            self.tokens.put(token.id.clone(), token.clone(), generation);
        }
    }

    pub(crate) fn principal(&self, id: &str) -> Option<Principal> {
        self.principals.get(self.generations.as_deref()?, &id.to_string())
    }

    pub(crate) fn keep_principal(&self, principal: &Principal, generation: Option<u64>) {
        if let Some(generation) = generation {
            self.principals.put(principal.id.clone(), principal.clone(), generation);
        }
    }

    pub(crate) fn ingest_token(&self, id: &str) -> Option<IngestTokenRecord> {
        self.ingest_tokens.get(self.generations.as_deref()?, &id.to_string())
    }

    /// Keeps an ingest token that exists (an unknown id is asked again).
    pub(crate) fn keep_ingest_token(&self, token: &IngestTokenRecord, generation: Option<u64>) {
        if let Some(generation) = generation {
            self.ingest_tokens.put(token.id.clone(), token.clone(), generation);
        }
    }

    /// Whether `database.table` takes ingest: remembered, or asked with `ask` and remembered.
    pub(crate) async fn writable_or(
        &self,
        database: &str,
        table: &str,
        ask: impl Future<Output = Result<bool>>,
    ) -> Result<bool> {
        let key = (database.to_string(), table.to_string());
        let generations = self.generations.as_deref();
        if let Some(known) = generations.and_then(|g| self.writable.get(g, &key)) {
            return Ok(known);
        }
        let generation = generations.map(|g| g.counter(Area::Names).load(Ordering::Acquire));
        let writable = ask.await?;
        if let Some(generation) = generation {
            self.writable.put(key, writable, generation);
        }
        Ok(writable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str) -> TableInfo {
        TableInfo {
            database: "db".into(),
            name: name.into(),
            columns: Vec::new(),
        }
    }

    /// Tables of `db`: remembered, or the answer `fresh` gives.
    async fn tables(remembered: &Remembered, fresh: &str) -> String {
        let answer = remembered.tables_or("db", async { Ok(vec![table(fresh)]) }).await;
        answer.map(|t| t[0].name.clone()).unwrap_or_default()
    }

    #[tokio::test]
    async fn an_answer_read_before_a_write_ends_is_stale_after_it() {
        let remembered = Remembered::private();
        assert_eq!(tables(&remembered, "a").await, "a");
        assert_eq!(tables(&remembered, "b").await, "a", "remembered");
        {
            let _writing = remembered.writing(Area::Objects);
            // Asked while the write runs: kept under the generation before the write's end.
            assert_eq!(tables(&remembered, "b").await, "a");
        }
        assert_eq!(tables(&remembered, "c").await, "c", "stale once the write ended");
        assert_eq!(tables(&remembered, "d").await, "c");
        // A write of the other area leaves it.
        drop(remembered.writing(Area::Accounts));
        assert_eq!(tables(&remembered, "e").await, "c");
    }

    #[tokio::test]
    async fn whether_a_table_takes_ingest_outlives_segment_commits_but_not_deletes() {
        let remembered = Remembered::private();
        let writable = |fresh: bool| remembered.writable_or("db", "t", async move { Ok(fresh) });
        assert!(writable(true).await.unwrap_or(false));
        // A segment commit (an objects write) leaves the answer.
        drop(remembered.writing(Area::Objects));
        assert!(writable(false).await.unwrap_or(false), "remembered");
        // A delete (or a create or restore) does not.
        drop(remembered.renaming());
        assert!(!writable(false).await.unwrap_or(true));
        assert!(!writable(true).await.unwrap_or(true), "remembered");
    }

    #[tokio::test]
    async fn an_answer_asked_during_a_write_is_not_kept_past_it() {
        let remembered = Remembered::private();
        let writing = remembered.writing(Area::Objects);
        assert_eq!(tables(&remembered, "during").await, "during");
        assert_eq!(tables(&remembered, "still").await, "during");
        drop(writing);
        assert_eq!(tables(&remembered, "after").await, "after");
    }

    #[tokio::test]
    async fn catalogs_on_one_file_share_generations_and_shared_catalogs_remember_nothing() {
        let path = format!("/nonexistent/{}.db", std::process::id());
        let one = Remembered::for_file(&path);
        let two = Remembered::for_file(&path);
        assert_eq!(tables(&one, "a").await, "a");
        assert_eq!(tables(&one, "b").await, "a");
        drop(two.writing(Area::Objects));
        assert_eq!(
            tables(&one, "c").await,
            "c",
            "a write through another catalog on the file"
        );
        let shared = Remembered::nothing();
        assert_eq!(tables(&shared, "a").await, "a");
        assert_eq!(tables(&shared, "b").await, "b");
        drop(shared.writing(Area::Objects));
    }

    #[tokio::test]
    async fn a_flood_of_keys_stays_bounded() {
        let remembered = Remembered::private();
        for i in 0..3 * MOST {
            let database = format!("db{i}");
            let asked = remembered.per_database(&remembered.tables, &database, async { Ok(Vec::new()) });
            assert!(asked.await.is_ok());
        }
        let kept = remembered.tables.kept.lock().map(|k| k.len()).unwrap_or(usize::MAX);
        assert!(kept <= MOST, "{kept}");
    }
}
