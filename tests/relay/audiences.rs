//! Audiences and revocation across two replicas joined by a real broker,
//! one test body per property, run over Redis Pub/Sub and over core NATS.
//!
//! - Isolation: with listeners of several principals and tenant labels
//!   (some with narrower filters) on both replicas, a seeded random run of
//!   events for everyone, a principal, a label, both, or no one, each
//!   published on a random replica, reaches every listener on either
//!   replica exactly as a model says: the events whose audience includes
//!   it and whose filter matches, each once, in each origin's order, and
//!   nothing else.
//! - Revocation: revoking a principal on one replica ends its streams on
//!   the other with `-32003` and `{"reason":"revoked"}`, what they held
//!   discarded, while every other stream on both replicas goes on
//!   receiving; revoking a principal no one is ends nothing anywhere.
//!
//! Events are non-idempotent (each carries its number `n`), and listeners
//! do not coalesce, so every event is distinguishable and none is absorbed.
//!
//! At the end, three sharper cases: a pending signal for some does not
//! absorb one for everyone on its way to the broker, a revocation of
//! everyone crosses as such, and an event published after a revocation
//! never overtakes it.

use std::time::Duration;

use mcp_subscriptions::error::{REVOKED_ERROR_CODE, StreamError};
use mcp_subscriptions::relay::{Relay, RelayOptions};
use mcp_subscriptions::{
    Audience, Event, Filter, Hub, Listener, Next, OpenContext,
    audience::{Label, Principal},
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

use crate::broker::{Broker, Kind};
use crate::replicas::{self, options, settled};
use crate::scoped::{EVERYTHING, Key, Scope, URIS, event, random_key, random_scope, uri};
use crate::waiting::until;

const SEED: u64 = 2026;
const EVENTS: usize = 800;

/// One listener to open on each replica: who it is and what it watches.
#[derive(Debug)]
struct Spec {
    principal: Option<&'static str>,
    labels: &'static [&'static str],
    watches: &'static [Key],
}

const fn spec(
    principal: Option<&'static str>,
    labels: &'static [&'static str],
    watches: &'static [Key],
) -> Spec {
    Spec {
        principal,
        labels,
        watches,
    }
}

/// The listeners of the isolation test, on each replica. The last one,
/// anonymous, watches every key, so each replica subscribes every key's
/// channel and receives every event the other publishes.
const CAST: &[Spec] = &[
    spec(Some("p0"), &[], EVERYTHING),
    // p0's twin: alike listeners share a lane.
    spec(Some("p0"), &[], EVERYTHING),
    spec(Some("p1"), &["tenant:a"], EVERYTHING),
    spec(Some("p2"), &["tenant:b"], &[Key::Uri(0), Key::Uri(1)]),
    spec(Some("p3"), &["tenant:a", "tenant:b"], &[Key::Tools]),
    spec(Some("p3"), &[], &[Key::Uri(2)]),
    spec(None, &["tenant:a"], EVERYTHING),
    spec(None, &["tenant:b"], &[Key::Tools, Key::Uri(3)]),
    spec(None, &[], EVERYTHING),
];

impl Spec {
    fn filter(&self) -> Filter {
        self.watches
            .iter()
            .fold(Filter::new(), |filter, key| match key {
                Key::Tools => filter.with_tools_list_changed(),
                Key::Uri(i) => filter.with_resource(uri(*i)),
            })
    }

    fn context(&self) -> OpenContext {
        let context = OpenContext::default();
        let context = match self.principal {
            Some(p) => context.with_principal(Principal::new(p)),
            None => context,
        };
        self.labels
            .iter()
            .fold(context, |context, &l| context.with_label(Label::new(l)))
    }

    /// The model: whether an event about `key` for `scope` reaches it.
    fn receives(&self, key: Key, scope: &Scope) -> bool {
        self.watches.contains(&key)
            && scope.as_ref().is_none_or(|(principals, labels)| {
                self.principal.is_some_and(|p| principals.contains(&p))
                    || self.labels.iter().any(|l| labels.contains(l))
            })
    }
}

/// The number an event of [`event`] carries; `None` for anything else (a
/// resync, a catch-up update).
fn number(json: &str) -> Option<usize> {
    let value: Value = serde_json::from_str(json).unwrap();
    value["params"]["n"].as_u64().map(|n| n as usize)
}

/// A hub and its relay.
struct Replica {
    hub: Hub,
    relay: Relay,
}

