//! Coalescing under overload: a burst of 100x the queue's capacity, mixing
//! the three list-changed kinds and 1,000 distinct URIs, loses nothing a
//! client needs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use mcp_subscriptions::queue::Settings;
use mcp_subscriptions::{Event, EventKind, Filter, Hub, ListKind, Next, OpenContext};

const CAPACITY: usize = 2_000;
const URIS: usize = 1_000;
const KEYS: usize = URIS + 3;
const BURST: u64 = 100 * CAPACITY as u64;

fn event(key: usize) -> Event {
    match key {
        0 => Event::tools_list_changed(),
        1 => Event::prompts_list_changed(),
        2 => Event::resources_list_changed(),
        uri => Event::resource_updated(format!("file:///{}", uri - 3)),
    }
}

fn key(event: &Event) -> usize {
    match event.kind() {
        EventKind::ListChanged(ListKind::Tools) => 0,
        EventKind::ListChanged(ListKind::Prompts) => 1,
        EventKind::ListChanged(ListKind::Resources) => 2,
        EventKind::ResourceUpdated { uri } => {
            3 + uri.trim_start_matches("file:///").parse::<usize>().unwrap()
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_coalescing_listener_drops_nothing_and_gets_every_signal_after_its_last_publish() {
    let hub = Hub::new();
    let filter = (0..URIS).fold(
        Filter::new()
            .with_tools_list_changed()
            .with_prompts_list_changed()
            .with_resources_list_changed(),
        |f, i| f.with_resource(format!("file:///{i}")),
    );
    let context = OpenContext::default().with_queue(
        Settings::default()
            .with_capacity(CAPACITY)
            .with_coalesce(true),
    );
    let mut listener = hub.listen_with(&filter, &context).unwrap();

    // Publishes so far; read by the reader before each pull, written by
    // the publisher after each publish, so `seen_at >= last_publish[k]`
    // proves a delivery of k began after k's last publish.
    let published = Arc::new(AtomicU64::new(0));
    let reader = {
        let published = published.clone();
        thread::spawn(move || {
            let mut receipts = Vec::new();
            loop {
                match listener.next_timeout(Duration::from_secs(30)) {
                    Some(Next::Event(event)) => {
                        // Read after the pop: every publish this delivery
                        // stands for (its own, or one absorbed into it) was
                        // numbered before it happened, and so before now.
                        let seen_at = published.load(Ordering::SeqCst);
                        receipts.push((key(&event), seen_at));
                        // A slow reader: the queue is overloaded.
                        if receipts.len() % 20 == 0 {
                            thread::sleep(Duration::from_millis(1));
                        }
                    }
                    Some(Next::Complete) => break,
                    other => panic!("unexpected {other:?}"),
                }
            }
            (receipts, listener.stats())
        })
    };

    let mut last_publish = vec![0u64; KEYS];
    for i in 0..BURST {
        // A fixed, well-spread sequence over every key.
        let k = (i.wrapping_mul(7_919) % KEYS as u64) as usize;
        // Numbered before it is published, so that a reader that took it
        // (or a copy that absorbed it) sees its number.
        last_publish[k] = published.fetch_add(1, Ordering::SeqCst) + 1;
        hub.publish(event(k));
    }
    hub.complete();
    let (receipts, stats) = reader.join().unwrap();

    assert_eq!(stats.events.dropped, 0, "coalescing leaves nothing to drop");
    let figures = format!(
        "delivered {}, coalesced {}, dropped {}, deepest {}",
        stats.events.delivered, stats.events.coalesced, stats.events.dropped, stats.max_queue_depth
    );
    assert!(
        stats.events.coalesced > 0,
        "the burst was absorbed: {figures}"
    );
    assert_eq!(stats.events.matched, BURST);
    assert_eq!(
        stats.events.matched,
        stats.events.delivered + stats.events.coalesced
    );
    assert!(
        stats.max_queue_depth <= KEYS as u64,
        "memory is bounded by the distinct signals: {figures}"
    );
    for (k, &last) in last_publish.iter().enumerate() {
        assert!(
            receipts
                .iter()
                .any(|&(got, seen_at)| got == k && seen_at >= last),
            "signal {k} was not delivered after its last publish"
        );
    }
    let hub_stats = hub.stats();
    assert_eq!(hub_stats.events.coalesced, stats.events.coalesced);
    assert!(hub_stats.events.is_balanced());
}
