//! Four publishing threads, 64 concurrently reading listeners, 100,000
//! events: per listener, every matched event is accounted for, and each
//! publisher's events arrive in the order it published them.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use mcp_subscriptions::{
    Capabilities, CloseReason, Event, EventKind, Filter, Hub, ListenerStats, Next, OpenContext,
    Overflow, Selector,
};
use serde_json::{Map, json};

const PUBLISHERS: u64 = 4;
const EVENTS_PER_PUBLISHER: u64 = 25_000;
const LISTENERS: usize = 64;

/// How one listener is set up, so the expectations can differ.
#[derive(Clone, Copy, Debug)]
enum Role {
    /// Never overflows: must see every event it matched.
    Complete,
    /// Small queue, drop-oldest, slow reader.
    Lossy,
    /// Small queue, disconnect, slow reader.
    Strict,
    /// Closes itself part-way through.
    Quitter,
}

fn event(publisher: u64, seq: u64) -> Event {
    Event::extension(
        seq.to_string(),
        Map::new(),
        Some(Selector::new("publisher", Some(publisher.to_string()))),
    )
}

fn decode(event: &Event) -> (u64, u64) {
    let EventKind::Extension { method, selector } = event.kind() else {
        panic!("unexpected {event:?}")
    };
    let publisher = selector.as_ref().unwrap().key().unwrap().parse().unwrap();
    (publisher, method.parse().unwrap())
}

struct Outcome {
    role: Role,
    publishers: Vec<u64>,
    seen: u64,
    stats: ListenerStats,
}

#[test]
fn every_matched_event_is_accounted_for_and_order_is_kept() {
    let hub = Hub::builder()
        .capacity(1 << 20)
        .max_listeners(LISTENERS)
        .capabilities(Capabilities::default().with_extension_field("publisher"))
        .build();
    let start = Arc::new(Barrier::new(LISTENERS + PUBLISHERS as usize));

    let readers: Vec<_> = (0..LISTENERS)
        .map(|i| {
            let role = match i % 8 {
                0..=3 => Role::Complete,
                4 | 5 => Role::Lossy,
                6 => Role::Strict,
                _ => Role::Quitter,
            };
            // Every fourth listener takes everything; the others one or two
            // publishers by key.
            let publishers: Vec<u64> = if i % 4 == 0 {
                (0..PUBLISHERS).collect()
            } else {
                vec![i as u64 % PUBLISHERS, (i as u64 + 1) % PUBLISHERS]
            };
            let filter = if publishers.len() == PUBLISHERS as usize {
                Filter::everything()
            } else {
                let keys: Vec<String> = publishers.iter().map(u64::to_string).collect();
                Filter::new().with_extension("publisher", json!(keys))
            };
            let context = match role {
                Role::Lossy => OpenContext::default().with_capacity(64),
                Role::Strict => OpenContext::default()
                    .with_capacity(64)
                    .with_overflow(Overflow::Disconnect),
                _ => OpenContext::default(),
            };
            let hub = hub.clone();
            let start = start.clone();
            thread::spawn(move || {
                let mut listener = hub.listen_with(&filter, &context).unwrap();
                drop(hub);
                start.wait();
                let mut last = [None::<u64>; PUBLISHERS as usize];
                let mut seen = 0u64;
                loop {
                    let Some(next) = listener.next_timeout(Duration::from_secs(30)) else {
                        panic!("reader {i} starved");
                    };
                    match next {
                        Next::Event(event) => {
                            let (publisher, seq) = decode(&event);
                            let slot = &mut last[publisher as usize];
                            assert!(
                                slot.is_none_or(|prev| prev < seq),
                                "reader {i}: publisher {publisher} out of order"
                            );
                            *slot = Some(seq);
                            seen += 1;
                            if matches!(role, Role::Lossy | Role::Strict) && seen.is_multiple_of(64)
                            {
                                thread::sleep(Duration::from_millis(1));
                            }
                            if matches!(role, Role::Quitter) && seen == 5_000 {
                                listener.close(CloseReason::Cancelled);
                            }
                        }
                        Next::Lagged(_) => {}
                        Next::Complete | Next::Failed(_) | Next::Closed => break,
                        other => panic!("unexpected {other:?}"),
                    }
                }
                Outcome {
                    role,
                    publishers,
                    seen,
                    stats: listener.stats(),
                }
            })
        })
        .collect();

    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|p| {
            let hub = hub.clone();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                for seq in 0..EVENTS_PER_PUBLISHER {
                    hub.publish(event(p, seq));
                }
            })
        })
        .collect();
    for publisher in publishers {
        publisher.join().unwrap();
    }
    hub.complete();

    let mut matched_total = 0;
    for reader in readers {
        let Outcome {
            role,
            publishers,
            seen,
            stats,
        } = reader.join().unwrap();
        assert_eq!(
            stats.matched,
            stats.delivered + stats.dropped + stats.queued + stats.discarded,
            "{role:?}: {stats:?}"
        );
        assert_eq!(stats.delivered, seen, "{role:?}");
        matched_total += stats.matched;
        let published_to_it = publishers.len() as u64 * EVENTS_PER_PUBLISHER;
        match role {
            Role::Complete => {
                assert_eq!(stats.matched, published_to_it);
                assert_eq!(
                    seen, published_to_it,
                    "a listener that never overflows sees all"
                );
            }
            Role::Lossy => assert_eq!(stats.matched, published_to_it),
            Role::Strict => assert!(stats.matched <= published_to_it),
            Role::Quitter => {
                assert!(stats.matched <= published_to_it);
                assert_eq!(stats.queued, 0, "closing empties the queue");
            }
        }
    }

    let stats = hub.stats();
    assert_eq!(stats.events_published, PUBLISHERS * EVENTS_PER_PUBLISHER);
    assert_eq!(stats.events_matched, matched_total);
    assert_eq!(stats.listeners_active, 0);
    assert_eq!(stats.listeners_closed.total(), LISTENERS as u64);
    assert!(stats.is_balanced(), "{stats:?}");
}
