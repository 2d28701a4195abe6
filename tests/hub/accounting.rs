//! A property test: over random sequences of open, publish, read, close and
//! complete, the hub behaves exactly like a simple reference model of
//! bounded (optionally coalescing) queues: every item read, every field of
//! every publish report and every listener's counts.

use std::collections::VecDeque;

use mcp_subscriptions::error::StreamError;
use mcp_subscriptions::hub::ListenerStats;
use mcp_subscriptions::queue::Settings;
use mcp_subscriptions::{
    Capabilities, CloseReason, Event, EventKind, Extension, Filter, Hub, ListKind, Listener, Next,
    OpenContext, Overflow, Selector, hub::PublishReport,
};
use proptest::prelude::*;
use serde_json::json;

/// What can be published: three URIs and the tools list (idempotent, so
/// coalescing queues absorb duplicates), and an extension event (never
/// absorbed).
const KEYS: [&str; 5] = ["a", "b", "c", "tools", "ext"];
const TOOLS: usize = 3;
const EXT: usize = 4;

fn event(key: usize) -> Event {
    match key {
        TOOLS => Event::tools_list_changed(),
        EXT => Event::extension("x/ext", Default::default(), Some(Selector::new("x", None))),
        uri => Event::resource_updated(KEYS[uri]),
    }
}

fn key_of(event: &Event) -> usize {
    match event.kind() {
        EventKind::ListChanged(ListKind::Tools) => TOOLS,
        EventKind::Extension { .. } => EXT,
        EventKind::ResourceUpdated { uri } => KEYS.iter().position(|k| k == uri).unwrap(),
        other => panic!("unexpected {other:?}"),
    }
}

fn filter(keys: &[usize], everything: bool) -> Filter {
    let base = if everything {
        Filter::everything()
    } else {
        Filter::new()
    };
    keys.iter().fold(base, |f, &key| match key {
        TOOLS => f.with_tools_list_changed(),
        EXT => f.with_extension("x", json!(true)),
        uri => f.with_resource(KEYS[uri]),
    })
}

#[derive(Debug, Clone)]
enum Op {
    Open {
        keys: Vec<usize>,
        everything: bool,
        capacity: usize,
        disconnect: bool,
        coalesce: bool,
    },
    Publish {
        key: usize,
    },
    Read {
        listener: usize,
    },
    Close {
        listener: usize,
    },
    Complete,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (
            proptest::collection::vec(0..KEYS.len(), 0..4),
            proptest::bool::weighted(0.25),
            1..4usize,
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(keys, everything, capacity, disconnect, coalesce)| Op::Open {
                keys,
                everything,
                capacity,
                disconnect,
                coalesce,
            }),
        6 => (0..KEYS.len()).prop_map(|key| Op::Publish { key }),
        4 => (0..8usize).prop_map(|listener| Op::Read { listener }),
        1 => (0..8usize).prop_map(|listener| Op::Close { listener }),
        1 => Just(Op::Complete),
    ]
}

/// The reference: what one listener should hold, report and count.
#[derive(Debug)]
struct Model {
    keys: Vec<usize>,
    everything: bool,
    capacity: usize,
    disconnect: bool,
    coalesce: bool,
    /// The keys of the queued events.
    queue: VecDeque<usize>,
    lag: u64,
    state: State,
    counts: Counts,
}

#[derive(Debug, Default, PartialEq)]
struct Counts {
    matched: u64,
    delivered: u64,
    dropped: u64,
    coalesced: u64,
    discarded: u64,
}

#[derive(Debug, PartialEq)]
enum State {
    Open,
    Completing,
    Failed(u64),
    Ended,
}

/// What the hub's closed counters should say.
#[derive(Debug, Default, PartialEq)]
struct Closed {
    cancelled: u64,
    complete: u64,
    overflow: u64,
}

/// What one push did, as the publish report counts it.
enum Pushed {
    Queued,
    Evicted,
    Coalesced,
    Disconnected,
}

impl Model {
    fn matches(&self, key: usize) -> bool {
        self.state == State::Open && (self.everything || self.keys.contains(&key))
    }

    fn is_registered(&self) -> bool {
        matches!(self.state, State::Open | State::Completing)
    }

    fn push(&mut self, key: usize, closed: &mut Closed) -> Pushed {
        self.counts.matched += 1;
        if self.coalesce && key != EXT && self.queue.contains(&key) {
            self.counts.coalesced += 1;
            return Pushed::Coalesced;
        }
        let mut pushed = Pushed::Queued;
        if self.queue.len() == self.capacity {
            if self.disconnect {
                let lost = self.queue.len() as u64 + 1;
                self.counts.dropped += lost;
                self.state = State::Failed(lost);
                self.queue.clear();
                closed.overflow += 1;
                return Pushed::Disconnected;
            }
            self.queue.pop_front();
            self.counts.dropped += 1;
            self.lag += 1;
            pushed = Pushed::Evicted;
        }
        self.queue.push_back(key);
        pushed
    }

