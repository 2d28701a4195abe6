//! The keep-up regime: one event at a time, the publisher waiting until
//! every listener has read it before it publishes the next, so that every
//! reader is asleep when each event comes, as readers on many cores are
//! when they keep up with the publisher. On two cores readers otherwise
//! lag behind and one wake-up serves a burst; here each delivery is a
//! wait, and what it costs the publisher is what caps one publisher's rate
//! on any number of cores.
//!
//! Besides the rate, a run counts what each publish cost the publisher's
//! own thread: the wakes it issued (every reader's waker is wrapped in one
//! that counts its wakes on the thread that makes them, so the hub's and
//! `broadcast`'s are counted alike) and its CPU time (the thread's CPU
//! clock, `CLOCK_THREAD_CPUTIME_ID`, read around each publish).

use std::cell::Cell;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use cpu_time::ThreadTime;

use crate::Scenario;
use crate::fanout::{Fanout, Receivers, Tap, Via};

/// A fan-out in lockstep, and what its publisher paid so far.
pub struct KeepUp {
    fanout: Fanout,
    n: usize,
    paid: Paid,
}

/// What the publisher's thread paid over some events.
#[derive(Debug, Clone, Copy, Default)]
pub struct Paid {
    /// Deliveries: events times listeners.
    pub deliveries: u64,
    /// Wakes the publisher's thread issued.
    pub wakes: u64,
    /// The publisher's thread's CPU time in its publishes.
    pub cpu: Duration,
}

impl Paid {
    /// Wakes the publisher's thread issued per delivery.
    pub fn wakes_per_delivery(&self) -> f64 {
        self.wakes as f64 / self.deliveries as f64
    }

    /// The publisher's thread's CPU nanoseconds per delivery.
    pub fn cpu_ns_per_delivery(&self) -> f64 {
        self.cpu.as_nanos() as f64 / self.deliveries as f64
    }
}

impl KeepUp {
    /// `n` listeners `via` the hub or an anchor, read on `workers` worker
    /// threads.
    pub fn new(via: Via, n: usize, workers: usize) -> Self {
        let fanout = Fanout::start(via, Receivers::new(n, 1, workers), |_| {
            CountedWaker::default()
        });
        Self {
            fanout,
            n,
            paid: Paid::default(),
        }
    }

    /// What the publisher paid since the last call.
    pub fn take_paid(&mut self) -> Paid {
        std::mem::take(&mut self.paid)
    }
}

impl Scenario for KeepUp {
    /// Publishes `events` events one at a time, each read by every
    /// listener before the next.
    fn run(&mut self, events: u64) -> Duration {
        let paid = &mut self.paid;
        let start = Instant::now();
        for _ in 0..events {
            // Only the publish itself: not the wait for the readers, which
            // is the benchmark's, not the publisher's.
            self.fanout.burst_around(|publish| {
                let (wakes, cpu) = (WAKES_ISSUED.get(), ThreadTime::now());
                publish();
                paid.cpu += cpu.elapsed();
                paid.wakes += WAKES_ISSUED.get() - wakes;
            });
        }
        let took = start.elapsed();
        paid.deliveries += events * self.n as u64;
        took
    }
}

thread_local! {
    /// Wakes of counted wakers made on this thread.
    static WAKES_ISSUED: Cell<u64> = const { Cell::new(0) };
}

/// A reader's waker, wrapped so that each wake is counted on the thread
/// that makes it; one per task, made again only if the task's own waker
/// changes, so a reader that registers the same waker twice sees the same.
#[derive(Default)]
struct CountedWaker(Option<(Waker, Waker)>);

struct Counting(Waker);

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        WAKES_ISSUED.set(WAKES_ISSUED.get() + 1);
        self.0.wake_by_ref();
    }
}

impl Tap for CountedWaker {
    fn waker(&mut self, task: &Waker) -> Option<&Waker> {
        if !matches!(&self.0, Some((own, _)) if own.will_wake(task)) {
            let counted = Waker::from(Arc::new(Counting(task.clone())));
            self.0 = Some((task.clone(), counted));
        }
        self.0.as_ref().map(|(_, counted)| counted)
    }
}
