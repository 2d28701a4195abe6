//! Fan-out: one publisher, N listeners all matching, each listener a task on
//! a 2-worker tokio runtime. The anchor is `tokio::sync::broadcast` with its
//! receivers on the same runtime, in the same group.
//!
//! One iteration publishes a burst of events and waits until every listener
//! has received all of them; throughput is in deliveries (events × listeners).

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_subscriptions::{Event, Filter, Hub, Next};
use tokio::runtime::Runtime;
use tokio::sync::broadcast;

const BURST: usize = 32;
const LISTENERS: [usize; 4] = [1, 16, 256, 4_096];

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
}

/// Counts listeners still receiving the current burst; the last one to
/// finish wakes the publisher.
struct Finish {
    remaining: AtomicUsize,
    done: mpsc::SyncSender<()>,
}

impl Finish {
    fn new(listeners: usize) -> (Arc<Self>, mpsc::Receiver<()>) {
        let (done, wait) = mpsc::sync_channel(1);
        let finish = Arc::new(Self {
            remaining: AtomicUsize::new(listeners),
            done,
        });
        (finish, wait)
    }

    fn one_done(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.send(()).unwrap();
        }
    }

    fn arm(&self, listeners: usize) {
        self.remaining.store(listeners, Ordering::Release);
    }
}

fn measure(
    iters: u64,
    n: usize,
    finish: &Finish,
    wait: &mpsc::Receiver<()>,
    mut publish: impl FnMut(),
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        finish.arm(n);
        for _ in 0..BURST {
            publish();
        }
        wait.recv().unwrap();
    }
    start.elapsed()
}

fn fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("fanout");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in LISTENERS {
        group.throughput(Throughput::Elements((n * BURST) as u64));

        group.bench_function(BenchmarkId::new("hub", n), |b| {
            let rt = runtime();
            let hub = Hub::builder().capacity(BURST * 2).max_listeners(n).build();
            let (finish, wait) = Finish::new(n);
            for _ in 0..n {
                let mut listener = hub
                    .listen(&Filter::new().with_tools_list_changed())
                    .unwrap();
                let finish = finish.clone();
                rt.spawn(async move {
                    let mut got = 0;
                    while let Next::Event(_) = listener.next().await {
                        got += 1;
                        if got % BURST == 0 {
                            finish.one_done();
                        }
                    }
                });
            }
            b.iter_custom(|iters| {
                measure(iters, n, &finish, &wait, || {
                    hub.publish(Event::tools_list_changed());
                })
            });
            hub.complete();
        });

        group.bench_function(BenchmarkId::new("broadcast", n), |b| {
            let rt = runtime();
            let (tx, _) = broadcast::channel::<Event>(BURST * 2);
            let (finish, wait) = Finish::new(n);
            for _ in 0..n {
                let mut rx = tx.subscribe();
                let finish = finish.clone();
                rt.spawn(async move {
                    let mut got = 0;
                    while let Ok(_event) = rx.recv().await {
                        got += 1;
                        if got % BURST == 0 {
                            finish.one_done();
                        }
                    }
                });
            }
            b.iter_custom(|iters| {
                measure(iters, n, &finish, &wait, || {
                    let _ = tx.send(Event::tools_list_changed());
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
