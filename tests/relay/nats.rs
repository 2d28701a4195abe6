//! The cross-replica relay over core NATS, against a real `nats-server`
//! started on a free port per test: events cross replicas once, a URI
//! update reaches only a replica that watches it, an origin's order holds
//! across subjects, and a restarted server is reconnected to, with a
//! resync and later events flowing.

use std::time::Duration;

use mcp_subscriptions::relay::Relay;
use mcp_subscriptions::{EventKind, Filter, Hub, ListKind};

use crate::broker::Broker;
use crate::replicas::{
    self, list_change_and_watched_update_cross, listen_subscribed, options, settled,
};
use crate::waiting::{next_event, until};

fn relay(broker: &Broker, hub: &Hub) -> Relay {
    replicas::relay(&broker.url(), hub, options("mcp-subscriptions"))
}

/// Two replicas, a hub and a relay each, both connected to `broker`.
async fn replicas(broker: &Broker) -> ((Hub, Relay), (Hub, Relay)) {
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (relay(broker, &hub_a), relay(broker, &hub_b));
    settled(&[&a, &b]).await;
    ((hub_a, a), (hub_b, b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_events_cross_once_and_only_where_watched() {
    let broker = Broker::nats();
    let ((hub_a, a), (hub_b, b)) = replicas(&broker).await;
    let mut on_a = hub_a
        .listen(&Filter::new().with_tools_list_changed())
        .unwrap();
    let filter = Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///b");
    let mut on_b = listen_subscribed(&hub_b, &b, &filter, 1).await;

    list_change_and_watched_update_cross(&a, &mut on_b).await;
    assert_eq!(
        next_event(&mut on_a).await.method(),
        "notifications/tools/list_changed"
    );
    until("A's echo skipped", || a.stats().echo_skipped >= 1).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(200), on_a.next())
            .await
            .is_err()
    );
    assert_eq!(b.stats().received, 2, "file:///elsewhere reached no one");
}

/// Each subject is its own NATS subscription, yet an origin's events
/// arrive in the order it published them: a list change on the catalog
/// subject between updates on 200 key subjects. (One list change: a second
/// one could coalesce with the first in A's outbound queue.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_per_origin_holds_across_subjects() {
    let broker = Broker::nats();
    let ((_hub_a, a), (hub_b, b)) = replicas(&broker).await;
    let uris: Vec<String> = (0..200).map(|i| format!("file:///{i}")).collect();
    let filter = uris.iter().fold(
        Filter::new().with_tools_list_changed(),
        Filter::with_resource,
    );
    let mut on_b = listen_subscribed(&hub_b, &b, &filter, 200).await;

    let mut expected = Vec::new();
    for (i, uri) in uris.iter().enumerate() {
        a.hub().notify_resource_updated(uri);
        expected.push(EventKind::ResourceUpdated { uri: uri.clone() });
        if i == 99 {
            a.hub().notify_tools_list_changed();
            expected.push(EventKind::ListChanged(ListKind::Tools));
        }
    }
    for kind in &expected {
        assert_eq!(next_event(&mut on_b).await.kind(), kind);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_reconnected_and_listeners_resynced() {
    let mut broker = Broker::nats();
    let ((hub_a, a), (hub_b, b)) = replicas(&broker).await;
    let mut on_a = hub_a
        .listen(&Filter::new().with_tools_list_changed())
        .unwrap();
    let mut on_b =
        listen_subscribed(&hub_b, &b, &Filter::new().with_resource("file:///r"), 1).await;
    let resyncs = b.stats().resyncs;

    broker.kill();
    until("degraded", || !b.stats().connected).await;
    assert_eq!(
        a.hub().notify_tools_list_changed().queued,
        1,
        "local delivery goes on"
    );
    assert_eq!(
        next_event(&mut on_a).await.method(),
        "notifications/tools/list_changed"
    );

    broker.restart();
    until("reconnected", || a.stats().connected && b.stats().connected).await;
    // The resync: an update of the watched URI, though no one published one.
    assert_eq!(
        next_event(&mut on_b).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///r".into()
        }
    );
    until("B's resync counted", || {
        b.stats().resyncs > resyncs && b.stats().reconnects >= 1
    })
    .await;
    // Later events flow.
    let before = b.stats().received;
    a.hub().notify_resource_updated("file:///r");
    until("B received the later update", || {
        b.stats().received > before
    })
    .await;
}

/// A listener's key subject counts as subscribed, and its catch-up is
/// sent, only once the server has the subscription: with A 300 ms away,
/// an update B publishes right after A says so still reaches A. (`flush`
/// alone only writes the subscription to the socket: B's update used to
/// beat it to the server and go by unheard.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_subject_counts_as_subscribed_once_the_server_has_it() {
    let broker = Broker::nats();
    let proxy = crate::proxy::Proxy::start(broker.port);
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let a = replicas::relay(
        &format!("nats://127.0.0.1:{}", proxy.port),
        &hub_a,
        options("mcp-subscriptions").with_timeout(Duration::from_secs(5)),
    );
    let b = relay(&broker, &hub_b);
    settled(&[&a, &b]).await;
    proxy.delay(Duration::from_millis(300));

    let mut on_a =
        listen_subscribed(&hub_a, &a, &Filter::new().with_resource("file:///x"), 1).await;
    b.hub().notify_resource_updated("file:///x");
    assert_eq!(
        next_event(&mut on_a).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///x".into()
        }
    );
    until("B's update received by A", || a.stats().received == 1).await;
}
