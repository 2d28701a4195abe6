//! A gateway speaking upstream as each caller, against models:
//!
//! - isolation: a caller without a principal is refused, and downstream
//!   streams of several principals (two per tenant), each with random URIs of two upstreams that know every
//!   principal by its own token and scope events to principals and
//!   tenants, receive exactly what a model says of a seeded random run of
//!   events for everyone, a principal, a tenant, both, no one, or a
//!   principal with no stream: in order per upstream, and nothing else;
//! - churn: streams of ten principals arrive and leave at random while
//!   the upstreams publish: each gets what it held, its principal's
//!   upstream listens never number more than two per upstream, and once
//!   all have left every scope and upstream stream is released;
//! - credential scopes: principals with one token everywhere share one
//!   scope, each hears what that identity is sent, and one letting go of
//!   a URI leaves it held for the other;
//! - tasks: a task a tool call started through the gateway is its
//!   caller's: its status reaches the caller's listen of it, named
//!   downstream, and another caller can neither get it nor listen to it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mcp_subscriptions::audience::Principal;
use mcp_subscriptions::{Audience, Event, EventKind, Filter};
use mcp_subscriptions_client::catalog::CatalogOptions;
use mcp_subscriptions_client::{
    DEFAULT_OVERLAP, Item, SubscribeError, SubscribeOptions, Subscription,
};
use mcp_subscriptions_gateway::{Gateway, Upstream, UpstreamIdentity};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ErrorCode, GetTaskParams,
    RequestMetaObject, TASKS_EXTENSION_ID, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};

use crate::gateway::{churn_seed, each_gets_what_it_held};
use crate::support::catalog_server::CatalogServer;
use crate::support::scoped::{Scope, URIS, random_scope, uri};
use crate::waiting::until;

const SEED: u64 = 40_2026;
const EVENTS: usize = 300;
const DEADLINE: Duration = Duration::from_secs(10);
const UPSTREAMS: [&str; 2] = ["a", "b"];
/// The marker each stream holds at each upstream, published last.
const END: &str = "file:///end";
/// The tasks extension's filter field.
const TASK_IDS: &str = "taskIds";

/// A principal and its tenant's label, as the upstreams know them.
const PEOPLE: [(&str, &str); 4] = [
    ("p0", "tenant:a"),
    ("p1", "tenant:a"),
    ("p2", "tenant:b"),
    ("p3", "tenant:b"),
];

/// Two upstreams, a per-caller gateway over them, served over HTTP behind
/// a layer that takes the caller from `x-user`.
struct Rig {
    upstreams: Vec<CatalogServer>,
    gateway: Gateway,
    url: String,
}

/// The rig with `principals` (name, tenant), each known upstream by the
/// token `token-<name>`, and the gateway speaking as each with its own.
async fn rig(principals: &[(&str, &str)], grace: Duration) -> Rig {
    let tokens: Vec<String> = principals
        .iter()
        .map(|(name, _)| format!("token-{name}"))
        .collect();
    let known: Vec<(&str, &str, &str)> = principals
        .iter()
        .zip(&tokens)
        .map(|(&(name, tenant), token)| (token.as_str(), name, tenant))
        .collect();
    let speaking: Vec<(&str, &str)> = principals
        .iter()
        .zip(&tokens)
        .map(|(&(name, _), token)| (name, token.as_str()))
        .collect();
    rig_with(&known, &speaking, grace).await
}

