//! Demand hooks: one attach for concurrent first listeners, awaited before
//! the acknowledgement; a refused (or panicking) attach opens nothing and
//! leaves no interest; one detach after the last stream and the grace; and
//! against a model, no attach or detach lost or doubled under churn.

#![cfg(feature = "http")]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::http::{app, listen, post, serve};
use mcp_subscriptions::hub::{InterestChange, InterestKey};
use mcp_subscriptions::{Demand, Hub, ListenService, ListenStream, Listener};
use parking_lot::Mutex;
use proptest::prelude::*;
use rmcp::model::{ErrorData, RequestId};
use serde_json::{Value, json};

const GRACE: Duration = Duration::from_millis(55);

/// What the hooks saw, per URI: attaches and detaches, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<BTreeMap<String, Vec<&'static str>>>>);

impl Log {
    fn note(&self, key: &InterestKey, what: &'static str) {
        let InterestKey::Resource(uri) = key else {
            panic!("only URIs here")
        };
        self.0.lock().entry(uri.clone()).or_default().push(what);
    }

    fn of(&self, uri: &str) -> Vec<&'static str> {
        self.0.lock().get(uri).cloned().unwrap_or_default()
    }
}

/// Hooks that log, take 20 ms to attach, refuse `file:///refused` and
/// panic for `file:///panics`.
fn demand(log: &Log) -> Demand {
    let (attach, detach) = (log.clone(), log.clone());
    Demand::new(move |key: InterestKey| {
        let log = attach.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            log.note(&key, "attach");
            match &key {
                InterestKey::Resource(uri) if uri == "file:///refused" => {
                    Err(ErrorData::invalid_params("no such resource", None))
                }
                InterestKey::Resource(uri) if uri == "file:///panics" => panic!("a hook bug"),
                _ => Ok(()),
            }
        }
    })
    .on_detach(move |key| detach.note(&key, "detach"))
    .with_grace(GRACE)
}

fn request(uris: &[&str]) -> Value {
    json!({"notifications": {"resourceSubscriptions": uris}})
}

fn open(service: &ListenService<Hub>, id: i64, uris: &[&str]) -> ListenStream<Listener> {
    service
        .open(RequestId::Number(id), Some(&request(uris)))
        .unwrap()
}

async fn first(stream: &mut ListenStream<Listener>) -> Value {
    let message = stream.next_message().await.expect("a first message");
    serde_json::from_slice(&message.to_vec()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn concurrent_first_listeners_share_one_attach_and_are_acknowledged_after_it() {
    let (hub, log) = (Hub::new(), Log::default());
    let service = ListenService::new(hub.clone()).with_demand(demand(&log));
    let mut a = open(&service, 1, &["file:///a"]);
    let mut b = open(&service, 2, &["file:///a", "file:///b"]);
    assert_eq!(
        hub.stats().listeners_active,
        0,
        "nothing is opened before the attach"
    );
    let (ack_a, ack_b) = tokio::join!(first(&mut a), first(&mut b));
    for ack in [&ack_a, &ack_b] {
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }
    assert_eq!(log.of("file:///a"), ["attach"]);
    assert_eq!(log.of("file:///b"), ["attach"]);
    assert_eq!(hub.stats().listeners_active, 2);
    hub.notify_resource_updated("file:///a");
    assert_eq!(first(&mut a).await["params"]["uri"], "file:///a");

    drop(a);
    tokio::time::sleep(GRACE * 2).await;
    assert_eq!(log.of("file:///a"), ["attach"], "b still holds a");
    drop(b);
    tokio::time::sleep(GRACE / 2).await;
    assert_eq!(log.of("file:///a"), ["attach"], "within the grace");
    tokio::time::sleep(GRACE).await;
    assert_eq!(log.of("file:///a"), ["attach", "detach"]);
    assert_eq!(log.of("file:///b"), ["attach", "detach"]);
}

#[tokio::test(start_paused = true)]
async fn a_refused_attach_opens_nothing_and_leaves_no_interest() {
    let (hub, log) = (Hub::new(), Log::default());
    let interest = hub.watch_interest();
    let service = ListenService::new(hub.clone()).with_demand(demand(&log));
    let mut refused = open(&service, 7, &["file:///ok", "file:///refused"]);
    let answer = first(&mut refused).await;
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["message"], "no such resource");
    assert_eq!(answer["error"]["code"], -32602);
    assert!(
        refused.next_message().await.is_none(),
        "nothing follows the refusal"
    );
    assert!(refused.is_finished());

    let mut panicked = open(&service, 8, &["file:///panics"]);
    assert_eq!(first(&mut panicked).await["error"]["code"], -32603);

    let stats = hub.stats();
    assert_eq!((stats.listeners_opened, stats.listeners_active), (0, 0));
    assert_eq!(
        interest.try_next(),
        None,
        "no key was ever watched in the hub"
    );
    drop((refused, panicked));
    tokio::time::sleep(GRACE * 2).await;
    // The key that did attach for the refused request is let go; the
    // refused one was never attached, so it is never detached.
    assert_eq!(log.of("file:///ok"), ["attach", "detach"]);
    assert_eq!(log.of("file:///refused"), ["attach"]);

    // The next listener of a refused key asks again.
    let mut again = open(&service, 9, &["file:///refused"]);
    assert!(first(&mut again).await.get("error").is_some());
    assert_eq!(log.of("file:///refused"), ["attach", "attach"]);
    let mut ok = open(&service, 10, &["file:///ok"]);
    assert_eq!(
        first(&mut ok).await["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert!(matches!(
        interest.try_next(),
        Some(InterestChange::Watched(_))
    ));
}

#[tokio::test]
async fn over_http_a_refusal_is_the_listen_requests_error_response() {
    let log = Log::default();
    let url = serve(app(ListenService::new(Hub::new()).with_demand(demand(&log)))).await;
    let body = listen(
        json!("r"),
        json!({"resourceSubscriptions": ["file:///refused"]}),
        &[],
    );
    let answer = post(&url, &body, &[]).await;
    // As every other refusal: plain JSON, before any stream starts.
    assert!(!answer.is_stream());
    assert_eq!(
        answer.header("content-type").as_deref(),
        Some("application/json")
    );
    let error = answer.json().await;
    assert_eq!(error["id"], "r");
    assert_eq!(error["error"]["message"], "no such resource");
}

#[derive(Debug, Clone)]
enum Op {
    Open(Vec<usize>),
    Close(usize),
    Wait(u64),
}

const URIS: [&str; 3] = ["file:///0", "file:///1", "file:///2"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => proptest::collection::vec(0..URIS.len(), 1..3).prop_map(Op::Open),
        3 => (0..8usize).prop_map(Op::Close),
        2 => (1..8u64).prop_map(|tens| Op::Wait(tens * 10)),
    ]
}

