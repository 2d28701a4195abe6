//! Memory: heap bytes held per idle listener (subscribed, nothing queued),
//! counted by an instrumented allocator rather than timed, for the hub and
//! for a `tokio::sync::broadcast` receiver in the same group. Each
//! iteration opens one more listener and keeps it (its handle included);
//! criterion reports bytes per iteration. `bench_report` measures the same
//! over 100,000 listeners as a resident-set delta.

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::alloc::System;
use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcp_subscriptions::{Event, Filter, Hub};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes held on the heap now: allocated, less freed.
fn held() -> f64 {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as f64 - stats.bytes_deallocated as f64 + stats.bytes_reallocated as f64
}

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

/// Heap bytes that `open` holds per call, over `iters` calls kept alive:
/// what it allocates, and the handle it returns (kept in a vector).
fn per_listener<T>(iters: u64, mut open: impl FnMut() -> T) -> f64 {
    let start = held();
    let mut kept = Vec::with_capacity(iters as usize);
    for _ in 0..iters {
        kept.push(open());
    }
    let bytes = held() - start;
    black_box(kept);
    bytes
}

fn memory(c: &mut Criterion<HeapBytes>) {
    let mut group = c.benchmark_group("memory_per_idle_listener");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    let filter = Filter::new().with_tools_list_changed();
    group.bench_function(BenchmarkId::new("hub", "idle"), |b| {
        b.iter_custom(|iters| {
            let hub = Hub::builder().max_listeners(iters as usize).build();
            per_listener(iters, || hub.listen(&filter).unwrap())
        })
    });
    group.bench_function(BenchmarkId::new("broadcast_receiver", "idle"), |b| {
        b.iter_custom(|iters| {
            let (tx, _) = tokio::sync::broadcast::channel::<Event>(1_024);
            per_listener(iters, || tx.subscribe())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(HeapBytes);
    targets = memory
}
criterion_main!(benches);