/// The rig with upstreams that know each `(token, principal, tenant)`,
/// and a gateway (with `grace`) that speaks as each downstream principal
/// with the token `speaking` gives it, at both upstreams.
async fn rig_with(known: &[(&str, &str, &str)], speaking: &[(&str, &str)], grace: Duration) -> Rig {
    let known: Vec<(&str, &str, &str)> = known
        .iter()
        .map(|&(token, name, tenant)| (token, name, tenant.trim_start_matches("tenant:")))
        .collect();
    let mut upstreams = Vec::new();
    let mut builder = Gateway::builder().grace(grace);
    // No copy of a pending update is coalesced upstream, so that every
    // event arrives as itself and the model is exact.
    let defaults = CatalogOptions::default();
    let options = defaults
        .clone()
        .with_subscribe(defaults.subscribe.with_coalesce(false));
    for name in UPSTREAMS {
        let server = CatalogServer::start(100).await;
        server.know_principals(&known);
        builder =
            builder.upstream(Upstream::http(name, server.url()).with_options(options.clone()));
        upstreams.push(server);
    }
    let table = UPSTREAMS.iter().flat_map(|upstream| {
        speaking
            .iter()
            .map(move |&(name, token)| (*upstream, name, token))
    });
    let gateway = builder
        .per_caller(UpstreamIdentity::table(table))
        .open()
        .await
        .unwrap();
    let app =
        crate::support::http::with_user_header(crate::support::http::app(gateway.listen_service()));
    let url = format!("{}/mcp", crate::support::http::serve(app).await);
    Rig {
        upstreams,
        gateway,
        url,
    }
}

impl Rig {
    /// A stream of `principal` holding `uris` (downstream).
    async fn listen(&self, principal: &str, uris: &BTreeSet<String>) -> Subscription {
        let filter = uris.iter().fold(Filter::new(), |filter, uri| {
            filter.with_resource(uri.as_str())
        });
        let options = SubscribeOptions::default().with_header("x-user", principal);
        Subscription::http(self.url.as_str(), &filter, options)
            .await
            .unwrap_or_else(|err| panic!("{principal}'s listen: {err}"))
    }

    /// The upstream listen streams held at each upstream, by upstream.
    fn upstream_listens(&self) -> Vec<usize> {
        self.gateway
            .stats()
            .iter()
            .map(|stats| stats.listens())
            .collect()
    }
}

/// Whether an event for `scope` reaches `principal` (of `tenant`).
fn reaches(scope: &Scope, principal: &str, tenant: &str) -> bool {
    match scope {
        None => true,
        Some((principals, labels)) => principals.contains(&principal) || labels.contains(&tenant),
    }
}

fn downstream(upstream: &str, uri: &str) -> String {
    format!("{upstream}+{uri}")
}

/// What `subscription` receives until it has seen the end marker of each
/// upstream, by upstream: the downstream URIs updated, in order.
async fn until_ends(subscription: &mut Subscription) -> BTreeMap<String, Vec<String>> {
    until_ends_of(subscription, &UPSTREAMS).await
}

