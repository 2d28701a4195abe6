//! Sparse routing: a resource update for a URI with exactly one subscriber.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mcp_subscriptions::{Event, EventKind, Filter, Hub, Listener, Next};
use tokio::sync::broadcast;

use super::Scenario;

fn uri(i: usize) -> String {
    format!("file:///resource/{i}")
}

/// Sparse routing through the hub: n listeners, one URI each; an update for
/// one of them, and that listener takes it.
pub struct HubSparse {
    hub: Hub,
    listeners: Vec<Listener>,
    target: String,
}

impl HubSparse {
    /// `n` listeners, each subscribed to a URI of its own; the update goes
    /// to the middle one.
    pub fn new(n: usize) -> Self {
        let hub = Hub::builder().max_listeners(n).build();
        let listeners = (0..n)
            .map(|i| hub.listen(&Filter::new().with_resource(uri(i))).unwrap())
            .collect();
        Self {
            hub,
            listeners,
            target: uri(n / 2),
        }
    }
}

impl Scenario for HubSparse {
    fn run(&mut self, iters: u64) -> Duration {
        let reader = self.listeners.len() / 2;
        let start = Instant::now();
        for _ in 0..iters {
            self.hub.notify_resource_updated(self.target.as_str());
            let Some(Next::Event(event)) = self.listeners[reader].try_next() else {
                panic!("the subscriber must have it");
            };
            black_box(event);
        }
        start.elapsed()
    }
}

/// The anchor: `broadcast` with receiver-side filtering: every receiver
/// takes every event to find out whether it was for it.
pub struct BroadcastSparse {
    tx: broadcast::Sender<Event>,
    receivers: Vec<(String, broadcast::Receiver<Event>)>,
    target: String,
}

impl BroadcastSparse {
    /// `n` receivers, each after a URI of its own; the update is for the
    /// middle one.
    pub fn new(n: usize) -> Self {
        let (tx, _) = broadcast::channel::<Event>(16);
        let receivers = (0..n).map(|i| (uri(i), tx.subscribe())).collect();
        Self {
            tx,
            receivers,
            target: uri(n / 2),
        }
    }
}

impl Scenario for BroadcastSparse {
    fn run(&mut self, iters: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iters {
            self.tx
                .send(Event::resource_updated(self.target.as_str()))
                .unwrap();
            let mut delivered = 0;
            for (mine, rx) in &mut self.receivers {
                let event = rx.try_recv().unwrap();
                if matches!(event.kind(), EventKind::ResourceUpdated { uri } if uri == mine) {
                    delivered += 1;
                    black_box(&event);
                }
            }
            assert_eq!(delivered, 1);
        }
        start.elapsed()
    }
}
