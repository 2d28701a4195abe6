//! Fan-out: one publisher (or a pool of them), N listeners all matching,
//! each listener a task on a tokio runtime; through the hub, `broadcast`,
//! or a per-listener `mpsc`.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use mcp_subscriptions::{Event, Filter, Hub, Listener, Next};
use tokio::runtime::Runtime;
use tokio::sync::{broadcast, mpsc as tokio_mpsc};

use super::{BURST, Scenario};

/// What carries the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The hub, every listener matching with the same filter, so that
    /// they share lanes.
    Hub,
    /// The hub, every listener matching with a filter of its own (a URI
    /// only it watches besides the tools list), so that each has a queue
    /// of its own.
    HubApart,
    /// The anchor: `tokio::sync::broadcast`.
    Broadcast,
    /// The anchor the TypeScript and Python SDK hubs amount to: one
    /// `tokio::sync::mpsc` channel per listener, the publisher sending to
    /// each.
    Mpsc,
}

/// One fan-out: `n` listeners reading as tasks, and a publisher timed
/// until every listener has had every event of a burst.
pub struct Fanout {
    /// Stopped before the readers' runtime goes.
    pool: Option<Pool>,
    route: Route,
    receivers: Receivers,
}

impl Fanout {
    /// `n` listeners `via` the hub or an anchor, bursts of [`BURST`]
    /// events published from this thread, readers on two workers.
    pub fn new(via: Via, n: usize) -> Self {
        Self::start(via, Receivers::new(n, BURST, 2), |_| ())
    }

    /// `publishers` threads share each burst; readers run on `workers`
    /// worker threads.
    pub fn parallel(via: Via, n: usize, publishers: usize, workers: usize) -> Self {
        let mut fanout = Self::start(via, Receivers::new(n, BURST, workers), |_| ());
        let route = fanout.route.clone();
        fanout.pool = Some(Pool::new(publishers, BURST / publishers, || {
            let route = route.clone();
            move || route.publish()
        }));
        fanout
    }

    /// The listeners of `receivers`, `via` the hub or an anchor, reader `i`
    /// noting what `tap(i)` notes.
    pub(crate) fn start<T: Tap>(
        via: Via,
        receivers: Receivers,
        mut tap: impl FnMut(usize) -> T,
    ) -> Self {
        let n = receivers.n;
        let route = match via {
            Via::Hub | Via::HubApart => {
                let hub = Hub::builder().capacity(BURST * 2).max_listeners(n).build();
                for i in 0..n {
                    let filter = Filter::new().with_tools_list_changed();
                    let filter = match via {
                        Via::HubApart => filter.with_resource(format!("file:///{i}")),
                        _ => filter,
                    };
                    receivers.spawn(hub.listen(&filter).unwrap(), tap(i));
                }
                Route::Hub(hub)
            }
            Via::Broadcast => {
                let (tx, _) = broadcast::channel::<Event>(BURST * 2);
                for i in 0..n {
                    receivers.spawn(tx.subscribe(), tap(i));
                }
                Route::Broadcast(tx)
            }
            Via::Mpsc => Route::Mpsc(
                (0..n)
                    .map(|i| {
                        let (tx, rx) = tokio_mpsc::channel::<Event>(BURST * 2);
                        receivers.spawn(rx, tap(i));
                        tx
                    })
                    .collect(),
            ),
        };
        Self {
            pool: None,
            route,
            receivers,
        }
    }

    /// Publishes one burst (from this thread, or through the pool when
    /// there is one) and waits until every listener has had all of it.
    pub(crate) fn burst(&self) {
        self.burst_around(|publish| publish());
    }

    /// As [`burst`](Self::burst), each publish of this thread made by
    /// `around`, given the publish to make, so that it can note what the
    /// publish itself cost.
    pub(crate) fn burst_around(&self, mut around: impl FnMut(&dyn Fn())) {
        let route = &self.route;
        self.receivers
            .burst(self.pool.as_ref(), || around(&|| route.publish()));
    }
}

impl Scenario for Fanout {
    fn run(&mut self, bursts: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..bursts {
            self.burst();
        }
        start.elapsed()
    }
}

/// How often a reading task is polled per event it receives, in a fan-out
/// of `n` listeners `via` the hub or an anchor, over `bursts` bursts: 1.0
/// would be one poll per event; each poll beyond that is a time the reader
/// found nothing, slept and was woken again.
pub fn reader_polls_per_event(via: Via, n: usize, bursts: u64) -> f64 {
    let mut polls = Vec::with_capacity(n);
    let mut fanout = Fanout::start(via, Receivers::new(n, BURST, 2), |_| {
        // Each task its own counter, so that none is shared.
        let counter = Arc::new(AtomicUsize::new(0));
        polls.push(counter.clone());
        Polls(counter)
    });
    fanout.run(bursts);
    let total: usize = polls.iter().map(|p| p.load(Ordering::Relaxed)).sum();
    total as f64 / (n as u64 * bursts * BURST as u64) as f64
}

/// Where the publisher sends.
#[derive(Clone)]
enum Route {
    Hub(Hub),
    Broadcast(broadcast::Sender<Event>),
    Mpsc(Vec<tokio_mpsc::Sender<Event>>),
}