/// What `subscription` receives until it has seen the end marker of each
/// of `upstreams`, by upstream.
async fn until_ends_of(
    subscription: &mut Subscription,
    upstreams: &[&str],
) -> BTreeMap<String, Vec<String>> {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ends: BTreeSet<String> = upstreams.iter().map(|u| downstream(u, END)).collect();
    while !ends.is_empty() {
        match tokio::time::timeout(DEADLINE, subscription.next()).await {
            Ok(Some(Item::Event(event))) => {
                let EventKind::ResourceUpdated { uri } = event.kind() else {
                    panic!("only updates are published: {event:?}");
                };
                if !ends.remove(uri) {
                    let (upstream, _) = uri.split_once('+').unwrap();
                    seen.entry(upstream.to_owned())
                        .or_default()
                        .push(uri.clone());
                }
            }
            other => panic!("waiting for {ends:?}: {other:?}; so far {seen:?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_downstream_stream_gets_exactly_what_its_principal_is_sent_upstream() {
    let mut rng = StdRng::seed_from_u64(SEED);
    let rig = rig(&PEOPLE, Duration::from_secs(5)).await;
    // A caller without a principal has no credential to be: refused.
    let filter = Filter::new().with_resource(downstream("a", END));
    let anonymous =
        Subscription::http(rig.url.as_str(), &filter, SubscribeOptions::default()).await;
    assert!(
        matches!(&anonymous, Err(SubscribeError::Refused(error)) if error.code == ErrorCode::INVALID_REQUEST),
        "{anonymous:?}"
    );
    let view = rig.gateway.view(None).await;
    assert_eq!(view.unwrap_err().code, ErrorCode::INVALID_REQUEST);
    // Two streams per principal, each with random URIs of both upstreams.
    let mut streams = Vec::new();
    for &(principal, tenant) in &PEOPLE {
        for _ in 0..2 {
            let mut uris: BTreeSet<String> = UPSTREAMS
                .iter()
                .map(|upstream| downstream(upstream, END))
                .collect();
            for upstream in UPSTREAMS {
                for i in 0..URIS {
                    if rng.random_bool(0.5) {
                        uris.insert(downstream(upstream, &uri(i)));
                    }
                }
            }
            let subscription = rig.listen(principal, &uris).await;
            streams.push((principal, tenant, uris, subscription));
        }
    }
    // Each upstream listen widened as the streams came; while a change's
    // old and new streams overlap, two updates of a URI are taken as
    // copies of one. Once it is over, every update arrives as itself.
    tokio::time::sleep(DEFAULT_OVERLAP * 2).await;
    let mut expected: Vec<BTreeMap<String, Vec<String>>> = vec![BTreeMap::new(); streams.len()];
    for _ in 0..EVENTS {
        let at = rng.random_range(0..UPSTREAMS.len());
        let scope = random_scope(&mut rng);
        let uri = uri(rng.random_range(0..URIS));
        let event = match &scope {
            None => Event::resource_updated(uri.as_str()),
            Some((principals, labels)) => {
                let audience = principals
                    .iter()
                    .fold(mcp_subscriptions::Audience::nobody(), |audience, &p| {
                        audience.with_principal(p)
                    });
                let audience = labels
                    .iter()
                    .fold(audience, |audience, &l| audience.with_label(l));
                Event::resource_updated(uri.as_str()).with_audience(audience)
            }
        };
        rig.upstreams[at].publish_event(event);
        let name = downstream(UPSTREAMS[at], &uri);
        for (stream, (principal, tenant, uris, _)) in streams.iter().enumerate() {
            if uris.contains(&name) && reaches(&scope, principal, tenant) {
                expected[stream]
                    .entry(UPSTREAMS[at].to_owned())
                    .or_default()
                    .push(name.clone());
            }
        }
    }
    for upstream in &rig.upstreams {
        upstream.publish_updated(END);
    }
    let mut delivered = 0;
    for (stream, (principal, _, _, subscription)) in streams.iter_mut().enumerate() {
        let seen = until_ends(subscription).await;
        assert_eq!(
            seen, expected[stream],
            "seed {SEED}: stream {stream} of {principal}"
        );
        delivered += seen.values().map(Vec::len).sum::<usize>();
    }
    assert!(delivered > EVENTS, "only {delivered} deliveries checked");
    // One scope per principal, each with its catalog's listen and one URI
    // listen per upstream.
    for stats in rig.gateway.stats() {
        assert_eq!(stats.scopes, PEOPLE.len(), "{stats:?}");
        assert!(stats.listens() <= 2 * PEOPLE.len(), "{stats:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_coming_and_going_at_random_miss_nothing_and_leave_nothing_upstream() {
    const STEPS: usize = 150;
    let seed = churn_seed();
    let mut rng = StdRng::seed_from_u64(seed);
    let names: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    let principals: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), "tenant:t"))
        .collect();
    let grace = Duration::from_millis(50);
    let rig = rig(&principals, grace).await;
    let pool: Vec<String> = UPSTREAMS
        .iter()
        .flat_map(|upstream| (0..URIS).map(move |i| downstream(upstream, &uri(i))))
        .collect();
    let mut open: Vec<(BTreeSet<String>, Subscription)> = Vec::new();
    let mut delivered = 0usize;
    for step in 0..STEPS {
        for _ in 0..rng.random_range(0..3) {
            if !open.is_empty() {
                drop(open.swap_remove(rng.random_range(0..open.len())));
            }
        }
        for _ in 0..rng.random_range(0..3) {
            let principal = names[rng.random_range(0..names.len())].as_str();
            let held: BTreeSet<String> = (0..rng.random_range(1..4))
                .map(|_| pool[rng.random_range(0..pool.len())].clone())
                .collect();
            open.push((held.clone(), rig.listen(principal, &held).await));
        }
        // Now and then the graces of those that left run out meanwhile.
        if step % 3 == 0 {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..80))).await;
        }
        for listens in rig.upstream_listens() {
            assert!(
                listens <= 2 * names.len(),
                "step {step}: {listens} upstream listens"
            );
        }
        let published: BTreeSet<String> = (0..rng.random_range(1..4))
            .map(|_| pool[rng.random_range(0..pool.len())].clone())
            .collect();
        for name in &published {
            let (upstream, there) = name.split_once('+').unwrap();
            let at = UPSTREAMS.iter().position(|u| *u == upstream).unwrap();
            rig.upstreams[at].publish_updated(there);
        }
        delivered += each_gets_what_it_held(&mut open, &published, || {
            format!("seed {seed}, step {step}: {:?}", rig.gateway.stats())
        })
        .await;
    }
    assert!(delivered > STEPS / 2, "only {delivered} deliveries checked");
    drop(open);
    // One grace, and the catalogs closing.
    until("every scope and upstream stream released", || {
        rig.gateway.stats().iter().all(|stats| stats.scopes == 0)
            && rig.upstreams.iter().all(|server| server.listeners() == 0)
    })
    .await;
    assert_eq!(rig.gateway.hub().stats().listeners_active, 0);
}

