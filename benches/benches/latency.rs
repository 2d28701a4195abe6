//! Latency: one event's way from the publish to the last of 256 listeners
//! (tasks on a 2-worker tokio runtime), through the hub and through
//! `tokio::sync::broadcast` in the same group. Each iteration publishes one
//! event, waits until every listener has it, then pauses (untimed), so the
//! publisher is paced, nothing queues up and the readers are asleep when
//! the next event comes. `bench_report` gives the per-listener p50, p99 and
//! max of the same runs (`harness::Latency`).

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harness::{Latency, Scenario, Via};

fn latency(c: &mut Criterion) {
    let mut group = c.benchmark_group("latency");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        // Each timed event also pauses `Latency::GAP`, untimed: a second
        // of events is several seconds of wall time.
        .measurement_time(Duration::from_secs(1));
    for (name, via) in [("hub", Via::Hub), ("broadcast", Via::Broadcast)] {
        let mut latency = Latency::new(via);
        group.bench_function(BenchmarkId::new(name, Latency::LISTENERS), |b| {
            b.iter_custom(|i| latency.run(i))
        });
    }
    group.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
