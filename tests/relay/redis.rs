//! The cross-replica relay over Redis Pub/Sub, against a real
//! `redis-server` started on a free port per test: events cross replicas,
//! resource updates reach only the replicas whose listeners watch the URI
//! (checked with Redis's own `PUBSUB` introspection), order per origin is
//! kept, and the relay rides out a killed, a restarted and a frozen broker.
//! On a Redis Cluster, the same through sharded pub/sub (`SSUBSCRIBE`,
//! checked with `PUBSUB SHARDNUMSUB`).

use std::time::{Duration, Instant};

use mcp_subscriptions::relay::{Relay, RelayOptions};
use mcp_subscriptions::{EventKind, Filter, Hub, ListKind};

use crate::broker::{Broker, RedisCluster};
use crate::replicas::{
    self, Replica, connected, list_change_and_watched_update_cross, listen_subscribed, options,
    settled,
};
use crate::waiting::{next_event, quiet, until};

fn relay(broker: &Broker, hub: &Hub, prefix: &str) -> Relay {
    replicas::relay(&broker.url(), hub, options(prefix))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_a_list_change_crosses_replicas_once() {
    let broker = Broker::redis();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        relay(&broker, &hub_a, "smoke"),
        relay(&broker, &hub_b, "smoke"),
    );
    settled(&[&a, &b]).await;
    let mut on_a = hub_a
        .listen(&Filter::new().with_tools_list_changed())
        .unwrap();
    let mut on_b = hub_b
        .listen(&Filter::new().with_tools_list_changed())
        .unwrap();

    let report = a.hub().notify_tools_list_changed();
    assert_eq!(report.queued, 1, "local delivery happens in publish");
    assert_eq!(
        next_event(&mut on_b).await.method(),
        "notifications/tools/list_changed"
    );
    assert_eq!(
        next_event(&mut on_a).await.method(),
        "notifications/tools/list_changed"
    );
    // A's own message came back from Redis and was skipped: no second copy.
    until("the echo skipped", || a.stats().echo_skipped >= 1).await;
    quiet(&mut on_a, Duration::from_millis(200)).await;
    assert_eq!(a.stats().published, 1);
    assert_eq!(b.stats().received, 1);
    assert_ne!(a.origin(), b.origin());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uri_updates_reach_only_the_replicas_that_watch_them() {
    let broker = Broker::redis();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        relay(&broker, &hub_a, "uris"),
        relay(&broker, &hub_b, "uris"),
    );
    settled(&[&a, &b]).await;
    // Two catalog subscribers, no key channel yet.
    assert_eq!(
        broker.redis_subscribers("uris.*"),
        [("uris.catalog".to_owned(), 2)]
    );

    let mut on_b =
        listen_subscribed(&hub_b, &b, &Filter::new().with_resource("file:///b"), 1).await;
    let keys = broker.redis_subscribers("uris.key.*");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].1, 1, "only B subscribes the key of file:///b");
    assert_eq!(a.stats().subscribed_keys, 0);

    a.hub().notify_resource_updated("file:///elsewhere");
    a.hub().notify_resource_updated("file:///b");
    let event = next_event(&mut on_b).await;
    assert_eq!(
        event.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///b".into()
        }
    );
    quiet(&mut on_b, Duration::from_millis(200)).await;
    // Nobody subscribes file:///elsewhere's channel: Redis delivered it to
    // no one, and B received one event.
    assert_eq!(b.stats().received, 1);

    // The last listener leaves: the channel goes after the grace period.
    drop(on_b);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        broker.redis_subscribers("uris.key.*").len(),
        1,
        "kept during grace"
    );
    until("B's key channel unsubscribed", || {
        b.stats().subscribed_keys == 0
    })
    .await;
    assert!(broker.redis_subscribers("uris.key.*").is_empty());
}

#[cfg(feature = "tasks")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_statuses_cross_in_order() {
    use mcp_subscriptions::{Capabilities, tasks};
    use rmcp::model::{DetailedTask, Task, TaskPayload, TaskStatus};
    use serde_json::json;

    let broker = Broker::redis();
    let hub = || {
        Hub::builder()
            .capabilities(Capabilities::default().with_extension(tasks::extension()))
            .build()
    };
    let (hub_a, hub_b) = (hub(), hub());
    let (a, b) = (
        relay(&broker, &hub_a, "tasks"),
        relay(&broker, &hub_b, "tasks"),
    );
    settled(&[&a, &b]).await;
    let mut on_b = hub_b
        .listen(&Filter::new().with_extension(tasks::TASK_IDS, json!(["t1"])))
        .unwrap();
    until("B's key channel", || b.stats().subscribed_keys == 1).await;

    for second in 0..50 {
        let task = Task::new(
            "t1",
            TaskStatus::Working,
            "2026-12-01T10:00:00Z",
            format!("2026-12-01T10:00:{second:02}Z"),
        );
        a.hub()
            .publish(tasks::event(&DetailedTask::new(task, TaskPayload::Working)));
    }
    // Each status that arrives is newer than the one before; the last is
    // the last published.
    let mut last = String::new();
    loop {
        let event = next_event(&mut on_b).await;
        assert_eq!(event.method(), "notifications/tasks");
        let json: serde_json::Value = serde_json::from_str(&event.to_plain_json()).unwrap();
        let updated = json["params"]["lastUpdatedAt"].as_str().unwrap().to_owned();
        assert!(updated > last, "{updated} after {last}");
        last = updated;
        if last == "2026-12-01T10:00:49Z" {
            break;
        }
    }
    assert_eq!((a.stats().sequence_gaps, b.stats().sequence_gaps), (0, 0));
}

