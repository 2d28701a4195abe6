//! Memory: heap bytes held per idle listener (subscribed, nothing queued),
//! counted by the harness's instrumented allocator rather than timed, for
//! the hub and for a `tokio::sync::broadcast` receiver in the same group.
//! Each iteration opens one more listener and keeps it (its handle
//! included); criterion reports bytes per iteration. `bench_report` makes
//! the same count over 100,000 listeners (`harness::held_by_idle_listeners`).

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use harness::{Via, held, held_by_idle_listeners};

/// Heap bytes held, as a criterion measurement.
struct HeapBytes;

impl Measurement for HeapBytes {
    type Intermediate = f64;
    type Value = f64;

    fn start(&self) -> f64 {
        held()
    }

    fn end(&self, start: f64) -> f64 {
        held() - start
    }

    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }

    fn zero(&self) -> f64 {
        0.0
    }

    fn to_f64(&self, value: &f64) -> f64 {
        *value
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &InBytes
    }
}

struct InBytes;

impl ValueFormatter for InBytes {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "B"
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        _throughput: &Throughput,
        _values: &mut [f64],
    ) -> &'static str {
        "B"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "B"
    }
}

fn memory(c: &mut Criterion<HeapBytes>) {
    let mut group = c.benchmark_group("memory_per_idle_listener");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    for (name, via) in [("hub", Via::Hub), ("broadcast_receiver", Via::Broadcast)] {
        group.bench_function(BenchmarkId::new(name, "idle"), |b| {
            b.iter_custom(|iters| held_by_idle_listeners(via, iters))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(HeapBytes);
    targets = memory
}
criterion_main!(benches);