/// A key in the model: its open streams, and since when it has had none.
#[derive(Default)]
struct Modelled {
    attached: bool,
    holders: usize,
    idle_since: Option<tokio::time::Instant>,
    log: Vec<&'static str>,
}

async fn churn(ops: Vec<Op>) {
    let (hub, log) = (Hub::new(), Log::default());
    let service = ListenService::new(hub).with_demand(demand(&log));
    let mut model: BTreeMap<usize, Modelled> = BTreeMap::new();
    let mut open_streams: Vec<(ListenStream<Listener>, Vec<usize>)> = Vec::new();
    let settle = |model: &mut BTreeMap<usize, Modelled>| {
        let now = tokio::time::Instant::now();
        for key in model.values_mut() {
            if key.idle_since.is_some_and(|since| since + GRACE <= now) {
                key.attached = false;
                key.idle_since = None;
                key.log.push("detach");
            }
        }
    };
    for (n, op) in ops.into_iter().enumerate() {
        match op {
            Op::Open(keys) => {
                let mut keys = keys;
                keys.sort_unstable();
                keys.dedup();
                let uris: Vec<&str> = keys.iter().map(|&k| URIS[k]).collect();
                // Held from the request on, attached or not yet.
                settle(&mut model);
                let mut stream = open(&service, n as i64, &uris);
                for &k in &keys {
                    let key = model.entry(k).or_default();
                    if !key.attached {
                        key.attached = true;
                        key.log.push("attach");
                    }
                    key.holders += 1;
                    key.idle_since = None;
                }
                let ack = first(&mut stream).await;
                assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
                // An attach took 20 ms of (paused) time, in which other
                // keys' grace may have run out.
                settle(&mut model);
                open_streams.push((stream, keys));
            }
            Op::Close(i) if i < open_streams.len() => {
                let (stream, keys) = open_streams.swap_remove(i);
                drop(stream);
                let now = tokio::time::Instant::now();
                for k in keys {
                    let key = model.get_mut(&k).unwrap();
                    key.holders -= 1;
                    if key.holders == 0 {
                        key.idle_since = Some(now);
                    }
                }
            }
            Op::Close(_) => {}
            Op::Wait(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                settle(&mut model);
            }
        }
    }
    drop(open_streams);
    let now = tokio::time::Instant::now();
    for key in model.values_mut().filter(|k| k.holders > 0) {
        key.holders = 0;
        key.idle_since = Some(now);
    }
    tokio::time::sleep(GRACE * 2).await;
    settle(&mut model);
    for (k, key) in &model {
        assert_eq!(log.of(URIS[*k]), key.log, "{}", URIS[*k]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_attach_or_detach_is_lost_or_doubled_under_churn(ops in proptest::collection::vec(op(), 1..40)) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(churn(ops));
    }
}
