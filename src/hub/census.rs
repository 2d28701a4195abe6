//! The census of shared writes (`sync::census`) over the two regimes of
//! fan-out, compiled only under `--cfg mcp_subscriptions_census`:
//!
//! ```sh
//! RUSTFLAGS="--cfg mcp_subscriptions_census" CARGO_TARGET_DIR=target/census \
//!     cargo test -p mcp-subscriptions --lib --release --no-default-features \
//!     census -- --nocapture --test-threads 1
//! ```
//!
//! Listeners alike (sharing lanes) and apart (a queue each), read by tasks
//! on a two-worker runtime, one publisher: in the keep-up regime it
//! publishes one event and waits until every listener has read it; in the
//! burst regime it publishes 32 before it waits. Each run prints, per
//! delivery, the writes the hub made (locks taken, atomic writes, an
//! event's reference counted up or down) and those that landed on a cache
//! line three or more threads wrote, with the places that made them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::event::Event;
use crate::filter::Filter;
use crate::hub::handle::Hub;
use crate::source::Next;
use crate::sync::census;

const LISTENERS: usize = 256;

/// Runs `events` events to [`LISTENERS`] listeners in bursts of `burst`,
/// alike or apart, and reads the census of the runs after the first
/// (which warms the lanes and queues up).
fn census_of(alike: bool, burst: usize, events: usize) -> census::Census {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let hub = Hub::builder().capacity(burst * 2).build();
    let remaining = std::sync::Arc::new(AtomicUsize::new(LISTENERS));
    let (done_tx, done) = mpsc::sync_channel(1);
    for i in 0..LISTENERS {
        let filter = Filter::new().with_tools_list_changed();
        let filter = if alike {
            filter
        } else {
            filter.with_resource(format!("file:///{i}"))
        };
        let mut listener = hub.listen(&filter).unwrap();
        let (remaining, done_tx) = (remaining.clone(), done_tx.clone());
        runtime.spawn(async move {
            let mut got = 0;
            while let Next::Event(_) = listener.next().await {
                got += 1;
                if got % burst == 0 && remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    done_tx.send(()).unwrap();
                }
            }
        });
    }
    let round = || {
        remaining.store(LISTENERS, Ordering::Release);
        for _ in 0..burst {
            hub.publish(Event::tools_list_changed());
        }
        done.recv().unwrap();
    };
    round();
    census::reset();
    for _ in 0..events / burst {
        round();
    }
    let census = census::read();
    drop(hub);
    census
}

fn print(regime: &str, census: &census::Census, deliveries: usize) {
    let per = |count: u64| count as f64 / deliveries as f64;
    println!(
        "{regime}: {:.3} writes per delivery, {:.3} to lines three or more threads write",
        per(census.writes),
        per(census.shared)
    );
    for (place, count) in &census.shared_by_place {
        println!("    {:.3}  {place}", per(*count));
    }
}

#[test]
fn census_of_shared_writes() {
    let events = 2_000;
    let deliveries = events * LISTENERS;
    let mut keepup_alike = None;
    for (regime, alike, burst) in [
        ("keep-up, alike", true, 1),
        ("keep-up, apart", false, 1),
        ("burst, alike", true, 32),
        ("burst, apart", false, 32),
    ] {
        let census = census_of(alike, burst, events);
        print(regime, &census, deliveries);
        if alike && burst == 1 {
            keepup_alike = Some(census.shared as f64 / deliveries as f64);
        }
    }
    // What a delivery to a reader that keeps up costs in shared writes,
    // held where it stands (BENCHMARKS.md lists each).
    let keepup_alike = keepup_alike.unwrap();
    assert!(keepup_alike < 6.0, "{keepup_alike:.3} per delivery");
}
