//! The gateway: downstream listen streams over HTTP, fed by shared
//! upstream listens on in-process upstream servers whose listens are
//! counted.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mcp_subscriptions::{EventKind, Filter, ListKind};
use mcp_subscriptions_client::catalog::CatalogKind;
use mcp_subscriptions_client::{Item, SubscribeError, SubscribeOptions, Subscription};
use mcp_subscriptions_gateway::{Gateway, Upstream};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rmcp::model::{CacheScope, CallToolRequestParams, CallToolResponse, ErrorCode};
use serde_json::json;

use crate::support::catalog_server::CatalogServer;
use crate::waiting::until;

const DEADLINE: Duration = Duration::from_secs(10);

/// Two upstreams, `a` and `b`, each with a tool and resources, behind one
/// gateway served over HTTP.
struct Rig {
    a: CatalogServer,
    b: CatalogServer,
    gateway: Gateway,
    url: String,
}

async fn rig(grace: Duration) -> Rig {
    let a = CatalogServer::start(100).await;
    let b = CatalogServer::start(100).await;
    for (server, tool) in [(&a, "search"), (&b, "fetch")] {
        server.set_tool(tool, "a tool");
        server.add_resource("file:///x");
    }
    let gateway = Gateway::builder()
        .upstream(Upstream::http("a", a.url()))
        .upstream(Upstream::http("b", b.url()))
        .grace(grace)
        .open()
        .await
        .unwrap();
    let app = crate::support::http::app(gateway.listen_service());
    let url = format!("{}/mcp", crate::support::http::serve(app).await);
    Rig { a, b, gateway, url }
}

impl Rig {
    async fn listen(&self, filter: &Filter) -> Subscription {
        self.try_listen(filter).await.unwrap()
    }

    async fn try_listen(&self, filter: &Filter) -> Result<Subscription, SubscribeError> {
        Subscription::http(self.url.as_str(), filter, SubscribeOptions::default()).await
    }

    /// The URIs the gateway's listen on upstream `name` asks for.
    fn upstream_uris(&self, name: &str) -> Vec<String> {
        let stats = self.gateway.stats();
        let upstream = stats.iter().find(|stats| stats.name == name).unwrap();
        upstream.uris.clone()
    }
}

fn uris(uris: &[&str]) -> Filter {
    uris.iter()
        .fold(Filter::new(), |filter, uri| filter.with_resource(*uri))
}

/// The next event's kind, skipping nothing.
async fn next_kind(subscription: &mut Subscription) -> EventKind {
    match tokio::time::timeout(DEADLINE, subscription.next()).await {
        Ok(Some(Item::Event(event))) => event.kind().clone(),
        Ok(other) => panic!("expected an event, got {other:?}"),
        Err(_) => panic!("no event within {DEADLINE:?}"),
    }
}

async fn quiet(subscription: &mut Subscription, wait: Duration) {
    if let Ok(item) = tokio::time::timeout(wait, subscription.next()).await {
        panic!("expected nothing, got {item:?}");
    }
}

