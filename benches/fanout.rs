//! Fan-out: one publisher, N listeners all matching, each listener a task on
//! a 2-worker tokio runtime, against `tokio::sync::broadcast` and a
//! per-listener `mpsc` fan-out in the same group. Throughput is in
//! deliveries (events × listeners).

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

mod harness;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use harness::{BURST, BroadcastFanout, HubFanout, MpscFanout, Scenario};

fn fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("fanout");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in [1, 16, 256, 4_096] {
        group.throughput(Throughput::Elements((n * BURST) as u64));
        let mut hub = HubFanout::new(n);
        group.bench_function(BenchmarkId::new("hub", n), |b| {
            b.iter_custom(|i| hub.run(i))
        });
        let mut broadcast = BroadcastFanout::new(n);
        group.bench_function(BenchmarkId::new("broadcast", n), |b| {
            b.iter_custom(|i| broadcast.run(i))
        });
        let mut mpsc = MpscFanout::new(n);
        group.bench_function(BenchmarkId::new("mpsc", n), |b| {
            b.iter_custom(|i| mpsc.run(i))
        });
    }
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
