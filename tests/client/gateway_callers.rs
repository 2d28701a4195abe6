//! The example gateway speaking upstream as each caller: two example
//! servers that know alice (tenant acme) and bob (tenant zeta), the
//! gateway in front of them with each principal's credential, and each
//! caller's lists and events its own.

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_subscriptions::{EventKind, Filter, ListKind};
use mcp_subscriptions_client::catalog::{Catalog, CatalogOptions};
use mcp_subscriptions_client::{DEFAULT_OVERLAP, Item, SubscribeOptions, Subscription};
use serde_json::{Value, json};
use tokio::process::Child;

use crate::support::example::{HttpServer, example, raw_http, start_gateway};

const WAIT: Duration = Duration::from_secs(20);

/// Upstream `a` knows each principal by a token of its own; upstream `b`
/// by the very token the caller gives the gateway (passed through).
const A_TOKENS: [&str; 2] = ["alice:alice-at-a:acme", "bob:bob-at-a:zeta"];
const DOWNSTREAM_TOKENS: [&str; 2] = ["alice:alice-token:acme", "bob:bob-token:zeta"];

fn token_args(tokens: &[&str]) -> Vec<String> {
    tokens
        .iter()
        .flat_map(|token| ["--bearer-token".to_owned(), (*token).to_owned()])
        .collect()
}

/// The example gateway over `a` and `b`, speaking as each caller.
async fn gateway(a: &HttpServer, b: &HttpServer) -> (Child, String) {
    let mut args: Vec<String> = ["--bind", "127.0.0.1:0", "--grace-secs", "1"]
        .map(str::to_owned)
        .into();
    args.extend(["--upstream".to_owned(), format!("a={}", a.mcp_url())]);
    args.extend(["--upstream".to_owned(), format!("b={}", b.mcp_url())]);
    args.extend(token_args(&DOWNSTREAM_TOKENS));
    for token in ["a=alice:alice-at-a", "a=bob:bob-at-a"] {
        args.extend(["--upstream-token".to_owned(), token.to_owned()]);
    }
    start_gateway(&args).await
}

async fn upstream_a(addr: &str) -> HttpServer {
    let args = token_args(&A_TOKENS);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HttpServer::start_on(addr, &args).await
}

async fn upstream_b() -> HttpServer {
    let args = token_args(&DOWNSTREAM_TOKENS);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HttpServer::start(&args).await
}

fn as_caller(token: &str) -> SubscribeOptions {
    SubscribeOptions::default().with_header("authorization", format!("Bearer {token}"))
}

/// `principal`'s listen through the gateway: the tools list, and its own
/// `doc` and `end` at each upstream.
async fn listen(url: &str, principal: &str, token: &str) -> Subscription {
    let mut filter = Filter::new().with_tools_list_changed();
    for upstream in ["a", "b"] {
        for name in ["doc", "end"] {
            filter = filter.with_resource(format!("{upstream}+file:///{principal}/{name}"));
        }
    }
    Subscription::http(url, &filter, as_caller(token))
        .await
        .unwrap_or_else(|err| panic!("{principal}'s listen: {err}"))
}