/// Clocks a machine busy with other builds cannot trip: a starved task
/// taken for a silent replica or a lost connection would resync, and a
/// resync is an event the model does not expect.
fn patient(prefix: &str) -> RelayOptions {
    options(prefix)
        .with_heartbeat(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(5))
}

/// Two replicas through `broker`, each hearing the other (which costs
/// neither a resync).
async fn two_replicas(broker: &Broker, prefix: &str) -> [Replica; 2] {
    let replica = || {
        let hub = Hub::builder().capacity(4_096).coalesce(false).build();
        let relay = replicas::relay(&broker.url(), &hub, patient(prefix));
        Replica { hub, relay }
    };
    let (a, b) = (replica(), replica());
    settled(&[&a.relay, &b.relay]).await;
    [a, b]
}

/// A listener of the model: what it is, and what it should read, each
/// event with the replica it was published on.
struct Watcher {
    spec: &'static Spec,
    listener: Listener,
    expected: Vec<(usize, String)>,
}

/// Opens `specs` on `replica`, and waits until its relay subscribes
/// `keys` key channels; the catch-up updates that follow a new
/// subscription are read off, so what each reads next was published after.
async fn open(replica: &Replica, specs: &'static [Spec], keys: u64) -> Vec<Watcher> {
    let mut watchers: Vec<Watcher> = specs
        .iter()
        .map(|spec| Watcher {
            spec,
            listener: replica
                .hub
                .listen_with(&spec.filter(), &spec.context())
                .unwrap(),
            expected: Vec::new(),
        })
        .collect();
    until("the listeners' key channels", || {
        replica.relay.stats().subscribed_keys == keys
    })
    .await;
    // The catch-up is delivered before the count of subscribed keys shows.
    for watcher in &mut watchers {
        while let Some(next) = watcher.listener.try_next() {
            assert!(
                matches!(next, Next::Event(_)),
                "a catch-up update: {next:?}"
            );
        }
    }
    watchers
}

/// Everything `listener` holds now: its events' renderings, and how it
/// ended, if it did.
fn drain(listener: &mut Listener) -> (Vec<String>, Option<Next>) {
    let mut events = Vec::new();
    while let Some(next) = listener.try_next() {
        match next {
            Next::Event(event) => events.push(event.to_plain_json()),
            other => return (events, Some(other)),
        }
    }
    (events, None)
}

/// Seeded random events for everyone, principals, labels or no one, on
/// random replicas; then every listener on both replicas holds exactly
/// what the model says, in each origin's order.
async fn audiences_stay_isolated_across_replicas(kind: Kind) {
    let broker = Broker::start(kind);
    let replicas = two_replicas(&broker, "isolation").await;
    let mut watchers = [
        open(&replicas[0], CAST, URIS as u64).await,
        open(&replicas[1], CAST, URIS as u64).await,
    ];
    let before = replicas.each_ref().map(|r| r.relay.stats());

    let mut rng = StdRng::seed_from_u64(SEED);
    let mut published_on = Vec::with_capacity(EVENTS);
    let mut sent = [0u64; 2];
    for n in 0..EVENTS {
        let (origin, key, scope) = (
            rng.random_range(0..2),
            random_key(&mut rng),
            random_scope(&mut rng),
        );
        let event = event(n, key, &scope);
        let json = event.to_plain_json();
        let mut local = 0;
        for (replica, watchers) in watchers.iter_mut().enumerate() {
            for watcher in watchers.iter_mut() {
                if watcher.spec.receives(key, &scope) {
                    watcher.expected.push((origin, json.clone()));
                    local += usize::from(replica == origin);
                }
            }
        }
        let report = replicas[origin].hub.publish(event);
        assert_eq!(
            report.matched, local,
            "event {n} ({key:?}, {scope:?}) matched"
        );
        published_on.push(origin);
        sent[origin] += 1;
        if n % 32 == 31 {
            // Let the relays send and receive while publishing goes on.
            tokio::task::yield_now().await;
        }
    }

    // Every event crosses (each replica watches every key), and a received
    // event is published into the hub before it is counted.
    let received = |i: usize| replicas[i].relay.stats().received - before[i].received;
    until("every event received by the other replica", || {
        received(0) == sent[1] && received(1) == sent[0]
    })
    .await;
    let stats = replicas.each_ref().map(|r| r.relay.stats());
    let diagnosis = format!("relay stats: A {:?}, B {:?}", stats[0], stats[1]);

    for (replica, watchers) in watchers.iter_mut().enumerate() {
        for (i, watcher) in watchers.iter_mut().enumerate() {
            let who = format!("listener {i} on replica {replica} ({:?})", watcher.spec);
            let (read, end) = drain(&mut watcher.listener);
            assert!(end.is_none(), "{who} ended with {end:?}; {diagnosis}");
            let mut from = [Vec::new(), Vec::new()];
            for json in read {
                let Some(n) = number(&json) else {
                    panic!("{who} read an event no one published: {json}; {diagnosis}");
                };
                from[published_on[n]].push(json);
            }
            for (origin, read) in from.iter().enumerate() {
                let expected: Vec<&String> = watcher
                    .expected
                    .iter()
                    .filter(|(o, _)| *o == origin)
                    .map(|(_, json)| json)
                    .collect();
                let read: Vec<&String> = read.iter().collect();
                assert!(
                    read == expected,
                    "{who}, from replica {origin}: read {} events, expected {}\n\
                     read: {read:?}\nexpected: {expected:?}\n{diagnosis}",
                    read.len(),
                    expected.len(),
                );
            }
        }
    }
    for (replica, (stats, before)) in stats.iter().zip(&before).enumerate() {
        assert_eq!(
            (stats.outbound_dropped, stats.sequence_gaps, stats.resyncs),
            (0, 0, before.resyncs),
            "replica {replica}: nothing lost, no resync"
        );
    }
}

