//! Four publishing threads, 64 concurrently reading listeners, 100,000
//! events: per listener, every matched event is accounted for, and each
//! publisher's events arrive in the order it published them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use mcp_subscriptions::error::StreamError;
use mcp_subscriptions::hub::ListenerStats;
use mcp_subscriptions::queue::Settings;
use mcp_subscriptions::{
    Capabilities, CloseReason, Event, EventKind, Extension, Filter, Hub, Next, OpenContext,
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
    ended_by: Next,
    stats: ListenerStats,
}

#[test]
fn every_matched_event_is_accounted_for_and_order_is_kept() {
    let hub =
        Hub::builder()
            .capacity(1 << 20)
            // The readers, and one listener that comes and goes while publishing runs.
            .max_listeners(LISTENERS + 1)
            .capabilities(Capabilities::default().with_extension(
                Extension::new("test/publisher").with_field("publisher", |_| Ok(())),
            ))
            .build();
    // Readers, publishers, the monitor and the churner start together.
    let start = Arc::new(Barrier::new(LISTENERS + PUBLISHERS as usize + 2));

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
                Role::Lossy => {
                    OpenContext::default().with_queue(Settings::default().with_capacity(64))
                }
                Role::Strict => OpenContext::default().with_queue(
                    Settings::default()
                        .with_capacity(64)
                        .with_overflow(Overflow::Disconnect),
                ),
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
                let ended_by = loop {
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
                        end @ (Next::Complete | Next::Failed(_) | Next::Closed) => break end,
                        other => panic!("unexpected {other:?}"),
                    }
                };
                Outcome {
                    role,
                    publishers,
                    seen,
                    ended_by,
                    stats: listener.stats(),
                }
            })
        })
        .collect();

    // While publishing runs: the figures balance at every snapshot, and
    // listeners come and go (some reading asynchronously) without disturbing
    // anyone else.
    let publishing = Arc::new(AtomicBool::new(true));
    let monitor = {
        let (hub, publishing, start) = (hub.clone(), publishing.clone(), start.clone());
        thread::spawn(move || {
            start.wait();
            let mut snapshots = 0;
            while publishing.load(Ordering::Acquire) {
                let stats = hub.stats();
                assert!(stats.events.is_balanced(), "mid-run snapshot: {stats:?}");
                snapshots += 1;
                thread::sleep(Duration::from_millis(1));
            }
            snapshots
        })
    };
    let churn = {
        let (hub, publishing, start) = (hub.clone(), publishing.clone(), start.clone());
        thread::spawn(move || {
            start.wait();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut rounds = 0;
            while publishing.load(Ordering::Acquire) {
                let mut listener = hub.listen(&Filter::everything()).unwrap();
                runtime.block_on(async {
                    for _ in 0..10 {
                        let wait = tokio::time::timeout(Duration::from_millis(5), listener.next());
                        if wait.await.is_err() {
                            break;
                        }
                    }
                });
                if rounds % 2 == 0 {
                    listener.close(CloseReason::Cancelled);
                }
                rounds += 1;
            }
            rounds
        })
    };

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
    publishing.store(false, Ordering::Release);
    assert!(monitor.join().unwrap() > 0);
    let churned = churn.join().unwrap();
    assert!(churned > 0);
    hub.complete();

    let mut matched_total = 0;
    let (mut overflowed, mut quitters) = (0, 0);
    for reader in readers {
        let Outcome {
            role,
            publishers,
            seen,
            ended_by,
            stats,
        } = reader.join().unwrap();
        let stats = stats.events;
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
                assert_eq!(ended_by, Next::Complete);
                assert_eq!(stats.matched, published_to_it);
                assert_eq!(
                    seen, published_to_it,
                    "a listener that never overflows sees all"
                );
            }
            Role::Lossy => {
                assert_eq!(ended_by, Next::Complete);
                assert_eq!(stats.matched, published_to_it);
                assert_eq!(stats.discarded, 0);
            }
            Role::Strict => match ended_by {
                Next::Failed(StreamError::Overflow { dropped }) => {
                    overflowed += 1;
                    assert_eq!(dropped, 65, "the full queue and the event that did not fit");
                    assert_eq!(stats.dropped, dropped);
                    assert_eq!(stats.matched, stats.delivered + stats.dropped);
                }
                Next::Complete => assert_eq!(stats.matched, published_to_it),
                other => panic!("a strict reader ends by overflow or completion, not {other:?}"),
            },
            Role::Quitter => {
                quitters += 1;
                assert_eq!(ended_by, Next::Closed);
                assert_eq!(seen, 5_000, "it read until it closed");
                assert_eq!(stats.dropped, 0);
                assert_eq!(
                    stats.discarded,
                    stats.matched - 5_000,
                    "closing discards the rest"
                );
            }
        }
    }

    let stats = hub.stats();
    assert_eq!(stats.events_published, PUBLISHERS * EVENTS_PER_PUBLISHER);
    assert!(
        stats.events.matched >= matched_total,
        "the churners matched some too"
    );
    assert_eq!(stats.listeners_active, 0);
    assert_eq!(stats.listeners_opened, LISTENERS as u64 + churned);
    assert_eq!(stats.listeners_closed.total(), LISTENERS as u64 + churned);
    assert_eq!(stats.listeners_closed.overflow, overflowed);
    assert!(stats.listeners_closed.cancelled >= quitters);
    assert!(stats.events.is_balanced(), "{stats:?}");
}
