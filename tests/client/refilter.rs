//! A subscription whose filter changes in place, and one past 1,000 URIs,
//! against a hub served over Streamable HTTP: the new streams are
//! acknowledged before the old close, nothing asked for throughout is
//! lost, copies from the overlap are dropped, and many URIs are listened
//! to as several streams read as one. A source fed by hand sets up the
//! one order of arrivals a hub cannot be made to give at will.

#![cfg(all(feature = "client", feature = "http", feature = "tasks"))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::http::{app, serve};
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::{
    Capabilities, CloseReason, Event, EventKind, Extension, Filter, Hub, ListenService, Next,
    OpenContext, Opened, Selector, Source, SourceHandle,
};
use mcp_subscriptions_client::{Item, SubscribeError, SubscribeOptions, Subscription};
use serde_json::{Value, json};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(10);
const SEQ: &str = "notifications/test/seq";

/// A hub with an extension whose events carry a number, so a test can
/// count each one exactly.
fn hub() -> Hub {
    let numbered = Extension::new("test/seq")
        .with_id_list("seqIds", 10)
        .with_method(SEQ);
    Hub::builder()
        .capabilities(Capabilities::default().with_extension(numbered))
        .build()
}

fn numbered(n: u64) -> Event {
    let params = json!({"key": "held", "n": n}).as_object().cloned().unwrap();
    Event::extension(
        SEQ,
        params,
        Some(Selector::new("seqIds", Some("held".into()))),
    )
}

fn number(item: &Item) -> Option<u64> {
    match item {
        Item::Event(event) if event.kind().method() == SEQ => {
            let json: Value = serde_json::from_str(&event.to_plain_json()).unwrap();
            json["params"]["n"].as_u64()
        }
        _ => None,
    }
}

async fn next(subscription: &mut Subscription) -> Item {
    tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("an item in time")
        .expect("not finished")
}

/// The kinds of the next `n` items, each an event.
async fn kinds(subscription: &mut Subscription, n: usize) -> Vec<EventKind> {
    let mut seen = Vec::with_capacity(n);
    for _ in 0..n {
        let Item::Event(event) = next(subscription).await else {
            panic!("an event")
        };
        seen.push(event.kind().clone());
    }
    seen
}

async fn served(hub: &Hub) -> String {
    format!("{}/mcp", serve(app(ListenService::new(hub.clone()))).await)
}

#[tokio::test]
async fn a_changed_filter_keeps_what_both_ask_for_and_switches_the_rest() {
    let hub = hub();
    let url = served(&hub).await;
    let first = Filter::new()
        .with_resource("file:///a")
        .with_resource("file:///b");
    let options = SubscribeOptions::default().with_overlap(Duration::from_millis(100));
    let mut subscription = Subscription::http(&url, &first, options).await.unwrap();
    hub.notify_resource_updated("file:///a");
    let Item::Event(event) = next(&mut subscription).await else {
        panic!()
    };
    assert_eq!(
        event.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///a".into()
        }
    );

    let second = Filter::new()
        .with_resource("file:///b")
        .with_resource("file:///c");
    assert_eq!(subscription.set_filter(&second).await.unwrap(), second);
    assert_eq!(subscription.granted(), second);
    // Right after the change both streams are open: an update to b comes
    // on both, once to the reader.
    hub.notify_resource_updated("file:///b");
    hub.notify_resource_updated("file:///c");
    let seen = kinds(&mut subscription, 2).await;
    assert!(seen.contains(&EventKind::ResourceUpdated {
        uri: "file:///b".into()
    }));
    assert!(seen.contains(&EventKind::ResourceUpdated {
        uri: "file:///c".into()
    }));
    // Once the overlap is over, the old stream is closed: a is no longer
    // heard, and one listener is left on the hub.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hub.stats().listeners_active, 1);
    hub.notify_resource_updated("file:///a");
    hub.notify_resource_updated("file:///c");
    let Item::Event(event) = next(&mut subscription).await else {
        panic!()
    };
    assert_eq!(
        event.kind(),
        &EventKind::ResourceUpdated {
            uri: "file:///c".into()
        }
    );
    assert_eq!(
        subscription.stats().duplicates,
        1,
        "{:?}",
        subscription.stats()
    );
}

#[tokio::test]
async fn a_refused_filter_change_leaves_the_subscription_as_it_was() {
    let hub = hub();
    let url = served(&hub).await;
    let tools = Filter::new().with_tools_list_changed();
    let mut subscription = Subscription::http(&url, &tools, SubscribeOptions::default())
        .await
        .unwrap();
    let malformed = Filter::new().with_extension("seqIds", json!("not a list"));
    let refused = subscription.set_filter(&malformed).await.unwrap_err();
    assert!(
        matches!(&refused, SubscribeError::Refused(e) if e.code.0 == -32602),
        "{refused}"
    );
    assert_eq!(subscription.granted(), tools);
    hub.notify_tools_list_changed();
    assert!(matches!(next(&mut subscription).await, Item::Event(_)));
}

