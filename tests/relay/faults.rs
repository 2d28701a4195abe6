//! Fault schedules that once left a replica silently stale, each played
//! deterministically against a real Redis, with a TCP proxy the test
//! controls between one replica and the broker: a replica that dies
//! partitioned holding a change, a staggered reconnect after a broker
//! restart, reconnecting under a steady load of publishes, a broker frozen
//! shorter and longer than `RelayOptions::timeout`, and a change published
//! elsewhere between a listener's acknowledgement and its key's
//! subscription.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_subscriptions::{EventKind, Filter, ListKind, Next};

use crate::broker::Broker;
use crate::proxy::Proxy;
use crate::replicas::{Replica, connected, listen_subscribed, options, settled};
use crate::waiting::{next_event, quiet, until};

fn via(proxy: &Proxy) -> String {
    format!("redis://127.0.0.1:{}", proxy.port)
}

/// Takes whatever `listener` holds now.
fn drain(listener: &mut mcp_subscriptions::Listener) {
    while let Some(Next::Event(_)) = listener.try_next() {}
}

/// B is cut off from the broker, accepts a change (its own listeners get
/// it), and dies; a new process takes its place. A had resynced for B's
/// silence before the change, so only hearing the new process while B is
/// outstanding (forgotten for its silence, without a goodbye) tells A to
/// resync again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_dying_partitioned_with_a_change_is_followed_by_a_resync() {
    let broker = Broker::redis();
    let proxy = Proxy::start(broker.port);
    let a = Replica::start(&broker.url(), options("partition"));
    let b = Replica::start(&via(&proxy), options("partition"));
    settled(&[&a.relay, &b.relay]).await;
    let filter = Filter::new().with_tools_list_changed();
    let mut on_a = a.hub.listen(&filter).unwrap();
    let mut on_b = b.hub.listen(&filter).unwrap();

    proxy.hold();
    // A takes B's silence as a loss, resyncs, and forgets B.
    until("A forgetting B", || a.relay.stats().replicas == 0).await;
    assert_eq!(
        next_event(&mut on_a).await.kind(),
        &EventKind::ListChanged(ListKind::Tools)
    );
    let resyncs = a.relay.stats().resyncs;
    quiet(&mut on_a, Duration::from_millis(300)).await;

    assert_eq!(b.hub.notify_tools_list_changed().queued, 1);
    assert_eq!(
        next_event(&mut on_b).await.kind(),
        &EventKind::ListChanged(ListKind::Tools)
    );
    b.kill();
    let restarted = Replica::start(&broker.url(), options("partition"));

    assert_eq!(
        next_event(&mut on_a).await.kind(),
        &EventKind::ListChanged(ListKind::Tools),
        "A resyncs once it hears the restarted replica"
    );
    assert!(a.relay.stats().resyncs > resyncs);
    assert_eq!(a.relay.stats().replicas, 1);
    drop(restarted);
}

/// The broker restarts; A reconnects while B is still cut off, B accepts
/// a change and dies without ever reconnecting. A kept B among the
/// replicas it knows across its reconnect, so B's silence from then on
/// makes A resync after B's change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_dying_before_it_reconnects_is_resynced_for() {
    let mut broker = Broker::redis();
    let proxy = Proxy::start(broker.port);
    // Long enough a silence that B's change comes well within it.
    let options = || options("staggered").with_heartbeat(Duration::from_millis(400));
    let a = Replica::start(&broker.url(), options());
    let b = Replica::start(&via(&proxy), options());
    settled(&[&a.relay, &b.relay]).await;
    let mut on_a = a
        .hub
        .listen(&Filter::new().with_tools_list_changed())
        .unwrap();

    broker.kill();
    proxy.hold();
    until("both degraded", || {
        !connected(&a.relay) && !connected(&b.relay)
    })
    .await;
    let resyncs = a.relay.stats().resyncs;
    broker.restart();
    until("A reconnected", || connected(&a.relay)).await;
    until("A's reconnect resync", || a.relay.stats().resyncs > resyncs).await;
    drain(&mut on_a);
    let resyncs = a.relay.stats().resyncs;

    b.hub.notify_tools_list_changed();
    b.kill();
    assert_eq!(
        next_event(&mut on_a).await.kind(),
        &EventKind::ListChanged(ListKind::Tools),
        "A resyncs for B's silence after B's change"
    );
    assert!(a.relay.stats().resyncs > resyncs);
}