/// How long after `released` every scope of the rig's gateway is gone.
async fn linger(rig: &Rig, released: tokio::time::Instant) -> Duration {
    until("every scope released", || {
        rig.gateway.stats().iter().all(|stats| stats.scopes == 0)
    })
    .await;
    released.elapsed()
}

/// A caller's scope lives one grace after its last stream or request, not
/// the demand hooks' grace and then its own again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_lives_one_grace_after_its_last_holder() {
    let grace = Duration::from_millis(1_500);
    let rig = rig(&PEOPLE[..1], grace).await;
    let uris: BTreeSet<String> = [downstream("a", "file:///x")].into();

    let stream = rig.listen("p0", &uris).await;
    assert_eq!(rig.gateway.stats()[0].scopes, 1);
    stream.cancel().await;
    let after_a_stream = linger(&rig, tokio::time::Instant::now()).await;

    let view = rig.gateway.view(Some(&Principal::new("p0"))).await.unwrap();
    assert_eq!(rig.gateway.stats()[0].scopes, 1);
    drop(view);
    let after_a_request = linger(&rig, tokio::time::Instant::now()).await;

    for (holder, lingered) in [("stream", after_a_stream), ("request", after_a_request)] {
        // One grace, within a tenth (it lingered two before).
        assert!(
            lingered >= grace - grace / 10 && lingered <= grace + grace / 10,
            "after its last {holder}, the scope lingered {lingered:?} (grace {grace:?})"
        );
    }
}

