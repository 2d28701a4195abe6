//! Deploys over Redis: a replica that starts, stops gracefully or is
//! started again costs the other replicas' listeners nothing (no
//! notification, no resync), while a replica killed where it stands still
//! resyncs them, as its silence may hide changes it never sent.

use std::time::Duration;

use mcp_subscriptions::{EventKind, Filter, ListKind, Listener};

use crate::broker::Broker;
use crate::replicas::{JITTER, Replica, listen_subscribed, options, settled};
use crate::waiting::{next_event, quiet, until};

/// Longer than three heartbeats (a silent replica's deadline) and a
/// resync's jitter together, with room for the relay's ticks.
const PAST_SILENCE: Duration = Duration::from_millis(1_000);

fn watching_everything() -> Filter {
    Filter::new()
        .with_tools_list_changed()
        .with_prompts_list_changed()
        .with_resources_list_changed()
        .with_resource("file:///a")
}

/// Three replicas, each relayed, and a listener of every list and one URI
/// on the first two, opened once every relay hears every other.
async fn three_replicas(broker: &Broker, prefix: &str) -> ([Replica; 3], [Listener; 2]) {
    let url = broker.url();
    let replicas = [(); 3].map(|()| Replica::start(&url, options(prefix)));
    settled(&replicas.iter().map(|r| &r.relay).collect::<Vec<_>>()).await;
    let mut listeners = Vec::new();
    for replica in &replicas[..2] {
        listeners
            .push(listen_subscribed(&replica.hub, &replica.relay, &watching_everything(), 1).await);
    }
    let listeners = listeners.try_into().unwrap_or_else(|_| unreachable!());
    (replicas, listeners)
}

/// Waits until `replicas` each hear `others` other replicas.
async fn hearing(replicas: &[&Replica], others: u64) {
    until("every replica hearing the others", || {
        replicas.iter().all(|r| r.relay.stats().replicas == others)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_restarts_and_a_new_replica_cost_the_others_nothing() {
    let broker = Broker::redis();
    let ([one, two, mut three], [mut on_one, mut on_two]) = three_replicas(&broker, "deploy").await;
    let resyncs = [&one, &two].map(|r| r.relay.stats().resyncs);

    // The third stops gracefully and starts again, twice, as a rolling
    // deploy does; then a fourth joins.
    for _ in 0..2 {
        three.relay.close().await;
        hearing(&[&one, &two], 1).await;
        three = Replica::start(&broker.url(), options("deploy"));
        hearing(&[&one, &two, &three], 2).await;
    }
    let four = Replica::start(&broker.url(), options("deploy"));
    hearing(&[&one, &two, &three, &four], 3).await;

    // Long enough for a silence to be noticed and a resync to be sent.
    quiet(&mut on_one, PAST_SILENCE).await;
    quiet(&mut on_two, JITTER).await;
    for (replica, before) in [&one, &two].into_iter().zip(resyncs) {
        let stats = replica.relay.stats();
        assert_eq!(stats.resyncs, before, "no resync: {stats:?}");
        assert_eq!(stats.replicas_left, 2, "{stats:?}");
    }

    // What the newcomers publish still crosses, once.
    four.hub.notify_tools_list_changed();
    for listener in [&mut on_one, &mut on_two] {
        assert_eq!(
            next_event(listener).await.kind(),
            &EventKind::ListChanged(ListKind::Tools)
        );
        quiet(listener, JITTER).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_still_resyncs_the_others() {
    let broker = Broker::redis();
    let ([one, two, three], [mut on_one, mut on_two]) = three_replicas(&broker, "killed").await;
    let resyncs = [&one, &two].map(|r| r.relay.stats().resyncs);

    // Killed where it stands: no goodbye, so its silence is a possible loss.
    three.kill();
    for listener in [&mut on_one, &mut on_two] {
        assert_eq!(
            next_event(listener).await.kind(),
            &EventKind::ListChanged(ListKind::Tools),
            "the resync's first signal"
        );
    }
    for (replica, before) in [&one, &two].into_iter().zip(resyncs) {
        until("the resync counted", || {
            replica.relay.stats().resyncs > before
        })
        .await;
        assert_eq!(replica.relay.stats().replicas_left, 0);
    }

    // Its replacement's first hearing follows a replica forgotten for its
    // silence, so it resyncs once more: the dead one may have held a
    // change it sent after the first resync.
    let resyncs = [&one, &two].map(|r| r.relay.stats().resyncs);
    let again = Replica::start(&broker.url(), options("killed"));
    hearing(&[&one, &two, &again], 2).await;
    for (replica, before) in [&one, &two].into_iter().zip(resyncs) {
        until("the replacement's resync", || {
            replica.relay.stats().resyncs > before
        })
        .await;
    }
}
