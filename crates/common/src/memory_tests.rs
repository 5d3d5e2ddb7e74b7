use std::cell::Cell;
use std::task::Wake;

use super::*;

thread_local! {
    /// The test's stand-in for the allocator's counters of this thread.
    static FAKE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn fake_counters() -> Option<(u64, u64)> {
    Some(FAKE.with(Cell::get))
}

/// Installs the stand-in counters (the first test to run does it for all).
fn metered_here() {
    install_thread_counters(fake_counters);
}

fn allocate(bytes: u64) {
    FAKE.with(|c| c.set((c.get().0 + bytes, c.get().1)));
}

fn free(bytes: u64) {
    FAKE.with(|c| c.set((c.get().0, c.get().1 + bytes)));
}

#[test]
fn what_a_thread_allocates_while_entered_is_charged_net_of_what_it_frees() {
    metered_here();
    let account = QueryMemory::standalone(1 << 30);
    allocate(1000); // before: not the query's
    {
        let _entry = enter(&account);
        allocate(5000);
        free(2000);
    }
    allocate(7000); // after: not the query's
    assert_eq!(account.held(), 3000);
    assert_eq!(account.peak(), 3000);
    {
        let _entry = enter(&account);
        free(10_000); // frees more than it allocated: never below zero
    }
    assert_eq!(account.held(), 0);
    assert_eq!(account.peak(), 3000);
}

#[test]
fn an_account_entered_inside_another_is_charged_alone() {
    metered_here();
    let outer = QueryMemory::standalone(1 << 30);
    let inner = QueryMemory::standalone(1 << 30);
    {
        let _outer = enter(&outer);
        allocate(100);
        {
            let _inner = enter(&inner);
            allocate(40);
            {
                let _again = enter(&inner);
                allocate(2);
            }
        }
        allocate(1);
        {
            let _suspended = suspend();
            allocate(1_000_000); // a shared cache's entry: nobody's
        }
        allocate(10);
    }
    assert_eq!((outer.held(), inner.held()), (111, 42));
    assert!(current().is_none());
}

#[test]
fn past_its_limit_an_account_is_stopped_wakes_its_waiter_and_refuses_more() {
    metered_here();
    struct Flag(std::sync::atomic::AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let account = QueryMemory::standalone(10_000);
    account.set_namer(Box::new(|| Some("join".to_string())));
    let flag = Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    assert!(account.poll_exceeded(&mut cx).is_pending());
    {
        let _entry = enter(&account);
        allocate(9_000);
        assert!(admit(500, "strcat()").is_ok());
        allocate(2_000);
    }
    assert!(flag.0.load(Ordering::SeqCst), "the waiter was not woken");
    let Poll::Ready(exceeded) = account.poll_exceeded(&mut cx) else {
        panic!("the account is not exceeded at {} bytes", account.held());
    };
    assert_eq!(exceeded.kind, LimitKind::Query);
    assert_eq!((exceeded.limit, exceeded.held, exceeded.what.as_str()), (10_000, 11_000, "join"));
    let message = exceeded.to_string();
    assert!(message.starts_with(MemoryExceeded::QUERY_LIMIT), "{message}");
    assert!(message.contains("join took it to 11 KiB"), "{message}");
    let _entry = enter(&account);
    assert_eq!(admit(1, "strcat()").err(), Some(exceeded.clone()));
    assert_eq!(stopped(), Some(exceeded));
}

#[test]
fn admit_refuses_what_would_pass_the_limit_and_names_the_builder() {
    metered_here();
    let account = QueryMemory::standalone(1 << 20);
    let _entry = enter(&account);
    allocate(600 << 10);
    // The bytes allocated so far in this entry count before the next charge.
    let refused = admit(500 << 10, "strrep()").err();
    let Some(refused) = refused else {
        panic!("admitted past the limit");
    };
    assert_eq!(refused.what, "strrep()");
    assert_eq!(refused.held, 1100 << 10);
    // It was refused before it was built: the message does not say the query held it.
    assert!(refused.asked);
    assert!(refused.to_string().contains("strrep() would have taken it to"), "{refused}");
    assert_eq!(account.exceeded(), Some(&refused));
}

#[test]
fn outside_a_query_one_call_may_build_the_unscoped_limit() {
    assert!(current().is_none());
    assert!(admit(UNSCOPED_LIMIT, "range()").is_ok());
    let refused = admit(UNSCOPED_LIMIT + 1, "range()").err();
    assert_eq!(refused.as_ref().map(|r| r.kind), Some(LimitKind::Unscoped));
    let message = refused.map(|r| r.to_string()).unwrap_or_default();
    assert!(message.contains("range() would build 256 MiB"), "{message}");
}

#[test]
fn an_output_meter_asks_at_every_step() {
    metered_here();
    let account = QueryMemory::standalone(10 * OutputMeter::STEP);
    let _entry = enter(&account);
    let mut meter = OutputMeter::new("make_list()");
    let mut steps = 0;
    let refused = loop {
        allocate(1 << 20);
        match meter.add(1 << 20) {
            Ok(()) => steps += 1,
            Err(refused) => break refused,
        }
        assert!(steps < 1000, "the meter never refused");
    };
    assert_eq!(refused.what, "make_list()");
    // Where allocations are counted, what the meter is told it built is not counted again:
    // the refusal comes at about the limit (40 MiB), one step either side.
    assert!((36..=48).contains(&steps), "refused after {steps} MiB");
    assert!(meter.reserve(0).is_err());
}

#[test]
fn a_given_up_query_stops_its_loops_at_their_next_check() {
    let account = QueryMemory::standalone(1 << 30);
    let _entry = enter(&account);
    let mut meter = OutputMeter::new("range()");
    for _ in 0..5000 {
        assert!(meter.add(8).is_ok());
    }
    account.give_up();
    let calls = (1..=OutputMeter::CALLS).find(|_| meter.add(8).is_err());
    assert!(calls.is_some(), "a loop that builds little never saw the query given up");
    let stopped = admit(0, "strrep()").err();
    assert_eq!(stopped.as_ref().map(|s| s.kind), Some(LimitKind::GivenUp));
    // A query stopped for memory keeps that reason.
    let other = QueryMemory::standalone(1);
    other.exceed(LimitKind::Query, 1, 2, false, Some("mv-expand"));
    other.give_up();
    assert_eq!(other.exceeded().map(|e| e.kind), Some(LimitKind::Query));
}

#[test]
fn the_server_limit_stops_the_query_that_holds_the_most() {
    metered_here();
    let server = ServerMemory::new(100 << 20);
    let small = server.account(1 << 30);
    let large = server.account(1 << 30);
    {
        let _entry = enter(&small);
        allocate(20 << 20);
    }
    {
        let _entry = enter(&large);
        allocate(70 << 20);
    }
    assert_eq!(server.held(), 90 << 20);
    assert!(small.exceeded().is_none() && large.exceeded().is_none());
    {
        let _entry = enter(&small);
        allocate(20 << 20);
    }
    assert!(small.exceeded().is_none());
    // While the large one winds down, more charges stop nobody else.
    {
        let _entry = enter(&small);
        allocate(1 << 20);
    }
    assert!(small.exceeded().is_none());
    let exceeded = large.exceeded().cloned();
    assert_eq!(exceeded.as_ref().map(|e| e.kind), Some(LimitKind::Server));
    let message = exceeded.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.starts_with(MemoryExceeded::SERVER_LIMIT), "{message}");
    drop(large);
    assert_eq!(server.running().len(), 1);
    assert_eq!(server.total.load(Ordering::SeqCst), 41 << 20);
    // The heap watchdog's relief picks the largest of those left, if it holds enough to help.
    let tiny = server.account(1 << 30);
    {
        let _entry = enter(&tiny);
        allocate(1 << 20);
    }
    let relieved = server.relieve(LimitKind::Server, 1 << 30, 100 << 20);
    assert_eq!(relieved.len(), 1);
    assert!(relieved.first().is_some_and(|a| Arc::ptr_eq(a, &small)));
    assert!(tiny.exceeded().is_none());
}

#[test]
fn a_scoped_future_is_charged_for_each_poll_and_released_bytes_come_off() {
    metered_here();
    let account = QueryMemory::standalone(1 << 30);
    let mut polls = 0;
    let work = std::future::poll_fn(|cx| {
        polls += 1;
        allocate(1000);
        if polls < 3 {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(())
    });
    let mut scoped = Scoped::new(Arc::clone(&account), work);
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    while Pin::new(&mut scoped).poll(&mut cx).is_pending() {
        allocate(1); // between polls: not the query's
    }
    assert_eq!(account.held(), 3000);
    account.release(2500);
    assert_eq!(account.held(), 500);
}

#[test]
fn reserved_bytes_count_when_they_are_more_than_the_metered_ones() {
    let account = QueryMemory::standalone(1000);
    account.note_reserved(700);
    assert_eq!((account.held(), account.peak()), (700, 700));
    let _entry = enter(&account);
    assert!(admit(400, "sort").is_err());
    account.note_reserved(-700);
    assert_eq!(account.held(), 0);
}

#[test]
fn byte_counts_read_as_people_write_them() {
    assert_eq!(Bytes(17).to_string(), "17 bytes");
    assert_eq!(Bytes(12 << 10).to_string(), "12 KiB");
    assert_eq!(Bytes(300 << 20).to_string(), "300 MiB");
    assert_eq!(Bytes(3 << 29).to_string(), "1.5 GiB");
}
