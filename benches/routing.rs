//! Sparse routing: a resource update for a URI with exactly one subscriber,
//! among 10, 10,000 and 100,000 listeners that each hold a distinct URI.
//! One iteration publishes and the one subscriber takes the event.
//!
//! The anchor is `tokio::sync::broadcast` with receiver-side filtering: every
//! receiver must take the event to find out it was not for it.

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_subscriptions::{Event, EventKind, Filter, Hub, Next};
use tokio::sync::broadcast;

fn uri(i: usize) -> String {
    format!("file:///resource/{i}")
}

fn sparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("sparse");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    for n in [10, 10_000, 100_000] {
        group.bench_function(BenchmarkId::new("hub", n), |b| {
            let hub = Hub::builder().max_listeners(n).build();
            let mut listeners: Vec<_> = (0..n)
                .map(|i| hub.listen(&Filter::new().with_resource(uri(i))).unwrap())
                .collect();
            let target = uri(n / 2);
            let reader = &mut listeners[n / 2];
            b.iter(|| {
                hub.notify_resource_updated(target.as_str());
                let Some(Next::Event(event)) = reader.try_next() else {
                    panic!("the subscriber must have it");
                };
                black_box(event);
            });
        });
    }

    for n in [10, 10_000] {
        group.bench_function(BenchmarkId::new("broadcast_filtered", n), |b| {
            let (tx, _) = broadcast::channel::<Event>(16);
            let mut receivers: Vec<_> = (0..n).map(|i| (uri(i), tx.subscribe())).collect();
            let target = uri(n / 2);
            b.iter(|| {
                tx.send(Event::resource_updated(target.as_str())).unwrap();
                let mut delivered = 0;
                for (mine, rx) in &mut receivers {
                    let event = rx.try_recv().unwrap();
                    if matches!(event.kind(), EventKind::ResourceUpdated { uri } if uri == mine) {
                        delivered += 1;
                        black_box(&event);
                    }
                }
                assert_eq!(delivered, 1);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, sparse);
criterion_main!(benches);
