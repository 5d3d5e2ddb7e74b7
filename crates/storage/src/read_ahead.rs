//! A segment reader that fetches the byte ranges a read will ask for several at a time.
//!
//! A Parquet read asks for one chunk's column bytes after another. Every fetch from the local
//! file system runs on a blocking thread, and every fetch from S3 is a request. A read that
//! knows its ranges in advance (a count over one column, `count_by`) gathers up to
//! [`ReadAhead`]'s budget of them into one fetch.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::parquet::arrow::arrow_reader::ArrowReaderOptions;
use datafusion::parquet::arrow::async_reader::AsyncFileReader;
use datafusion::parquet::errors::{ParquetError, Result};
use datafusion::parquet::file::metadata::ParquetMetaData;
use futures::FutureExt;
use futures::future::BoxFuture;

/// Reads through `inner`, fetching the ranges of `upcoming` (in the order the read asks for
/// them) up to `budget` bytes at a time; other ranges go to `inner` as asked.
pub(crate) struct ReadAhead {
    inner: Box<dyn AsyncFileReader + Send>,
    upcoming: VecDeque<Range<u64>>,
    fetched: Vec<(Range<u64>, Bytes)>,
    budget: u64,
}

impl ReadAhead {
    pub(crate) fn new(inner: Box<dyn AsyncFileReader + Send>, upcoming: Vec<Range<u64>>, budget: u64) -> Self {
        ReadAhead {
            inner,
            upcoming: upcoming.into(),
            fetched: Vec::new(),
            budget,
        }
    }

    /// `range` from what was fetched ahead.
    fn fetched(&self, range: &Range<u64>) -> Option<Bytes> {
        self.fetched
            .iter()
            .find(|(held, _)| held.start <= range.start && range.end <= held.end)
            .and_then(|(held, bytes)| {
                let start = usize::try_from(range.start - held.start).ok()?;
                let end = usize::try_from(range.end - held.start).ok()?;
                (end <= bytes.len()).then(|| bytes.slice(start..end))
            })
    }

    /// Whether every range of `wanted` is among those still to come.
    fn expected(&self, wanted: &[Range<u64>]) -> bool {
        wanted.iter().all(|range| self.upcoming.contains(range))
    }

    /// Fetches `wanted` (all expected) and as many of the next ranges as the budget allows,
    /// in one call; what was fetched before is let go.
    async fn fill(&mut self, wanted: &[Range<u64>]) -> Result<()> {
        self.fetched.clear();
        self.upcoming.retain(|range| !wanted.contains(range));
        let mut batch: Vec<Range<u64>> = wanted.to_vec();
        let mut bytes: u64 = batch.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        while let Some(next) = self.upcoming.front() {
            let size = next.end.saturating_sub(next.start);
            if bytes + size > self.budget {
                break;
            }
            bytes += size;
            batch.extend(self.upcoming.pop_front());
        }
        let got = self.inner.get_byte_ranges(batch.clone()).await?;
        if got.len() != batch.len() {
            return Err(ParquetError::General(format!(
                "asked for {} byte ranges, got {}",
                batch.len(),
                got.len()
            )));
        }
        self.fetched = batch.into_iter().zip(got).collect();
        Ok(())
    }

    fn answer(&self, ranges: &[Range<u64>]) -> Option<Vec<Bytes>> {
        ranges.iter().map(|range| self.fetched(range)).collect()
    }
}

impl AsyncFileReader for ReadAhead {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            let wanted = std::slice::from_ref(&range);
            if let Some([bytes]) = self.answer(wanted).as_deref() {
                return Ok(bytes.clone());
            }
            if !self.expected(wanted) {
                return self.inner.get_bytes(range).await;
            }
            self.fill(wanted).await?;
            self.fetched(&range)
                .ok_or_else(|| ParquetError::General("a range read ahead is missing".into()))
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        async move {
            if let Some(bytes) = self.answer(&ranges) {
                return Ok(bytes);
            }
            if !self.expected(&ranges) {
                return self.inner.get_byte_ranges(ranges).await;
            }
            self.fill(&ranges).await?;
            self.answer(&ranges)
                .ok_or_else(|| ParquetError::General("a range read ahead is missing".into()))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        self.inner.get_metadata(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A file of bytes `0, 1, 2, …` that records the calls made to it.
    struct Counting {
        calls: Arc<Mutex<Vec<Vec<Range<u64>>>>>,
    }

    fn bytes_of(range: &Range<u64>) -> Bytes {
        (range.start..range.end)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into()
    }

    impl AsyncFileReader for Counting {
        fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
            if let Ok(mut calls) = self.calls.lock() {
                calls.push(vec![range.clone()]);
            }
            futures::future::ready(Ok(bytes_of(&range))).boxed()
        }

        fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
            if let Ok(mut calls) = self.calls.lock() {
                calls.push(ranges.clone());
            }
            futures::future::ready(Ok(ranges.iter().map(bytes_of).collect())).boxed()
        }

        fn get_metadata<'a>(
            &'a mut self,
            _options: Option<&'a ArrowReaderOptions>,
        ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
            futures::future::ready(Err(ParquetError::General("no footer here".into()))).boxed()
        }
    }

    #[tokio::test]
    async fn expected_ranges_come_in_few_fetches_with_the_same_bytes() -> Result<()> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let chunks: Vec<Range<u64>> = (0..10u64).map(|i| i * 100..i * 100 + 60).collect();
        let mut reader = ReadAhead::new(
            Box::new(Counting {
                calls: Arc::clone(&calls),
            }),
            chunks.clone(),
            250,
        );
        for chunk in &chunks {
            assert_eq!(
                reader.get_byte_ranges(vec![chunk.clone()]).await?,
                vec![bytes_of(chunk)]
            );
            // A part of a chunk fetched ahead, as a page read asks for it.
            let part = chunk.start + 10..chunk.start + 20;
            assert_eq!(reader.get_bytes(part.clone()).await?, bytes_of(&part));
        }
        // A range nobody announced goes to the file as asked.
        assert_eq!(reader.get_bytes(5_000..5_010).await?, bytes_of(&(5_000..5_010)));
        let calls = calls.lock().map(|calls| calls.clone()).unwrap_or_default();
        // 60 bytes each within a budget of 250: four chunks per fetch, then the stray read.
        let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
        assert_eq!(sizes, [4, 4, 2, 1]);
        Ok(())
    }

    #[tokio::test]
    async fn a_chunk_larger_than_the_budget_is_fetched_alone() -> Result<()> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let chunks = vec![0..1_000, 1_000..1_010, 2_000..2_010];
        let mut reader = ReadAhead::new(
            Box::new(Counting {
                calls: Arc::clone(&calls),
            }),
            chunks.clone(),
            100,
        );
        for chunk in &chunks {
            assert_eq!(reader.get_bytes(chunk.clone()).await?, bytes_of(chunk));
        }
        let sizes: Vec<usize> = calls
            .lock()
            .map(|c| c.iter().map(Vec::len).collect())
            .unwrap_or_default();
        assert_eq!(sizes, [1, 2]);
        Ok(())
    }
}
