//! Memory: heap bytes held by idle listeners (subscribed, nothing queued),
//! their handles included, counted by an instrumented allocator rather than
//! read from the resident set, so that the count is exact at any number of
//! listeners and does not depend on what the heap held before.
//!
//! The allocator is installed here, for every binary built on the harness:
//! the criterion benches and the report then run on the same allocator, and
//! a time in one is a time in the other.

use std::alloc::System;
use std::hint::black_box;

use mcp_subscriptions::{Event, Filter, Hub};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tokio::sync::{broadcast, mpsc};

use crate::{BURST, Via};

#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes held now: allocated, less freed. A reallocation that grows
/// or shrinks a block counts its difference in one or the other.
pub fn held() -> f64 {
    let stats = HEAP.stats();
    stats.bytes_allocated as f64 - stats.bytes_deallocated as f64
}

/// Heap bytes that `n` idle listeners `via` the hub or an anchor hold
/// together, each handle kept in a vector (counted too): hub listeners of
/// tools-list changes, `broadcast` receivers of one channel, or one `mpsc`
/// channel per listener, sized as in the fan-out.
pub fn held_by_idle_listeners(via: Via, n: u64) -> f64 {
    let n = n as usize;
    match via {
        Via::Hub => {
            let hub = Hub::builder().max_listeners(n).build();
            let filter = Filter::new().with_tools_list_changed();
            held_by(n, || hub.listen(&filter).unwrap())
        }
        Via::Broadcast => {
            let (tx, _) = broadcast::channel::<Event>(1_024);
            held_by(n, || tx.subscribe())
        }
        Via::HubApart => held_by_idle_listeners_apart(n as u64),
        Via::Mpsc => held_by(n, || mpsc::channel::<Event>(BURST * 2)),
    }
}

/// Heap bytes that `n` idle hub listeners hold when each watches a URI of
/// its own, so that no two share a lane: the most a listener costs.
pub fn held_by_idle_listeners_apart(n: u64) -> f64 {
    let n = n as usize;
    let hub = Hub::builder().max_listeners(n).build();
    let mut i = 0;
    held_by(n, || {
        i += 1;
        hub.listen(&Filter::new().with_resource(format!("file:///{i}")))
            .unwrap()
    })
}

/// Heap bytes a stalled listener (one that never reads) holds after
/// `events` resource updates of `size` bytes each, every one a fresh
/// rendering as a real stream of changes is, under a byte bound of `bound`.
pub fn held_by_stalled_listener(bound: usize, events: usize, size: usize) -> f64 {
    let before = held();
    let hub = Hub::builder()
        .capacity(events)
        .max_queued_bytes(bound)
        .build();
    let stalled = hub
        .listen(&Filter::new().with_resource("file:///big"))
        .unwrap();
    for i in 0..events {
        let params = serde_json::json!({"uri": "file:///big", "_meta": {"version": i, "blob": "x".repeat(size)}});
        let params = params.as_object().cloned().unwrap_or_default();
        hub.publish(Event::extension(
            "notifications/resources/updated",
            params,
            None,
        ));
    }
    let bytes = held() - before;
    black_box((hub, stalled));
    bytes
}

/// Heap bytes held by `n` results of `open`, kept alive together.
fn held_by<T>(n: usize, mut open: impl FnMut() -> T) -> f64 {
    let before = held();
    let kept: Vec<T> = (0..n).map(|_| open()).collect();
    let bytes = held() - before;
    black_box(kept);
    bytes
}
