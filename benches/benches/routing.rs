//! Sparse routing: a resource update for a URI with exactly one subscriber,
//! among 10, 10,000 and 100,000 listeners that each hold a distinct URI,
//! against `broadcast` with receiver-side filtering in the same group.

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harness::{BroadcastSparse, HubSparse, Scenario};

fn sparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("sparse");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in [10, 10_000, 100_000] {
        let mut hub = HubSparse::new(n);
        group.bench_function(BenchmarkId::new("hub", n), |b| {
            b.iter_custom(|i| hub.run(i))
        });
    }
    for n in [10, 10_000] {
        let mut broadcast = BroadcastSparse::new(n);
        group.bench_function(BenchmarkId::new("broadcast_filtered", n), |b| {
            b.iter_custom(|i| broadcast.run(i))
        });
    }
    group.finish();
}

criterion_group!(benches, sparse);
criterion_main!(benches);