impl Route {
    /// Publishes one tools-list change.
    fn publish(&self) {
        let event = Event::tools_list_changed();
        match self {
            Self::Hub(hub) => {
                hub.publish(event);
            }
            Self::Broadcast(tx) => {
                let _ = tx.send(event);
            }
            Self::Mpsc(senders) => {
                for tx in senders {
                    let _ = tx.try_send(event.clone());
                }
            }
        }
    }
}

/// A listener's end of a fan-out, as its task reads it.
trait Reader: Send + 'static {
    /// The next event's arrival; false once the fan-out has ended.
    fn next_event(&mut self) -> impl Future<Output = bool> + Send;
}

impl Reader for Listener {
    async fn next_event(&mut self) -> bool {
        matches!(self.next().await, Next::Event(_))
    }
}

impl Reader for broadcast::Receiver<Event> {
    async fn next_event(&mut self) -> bool {
        self.recv().await.is_ok()
    }
}

impl Reader for tokio_mpsc::Receiver<Event> {
    async fn next_event(&mut self) -> bool {
        self.recv().await.is_some()
    }
}

/// What a reading task notes besides counting its events; `()` notes
/// nothing, and costs nothing.
pub(crate) trait Tap: Send + 'static {
    /// Before each poll of the reader.
    fn polled(&mut self) {}

    /// When an event has arrived, before it is counted (so before the
    /// publisher can learn that the burst is done).
    fn arrived(&mut self) {}

    /// The waker to poll the reader with, given the task's own; `None`
    /// polls with the task's own.
    fn waker(&mut self, _task: &Waker) -> Option<&Waker> {
        None
    }
}

impl Tap for () {}

/// Counts a task's polls.
struct Polls(Arc<AtomicUsize>);

impl Tap for Polls {
    fn polled(&mut self) {
        // Only this task writes it: no read-modify-write needed.
        self.0
            .store(self.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// The receivers' side of a fan-out: a runtime, and a count of listeners
/// still receiving the current burst (the last one wakes the publisher).
pub(crate) struct Receivers {
    runtime: Runtime,
    n: usize,
    /// Events per iteration.
    burst: usize,
    remaining: Arc<AtomicUsize>,
    done_tx: mpsc::SyncSender<()>,
    done: mpsc::Receiver<()>,
}

impl Receivers {
    /// `n` listeners taking `burst` events per iteration, read on
    /// `workers` threads.
    pub(crate) fn new(n: usize, burst: usize, workers: usize) -> Self {
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

    /// Reads `reader` in a task of its own until the fan-out ends, with
    /// `tap` noting what it notes.
    fn spawn(&self, mut reader: impl Reader, mut tap: impl Tap) {
        let mut received = self.counter();
        self.runtime.spawn(async move {
            loop {
                let mut next = pin!(reader.next_event());
                let arrived = poll_fn(|cx| {
                    tap.polled();
                    match tap.waker(cx.waker()) {
                        Some(waker) => next.as_mut().poll(&mut Context::from_waker(waker)),
                        None => next.as_mut().poll(cx),
                    }
                });
                if !arrived.await {
                    break;
                }
                tap.arrived();
                received();
            }
        });
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

    /// One burst, published by `publish` on this thread or by `pool` when
    /// there is one; returns once every listener has had all of it.
    fn burst(&self, pool: Option<&Pool>, mut publish: impl FnMut()) {
        self.remaining.store(self.n, Ordering::Release);
        match pool {
            Some(pool) => pool.burst(),
            None => (0..self.burst).for_each(|_| publish()),
        }
        self.done.recv().unwrap();
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

/// Listeners alike (one filter, one policy), published a burst of
/// distinct URI updates, then each drained: with coalescing off they share
/// one lane (a publish is one push), with it on each has a queue of its own
/// (a publish is a push per listener). Distinct URIs coalesce with nothing,
/// so both deliver every event: the difference is the lane.
pub struct Alike {
    hub: Hub,
    listeners: Vec<Listener>,
    events: Vec<Event>,
}

impl Alike {
    /// `n` listeners of [`BURST`] URIs each, coalescing or not.
    pub fn new(n: usize, coalesce: bool) -> Self {
        let hub = Hub::builder()
            .capacity(BURST * 2)
            .max_listeners(n)
            .coalesce(coalesce)
            .build();
        let uris: Vec<String> = (0..BURST).map(|i| format!("file:///{i}")).collect();
        let filter = uris
            .iter()
            .fold(Filter::new(), |f, uri| f.with_resource(uri));
        let listeners = (0..n).map(|_| hub.listen(&filter).unwrap()).collect();
        let events = uris.into_iter().map(Event::resource_updated).collect();
        Self {
            hub,
            listeners,
            events,
        }
    }
}

impl Scenario for Alike {
    fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            for event in &self.events {
                self.hub.publish(event.clone());
            }
            for listener in &mut self.listeners {
                let read = std::iter::from_fn(|| listener.try_next()).count();
                assert_eq!(read, BURST, "every event reaches every listener");
            }
        }
        start.elapsed()
    }
}
