//! Replicas for the relay's tests: a hub and a relay each, on short
//! clocks, and waiting until they have heard one another.

use std::time::Duration;

use mcp_subscriptions::relay::{Broker as RelayBroker, Relay, RelayOptions};
use mcp_subscriptions::{EventKind, Filter, Hub, ListKind, Listener, Next};

use crate::waiting::{next_event, until};

/// The resync jitter of [`options`].
pub(crate) const JITTER: Duration = Duration::from_millis(100);

/// Short clocks, so faults are seen and mended within a test's patience.
pub(crate) fn options(prefix: &str) -> RelayOptions {
    RelayOptions::default()
        .with_prefix(prefix)
        .with_heartbeat(Duration::from_millis(200))
        .with_grace(Duration::from_millis(300))
        .with_resync_jitter(JITTER)
        .with_backoff(Duration::from_millis(50), Duration::from_millis(400))
        .with_timeout(Duration::from_millis(500))
}

/// A relay for `hub` through the broker at `url`, spawned.
pub(crate) fn relay(url: &str, hub: &Hub, options: RelayOptions) -> Relay {
    Relay::spawn(hub.clone(), RelayBroker::from_url(url).unwrap(), options).unwrap()
}

pub(crate) fn connected(relay: &Relay) -> bool {
    relay.stats().connected
}

/// Waits until every relay is connected and hears every other, and any
/// resync a relay's first connection owes listeners opened before it has
/// been sent (it reaches no listener opened afterwards).
pub(crate) async fn settled(relays: &[&Relay]) {
    let others = relays.len() as u64 - 1;
    until("every relay hearing every other", || {
        relays
            .iter()
            .all(|relay| relay.stats().connected && relay.stats().replicas == others)
    })
    .await;
    // A resync is due within the jitter of its cause, and sent at the
    // relay's next tick (50 ms).
    tokio::time::sleep(JITTER * 4).await;
}

/// A listener on `hub` for `filter`, once `relay` has subscribed its
/// `keys` key channels, with the catch-up updates that follow a new
/// subscription read off: what it receives next was published after.
pub(crate) async fn listen_subscribed(
    hub: &Hub,
    relay: &Relay,
    filter: &Filter,
    keys: u64,
) -> Listener {
    let before = relay.stats().keys_caught_up;
    let mut listener = hub.listen(filter).unwrap();
    until("the listener's key channels", || {
        relay.stats().subscribed_keys == keys
    })
    .await;
    let caught_up = relay.stats().keys_caught_up - before;
    // The catch-up is delivered before the count of subscribed keys shows.
    for _ in 0..caught_up {
        assert!(
            matches!(listener.try_next(), Some(Next::Event(_))),
            "a catch-up update"
        );
    }
    listener
}

/// A replica whose relay's task can be killed: aborted where it stands,
/// as a `kill -9` would stop it, with nothing more sent.
pub(crate) struct Replica {
    pub(crate) hub: Hub,
    pub(crate) relay: Relay,
    task: tokio::task::JoinHandle<()>,
}

impl Replica {
    pub(crate) fn start(url: &str, options: RelayOptions) -> Self {
        let hub = Hub::new();
        let (relay, task) =
            Relay::new(hub.clone(), RelayBroker::from_url(url).unwrap(), options).unwrap();
        Self {
            hub,
            relay,
            task: tokio::spawn(task),
        }
    }

    pub(crate) fn kill(self) {
        self.task.abort();
    }
}

/// A publishes a list change and updates of `file:///elsewhere` and
/// `file:///b`; `on_b`, B's listener of list changes and `file:///b`, gets
/// the list change, then the update of `file:///b`.
pub(crate) async fn list_change_and_watched_update_cross(a: &Relay, on_b: &mut Listener) {
    a.hub().notify_tools_list_changed();
    a.hub().notify_resource_updated("file:///elsewhere");
    a.hub().notify_resource_updated("file:///b");
    assert_eq!(
        next_event(on_b).await.kind(),
        &EventKind::ListChanged(ListKind::Tools)
    );
    assert_eq!(
        next_event(on_b).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///b".into()
        }
    );
}