/// Options that declare the tasks extension, as a client that takes tasks
/// does.
fn taking_tasks() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
    capabilities
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_through_the_gateway_is_its_callers_alone() {
    let rig = rig(&PEOPLE[..3], Duration::from_secs(5)).await;
    let (p0, p2) = (Principal::new("p0"), Principal::new("p2"));
    let (mine, theirs) = (
        rig.gateway.view(Some(&p0)).await.unwrap(),
        rig.gateway.view(Some(&p2)).await.unwrap(),
    );
    // A caller that does not take tasks gets the tool's result.
    let plain = mine.call_tool(CallToolRequestParams::new("a/slow")).await;
    assert!(
        matches!(plain, Ok(CallToolResponse::Complete(_))),
        "{plain:?}"
    );
    // One that does gets the task the upstream started, named downstream.
    let mut meta = RequestMetaObject::new();
    meta.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        serde_json::to_value(taking_tasks()).unwrap(),
    );
    let mut request = CallToolRequestParams::new("a/slow");
    request.meta = Some(meta);
    let Ok(CallToolResponse::Task(created)) = mine.call_tool(request).await else {
        panic!("a task");
    };
    assert_eq!(created.task.task_id, "a/t-1");
    assert_eq!(created.task.status, TaskStatus::Working);

    // Its caller follows it; another caller is refused it upstream.
    let filter = Filter::new().with_extension(TASK_IDS, json!(["a/t-1"]));
    let options = |who: &str| {
        SubscribeOptions::default()
            .with_header("x-user", who)
            .with_client_capabilities(taking_tasks())
    };
    let mut following = Subscription::http(rig.url.as_str(), &filter, options("p0"))
        .await
        .unwrap();
    let refused = Subscription::http(rig.url.as_str(), &filter, options("p2")).await;
    assert!(
        matches!(&refused, Err(SubscribeError::Refused(error)) if error.code == ErrorCode::INVALID_PARAMS),
        "{refused:?}"
    );
    let next_status =
        async |following: &mut Subscription| match tokio::time::timeout(DEADLINE, following.next())
            .await
        {
            Ok(Some(Item::Event(event))) => {
                let notification: Value = serde_json::from_str(&event.to_plain_json()).unwrap();
                notification["params"].clone()
            }
            other => panic!("the task's status: {other:?}"),
        };
    let upstream = &rig.upstreams[0];
    upstream.set_task_status("t-1", TaskPayload::Working);
    let status = next_status(&mut following).await;
    assert_eq!(
        (&status["taskId"], &status["status"]),
        (&json!("a/t-1"), &json!("working"))
    );
    // It completes while the upstream is down: once it is back, the
    // gateway fetches the status its listen may have missed.
    upstream.stop().await;
    let result = json!({"content": [], "isError": false});
    let result = result.as_object().unwrap().clone();
    upstream.set_task_status("t-1", TaskPayload::Completed { result });
    upstream.restart().await;
    let status = next_status(&mut following).await;
    assert_eq!(
        (&status["taskId"], &status["status"]),
        (&json!("a/t-1"), &json!("completed"))
    );

    let got = mine.get_task(GetTaskParams::new("a/t-1")).await.unwrap();
    assert_eq!(got.task.task.task_id, "a/t-1");
    assert_eq!(got.task.status(), TaskStatus::Completed);
    let error = theirs
        .get_task(GetTaskParams::new("a/t-1"))
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
    assert_eq!(
        rig.gateway.stats()[0].tasks,
        ["t-1"],
        "the upstream listen follows it"
    );
}

/// Principals with one token at every upstream are one identity there:
/// one scope (one catalog listen and one URI listen per upstream) whose
/// events reach each of their streams and no one else's, and a URI one of
/// them lets go stays held for the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn principals_of_one_credential_share_one_scope() {
    let known = [("token-team", "team", "t"), ("token-p2", "p2", "t")];
    let speaking = [
        ("p0", "token-team"),
        ("p1", "token-team"),
        ("p2", "token-p2"),
    ];
    let rig = rig_with(&known, &speaking, Duration::from_millis(50)).await;
    let uris: BTreeSet<String> = [downstream("a", "file:///x"), downstream("a", END)].into();
    let mut p0 = rig.listen("p0", &uris).await;
    let mut p1 = rig.listen("p1", &uris).await;
    let mut p2 = rig.listen("p2", &uris).await;
    let stats = &rig.gateway.stats()[0];
    assert_eq!(stats.scopes, 2, "p0 and p1 share one: {stats:?}");
    assert_eq!(stats.listens(), 4, "two per scope: {stats:?}");
    tokio::time::sleep(DEFAULT_OVERLAP * 2).await;

    let team = Audience::principal("team");
    let upstream = &rig.upstreams[0];
    upstream.publish_event(Event::resource_updated("file:///x").with_audience(team.clone()));
    upstream.publish_updated(END);
    let x = downstream("a", "file:///x");
    for (who, stream) in [("p0", &mut p0), ("p1", &mut p1)] {
        let seen = until_ends_of(stream, &["a"]).await;
        assert_eq!(seen.get("a"), Some(&vec![x.clone()]), "{who}");
    }
    assert_eq!(
        until_ends_of(&mut p2, &["a"]).await.get("a"),
        None,
        "not p2's"
    );

    // p0 lets go of the URI; p1 still holds it, past the graces.
    drop(p0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    upstream.publish_event(Event::resource_updated("file:///x").with_audience(team));
    upstream.publish_updated(END);
    assert_eq!(
        until_ends_of(&mut p1, &["a"]).await.get("a"),
        Some(&vec![x])
    );
    assert_eq!(rig.gateway.stats()[0].scopes, 2);
}