/// A publishes updates of 200 URIs that a listener on B (`hub_b`, B's
/// hub) watches, each on its own key channel; B's listener gets them in
/// A's order.
async fn updates_arrive_in_order(a: &Relay, b: &Relay, hub_b: &Hub) {
    let uris: Vec<String> = (0..200).map(|i| format!("file:///{i}")).collect();
    let filter = uris.iter().fold(Filter::new(), Filter::with_resource);
    let mut on_b = listen_subscribed(hub_b, b, &filter, 200).await;
    for uri in &uris {
        a.hub().notify_resource_updated(uri);
    }
    for uri in &uris {
        assert_eq!(
            next_event(&mut on_b).await.kind(),
            &EventKind::ResourceUpdated { uri: uri.clone() }
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_per_origin_is_kept() {
    let broker = Broker::redis();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        relay(&broker, &hub_a, "order"),
        relay(&broker, &hub_b, "order"),
    );
    settled(&[&a, &b]).await;
    updates_arrive_in_order(&a, &b, &hub_b).await;
}

/// A burst goes to the broker in batches of up to 64, one round trip
/// each, and arrives whole and in order.
#[tokio::test]
async fn a_burst_goes_to_the_broker_in_batches() {
    let broker = Broker::redis();
    let relay = |hub: &Hub| replicas::relay(&broker.url(), hub, patient(options("burst")));
    burst_arrives_in_batches(relay, true).await;
}

/// Clocks a loaded machine cannot trip (a starved task taken for a silent
/// replica or a lost connection would resync in the middle of a burst).
fn patient(options: RelayOptions) -> RelayOptions {
    options
        .with_heartbeat(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(5))
}

/// 1,000 updates, then a list change, queued on replica A before its task
/// first runs (the test's one thread is never yielded meanwhile); B's
/// listener gets them all, `in_order` or not, and A sent them in 16
/// batches.
async fn burst_arrives_in_batches(relay: impl Fn(&Hub) -> Relay, in_order: bool) {
    let (hub_a, hub_b) = (Hub::new(), Hub::builder().capacity(4_096).build());
    let b = relay(&hub_b);
    // Listening once B is connected: a listener opened before would be
    // owed a resync for what went by before B could hear it.
    until("B connected", || connected(&b)).await;
    let uris: Vec<String> = (0..1_000).map(|i| format!("file:///{i}")).collect();
    let filter = uris.iter().fold(
        Filter::new().with_tools_list_changed(),
        Filter::with_resource,
    );
    let mut on_b = listen_subscribed(&hub_b, &b, &filter, 1_000).await;

    let a = relay(&hub_a);
    for uri in &uris {
        a.hub().notify_resource_updated(uri);
    }
    a.hub().notify_tools_list_changed();
    assert_eq!(a.stats().outbound_queued, 1_001);
    let mut expected: Vec<EventKind> = uris
        .iter()
        .map(|uri| EventKind::ResourceUpdated { uri: uri.clone() })
        .chain([EventKind::ListChanged(ListKind::Tools)])
        .collect();
    let mut received = Vec::new();
    for _ in 0..expected.len() {
        received.push(next_event(&mut on_b).await.kind().clone());
    }
    let resynced = format!("B: {:?}", b.stats());
    if in_order {
        assert!(
            received == expected,
            "out of order ({resynced}): {received:?}"
        );
    } else {
        received.sort_by_key(|kind| format!("{kind:?}"));
        expected.sort_by_key(|kind| format!("{kind:?}"));
        assert!(
            received == expected,
            "not all arrived ({resynced}): {received:?}"
        );
    }
    // A counts a batch once the broker answers it, which may be after B
    // has the batch.
    until("A's batches counted", || a.stats().published == 1_001).await;
    let stats = a.stats();
    assert_eq!(stats.batches, 16, "{stats:?}");
    assert_eq!(stats.outbound_dropped, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_broker_is_reconnected_and_listeners_resynced() {
    let mut broker = Broker::redis();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        relay(&broker, &hub_a, "restart"),
        relay(&broker, &hub_b, "restart"),
    );
    settled(&[&a, &b]).await;
    let mut on_a = hub_a
        .listen(&Filter::new().with_tools_list_changed())
        .unwrap();
    let filter = Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///r");
    let mut on_b = listen_subscribed(&hub_b, &b, &filter, 1).await;
    let resyncs = (a.stats().resyncs, b.stats().resyncs);

    broker.kill();
    until("both relays degraded", || !connected(&a) && !connected(&b)).await;
    // Local delivery is unaffected.
    assert_eq!(a.hub().notify_tools_list_changed().queued, 1);
    assert_eq!(
        next_event(&mut on_a).await.method(),
        "notifications/tools/list_changed"
    );

    broker.restart();
    until("both relays reconnected", || connected(&a) && connected(&b)).await;
    assert!(a.stats().reconnects >= 1 && b.stats().reconnects >= 1);
    // The resync: a list change and the watched URI's update, though no
    // one published an update (A's list change, queued while the broker
    // was away, may arrive too).
    let mut methods = Vec::new();
    while !methods
        .iter()
        .any(|m| m == "notifications/resources/updated")
    {
        methods.push(next_event(&mut on_b).await.method().to_owned());
    }
    assert!(
        methods
            .iter()
            .any(|m| m == "notifications/tools/list_changed"),
        "{methods:?}"
    );
    until("B's resync counted", || b.stats().resyncs > resyncs.1).await;
    // Drain A's resync too, then later events flow again.
    until("A's resync counted", || a.stats().resyncs > resyncs.0).await;
    while tokio::time::timeout(Duration::from_millis(100), on_b.next())
        .await
        .is_ok()
    {}
    until("B's key channel again", || b.stats().subscribed_keys == 1).await;
    a.hub().notify_resource_updated("file:///r");
    assert_eq!(
        next_event(&mut on_b).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///r".into()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_broker_never_blocks_publishers_and_the_queue_stays_bounded() {
    let broker = Broker::redis();
    let hub_a = Hub::new();
    let a = replicas::relay(
        &broker.url(),
        &hub_a,
        options("frozen").with_outbound_capacity(16),
    );
    until("connected", || connected(&a)).await;
    let mut on_a =
        listen_subscribed(&hub_a, &a, &Filter::new().with_resource("file:///0"), 1).await;

    broker.stop();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for i in 0..10_000 {
        let one = Instant::now();
        let report = a
            .hub()
            .notify_resource_updated(format!("file:///{}", i % 100));
        slowest = slowest.max(one.elapsed());
        assert_eq!(report.matched, usize::from(i % 100 == 0));
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "10,000 publishes took {took:?}"
    );
    assert!(
        slowest < Duration::from_millis(100),
        "one publish took {slowest:?}"
    );
    let stats = a.stats();
    assert!(stats.outbound_queued <= 16, "{stats:?}");
    assert!(stats.outbound_dropped > 0, "{stats:?}");
    // Local delivery went on the whole time.
    assert_eq!(
        next_event(&mut on_a).await.method(),
        "notifications/resources/updated"
    );

    until("degraded", || !connected(&a)).await;
    broker.resume();
    until("reconnected", || connected(&a)).await;
    until("the queue drained", || a.stats().outbound_queued == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_gone_leaves_the_others_going() {
    let broker = Broker::redis();
    let a = Replica::start(&broker.url(), options("gone"));
    let hubs = [Hub::new(), Hub::new()];
    let [b, c]: [Relay; 2] = hubs.each_ref().map(|hub| relay(&broker, hub, "gone"));
    settled(&[&a.relay, &b, &c]).await;
    let mut on_c = hubs[1]
        .listen(&Filter::new().with_prompts_list_changed())
        .unwrap();

    let resyncs = c.stats().resyncs;
    // Killed, so no goodbye: C notices A's heartbeats stopping and
    // resyncs its listeners once.
    a.kill();
    assert_eq!(
        next_event(&mut on_c).await.method(),
        "notifications/prompts/list_changed"
    );
    until("C's resync", || c.stats().resyncs > resyncs).await;
    assert_eq!(c.stats().replicas, 1, "A is gone, B is heard");
    b.hub().notify_prompts_list_changed();
    until("C received B's change", || c.stats().received >= 1).await;
    assert_eq!(
        next_event(&mut on_c).await.method(),
        "notifications/prompts/list_changed"
    );
}

/// A hub publishes through one relay at most, and through none once the
/// relay's last handle is gone.
#[tokio::test]
async fn a_hub_has_one_relay_while_its_handles_live() {
    let broker = Broker::redis();
    let hub = Hub::new();
    let first = relay(&broker, &hub, "attach");
    let url = mcp_subscriptions::relay::Broker::from_url(&broker.url()).unwrap();
    let second = Relay::new(hub.clone(), url.clone(), options("attach"));
    assert_eq!(
        second.unwrap_err(),
        mcp_subscriptions::relay::RelayError::AlreadyAttached
    );
    until("connected", || connected(&first)).await;
    hub.notify_tools_list_changed();
    until("sent through the relay", || first.stats().published == 1).await;
    drop(first);
    let (again, _task) = Relay::new(hub.clone(), url, options("attach")).unwrap();
    hub.notify_tools_list_changed();
    assert_eq!(
        again.stats().outbound_queued,
        1,
        "forwarded to the new relay alone"
    );
}

#[test]
fn broker_urls() {
    assert!(mcp_subscriptions::relay::Broker::from_url("redis://127.0.0.1:1").is_ok());
    let cluster =
        mcp_subscriptions::relay::Broker::from_url("redis+cluster://127.0.0.1:1,127.0.0.1:2")
            .unwrap();
    assert_eq!(cluster.url(), "redis+cluster://127.0.0.1:1,127.0.0.1:2");
    let error = mcp_subscriptions::relay::Broker::from_url("amqp://127.0.0.1").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("no relay for amqp://127.0.0.1")
    );
}

fn cluster_relay(cluster: &RedisCluster, hub: &Hub, shards: u16) -> Relay {
    replicas::relay(&cluster.url(), hub, options("sharded").with_shards(shards))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_sharded_channels_reach_only_the_replicas_that_watch_them() {
    let cluster = RedisCluster::start();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        cluster_relay(&cluster, &hub_a, 4),
        cluster_relay(&cluster, &hub_b, 4),
    );
    settled(&[&a, &b]).await;
    assert_eq!(
        cluster.shard_subscribers("*"),
        [("sharded.catalog".to_owned(), 2)]
    );

    let filter = Filter::new()
        .with_tools_list_changed()
        .with_resource("file:///b");
    let mut on_b = listen_subscribed(&hub_b, &b, &filter, 1).await;
    let channels = cluster.shard_subscribers("*");
    assert_eq!(channels.len(), 2, "{channels:?}");
    assert_eq!(channels[0], ("sharded.catalog".to_owned(), 2));
    let (key, subscribers) = &channels[1];
    assert!(
        key.starts_with("{sharded.") && key.contains("}.key."),
        "{key}"
    );
    assert_eq!(*subscribers, 1, "only B subscribes the key of file:///b");

    list_change_and_watched_update_cross(&a, &mut on_b).await;
    quiet(&mut on_b, Duration::from_millis(200)).await;
    assert_eq!(b.stats().received, 2, "file:///elsewhere reached no one");

    drop(on_b);
    until("B's key channel unsubscribed", || {
        b.stats().subscribed_keys == 0
    })
    .await;
    assert_eq!(cluster.shard_subscribers("*").len(), 1);
}

/// A batch that reaches several shards is one pipeline for each; order
/// holds within a shard only.
#[tokio::test]
async fn cluster_burst_goes_to_the_shards_in_batches() {
    let cluster = RedisCluster::start();
    let options = patient(options("sharded").with_shards(4));
    burst_arrives_in_batches(
        |hub| replicas::relay(&cluster.url(), hub, options.clone()),
        false,
    )
    .await;
}

/// Keys on one shard live on one slot, so one node's connection carries
/// them in the order they were published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_order_per_origin_is_kept_within_a_shard() {
    let cluster = RedisCluster::start();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        cluster_relay(&cluster, &hub_a, 1),
        cluster_relay(&cluster, &hub_b, 1),
    );
    settled(&[&a, &b]).await;
    updates_arrive_in_order(&a, &b, &hub_b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_restarted_is_reconnected_and_listeners_resynced() {
    let mut cluster = RedisCluster::start();
    let (hub_a, hub_b) = (Hub::new(), Hub::new());
    let (a, b) = (
        cluster_relay(&cluster, &hub_a, 4),
        cluster_relay(&cluster, &hub_b, 4),
    );
    settled(&[&a, &b]).await;
    let mut on_b =
        listen_subscribed(&hub_b, &b, &Filter::new().with_resource("file:///r"), 1).await;

    for node in &mut cluster.nodes {
        node.kill();
    }
    until("degraded", || !connected(&a) && !connected(&b)).await;
    for node in &mut cluster.nodes {
        node.restart();
    }
    cluster.wait_ok();
    until("reconnected", || connected(&a) && connected(&b)).await;
    // The resync: an update of the watched URI, though no one published one.
    assert_eq!(
        next_event(&mut on_b).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///r".into()
        }
    );
    assert!(b.stats().reconnects >= 1 && b.stats().resyncs >= 1);
    // Later events flow.
    a.hub().notify_resource_updated("file:///r");
    assert_eq!(
        next_event(&mut on_b).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///r".into()
        }
    );
}
