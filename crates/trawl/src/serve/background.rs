//! A runtime for background work that must not take CPU from ingest and queries: its threads
//! run at a lower scheduling priority (nice 10 on Linux), so the kernel gives them what the
//! process's other threads leave idle, and about a tenth of a core while those are busy.

use tokio::runtime::{Handle, Runtime};

/// How much nicer background threads are than the thread that started them: a thread of
/// nice 0 weighs about 10 times as much as one of nice 10.
const NICE: i32 = 10;

/// The lower-priority runtime; shut down (its tasks dropped) when dropped.
#[derive(Debug)]
pub struct Background {
    runtime: Option<Runtime>,
}

impl Background {
    /// One worker thread (and blocking threads for file reads) at the lower priority.
    pub fn start(name: &str) -> std::io::Result<Background> {
        // Threads inherit their creator's priority (a blocking thread is started by a worker,
        // already lowered): every one is set to the same value, not lowered again.
        let target = (own_nice().unwrap_or(0) + NICE).min(19);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .thread_name(name)
            .on_thread_start(move || lower_priority(target))
            .enable_all()
            .build()?;
        Ok(Background { runtime: Some(runtime) })
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

/// Sets the calling thread's nice value to `target`, when that lowers its priority; a failure
/// only means the work competes as an equal.
fn lower_priority(target: i32) {
    #[cfg(target_os = "linux")]
    if own_nice().is_some_and(|now| now < target)
        && let Err(error) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), target)
    {
        tracing::debug!(%error, "cannot lower a background thread's priority");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = target;
}

/// The nice value of the calling thread (on Linux, where each thread has its own).
fn own_nice() -> Option<i32> {
    #[cfg(target_os = "linux")]
    return rustix::process::getpriority_process(Some(rustix::thread::gettid())).ok();
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn background_threads_run_at_a_lower_priority_than_the_callers() {
        let caller = own_nice().unwrap_or(0);
        let background = Background::start("test-background").expect("a runtime");
        let theirs = background.run(async { own_nice() }).await.flatten();
        assert_eq!(theirs, Some((caller + NICE).min(19)));
        // Blocking threads too (where file reads of the object store run).
        let blocking = background
            .run(async { tokio::task::spawn_blocking(own_nice).await.ok().flatten() })
            .await
            .flatten();
        assert_eq!(blocking, Some((caller + NICE).min(19)));
        drop(background);
    }
}