/// The listeners of the revocation tests, on each replica: `p1`'s two
/// streams (one also labelled `tenant:a`) and three of others, one of
/// them labelled `tenant:a` too.
const REVOCATION_CAST: &[Spec] = &[
    spec(Some("p1"), &[], &[Key::Tools]),
    spec(Some("p1"), &["tenant:a"], &[Key::Tools]),
    spec(Some("p0"), &[], &[Key::Tools]),
    spec(None, &["tenant:a"], &[Key::Tools]),
    spec(None, &[], &[Key::Tools]),
];

/// Event number `n` for everyone: a list change, on the catalog channel,
/// where revocations travel too.
fn marker(n: usize) -> Event {
    event(n, Key::Tools, &None)
}

/// Publishes `event` on `replicas[origin]`, and waits until the other
/// replica has received it; its rendering.
async fn publish_and_cross(replicas: &[Replica; 2], origin: usize, event: Event) -> String {
    let other = &replicas[1 - origin].relay;
    let before = other.stats().received;
    let json = event.to_plain_json();
    replicas[origin].hub.publish(event);
    until("the event received by the other replica", || {
        other.stats().received > before
    })
    .await;
    json
}

/// The stream's end, as revoked: `-32003` with `{"reason":"revoked"}`,
/// then closed.
fn assert_revoked(listener: &mut Listener, who: &str) {
    match listener.try_next() {
        Some(Next::Failed(error)) => {
            assert_eq!(error, StreamError::Revoked, "{who}");
            let data = error.to_error_data();
            assert_eq!(data.code, REVOKED_ERROR_CODE, "{who}");
            assert_eq!(data.data, Some(json!({ "reason": "revoked" })), "{who}");
        }
        other => panic!("{who}: expected the revoked end, got {other:?}"),
    }
    assert!(
        matches!(listener.try_next(), Some(Next::Closed)),
        "{who}: closed after its end"
    );
}

