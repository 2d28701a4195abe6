//! Fan-out: one publisher, N listeners all matching, each listener a task on
//! a 2-worker tokio runtime, against `tokio::sync::broadcast` and a
//! per-listener `mpsc` fan-out in the same group. Throughput is in
//! deliveries (events × listeners).

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use harness::{BURST, Fanout, Scenario, Via};

fn fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("fanout");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in [1, 16, 256, 4_096] {
        group.throughput(Throughput::Elements((n * BURST) as u64));
        for (name, via) in [
            ("hub", Via::Hub),
            ("broadcast", Via::Broadcast),
            ("mpsc", Via::Mpsc),
        ] {
            let mut fanout = Fanout::new(via, n);
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|i| fanout.run(i))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
