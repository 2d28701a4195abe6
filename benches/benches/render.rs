//! Serialization: one listener's copy of an event, as the hub makes it (the
//! subscription id spliced between two shared halves of the rendering made
//! at publish) and as a per-listener `serde_json` pass would, for payloads
//! from 100 bytes to 100 KB in the same group. The hub's cost stays flat;
//! the anchor's grows with the payload.

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use harness::{Reserialize, Scenario, Stamp};

fn render(c: &mut Criterion) {
    let mut group = c.benchmark_group("render");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for payload in [100, 10_000, 100_000] {
        let mut stamp = Stamp::new(payload);
        group.bench_function(BenchmarkId::new("stamp", payload), |b| {
            b.iter_custom(|i| stamp.run(i))
        });
        let mut anchor = Reserialize::new(payload);
        group.bench_function(BenchmarkId::new("serde_per_listener", payload), |b| {
            b.iter_custom(|i| anchor.run(i))
        });
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
