//! Which work yields the CPU to which: threads run at a nice value above the process's own by
//! a step of their kind (Linux, where each thread has its own nice value). Acknowledging
//! ingest and answering probes run at the process's own priority; queries a few steps nicer,
//! so a core kept busy by queries still gives ingest most of its time when ingest needs it;
//! background work (merges) nicer again, so it takes what both leave idle.
//!
//! A thread of nice `n` weighs about 1.25^-n of one at nice 0 with the kernel's scheduler:
//! step 4 is about 0.4, step 10 about 0.1.

/// How much nicer than the process query threads (execution and planning) run.
pub const QUERY_STEP: i32 = 4;
/// How much nicer than the process background threads (merges) run.
pub const BACKGROUND_STEP: i32 = 10;
/// The nicest a thread can be.
const NICEST: i32 = 19;

/// Sets the calling thread's nice value to the process's own plus `step` (at most 19), when
/// that lowers its priority. Threads inherit their creator's value: each is set to the same
/// target, not lowered again. A failure only means the work competes as an equal.
pub fn run_at_step(step: i32) {
    let target = (process_nice().unwrap_or(0) + step).min(NICEST);
    #[cfg(target_os = "linux")]
    if own_nice().is_some_and(|now| now < target)
        && let Err(error) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), target)
    {
        // Not worth a log line per thread: the work runs all the same.
        let _ = error;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = target;
}

/// The nice value of the calling thread (on Linux, where each thread has its own).
pub fn own_nice() -> Option<i32> {
    #[cfg(target_os = "linux")]
    return rustix::process::getpriority_process(Some(rustix::thread::gettid())).ok();
    #[cfg(not(target_os = "linux"))]
    None
}

/// The nice value of the process's first thread (the value it was started with).
fn process_nice() -> Option<i32> {
    #[cfg(target_os = "linux")]
    return rustix::process::getpriority_process(Some(rustix::process::getpid())).ok();
    #[cfg(not(target_os = "linux"))]
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_runs_its_step_above_the_process_and_is_not_lowered_twice() {
        let base = process_nice().unwrap_or(0);
        let seen = std::thread::spawn(|| {
            run_at_step(QUERY_STEP);
            let first = own_nice();
            run_at_step(QUERY_STEP);
            let again = own_nice();
            // A thread it starts inherits its value and keeps it when set to the same step.
            let child = std::thread::spawn(|| {
                run_at_step(QUERY_STEP);
                own_nice()
            })
            .join()
            .ok()
            .flatten();
            (first, again, child)
        })
        .join()
        .expect("the thread ran");
        let expected = Some((base + QUERY_STEP).min(NICEST));
        assert_eq!(seen, (expected, expected, expected));
        // The caller is left as it was.
        assert_eq!(own_nice(), Some(base));
    }
}