fn updated(uri: &str) -> EventKind {
    EventKind::ResourceUpdated { uri: uri.into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_events_reach_only_the_listeners_that_asked_for_them_namespaced() {
    let rig = rig(Duration::from_millis(200)).await;
    let mut tools = rig.listen(&Filter::new().with_tools_list_changed()).await;
    let mut on_a = rig.listen(&uris(&["a+file:///x"])).await;
    let mut on_b = rig.listen(&uris(&["b+file:///x"])).await;
    assert_eq!(rig.upstream_uris("a"), ["file:///x"]);
    assert_eq!(rig.upstream_uris("b"), ["file:///x"]);

    rig.a.publish_updated("file:///x");
    assert_eq!(next_kind(&mut on_a).await, updated("a+file:///x"));
    quiet(&mut on_b, Duration::from_millis(300)).await;
    rig.b.publish_updated("file:///x");
    assert_eq!(next_kind(&mut on_b).await, updated("b+file:///x"));
    quiet(&mut on_a, Duration::from_millis(300)).await;

    // A real change of a's tools: a downstream list change, and the
    // merged list names it.
    rig.a.set_tool("index", "another tool");
    rig.a.publish(ListKind::Tools);
    assert_eq!(
        next_kind(&mut tools).await,
        EventKind::ListChanged(ListKind::Tools)
    );
    let names: BTreeSet<String> = rig
        .gateway
        .view(None)
        .await
        .unwrap()
        .tools()
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["a/index".into(), "a/search".into(), "b/fetch".into()])
    );
    // A change notification after which the list is the same: the merged
    // list did not change, so downstream hears nothing.
    rig.b.publish(ListKind::Tools);
    quiet(&mut tools, Duration::from_millis(600)).await;
    assert!(
        rig.gateway
            .view(None)
            .await
            .unwrap()
            .resources()
            .iter()
            .any(|r| r.uri == "b+file:///x")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uri_no_upstream_claims_or_serves_is_refused_and_nothing_else_is_touched() {
    let rig = rig(Duration::from_millis(200)).await;
    let mut held = rig.listen(&uris(&["a+file:///x"])).await;

    let refused = |result: Result<Subscription, SubscribeError>| match result {
        Err(SubscribeError::Refused(error)) => error,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let error = refused(rig.try_listen(&uris(&["c+file:///x"])).await);
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("no upstream"), "{}", error.message);

    // An upstream that refuses a URI: only the listens that need it.
    rig.a.refuse_uris_containing("secret");
    let error = refused(
        rig.try_listen(&uris(&["a+file:///secret", "b+file:///x"]))
            .await,
    );
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.message, "a URI this server does not serve");
    // Refused together with a good one in one upstream change: the good
    // one still attaches, for whoever needs it alone.
    let (secret, fine) = (uris(&["a+file:///secret2"]), uris(&["a+file:///y"]));
    let (secret, fine) = tokio::join!(rig.try_listen(&secret), rig.try_listen(&fine));
    refused(secret);
    let _fine = fine.unwrap();
    // One it leaves out of its grant.
    rig.a.withhold_uris_containing("hidden");
    let error = refused(rig.try_listen(&uris(&["a+file:///hidden"])).await);
    assert!(
        error.message.contains("does not serve"),
        "{}",
        error.message
    );

    assert_eq!(rig.upstream_uris("a"), ["file:///x", "file:///y"]);
    rig.a.publish_updated("file:///x");
    assert_eq!(next_kind(&mut held).await, updated("a+file:///x"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_downstream_listeners_share_one_upstream_listen_per_upstream() {
    let rig = rig(Duration::from_millis(100)).await;
    let catalog_listens = (rig.a.listeners(), rig.b.listeners());
    assert_eq!(catalog_listens, (1, 1), "each catalog listens once");

    let mut opening = tokio::task::JoinSet::new();
    let mut listeners = Vec::new();
    for i in 0..1_000u32 {
        let upstream = if i % 2 == 0 { "a" } else { "b" };
        let filter = uris(&[&format!("{upstream}+file:///{}", i % 50)]).with_tools_list_changed();
        let url = rig.url.clone();
        opening.spawn(async move {
            let subscription = Subscription::http(url, &filter, SubscribeOptions::default())
                .await
                .unwrap();
            (i, subscription)
        });
        if opening.len() == 100 {
            while let Some(opened) = opening.join_next().await {
                listeners.push(opened.unwrap());
            }
        }
    }
    while let Some(opened) = opening.join_next().await {
        listeners.push(opened.unwrap());
    }
    // The catalog's listen and the URI listen, however many listen below.
    assert_eq!((rig.a.listeners(), rig.b.listeners()), (2, 2));
    assert_eq!(rig.upstream_uris("a").len(), 25);
    assert_eq!(rig.upstream_uris("b").len(), 25);
    assert!(rig.gateway.stats().iter().all(|stats| stats.listens() == 2));

    // One upstream event reaches each downstream listener of its URI.
    rig.a.publish_updated("file:///0");
    for (i, subscription) in &mut listeners {
        if *i % 50 == 0 && *i % 2 == 0 {
            assert_eq!(next_kind(subscription).await, updated("a+file:///0"));
        }
    }
    // All gone: after the grace, the URI listens close.
    for (_, subscription) in listeners {
        subscription.cancel().await;
    }
    until("the URI listens close", || {
        rig.a.listeners() == 1 && rig.b.listeners() == 1
    })
    .await;
    assert!(
        rig.gateway
            .stats()
            .iter()
            .all(|stats| stats.uri_streams == 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_a_thousand_uris_an_upstream_listen_is_two_streams_and_shrinks_back() {
    let rig = rig(Duration::from_millis(100)).await;
    let batch = |range: std::ops::Range<u32>| {
        range.fold(Filter::new(), |filter, i| {
            filter.with_resource(format!("a+file:///{i}"))
        })
    };
    let mut first = rig.listen(&batch(0..500)).await;
    let second = rig.listen(&batch(500..1_000)).await;
    let third = rig.listen(&batch(1_000..1_500)).await;
    assert_eq!(rig.upstream_uris("a").len(), 1_500);
    // The catalog's listen, and the URI listen as two streams of at most
    // 1,000 URIs each.
    until("two URI streams", || rig.a.listeners() == 3).await;
    assert_eq!(rig.gateway.stats()[0].uri_streams, 2);
    rig.a.publish_updated("file:///7");
    assert_eq!(next_kind(&mut first).await, updated("a+file:///7"));
    drop((second, third));
    until("back to one URI stream", || rig.a.listeners() == 2).await;
    assert_eq!(rig.upstream_uris("a").len(), 500);
    rig.a.publish_updated("file:///8");
    assert_eq!(next_kind(&mut first).await, updated("a+file:///8"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_restarted_resyncs_exactly_its_listeners_and_ends_no_downstream_stream() {
    let rig = rig(Duration::from_millis(200)).await;
    let mut on_a = rig.listen(&uris(&["a+file:///x", "a+file:///y"])).await;
    let mut on_b = rig.listen(&uris(&["b+file:///x"])).await;

    rig.a.stop().await;
    rig.a.restart().await;
    let mut resynced = BTreeSet::new();
    while resynced.len() < 2 {
        match next_kind(&mut on_a).await {
            EventKind::ResourceUpdated { uri } => resynced.insert(uri),
            other => panic!("expected a resync, got {other:?}"),
        };
    }
    assert_eq!(
        resynced,
        BTreeSet::from(["a+file:///x".into(), "a+file:///y".into()])
    );
    quiet(&mut on_b, Duration::from_millis(300)).await;
    // Both go on.
    until("a listens again", || rig.a.listeners() == 2).await;
    rig.a.publish_updated("file:///y");
    assert_eq!(next_kind(&mut on_a).await, updated("a+file:///y"));
    rig.b.publish_updated("file:///x");
    assert_eq!(next_kind(&mut on_b).await, updated("b+file:///x"));
    let stats = rig.gateway.stats();
    assert!(stats[0].resyncs >= 1 && stats[1].resyncs == 0, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_down_at_open_joins_within_five_seconds_of_coming_up() {
    let a = CatalogServer::start(100).await;
    let b = CatalogServer::start(100).await;
    for (server, tool) in [(&a, "search"), (&b, "fetch")] {
        server.set_tool(tool, "a tool");
        server.add_resource("file:///x");
    }
    b.stop().await;
    let gateway = Gateway::builder()
        .upstream(Upstream::http("a", a.url()))
        .upstream(Upstream::http("b", b.url()))
        .open()
        .await
        .expect("a gateway opens with the upstreams that answer");
    let app = crate::support::http::app(gateway.listen_service());
    let url = format!("{}/mcp", crate::support::http::serve(app).await);
    let listen = |filter: Filter| {
        let url = url.clone();
        async move { Subscription::http(url.as_str(), &filter, SubscribeOptions::default()).await }
    };
    let view = gateway.view(None).await.unwrap();
    let names = || -> BTreeSet<String> {
        view.tools()
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect()
    };

    // Meanwhile a is served, and b's URIs are refused as not up.
    let mut tools = listen(Filter::new().with_tools_list_changed())
        .await
        .unwrap();
    let mut on_a = listen(uris(&["a+file:///x"])).await.unwrap();
    assert!(listen(uris(&["b+file:///x"])).await.is_err());
    assert_eq!(names(), BTreeSet::from(["a/search".into()]));
    a.publish_updated("file:///x");
    assert_eq!(next_kind(&mut on_a).await, updated("a+file:///x"));
    assert!(view.catalog("b").is_none());

    let came_up = std::time::Instant::now();
    b.restart().await;
    let joined = tokio::time::timeout(Duration::from_secs(5), next_kind(&mut tools)).await;
    assert_eq!(
        joined.expect("b joins within 5 s of coming up"),
        EventKind::ListChanged(ListKind::Tools)
    );
    println!("b joined {:?} after coming up", came_up.elapsed());
    assert_eq!(
        names(),
        BTreeSet::from(["a/search".into(), "b/fetch".into()])
    );
    let mut on_b = listen(uris(&["b+file:///x"])).await.unwrap();
    b.publish_updated("file:///x");
    assert_eq!(next_kind(&mut on_b).await, updated("b+file:///x"));
    quiet(&mut on_a, Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merged_lists_cache_hints_are_the_upstreams_merged_pessimistically() {
    let a = CatalogServer::start(100).await;
    let b = CatalogServer::start(100).await;
    a.set_cache_hints(60_000, "public");
    b.set_cache_hints(5_000, "public");
    let gateway = Gateway::builder()
        .upstream(Upstream::http("a", a.url()))
        .upstream(Upstream::http("b", b.url()))
        .open()
        .await
        .unwrap();
    let view = gateway.view(None).await.unwrap();
    let hint = view.cache_hint(CatalogKind::Tools);
    assert_eq!(hint.ttl, Some(Duration::from_secs(5)), "the shortest");
    assert_eq!(hint.scope, Some(CacheScope::Public));

    // One upstream's list turns private: the merged one is.
    a.set_cache_hints(60_000, "private");
    a.publish(ListKind::Tools);
    until("a's list refetched private", || {
        view.cache_hint(CatalogKind::Tools).scope == Some(CacheScope::Private)
    })
    .await;
    assert_eq!(
        view.cache_hint(CatalogKind::Tools).ttl,
        Some(Duration::from_secs(5))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_goes_upstream_whole_with_its_meta_and_the_gateways_own_connection() {
    let rig = rig(Duration::from_millis(200)).await;
    let request: CallToolRequestParams = serde_json::from_value(serde_json::json!({
        "name": "a/search",
        "arguments": {"query": "q"},
        "_meta": {
            "progressToken": 7,
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "io.modelcontextprotocol/protocolVersion": "1999-01-01",
            "io.modelcontextprotocol/clientInfo": {"name": "downstream", "version": "1"},
        },
    }))
    .unwrap();
    let result = rig
        .gateway
        .view(None)
        .await
        .unwrap()
        .call_tool(request)
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = result else {
        panic!("a tool result: {result:?}");
    };
    assert_eq!(result.is_error, Some(false));
    let sent = rig.a.last_call().expect("a was called");
    assert!(rig.b.last_call().is_none());
    assert_eq!(sent["name"], "search", "the upstream's name");
    assert_eq!(sent["arguments"]["query"], "q");
    let meta = &sent["_meta"];
    assert_eq!(meta["progressToken"], 7);
    assert_eq!(
        meta["traceparent"],
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    );
    // The connection's keys are the gateway's own upstream.
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_ne!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "downstream"
    );
}

/// Listeners arrive and leave at random while both upstreams publish, and
/// the upstream filters widen and narrow under them: every listener gets
/// an event for each URI it held across the publish, and the filters end
/// as the union of what remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_coming_and_going_at_random_miss_nothing_they_held() {
    const STEPS: usize = 300;
    let seed = churn_seed();
    let mut rng = StdRng::seed_from_u64(seed);
    let rig = rig(Duration::from_millis(20)).await;
    let pool: Vec<String> = (0..8)
        .flat_map(|i| [format!("a+file:///{i}"), format!("b+file:///{i}")])
        .collect();
    let mut open: Vec<(BTreeSet<String>, Subscription)> = Vec::new();
    let mut delivered = 0usize;
    for step in 0..STEPS {
        // Some leave, some arrive.
        for _ in 0..rng.random_range(0..3) {
            if !open.is_empty() {
                let (_, gone) = open.swap_remove(rng.random_range(0..open.len()));
                drop(gone);
            }
        }
        for _ in 0..rng.random_range(0..3) {
            let held: BTreeSet<String> = (0..rng.random_range(1..4))
                .map(|_| pool[rng.random_range(0..pool.len())].clone())
                .collect();
            let filter = held.iter().fold(Filter::new(), |filter, uri| {
                filter.with_resource(uri.as_str())
            });
            open.push((held, rig.listen(&filter).await));
        }
        // Published while the filters change under the listeners (the
        // grace of those that left runs out meanwhile).
        if step % 2 == 0 {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..30))).await;
        }
        let published: BTreeSet<String> = (0..rng.random_range(1..5))
            .map(|_| pool[rng.random_range(0..pool.len())].clone())
            .collect();
        for uri in &published {
            let (server, upstream_uri) = match uri.split_once('+').unwrap() {
                ("a", rest) => (&rig.a, rest),
                (_, rest) => (&rig.b, rest),
            };
            server.publish_updated(upstream_uri);
        }
        delivered += each_gets_what_it_held(&mut open, &published, || {
            format!("seed {seed}, step {step}: {:?}", rig.gateway.stats())
        })
        .await;
    }
    assert!(delivered > STEPS / 2, "only {delivered} deliveries checked");
    let remaining: BTreeMap<&str, BTreeSet<String>> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let prefix = format!("{name}+");
            let held = open
                .iter()
                .flat_map(|(held, _)| held.iter())
                .filter_map(|uri| uri.strip_prefix(prefix.as_str()).map(str::to_owned))
                .collect();
            (name, held)
        })
        .collect();
    until("the upstream filters are the union of what remains", || {
        ["a", "b"].iter().all(|name| {
            let uris: BTreeSet<String> = rig.upstream_uris(name).into_iter().collect();
            uris == remaining[name]
        })
    })
    .await;
    let duplicates: u64 = rig
        .gateway
        .stats()
        .iter()
        .map(|stats| stats.duplicates)
        .sum();
    println!("{delivered} deliveries checked, {duplicates} copies dropped upstream");
}

/// An upstream restarted with a list it did not have: the gateway
/// advertised every list from the start, so a downstream listener of that
/// list was granted it, hears of the change, and the merged list carries
/// it, with no restart of the gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_an_upstream_gains_later_reaches_downstream_without_a_restart() {
    let a = CatalogServer::start(100).await;
    a.set_tool("search", "a tool");
    a.set_capabilities(json!({"tools": {"listChanged": true}}));
    let gateway = Gateway::builder()
        .upstream(Upstream::http("a", a.url()))
        .grace(Duration::from_millis(20))
        .open()
        .await
        .unwrap();
    let app = crate::support::http::app(gateway.listen_service());
    let url = format!("{}/mcp", crate::support::http::serve(app).await);
    let filter = Filter::new().with_prompts_list_changed();
    let mut prompts = Subscription::http(url.as_str(), &filter, SubscribeOptions::default())
        .await
        .unwrap();
    assert_eq!(prompts.granted(), filter, "every list is advertised");
    let view = gateway.view(None).await.unwrap();
    assert!(view.prompts().is_empty());

    a.stop().await;
    a.set_capabilities(json!({
        "tools": {"listChanged": true},
        "prompts": {"listChanged": true},
    }));
    a.add_prompt("greet");
    a.restart().await;
    assert_eq!(
        next_kind(&mut prompts).await,
        EventKind::ListChanged(ListKind::Prompts)
    );
    until("the merged prompts carry a's new one", || {
        view.prompts().iter().any(|prompt| prompt.name == "a/greet")
    })
    .await;
}

/// Reads each of `open` (listeners with the URIs they hold) until it got
/// an update of every URI of `published` it holds, and nothing it does not
/// hold; how many it got. A miss panics, saying `context()`.
pub(super) async fn each_gets_what_it_held(
    open: &mut [(BTreeSet<String>, Subscription)],
    published: &BTreeSet<String>,
    context: impl Fn() -> String,
) -> usize {
    let mut delivered = 0;
    for (held, subscription) in open {
        let mut expected: BTreeSet<&String> = held.intersection(published).collect();
        while !expected.is_empty() {
            match tokio::time::timeout(DEADLINE, subscription.next()).await {
                Ok(Some(Item::Event(event))) => {
                    if let EventKind::ResourceUpdated { uri } = event.kind() {
                        assert!(held.contains(uri), "{}: {uri} is not held", context());
                        if expected.remove(uri) {
                            delivered += 1;
                        }
                    }
                }
                other => panic!("{}: missed {expected:?}: {other:?}", context()),
            }
        }
    }
    delivered
}

/// A churn run's seed: `GATEWAY_SEED` when set (to replay one), else a
/// random one, printed.
pub(super) fn churn_seed() -> u64 {
    let seed = std::env::var("GATEWAY_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(rand::random);
    println!("GATEWAY_SEED={seed}");
    seed
}
