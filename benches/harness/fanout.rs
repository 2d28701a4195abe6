//! Fan-out: one publisher (or a pool of them), N listeners all matching,
//! each listener a task on a tokio runtime; through the hub, `broadcast`,
//! or a per-listener `mpsc`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_subscriptions::{Event, Filter, Hub, Next};
use tokio::runtime::Runtime;
use tokio::sync::{broadcast, mpsc as tokio_mpsc};

use super::{BURST, Scenario};

/// The receivers' side of a fan-out: a 2-worker runtime, and a count of
/// listeners still receiving the current burst (the last one wakes the
/// publisher).
struct Fanout {
    runtime: Runtime,
    n: usize,
    /// Events per iteration.
    burst: usize,
    remaining: Arc<AtomicUsize>,
    done_tx: mpsc::SyncSender<()>,
    done: mpsc::Receiver<()>,
}

impl Fanout {
    fn new(n: usize, burst: usize) -> Self {
        Self::with_workers(n, burst, 2)
    }

    fn with_workers(n: usize, burst: usize, workers: usize) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .build()
            .unwrap();
        let (done_tx, done) = mpsc::sync_channel(1);
        Self {
            runtime,
            n,
            burst,
            remaining: Arc::new(AtomicUsize::new(n)),
            done_tx,
            done,
        }
    }

    /// What a receiving task calls after each event.
    fn counter(&self) -> impl FnMut() + Send + 'static {
        let (remaining, done) = (self.remaining.clone(), self.done_tx.clone());
        let (mut got, burst) = (0, self.burst);
        move || {
            got += 1;
            if got % burst == 0 && remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                done.send(()).unwrap();
            }
        }
    }

    /// Times `bursts` bursts published by `publish` on this thread, or by
    /// `pool` when there is one.
    fn time(&self, bursts: u64, pool: Option<&Pool>, mut publish: impl FnMut()) -> Duration {
        let start = Instant::now();
        for _ in 0..bursts {
            self.remaining.store(self.n, Ordering::Release);
            match pool {
                Some(pool) => pool.burst(),
                None => (0..self.burst).for_each(|_| publish()),
            }
            self.done.recv().unwrap();
        }
        start.elapsed()
    }
}

/// Publisher threads that share each burst between them, for the scaling
/// table.
struct Pool {
    go: Vec<mpsc::SyncSender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    /// `threads` threads, each publishing `share` events per burst with a
    /// publisher from `publisher`.
    fn new<P: FnMut() + Send + 'static>(
        threads: usize,
        share: usize,
        publisher: impl Fn() -> P,
    ) -> Self {
        let (go, threads) = (0..threads)
            .map(|_| {
                let (go, told) = mpsc::sync_channel::<()>(1);
                let mut publish = publisher();
                let thread = std::thread::spawn(move || {
                    while told.recv().is_ok() {
                        (0..share).for_each(|_| publish());
                    }
                });
                (go, thread)
            })
            .unzip();
        Self { go, threads }
    }

    fn burst(&self) {
        for go in &self.go {
            go.send(()).unwrap();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing the channels ends the threads.
        self.go.clear();
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
    }
}

/// A fan-out whose publishing can move to a pool of threads.
trait Parallel: Sized {
    /// The scenario with its listeners reading from `fanout`'s runtime.
    fn listening(fanout: Fanout) -> Self;

    /// Publishes one event, from any thread.
    fn publisher(&self) -> impl FnMut() + Send + 'static;

    fn pool(&mut self) -> &mut Option<Pool>;
}

/// `n` listeners on a runtime with a worker per core (at least two), and
/// `publishers` threads sharing each burst.
fn parallel<T: Parallel>(n: usize, publishers: usize) -> T {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let mut scenario = T::listening(Fanout::with_workers(n, BURST, workers));
    let pool = Pool::new(publishers, BURST / publishers, || scenario.publisher());
    *scenario.pool() = Some(pool);
    scenario
}

/// Fan-out through the hub: every listener matches every event.
pub struct HubFanout {
    fanout: Fanout,
    hub: Hub,
    pool: Option<Pool>,
}

impl HubFanout {
    pub fn new(n: usize) -> Self {
        Self::with_burst(n, BURST)
    }

    /// `burst` events per iteration; with 1, an iteration is one event's
    /// way from the publish to the last of the `n` listeners.
    pub fn with_burst(n: usize, burst: usize) -> Self {
        Self::listening(Fanout::new(n, burst))
    }

    /// `publishers` threads share each burst; readers get a worker per core.
    pub fn parallel(n: usize, publishers: usize) -> Self {
        parallel(n, publishers)
    }
}

impl Parallel for HubFanout {
    fn publisher(&self) -> impl FnMut() + Send + 'static {
        let hub = self.hub.clone();
        move || {
            hub.publish(Event::tools_list_changed());
        }
    }

    fn pool(&mut self) -> &mut Option<Pool> {
        &mut self.pool
    }

    fn listening(fanout: Fanout) -> Self {
        let n = fanout.n;
        let hub = Hub::builder().capacity(BURST * 2).max_listeners(n).build();
        for _ in 0..n {
            let mut listener = hub
                .listen(&Filter::new().with_tools_list_changed())
                .unwrap();
            let mut received = fanout.counter();
            fanout.runtime.spawn(async move {
                while let Next::Event(_) = listener.next().await {
                    received();
                }
            });
        }
        Self {
            fanout,
            hub,
            pool: None,
        }
    }
}