/// `p1` revoked on A: its streams on A end at once and on B once the
/// revocation arrives, what they held discarded; everyone else on both
/// replicas reads what was held and what is published after, both ways.
async fn a_revocation_ends_the_principals_streams_on_both_replicas(kind: Kind) {
    let broker = Broker::start(kind);
    let replicas = two_replicas(&broker, "revocation").await;
    let mut watchers = [
        open(&replicas[0], REVOCATION_CAST, 0).await,
        open(&replicas[1], REVOCATION_CAST, 0).await,
    ];
    let revoked = |spec: &Spec| spec.principal == Some("p1");
    let ours = watchers[0].iter().filter(|w| revoked(w.spec)).count();

    // Held by every stream on both replicas, unread.
    let held = publish_and_cross(&replicas, 0, marker(0)).await;
    assert_eq!(replicas[0].hub.revoke(&Audience::principal("p1")), ours);
    for watcher in watchers[0].iter_mut().filter(|w| revoked(w.spec)) {
        assert_revoked(&mut watcher.listener, &format!("A's {:?}", watcher.spec));
    }
    until("the revocation ending p1's streams on B", || {
        replicas[1].hub.stats().listeners_closed.revoked == ours as u64
    })
    .await;
    for watcher in watchers[1].iter_mut().filter(|w| revoked(w.spec)) {
        assert_revoked(&mut watcher.listener, &format!("B's {:?}", watcher.spec));
    }

    // Everyone else goes on, on both replicas, both ways; an event for p1
    // now reaches no one.
    let for_p1 = event(1, Key::Tools, &Some((vec!["p1"], vec![])));
    publish_and_cross(&replicas, 0, for_p1).await;
    let from_a = publish_and_cross(&replicas, 0, marker(2)).await;
    let from_b = publish_and_cross(&replicas, 1, marker(3)).await;
    for (replica, watchers) in watchers.iter_mut().enumerate() {
        for watcher in watchers.iter_mut().filter(|w| !revoked(w.spec)) {
            let who = format!("{:?} on replica {replica}", watcher.spec);
            assert_eq!(
                drain(&mut watcher.listener),
                (vec![held.clone(), from_a.clone(), from_b.clone()], None),
                "{who}"
            );
        }
    }
    for (replica, r) in replicas.iter().enumerate() {
        let closed = r.hub.stats().listeners_closed;
        assert_eq!(closed.revoked, ours as u64, "replica {replica}");
    }
}

/// Revoking principals no stream has, on either replica, returns 0 and
/// ends nothing on either: every stream reads what is published after.
async fn revoking_an_unknown_principal_ends_nothing(kind: Kind) {
    let broker = Broker::start(kind);
    let replicas = two_replicas(&broker, "unknown").await;
    let mut watchers = [
        open(&replicas[0], REVOCATION_CAST, 0).await,
        open(&replicas[1], REVOCATION_CAST, 0).await,
    ];

    assert_eq!(replicas[0].hub.revoke(&Audience::principal("p9")), 0);
    assert_eq!(replicas[1].hub.revoke(&Audience::principal("p8")), 0);
    // Each revocation travels ahead of the event published after it, on
    // the same channel: once the events crossed, so did the revocations.
    let from_a = publish_and_cross(&replicas, 0, marker(0)).await;
    let from_b = publish_and_cross(&replicas, 1, marker(1)).await;
    for (replica, watchers) in watchers.iter_mut().enumerate() {
        for watcher in watchers.iter_mut() {
            let who = format!("{:?} on replica {replica}", watcher.spec);
            assert_eq!(
                drain(&mut watcher.listener),
                (vec![from_a.clone(), from_b.clone()], None),
                "{who}"
            );
        }
    }
    for r in &replicas {
        assert_eq!(r.hub.stats().listeners_closed.revoked, 0);
        assert_eq!(r.hub.stats().listeners_active, REVOCATION_CAST.len() as u64);
    }
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audiences_stay_isolated_across_replicas_over_redis() {
    audiences_stay_isolated_across_replicas(Kind::Redis).await;
}

#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audiences_stay_isolated_across_replicas_over_nats() {
    audiences_stay_isolated_across_replicas(Kind::Nats).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_ends_the_principals_streams_on_both_replicas_over_redis() {
    a_revocation_ends_the_principals_streams_on_both_replicas(Kind::Redis).await;
}

#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_ends_the_principals_streams_on_both_replicas_over_nats() {
    a_revocation_ends_the_principals_streams_on_both_replicas(Kind::Nats).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_an_unknown_principal_ends_nothing_over_redis() {
    revoking_an_unknown_principal_ends_nothing(Kind::Redis).await;
}

#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_an_unknown_principal_ends_nothing_over_nats() {
    revoking_an_unknown_principal_ends_nothing(Kind::Nats).await;
}

// Each of these once failed: the outbound queue coalesced by kind alone, a
// revocation of everyone crossed as one of no one, and an event queued
// after a revocation could be sent ahead of it.

