//! A property test: over random sequences of open, publish, read, close and
//! complete, the hub behaves exactly like a simple reference model of
//! bounded queues, and every matched event is accounted for.

use std::collections::VecDeque;

use mcp_subscriptions::{
    Capabilities, CloseReason, Event, EventKind, Filter, Hub, Listener, Next, OpenContext,
    Overflow, Selector, StreamError,
};
use proptest::prelude::*;
use serde_json::{Map, json};

const KEYS: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Op {
    Open {
        keys: Vec<usize>,
        everything: bool,
        capacity: usize,
        disconnect: bool,
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
            proptest::collection::vec(0..KEYS.len(), 0..3),
            proptest::bool::weighted(0.25),
            1..4usize,
            any::<bool>(),
        )
            .prop_map(|(keys, everything, capacity, disconnect)| Op::Open {
                keys,
                everything,
                capacity,
                disconnect,
            }),
        6 => (0..KEYS.len()).prop_map(|key| Op::Publish { key }),
        4 => (0..8usize).prop_map(|listener| Op::Read { listener }),
        1 => (0..8usize).prop_map(|listener| Op::Close { listener }),
        1 => Just(Op::Complete),
    ]
}

/// The reference: what one listener should hold and report.
#[derive(Debug)]
struct Model {
    keys: Vec<usize>,
    everything: bool,
    capacity: usize,
    disconnect: bool,
    queue: VecDeque<u64>,
    lag: u64,
    state: State,
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

impl Model {
    fn matches(&self, key: usize) -> bool {
        self.state == State::Open && (self.everything || self.keys.contains(&key))
    }

    fn is_registered(&self) -> bool {
        matches!(self.state, State::Open | State::Completing)
    }

    fn push(&mut self, seq: u64, closed: &mut Closed) {
        if self.state != State::Open {
            return;
        }
        if self.queue.len() == self.capacity {
            if self.disconnect {
                self.state = State::Failed(self.queue.len() as u64 + 1);
                self.queue.clear();
                closed.overflow += 1;
                return;
            }
            self.queue.pop_front();
            self.lag += 1;
        }
        self.queue.push_back(seq);
    }

    fn pop(&mut self, closed: &mut Closed) -> Option<Expected> {
        if self.lag > 0 {
            return Some(Expected::Lagged(std::mem::take(&mut self.lag)));
        }
        if let Some(seq) = self.queue.pop_front() {
            return Some(Expected::Event(seq));
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
}

#[derive(Debug, PartialEq)]
enum Expected {
    Event(u64),
    Lagged(u64),
    Complete,
    Failed(u64),
    Closed,
}

fn observed(next: Option<Next>) -> Option<Expected> {
    next.map(|next| match next {
        Next::Event(event) => match event.kind() {
            EventKind::Extension { method, .. } => Expected::Event(method.parse().unwrap()),
            other => panic!("unexpected {other:?}"),
        },
        Next::Lagged(n) => Expected::Lagged(n),
        Next::Complete => Expected::Complete,
        Next::Failed(StreamError::Overflow { dropped }) => Expected::Failed(dropped),
        Next::Closed => Expected::Closed,
        other => panic!("unexpected {other:?}"),
    })
}

fn run(ops: Vec<Op>) {
    let hub = Hub::builder()
        .capabilities(Capabilities::default().with_extension_field("k"))
        .build();
    let mut listeners: Vec<(Listener, Model)> = Vec::new();
    let mut completed = false;
    let mut closed = Closed::default();
    for (seq, op) in (0u64..).zip(ops) {
        match op {
            Op::Open {
                keys,
                everything,
                capacity,
                disconnect,
            } => {
                let names: Vec<&str> = keys.iter().map(|&k| KEYS[k]).collect();
                let base = if everything {
                    Filter::everything()
                } else {
                    Filter::new()
                };
                let filter = base.with_extension("k", json!(names));
                let policy = if disconnect {
                    Overflow::Disconnect
                } else {
                    Overflow::DropOldest
                };
                let context = OpenContext::default()
                    .with_capacity(capacity)
                    .with_overflow(policy);
                match hub.listen_with(&filter, &context) {
                    Ok(listener) => {
                        assert!(!completed);
                        let model = Model {
                            keys,
                            everything,
                            capacity,
                            disconnect,
                            queue: VecDeque::new(),
                            lag: 0,
                            state: State::Open,
                        };
                        listeners.push((listener, model));
                    }
                    Err(err) => assert!(completed, "{err}"),
                }
            }
            Op::Publish { key } => {
                let event = Event::extension(
                    seq.to_string(),
                    Map::new(),
                    Some(Selector::new("k", Some(KEYS[key].to_owned()))),
                );
                let report = hub.publish(event);
                let mut matched = 0;
                for (_, model) in &mut listeners {
                    if model.matches(key) {
                        matched += 1;
                        model.push(seq, &mut closed);
                    }
                }
                assert_eq!(report.matched, matched);
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
        for (listener, _) in &listeners {
            let s = listener.stats();
            assert_eq!(s.matched, s.delivered + s.dropped + s.queued + s.discarded);
        }
        let stats = hub.stats();
        assert!(stats.is_balanced());
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
    let stats = hub.stats();
    assert_eq!(stats.listeners_active, 0);
    assert_eq!(stats.events_queued, 0);
    assert!(stats.is_balanced());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn hub_matches_the_reference_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops);
    }
}