impl Scenario for HubFanout {
    fn run(&mut self, bursts: u64) -> Duration {
        let hub = &self.hub;
        self.fanout.time(bursts, self.pool.as_ref(), || {
            hub.publish(Event::tools_list_changed());
        })
    }
}

impl Drop for HubFanout {
    fn drop(&mut self) {
        self.hub.complete();
    }
}

/// The anchor: `tokio::sync::broadcast`, receivers on the same runtime.
pub struct BroadcastFanout {
    fanout: Fanout,
    tx: broadcast::Sender<Event>,
    pool: Option<Pool>,
}

impl BroadcastFanout {
    pub fn new(n: usize) -> Self {
        Self::with_burst(n, BURST)
    }

    /// `burst` events per iteration; with 1, an iteration is one event's
    /// way from the publish to the last of the `n` listeners.
    pub fn with_burst(n: usize, burst: usize) -> Self {
        Self::listening(Fanout::new(n, burst))
    }

    /// `publishers` threads share each burst; readers get a worker per core.
    pub fn parallel(n: usize, publishers: usize) -> Self {
        parallel(n, publishers)
    }
}

impl Parallel for BroadcastFanout {
    fn publisher(&self) -> impl FnMut() + Send + 'static {
        let tx = self.tx.clone();
        move || {
            let _ = tx.send(Event::tools_list_changed());
        }
    }

    fn pool(&mut self) -> &mut Option<Pool> {
        &mut self.pool
    }

    fn listening(fanout: Fanout) -> Self {
        let n = fanout.n;
        let (tx, _) = broadcast::channel::<Event>(BURST * 2);
        for _ in 0..n {
            let mut rx = tx.subscribe();
            let mut received = fanout.counter();
            fanout.runtime.spawn(async move {
                while let Ok(_event) = rx.recv().await {
                    received();
                }
            });
        }
        Self {
            fanout,
            tx,
            pool: None,
        }
    }
}

impl Scenario for BroadcastFanout {
    fn run(&mut self, bursts: u64) -> Duration {
        let tx = &self.tx;
        self.fanout.time(bursts, self.pool.as_ref(), || {
            let _ = tx.send(Event::tools_list_changed());
        })
    }
}

/// The anchor the TypeScript and Python SDK hubs amount to: one
/// `tokio::sync::mpsc` channel per listener, the publisher sending to each.
pub struct MpscFanout {
    fanout: Fanout,
    senders: Vec<tokio_mpsc::Sender<Event>>,
}

impl MpscFanout {
    pub fn new(n: usize) -> Self {
        Self::with_burst(n, BURST)
    }

    /// `burst` events per iteration; with 1, an iteration is one event's
    /// way from the publish to the last of the `n` listeners.
    pub fn with_burst(n: usize, burst: usize) -> Self {
        let fanout = Fanout::new(n, burst);
        let senders = (0..n)
            .map(|_| {
                let (tx, mut rx) = tokio_mpsc::channel::<Event>(BURST * 2);
                let mut received = fanout.counter();
                fanout.runtime.spawn(async move {
                    while let Some(_event) = rx.recv().await {
                        received();
                    }
                });
                tx
            })
            .collect();
        Self { fanout, senders }
    }
}

impl Scenario for MpscFanout {
    fn run(&mut self, bursts: u64) -> Duration {
        let senders = &self.senders;
        self.fanout.time(bursts, None, || {
            let event = Event::tools_list_changed();
            for tx in senders {
                let _ = tx.try_send(event.clone());
            }
        })
    }
}

/// How often a reading task is polled per event it receives, in a fan-out
/// of `n` listeners through the hub (`through_hub`) or `broadcast`, over
/// `bursts` bursts: 1.0 would be one poll per event; each poll beyond that
/// is a time the reader found nothing, slept and was woken again.
pub fn reader_polls_per_event(n: usize, through_hub: bool, bursts: u64) -> f64 {
    let fanout = Fanout::new(n, BURST);
    let hub = Hub::builder().capacity(BURST * 2).max_listeners(n).build();
    let (tx, _) = broadcast::channel::<Event>(BURST * 2);
    let polls: Vec<Arc<AtomicUsize>> = (0..n).map(|_| Arc::default()).collect();
    for count in &polls {
        let (count, mut received) = (count.clone(), fanout.counter());
        // Each task counts its own polls: no counter is shared.
        let counted = move || count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if through_hub {
            let mut listener = hub
                .listen(&Filter::new().with_tools_list_changed())
                .unwrap();
            fanout.runtime.spawn(async move {
                loop {
                    let mut next = std::pin::pin!(listener.next());
                    let next = std::future::poll_fn(|cx| {
                        counted();
                        next.as_mut().poll(cx)
                    });
                    let Next::Event(_) = next.await else { break };
                    received();
                }
            });
        } else {
            let mut rx = tx.subscribe();
            fanout.runtime.spawn(async move {
                loop {
                    let mut next = std::pin::pin!(rx.recv());
                    let next = std::future::poll_fn(|cx| {
                        counted();
                        next.as_mut().poll(cx)
                    });
                    let Ok(_) = next.await else { break };
                    received();
                }
            });
        }
    }
    fanout.time(bursts, None, || {
        if through_hub {
            hub.publish(Event::tools_list_changed());
        } else {
            let _ = tx.send(Event::tools_list_changed());
        }
    });
    hub.complete();
    let total: usize = polls.iter().map(|p| p.load(Ordering::Relaxed)).sum();
    total as f64 / (n as u64 * bursts * BURST as u64) as f64
}