/// A list change for no one, then one for everyone, both queued on A
/// before its relay's task runs (the test's one thread is not yielded
/// between them): B's listener must get the one for everyone.
async fn a_signal_for_everyone_is_not_absorbed_by_a_pending_one_for_no_one(kind: Kind) {
    let broker = Broker::start(kind);
    let replicas = two_replicas(&broker, "absorbed").await;
    let tools = Filter::new().with_tools_list_changed();
    let mut on_b = replicas[1].hub.listen(&tools).unwrap();

    let a = &replicas[0];
    a.hub
        .publish(Event::tools_list_changed().with_audience(Audience::nobody()));
    a.hub.publish(Event::tools_list_changed());
    let stats = a.relay.stats();
    let next = tokio::time::timeout(Duration::from_secs(3), on_b.next()).await;
    assert!(
        matches!(next, Ok(Next::Event(_))),
        "B's listener got {next:?}; A's relay after publishing: {stats:?}"
    );
}

/// Revoking everyone on A ends every stream on A and, as `Hub::revoke`
/// documents, on B too.
async fn revoking_everyone_ends_every_stream_on_both_replicas(kind: Kind) {
    let broker = Broker::start(kind);
    let replicas = two_replicas(&broker, "everyone").await;
    let mut watchers = [
        open(&replicas[0], REVOCATION_CAST, 0).await,
        open(&replicas[1], REVOCATION_CAST, 0).await,
    ];

    assert_eq!(
        replicas[0].hub.revoke(&Audience::everyone()),
        REVOCATION_CAST.len()
    );
    // The revocation travels ahead of this event, on the same channel.
    publish_and_cross(&replicas, 0, marker(0)).await;
    for (replica, watchers) in watchers.iter_mut().enumerate() {
        for watcher in watchers.iter_mut() {
            let who = format!("{:?} on replica {replica}", watcher.spec);
            assert_revoked(&mut watcher.listener, &who);
        }
    }
}

/// An event for `p1` published on A after A revoked `p1` never reaches
/// `p1`'s stream on B: the stream's next item is its revoked end. A's
/// broker is 300 ms away (a delaying proxy), and A revokes while a batch
/// of its is in flight.
#[cfg(feature = "redis")]
async fn an_event_after_a_revocation_never_reaches_the_revoked_stream_elsewhere() {
    let broker = Broker::redis();
    let proxy = crate::proxy::Proxy::start(broker.port);
    let hub = || Hub::builder().coalesce(false).build();
    let (hub_a, hub_b) = (hub(), hub());
    let url_a = format!("redis://127.0.0.1:{}", proxy.port);
    let a = replicas::relay(&url_a, &hub_a, patient("overtaken"));
    let b = replicas::relay(&broker.url(), &hub_b, patient("overtaken"));
    settled(&[&a, &b]).await;
    let p1 = REVOCATION_CAST[0].context();
    let mut on_b = hub_b
        .listen_with(&Filter::new().with_tools_list_changed(), &p1)
        .unwrap();
    proxy.delay(Duration::from_millis(300));

    hub_a.publish(event(0, Key::Tools, &Some((vec![], vec![]))));
    until("A's batch in flight", || {
        let stats = a.stats();
        stats.outbound_queued == 0 && stats.published == 0
    })
    .await;
    assert_eq!(hub_a.revoke(&Audience::principal("p1")), 0);
    hub_a.publish(event(1, Key::Tools, &Some((vec!["p1"], vec![]))));
    let next = tokio::time::timeout(Duration::from_secs(10), on_b.next()).await;
    assert!(
        matches!(next, Ok(Next::Failed(StreamError::Revoked))),
        "p1's stream on B read {next:?}"
    );
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_signal_for_everyone_is_not_absorbed_by_a_pending_one_for_no_one_over_redis() {
    a_signal_for_everyone_is_not_absorbed_by_a_pending_one_for_no_one(Kind::Redis).await;
}

#[cfg(feature = "nats")]
#[tokio::test]
async fn a_signal_for_everyone_is_not_absorbed_by_a_pending_one_for_no_one_over_nats() {
    a_signal_for_everyone_is_not_absorbed_by_a_pending_one_for_no_one(Kind::Nats).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_everyone_ends_every_stream_on_both_replicas_over_redis() {
    revoking_everyone_ends_every_stream_on_both_replicas(Kind::Redis).await;
}

#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_everyone_ends_every_stream_on_both_replicas_over_nats() {
    revoking_everyone_ends_every_stream_on_both_replicas(Kind::Nats).await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_after_a_revocation_never_reaches_the_revoked_stream_elsewhere_over_redis() {
    an_event_after_a_revocation_never_reaches_the_revoked_stream_elsewhere().await;
}