/// What a stream received, in order, until `end` (a downstream URI)
/// was updated: each event as `tools` or its URI.
async fn until_end(subscription: &mut Subscription, end: &str) -> Vec<String> {
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        loop {
            match subscription.next().await {
                Some(Item::Event(event)) => match event.kind() {
                    EventKind::ResourceUpdated { uri } if uri == end => return,
                    EventKind::ResourceUpdated { uri } => seen.push(uri.clone()),
                    EventKind::ListChanged(ListKind::Tools) => seen.push("tools".into()),
                    other => seen.push(format!("{other:?}")),
                },
                Some(Item::End(end)) => panic!("the stream ended: {end:?}"),
                _ => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{end} within {WAIT:?}; so far {seen:?}"));
    seen
}

/// Publishes `resources/updated` of `uri` at `server`, for `scope`.
async fn update(server: &HttpServer, caller: &str, uri: &str, scope: Value) {
    let mut arguments = json!({"uri": uri});
    arguments
        .as_object_mut()
        .unwrap()
        .extend(scope.as_object().cloned().unwrap_or_default());
    server
        .call_as(caller, "test_trigger_resource_update", arguments)
        .await;
}

fn tools(catalog: &Catalog) -> BTreeSet<String> {
    let snapshot = catalog.snapshot();
    snapshot
        .tools()
        .iter()
        .map(|tool| tool.name.to_string())
        .filter(|name| !name.contains("/test_") && !name.contains("/echo"))
        .collect()
}

async fn gateway_stats(url: &str) -> Value {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let (_, body) = raw_http(&addr, "GET", "/stats", None).await;
    serde_json::from_str(&body).expect("stats are JSON")
}

async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_gets_its_own_lists_and_events_and_a_killed_upstream_resyncs_only_its_streams()
{
    let a = upstream_a("127.0.0.1:0").await;
    let b = upstream_b().await;
    let (_gateway, url) = gateway(&a, &b).await;
    let mut alice = listen(&url, "alice", "alice-token").await;
    let mut bob = listen(&url, "bob", "bob-token").await;
    // Each upstream listen widened as the URIs came; while a change's old
    // and new streams overlap, an update may come twice or two as one.
    tokio::time::sleep(DEFAULT_OVERLAP * 2).await;

    // Events scoped upstream to a principal or a tenant reach exactly that
    // caller's streams; unscoped ones reach each once.
    for (server, caller, upstream) in [(&a, "alice-at-a", "a"), (&b, "alice-token", "b")] {
        update(
            server,
            caller,
            "file:///alice/doc",
            json!({"principal": "alice"}),
        )
        .await;
        update(
            server,
            caller,
            "file:///bob/doc",
            json!({"principal": "bob"}),
        )
        .await;
        update(
            server,
            caller,
            "file:///alice/doc",
            json!({"tenant": "acme"}),
        )
        .await;
        update(server, caller, "file:///bob/doc", json!({"tenant": "zeta"})).await;
        // Bob's URI, for alice: no one (bob's streams are not alice's).
        update(
            server,
            caller,
            "file:///bob/doc",
            json!({"principal": "alice"}),
        )
        .await;
        update(server, caller, "file:///alice/doc", json!({})).await;
        update(server, caller, "file:///bob/doc", json!({})).await;
        update(server, caller, "file:///alice/end", json!({})).await;
        update(server, caller, "file:///bob/end", json!({})).await;
        for (who, subscription) in [("alice", &mut alice), ("bob", &mut bob)] {
            let doc = format!("{upstream}+file:///{who}/doc");
            assert_eq!(
                until_end(subscription, &format!("{upstream}+file:///{who}/end")).await,
                [doc.clone(), doc.clone(), doc],
                "{who} at {upstream}"
            );
        }
    }

    // Each caller's lists are what its own credential sees upstream: a
    // tool of alice's own at `a` is hers alone, and its change hers alone.
    let catalog = |token: &str| {
        let options =
            CatalogOptions::default().with_header("authorization", format!("Bearer {token}"));
        Catalog::http(url.as_str(), options)
    };
    let (alices, bobs) = (
        catalog("alice-token").await.unwrap(),
        catalog("bob-token").await.unwrap(),
    );
    a.call_as(
        "alice-at-a",
        "test_add_tool",
        json!({"name": "alices_tool", "description": "hers", "principal": "alice"}),
    )
    .await;
    // Once her view lists it, its change was published downstream.
    until("alice's view lists her tool", async || {
        tools(&alices).contains("a/alices_tool")
    })
    .await;
    b.call_as(
        "bob-token",
        "test_add_tool",
        json!({"name": "shared_tool", "description": "everyone's"}),
    )
    .await;
    until("both views list the shared tool", async || {
        tools(&alices).contains("b/shared_tool") && tools(&bobs).contains("b/shared_tool")
    })
    .await;
    update(&a, "alice-at-a", "file:///alice/end", json!({})).await;
    update(&a, "bob-at-a", "file:///bob/end", json!({})).await;
    assert_eq!(
        until_end(&mut alice, "a+file:///alice/end").await,
        ["tools", "tools"],
        "alice hears of her tool and of the shared one"
    );
    assert_eq!(
        until_end(&mut bob, "a+file:///bob/end").await,
        ["tools"],
        "bob hears of the shared tool once, and never of alice's"
    );
    assert_eq!(
        tools(&alices),
        BTreeSet::from(["a/alices_tool".into(), "b/shared_tool".into()])
    );
    assert_eq!(tools(&bobs), BTreeSet::from(["b/shared_tool".into()]));

    // Upstream streams: per upstream, one scope per principal, each with at
    // most its catalog's listen and one URI listen.
    let stats = gateway_stats(&url).await;
    for upstream in stats["upstreams"].as_array().unwrap() {
        assert_eq!(upstream["scopes"], 2, "{upstream}");
        let listens =
            upstream["list_streams"].as_u64().unwrap() + upstream["uri_streams"].as_u64().unwrap();
        assert!(listens <= 4, "at most 2 per principal: {upstream}");
    }

    // Upstream `a` killed and back on its port: the streams of its URIs
    // are resynced, each caller's own; `b`'s are not touched. (Alice's
    // tool went with `a`: her view's change may come at any time.)
    let addr = a.addr();
    drop(a);
    let a = upstream_a(&addr).await;
    let uris = |seen: Vec<String>| -> BTreeSet<String> {
        seen.into_iter().filter(|seen| seen != "tools").collect()
    };
    for (who, subscription) in [("alice", &mut alice), ("bob", &mut bob)] {
        let resynced = uris(until_end(subscription, &format!("a+file:///{who}/end")).await);
        assert_eq!(
            resynced,
            BTreeSet::from([format!("a+file:///{who}/doc")]),
            "{who}"
        );
        update(&b, "alice-token", &format!("file:///{who}/end"), json!({})).await;
        assert_eq!(
            uris(until_end(subscription, &format!("b+file:///{who}/end")).await),
            BTreeSet::new(),
            "{who}: nothing of b's was resynced"
        );
    }
    drop(a);
}

/// An `--upstream-token` for an upstream the gateway does not have, or
/// without `--bearer-token` (no caller to speak as), is a mistake said at
/// once, not a token silently unused.
#[tokio::test]
async fn the_example_gateway_refuses_upstream_tokens_it_cannot_use() {
    let run = |args: &'static [&'static str]| async move {
        let output = tokio::process::Command::new(example("gateway"))
            .args(["--upstream", "a=http://127.0.0.1:9/mcp"])
            .args(args)
            .output()
            .await
            .expect("the example gateway runs");
        assert!(!output.status.success(), "{args:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stray = run(&["--bearer-token", "p:t", "--upstream-token", "b=p:u"]).await;
    assert!(stray.contains("--upstream-token names b"), "{stray}");
    let alone = run(&["--upstream-token", "a=p:u"]).await;
    assert!(alone.contains("--bearer-token"), "{alone}");
}