    fn pop(&mut self, closed: &mut Closed) -> Option<Expected> {
        if self.lag > 0 {
            return Some(Expected::Lagged(std::mem::take(&mut self.lag)));
        }
        if let Some(key) = self.queue.pop_front() {
            self.counts.delivered += 1;
            return Some(Expected::Event(key));
        }
        match std::mem::replace(&mut self.state, State::Ended) {
            State::Open => {
                self.state = State::Open;
                None
            }
            State::Completing => {
                closed.complete += 1;
                Some(Expected::Complete)
            }
            State::Failed(dropped) => Some(Expected::Failed(dropped)),
            State::Ended => Some(Expected::Closed),
        }
    }

    fn check(&self, stats: &ListenerStats) {
        let counted = Counts {
            matched: stats.events.matched,
            delivered: stats.events.delivered,
            dropped: stats.events.dropped,
            coalesced: stats.events.coalesced,
            discarded: stats.events.discarded,
        };
        assert_eq!(counted, self.counts);
        assert_eq!(stats.events.queued, self.queue.len() as u64);
        assert_eq!(stats.lag, self.lag);
    }
}

#[derive(Debug, PartialEq)]
enum Expected {
    /// An event, by key.
    Event(usize),
    Lagged(u64),
    Complete,
    Failed(u64),
    Closed,
}

fn observed(next: Option<Next>) -> Option<Expected> {
    next.map(|next| match next {
        Next::Event(event) => Expected::Event(key_of(&event)),
        Next::Lagged(n) => Expected::Lagged(n),
        Next::Complete => Expected::Complete,
        Next::Failed(StreamError::Overflow { dropped }) => Expected::Failed(dropped),
        Next::Closed => Expected::Closed,
        other => panic!("unexpected {other:?}"),
    })
}

fn run(ops: Vec<Op>) {
    let hub = Hub::builder()
        .capabilities(
            Capabilities::default()
                .with_extension(Extension::new("test/x").with_field("x", |_| Ok(()))),
        )
        .build();
    let mut listeners: Vec<(Listener, Model)> = Vec::new();
    let mut completed = false;
    let mut closed = Closed::default();
    for op in ops {
        match op {
            Op::Open {
                keys,
                everything,
                capacity,
                disconnect,
                coalesce,
            } => {
                let policy = if disconnect {
                    Overflow::Disconnect
                } else {
                    Overflow::DropOldest
                };
                let context = OpenContext::default().with_queue(
                    Settings::default()
                        .with_capacity(capacity)
                        .with_overflow(policy)
                        .with_coalesce(coalesce),
                );
                match hub.listen_with(&filter(&keys, everything), &context) {
                    Ok(listener) => {
                        assert!(!completed);
                        let model = Model {
                            keys,
                            everything,
                            capacity,
                            disconnect,
                            coalesce,
                            queue: VecDeque::new(),
                            lag: 0,
                            state: State::Open,
                            counts: Counts::default(),
                        };
                        listeners.push((listener, model));
                    }
                    Err(err) => assert!(completed, "{err}"),
                }
            }
            Op::Publish { key } => {
                let report = hub.publish(event(key));
                let mut expected = PublishReport::default();
                for (_, model) in &mut listeners {
                    if model.matches(key) {
                        expected.matched += 1;
                        match model.push(key, &mut closed) {
                            Pushed::Queued => expected.queued += 1,
                            Pushed::Evicted => {
                                expected.queued += 1;
                                expected.evicted += 1;
                            }
                            Pushed::Coalesced => expected.coalesced += 1,
                            Pushed::Disconnected => expected.disconnected += 1,
                        }
                    }
                }
                assert_eq!(report, expected);
            }
            Op::Read { listener } => {
                if let Some((listener, model)) = listeners.get_mut(listener) {
                    assert_eq!(observed(listener.try_next()), model.pop(&mut closed));
                }
            }
            Op::Close { listener } => {
                if let Some((listener, model)) = listeners.get_mut(listener) {
                    listener.close(CloseReason::Cancelled);
                    if model.is_registered() {
                        closed.cancelled += 1;
                    }
                    model.counts.discarded += model.queue.len() as u64;
                    model.queue.clear();
                    model.lag = 0;
                    model.state = State::Ended;
                }
            }
            Op::Complete => {
                hub.complete();
                completed = true;
                for (_, model) in &mut listeners {
                    if model.state == State::Open {
                        model.state = State::Completing;
                    }
                }
            }
        }
        for (listener, model) in &listeners {
            model.check(&listener.stats());
        }
        let stats = hub.stats();
        assert!(stats.events.is_balanced());
        let registered = listeners.iter().filter(|(_, m)| m.is_registered()).count();
        assert_eq!(stats.listeners_active, registered as u64);
        let counted = stats.listeners_closed;
        assert_eq!(
            closed,
            Closed {
                cancelled: counted.cancelled,
                complete: counted.complete,
                overflow: counted.overflow,
            }
        );
    }
    let still_registered = listeners.iter().filter(|(_, m)| m.is_registered()).count() as u64;
    drop(listeners);
    assert_eq!(hub.stats().listeners_closed.disconnected, still_registered);
    assert_eq!(hub.stats().events.queued, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn hub_matches_the_reference_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops);
    }
}
