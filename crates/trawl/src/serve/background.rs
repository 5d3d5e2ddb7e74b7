//! Runtimes whose threads yield the CPU (`trawl_common::threads`): the queries' (a few steps
//! nicer than ingest, so a query that keeps every core busy leaves ingest its acknowledgements)
//! and the background work's (merges, nicer again: they get what the process's other threads
//! leave idle, and about a tenth of a core while those are busy).

use tokio::runtime::{Handle, Runtime};
use trawl_common::threads::{BACKGROUND_STEP, QUERY_STEP, run_at_step};

/// A runtime at a lower priority; shut down (its tasks dropped) when dropped.
#[derive(Debug)]
pub struct Background {
    runtime: Option<Runtime>,
}

impl Background {
    /// One worker thread (and blocking threads for file reads) at the background priority.
    pub fn start(name: &str) -> std::io::Result<Background> {
        Background::build(name, BACKGROUND_STEP, 1, 4, None)
    }

    /// The threads queries run on: one worker per core (and blocking threads for file reads)
    /// at the query priority, on stacks of `stack` bytes.
    pub fn for_queries(workers: usize, stack: usize) -> std::io::Result<Background> {
        // Blocking threads read segments; tokio's default bound.
        Background::build("trawl-query", QUERY_STEP, workers.max(1), 512, Some(stack))
    }

    fn build(name: &str, step: i32, workers: usize, blocking: usize, stack: Option<usize>) -> std::io::Result<Background> {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .worker_threads(workers)
            .max_blocking_threads(blocking)
            .thread_name(name)
            .on_thread_start(move || run_at_step(step))
            .enable_all();
        if let Some(stack) = stack {
            builder.thread_stack_size(stack);
        }
        Ok(Background { runtime: Some(builder.build()?) })
    }

    pub fn handle(&self) -> Option<Handle> {
        self.runtime.as_ref().map(|runtime| runtime.handle().clone())
    }

    /// Runs `work` on the background runtime and waits for it.
    #[cfg(test)]
    pub async fn run<F>(&self, work: F) -> Option<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime.as_ref()?.spawn(work).await.ok()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Not `Runtime`'s own drop, which blocks and must not run inside another runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use trawl_common::threads::own_nice;

    #[tokio::test]
    async fn background_threads_run_at_a_lower_priority_than_the_callers() {
        let caller = own_nice().unwrap_or(0);
        let background = Background::start("test-background").expect("a runtime");
        let theirs = background.run(async { own_nice() }).await.flatten();
        assert_eq!(theirs, Some((caller + BACKGROUND_STEP).min(19)));
        // Blocking threads too (where file reads of the object store run).
        let blocking = background
            .run(async { tokio::task::spawn_blocking(own_nice).await.ok().flatten() })
            .await
            .flatten();
        assert_eq!(blocking, Some((caller + BACKGROUND_STEP).min(19)));
        drop(background);
    }

    #[tokio::test]
    async fn query_threads_run_between_the_callers_and_the_background_priority() {
        let caller = own_nice().unwrap_or(0);
        let queries = Background::for_queries(2, 2 << 20).expect("a runtime");
        let theirs = queries.run(async { own_nice() }).await.flatten();
        assert_eq!(theirs, Some((caller + QUERY_STEP).min(19)));
        assert!(QUERY_STEP > 0 && QUERY_STEP < BACKGROUND_STEP);
        drop(queries);
    }
}