/// With the broker 20 ms away (a connect takes several round trips) and
/// 100 publishes a second, the relay still backs off between attempts and
/// reconnects while the publishes go on: publishing only queues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_neither_aborts_nor_hurries_reconnecting() {
    let mut broker = Broker::redis();
    let proxy = Proxy::start(broker.port);
    proxy.delay(Duration::from_millis(20));
    let a = Replica::start(
        &via(&proxy),
        options("load")
            .with_backoff(Duration::from_millis(100), Duration::from_millis(400))
            .with_timeout(Duration::from_secs(2)),
    );
    until("connected", || connected(&a.relay)).await;

    let publishing = Arc::new(AtomicBool::new(true));
    let publisher = {
        let (relay, publishing) = (a.relay.clone(), Arc::clone(&publishing));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            let mut i = 0_u64;
            while publishing.load(Ordering::Relaxed) {
                tick.tick().await;
                relay.hub().notify_resource_updated(format!("file:///{i}"));
                i += 1;
            }
        })
    };

    broker.kill();
    until("degraded", || !connected(&a.relay)).await;
    let attempts = proxy.accepted();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Each attempt is two connections (a publisher and a subscriber) at
    // most; waits of at least half a bound doubling from 100 ms to 400 ms
    // give ten attempts in two seconds at most, where one attempt per
    // publish gave 200 connections.
    let during_outage = proxy.accepted() - attempts;
    println!("{during_outage} connections to the broker in a 2 s outage");
    assert!(
        during_outage <= 24,
        "{during_outage} connections in a 2 s outage"
    );

    broker.restart();
    until("reconnected while publishing", || connected(&a.relay)).await;
    assert!(publishing.load(Ordering::Relaxed));
    until("the queue drained while publishing", || {
        a.relay.stats().outbound_queued < 10
    })
    .await;
    publishing.store(false, Ordering::Relaxed);
    publisher.await.unwrap();
    assert_eq!(a.relay.stats().reconnects, 1);
}

/// `RelayOptions::timeout` bounds every broker operation: a 1.5 s freeze
/// under a 2 s timeout is ridden out on the same connection (the redis
/// client's own 500 ms reply timeout once dropped it), a 2.5 s one is a
/// lost connection, then a reconnect and a resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_bounds_broker_operations() {
    let broker = Broker::redis();
    let a = Replica::start(
        &broker.url(),
        options("timeout")
            .with_heartbeat(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(2)),
    );
    until("connected", || connected(&a.relay)).await;
    let mut on_a = listen_subscribed(
        &a.hub,
        &a.relay,
        &Filter::new().with_resource("file:///r"),
        1,
    )
    .await;

    for (freeze, lost) in [(1_500, false), (2_500, true)] {
        let before = a.relay.stats();
        broker.stop();
        // Something to send while frozen: the publish waits for its reply.
        a.hub.notify_tools_list_changed();
        tokio::time::sleep(Duration::from_millis(freeze)).await;
        broker.resume();
        if lost {
            until("the reconnect and its resync", || {
                let stats = a.relay.stats();
                stats.reconnects > before.reconnects && stats.resyncs > before.resyncs
            })
            .await;
            assert_eq!(
                next_event(&mut on_a).await.kind(),
                &EventKind::ResourceUpdated {
                    uri: "file:///r".into()
                }
            );
        } else {
            until("the event sent", || {
                a.relay.stats().published > before.published
            })
            .await;
            let after = a.relay.stats();
            assert!(after.connected, "{after:?}");
            assert_eq!(
                (after.reconnects, after.resyncs),
                (before.reconnects, before.resyncs),
                "a {freeze} ms freeze under a 2 s timeout: {after:?}"
            );
        }
    }
}