#[tokio::test]
async fn a_thousand_filter_changes_under_a_publisher_lose_nothing_held_throughout() {
    let hub = hub();
    let url = served(&hub).await;
    let held = |uri: String| {
        Filter::new()
            .with_extension("seqIds", json!(["held"]))
            .with_resource(uri)
    };
    // A buffer that holds the whole run: the reader reads at the end.
    let options = SubscribeOptions::default().with_capacity(1 << 20);
    let subscription = Subscription::http(&url, &held("file:///0".into()), options)
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (hub, stop) = (hub.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                hub.publish(numbered(n));
                n += 1;
                std::thread::sleep(Duration::from_micros(500));
            }
            n
        })
    };
    for change in 1..=1_000 {
        let granted = subscription
            .set_filter(&held(format!("file:///{change}")))
            .await
            .unwrap();
        assert_eq!(granted.resource_subscriptions().len(), 1);
    }
    stop.store(true, Ordering::Relaxed);
    let published = tokio::task::spawn_blocking(move || publisher.join().unwrap())
        .await
        .unwrap();
    hub.notify_tools_list_changed(); // not asked for: nothing
    hub.publish(numbered(u64::MAX));

    // Old streams may still hand over what they had after the last
    // number arrived on the new one: read until all is quiet.
    let mut subscription = subscription;
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    while let Ok(item) = tokio::time::timeout(Duration::from_secs(1), subscription.next()).await {
        let item = item.expect("not finished");
        assert!(!matches!(item, Item::Lagged(_)), "{item:?}");
        if let Some(n) = number(&item) {
            *counts.entry(n).or_default() += 1;
        }
    }
    assert_eq!(counts.remove(&u64::MAX), Some(1));
    let missing: Vec<u64> = (0..published).filter(|n| !counts.contains_key(n)).collect();
    assert!(
        missing.is_empty(),
        "{} of {published} lost: {missing:?}",
        missing.len()
    );
    let twice: Vec<(&u64, &u32)> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    let stats = subscription.stats();
    assert!(stats.duplicates > 0, "the overlaps had copies: {stats:?}");
}

#[tokio::test]
async fn past_a_thousand_uris_a_subscription_is_several_streams_read_as_one() {
    let hub = hub();
    let url = served(&hub).await;
    let uris: Vec<String> = (0..2_500).map(|n| format!("file:///{n}")).collect();
    let filter = uris
        .iter()
        .fold(Filter::new().with_tools_list_changed(), |f, uri| {
            f.with_resource(uri)
        });
    let mut subscription = Subscription::http(&url, &filter, SubscribeOptions::default())
        .await
        .unwrap();
    assert_eq!(subscription.granted(), filter);
    assert_eq!(hub.stats().listeners_active, 3);
    hub.notify_resource_updated("file:///2400");
    hub.notify_tools_list_changed();
    let seen = kinds(&mut subscription, 2).await;
    assert!(seen.contains(&EventKind::ResourceUpdated {
        uri: "file:///2400".into()
    }));
    // Shrunk in place below the limit: one stream again.
    let few = Filter::new().with_resource("file:///1");
    subscription.set_filter(&few).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(hub.stats().listeners_active, 1);
    subscription.cancel().await;
}

/// A source whose streams carry what the test sends each, by the order
/// they were opened: it grants what is asked.
#[derive(Clone, Default)]
struct ByHand(Arc<Mutex<Vec<mpsc::UnboundedSender<Event>>>>);

impl ByHand {
    fn stream(&self, opened: usize) -> mpsc::UnboundedSender<Event> {
        self.0.lock().unwrap()[opened].clone()
    }
}

struct Fed(mpsc::UnboundedReceiver<Event>);

impl Source for ByHand {
    type Handle = Fed;

    fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Fed>, OpenError> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.0.lock().unwrap().push(sender);
        Ok(Opened::new(requested.clone(), Fed(receiver)))
    }
}

impl SourceHandle for Fed {
    async fn next(&mut self) -> Next {
        self.0.recv().await.map_or(Next::Closed, Next::Event)
    }

    fn close(&mut self, _: CloseReason) {
        self.0.close();
    }
}

/// An update published before the new stream was registered comes on the
/// old one alone; the next, on the new one, is taken for its copy and
/// dropped; the old one is closed before it brings its own: that update is
/// delivered when the old one closes, never lost.
#[tokio::test]
async fn a_signal_dropped_for_an_old_stream_s_copy_is_delivered_though_it_closes_first() {
    let source = ByHand::default();
    let overlap = Duration::from_millis(400);
    let options = SubscribeOptions::default().with_overlap(overlap);
    let a = Filter::new().with_resource("file:///a");
    let mut subscription = Subscription::source(source.clone(), &a, options)
        .await
        .unwrap();
    let both = a.clone().with_resource("file:///b");
    subscription.set_filter(&both).await.unwrap();
    let changed = tokio::time::Instant::now();
    let (old, new) = (source.stream(0), source.stream(1));
    let update = Event::resource_updated("file:///a");

    // The first publish, on the old stream only.
    old.send(update.clone()).unwrap();
    assert!(matches!(next(&mut subscription).await, Item::Event(e) if e == update));
    // The second, late in the overlap, comes on the new one first.
    tokio::time::sleep_until(changed + overlap * 3 / 4).await;
    new.send(update.clone()).unwrap();
    // The old stream closes before its copy of the second arrives: the
    // update comes then, once.
    let again = next(&mut subscription).await;
    assert!(
        matches!(&again, Item::Event(e) if *e == update),
        "{again:?}"
    );
    assert!(changed.elapsed() >= overlap, "only once the old one closed");
    assert!(old.is_closed());
    assert_eq!(subscription.stats().duplicates, 1);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), subscription.next())
            .await
            .is_err(),
        "nothing more"
    );
}
