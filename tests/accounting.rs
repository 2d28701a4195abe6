//! A property test: over random sequences of open, publish, read, close and
//! complete, the hub behaves exactly like a simple reference model of
//! bounded (optionally coalescing) queues, and every matched event is
//! accounted for.

use std::collections::VecDeque;

use mcp_subscriptions::{
    CloseReason, EventKind, Filter, Hub, Listener, Next, OpenContext, Overflow, StreamError,
};
use proptest::prelude::*;

const KEYS: [&str; 3] = ["a", "b", "c"];

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
            proptest::collection::vec(0..KEYS.len(), 0..3),
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

/// The reference: what one listener should hold and report.
#[derive(Debug)]
struct Model {
    keys: Vec<usize>,
    everything: bool,
    coalesce: bool,
    capacity: usize,
    disconnect: bool,
    /// The keys of the queued resource updates.
    queue: VecDeque<usize>,
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

    /// Offers an update of `key`; whether a pending copy absorbed it.
    fn push(&mut self, key: usize, closed: &mut Closed) -> bool {
        if self.state != State::Open {
            return false;
        }
        if self.coalesce && self.queue.contains(&key) {
            return true;
        }
        if self.queue.len() == self.capacity {
            if self.disconnect {
                self.state = State::Failed(self.queue.len() as u64 + 1);
                self.queue.clear();
                closed.overflow += 1;
                return false;
            }
            self.queue.pop_front();
            self.lag += 1;
        }
        self.queue.push_back(key);
        false
    }

    fn pop(&mut self, closed: &mut Closed) -> Option<Expected> {
        if self.lag > 0 {
            return Some(Expected::Lagged(std::mem::take(&mut self.lag)));
        }
        if let Some(key) = self.queue.pop_front() {
            return Some(Expected::Event(KEYS[key].to_owned()));
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
    /// A resource update, by URI.
    Event(String),
    Lagged(u64),
    Complete,
    Failed(u64),
    Closed,
}

fn observed(next: Option<Next>) -> Option<Expected> {
    next.map(|next| match next {
        Next::Event(event) => match event.kind() {
            EventKind::ResourceUpdated { uri } => Expected::Event(uri.clone()),
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
    let hub = Hub::new();
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
                let base = if everything {
                    Filter::everything()
                } else {
                    Filter::new()
                };
                let filter = keys.iter().fold(base, |f, &k| f.with_resource(KEYS[k]));
                let policy = if disconnect {
                    Overflow::Disconnect
                } else {
                    Overflow::DropOldest
                };
                let context = OpenContext::default()
                    .with_capacity(capacity)
                    .with_overflow(policy)
                    .with_coalesce(coalesce);
                match hub.listen_with(&filter, &context) {
                    Ok(listener) => {
                        assert!(!completed);
                        let model = Model {
                            keys,
                            everything,
                            coalesce,
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
                let report = hub.notify_resource_updated(KEYS[key]);
                let (mut matched, mut coalesced) = (0, 0);
                for (_, model) in &mut listeners {
                    if model.matches(key) {
                        matched += 1;
                        coalesced += usize::from(model.push(key, &mut closed));
                    }
                }
                assert_eq!((report.matched, report.coalesced), (matched, coalesced));
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
            assert_eq!(
                s.matched,
                s.delivered + s.dropped + s.coalesced + s.queued + s.discarded
            );
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
