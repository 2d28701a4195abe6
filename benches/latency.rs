//! Latency: one event's way from the publish to the last of 256 listeners
//! (tasks on a 2-worker tokio runtime), through the hub and through
//! `tokio::sync::broadcast` in the same group. Each iteration publishes one
//! event and waits until every listener has it, so the publisher is paced
//! and nothing queues up. `bench_report` gives the per-listener p50, p99
//! and max of the same comparison.

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

mod harness;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harness::{Fanout, Scenario, Via};

const LISTENERS: usize = 256;

fn latency(c: &mut Criterion) {
    let mut group = c.benchmark_group("latency");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, via) in [("hub", Via::Hub), ("broadcast", Via::Broadcast)] {
        let mut fanout = Fanout::with_burst(via, LISTENERS, 1);
        group.bench_function(BenchmarkId::new(name, LISTENERS), |b| {
            b.iter_custom(|i| fanout.run(i))
        });
    }
    group.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