/// A listener acknowledged on A before A's subscription of its URI
/// reached the broker (A is 300 ms away) misses B's update of that URI in
/// between, and is told by a catch-up update once the subscription holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_between_acknowledgement_and_subscription_is_caught_up() {
    let broker = Broker::redis();
    let proxy = Proxy::start(broker.port);
    let a = Replica::start(
        &via(&proxy),
        options("window").with_timeout(Duration::from_secs(2)),
    );
    let b = Replica::start(&broker.url(), options("window"));
    settled(&[&a.relay, &b.relay]).await;
    proxy.delay(Duration::from_millis(300));

    let mut on_a = a
        .hub
        .listen(&Filter::new().with_resource("file:///x"))
        .unwrap();
    b.hub.notify_resource_updated("file:///x");
    assert_eq!(
        next_event(&mut on_a).await.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///x".into()
        }
    );
    let stats = a.relay.stats();
    assert_eq!(stats.keys_caught_up, 1, "{stats:?}");
    until("A's key channel", || a.relay.stats().subscribed_keys == 1).await;
    assert_eq!(a.relay.stats().received, 0, "B's update went by unheard");
}

/// A is cut off while B's task finishes, so the last status never reaches
/// A; once A is back, its resync asks the others to send again what they
/// keep for that, and B's hook (its task store's latest statuses) brings
/// the lost `completed` to A's listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_status_lost_on_the_way_arrives_with_the_resync() {
    use mcp_subscriptions::{Capabilities, Event, Hub, tasks};
    use rmcp::model::{DetailedTask, Task, TaskPayload, TaskStatus};
    use serde_json::{Value, json};

    let status = |status, at: &str| {
        let task = Task::new("t1", status, "2026-12-01T10:00:00Z", at);
        let payload = match status {
            TaskStatus::Completed => TaskPayload::Completed {
                result: serde_json::Map::new(),
            },
            _ => TaskPayload::Working,
        };
        tasks::event(&DetailedTask::new(task, payload))
    };
    let hub = || {
        Hub::builder()
            .capabilities(Capabilities::default().with_extension(tasks::extension()))
            .build()
    };
    let broker = Broker::redis();
    let proxy = Proxy::start(broker.port);
    // B's task store: the latest status of each of its tasks.
    let latest: Arc<parking_lot::Mutex<Vec<Event>>> = Arc::default();
    let resend = {
        let latest = latest.clone();
        move || latest.lock().clone()
    };
    let (hub_a, hub_b) = (hub(), hub());
    let a = crate::replicas::relay(&via(&proxy), &hub_a, options("lost-status"));
    let b = crate::replicas::relay(
        &broker.url(),
        &hub_b,
        options("lost-status").with_resend(resend),
    );
    settled(&[&a, &b]).await;
    let filter = Filter::new().with_extension(tasks::TASK_IDS, json!(["t1"]));
    let mut on_a = listen_subscribed(&hub_a, &a, &filter, 1).await;
    let status_of = |event: Event| {
        let json: Value = serde_json::from_str(&event.to_plain_json()).unwrap();
        json["params"]["status"].as_str().unwrap().to_owned()
    };

    let working = status(TaskStatus::Working, "2026-12-01T10:00:01Z");
    *latest.lock() = vec![working.clone()];
    hub_b.publish(working);
    assert_eq!(status_of(next_event(&mut on_a).await), "working");

    // Cut off: A's relay times out and drops its connection, and with it
    // what the proxy held for it.
    proxy.hold();
    let completed = status(TaskStatus::Completed, "2026-12-01T10:00:02Z");
    *latest.lock() = vec![completed.clone()];
    hub_b.publish(completed);
    until("A's connection lost", || !connected(&a)).await;
    quiet(&mut on_a, Duration::from_millis(200)).await;
    proxy.heal();

    assert_eq!(
        status_of(next_event(&mut on_a).await),
        "completed",
        "the lost status comes with A's resync"
    );
    assert!(a.stats().reconnects >= 1 && a.stats().resyncs >= 1);
    until("B resent its latest", || b.stats().resent >= 1).await;
}
