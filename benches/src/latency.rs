//! Latency: a paced publisher, one event at a time to 256 listeners (tasks
//! on a 2-worker tokio runtime), each listener noting how long the event
//! took to reach it. The publisher waits until every listener has the
//! event, then pauses before the next, so nothing queues up and the
//! readers are asleep when it comes, as under a trickle of real changes.
//!
//! One run gives both figures: its time, summed over events, is each
//! event's way to the last listener (what criterion reports), and its
//! samples are every listener's latency for every event (the report's
//! percentiles).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::Scenario;
use crate::fanout::{Fanout, Receivers, Tap, Via};

/// A paced fan-out of one event at a time, its listeners noting each
/// event's latency.
pub struct Latency {
    fanout: Fanout,
    clock: Arc<Clock>,
    /// Each listener's samples of the current run, in nanoseconds.
    samples: Vec<Arc<Mutex<Vec<u64>>>>,
}

impl Latency {
    /// Listeners, each a task.
    pub const LISTENERS: usize = 256;
    /// The publisher's pause between events, untimed.
    pub const GAP: Duration = Duration::from_micros(500);

    /// [`LISTENERS`](Self::LISTENERS) listeners `via` the hub or an anchor.
    pub fn new(via: Via) -> Self {
        let clock = Arc::new(Clock::new());
        let mut samples = Vec::with_capacity(Self::LISTENERS);
        let fanout = Fanout::start(via, Receivers::new(Self::LISTENERS, 1, 2), |_| {
            // Each task its own list, so that none is shared.
            let mine = Arc::default();
            samples.push(Arc::clone(&mine));
            Arrivals {
                clock: clock.clone(),
                samples: mine,
            }
        });
        Self {
            fanout,
            clock,
            samples,
        }
    }

    /// Every listener's latency for each event of the last run, in
    /// nanoseconds, in no particular order.
    pub fn samples(&self) -> Vec<u64> {
        self.samples.iter().flat_map(|s| lock(s).clone()).collect()
    }
}

impl Scenario for Latency {
    /// Publishes `events` events, one at a time; the time from each publish
    /// until the last listener had it, summed (the pauses are not timed).
    fn run(&mut self, events: u64) -> Duration {
        for samples in &self.samples {
            lock(samples).clear();
        }
        let mut took = Duration::ZERO;
        for _ in 0..events {
            let sent = self.clock.mark();
            self.fanout.burst();
            took += sent.elapsed();
            std::thread::sleep(Self::GAP);
        }
        took
    }
}

/// A listener's list, even if its task panicked while holding it.
fn lock(samples: &Mutex<Vec<u64>>) -> std::sync::MutexGuard<'_, Vec<u64>> {
    samples.lock().unwrap_or_else(PoisonError::into_inner)
}

/// When the event in flight was published, read by each listener when it
/// arrives. One event is in flight at a time: the publisher marks the next
/// only after every listener has noted this one.
struct Clock {
    epoch: Instant,
    /// Nanoseconds from `epoch` to the publish.
    sent: AtomicU64,
}

impl Clock {
    fn new() -> Self {
        Self {
            epoch: Instant::now(),
            sent: AtomicU64::new(0),
        }
    }

    /// Notes that an event is about to be published; that moment.
    fn mark(&self) -> Instant {
        let now = Instant::now();
        // Released before the publish; a listener acquires it through the
        // queue the event came by.
        self.sent.store(self.nanos(now), Ordering::Release);
        now
    }

    /// How long ago the event in flight was published, in nanoseconds.
    fn since_sent(&self) -> u64 {
        self.nanos(Instant::now()) - self.sent.load(Ordering::Acquire)
    }

    fn nanos(&self, at: Instant) -> u64 {
        (at - self.epoch).as_nanos() as u64
    }
}

/// Notes each event's latency in one listener's list.
struct Arrivals {
    clock: Arc<Clock>,
    samples: Arc<Mutex<Vec<u64>>>,
}

impl Tap for Arrivals {
    fn arrived(&mut self) {
        let latency = self.clock.since_sent();
        // Only this task and the run's set-up and harvest (while no event is
        // in flight) take the lock: it is never contended while timing.
        lock(&self.samples).push(latency);
    }
}
