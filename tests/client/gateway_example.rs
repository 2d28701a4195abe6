//! The example gateway as a process, in front of the example server (over
//! HTTP and over stdio), the TypeScript SDK's server and the Python SDK's:
//! merged, namespaced lists, calls forwarded, and each upstream's changes
//! reaching exactly the downstream listeners that asked for them.

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_subscriptions::{EventKind, Filter, ListKind};
use mcp_subscriptions_client::catalog::{Catalog, CatalogOptions};
use mcp_subscriptions_client::{Item, SubscribeOptions, Subscription};
use serde_json::{Map, Value, json};
use tokio::process::Child;

use crate::support::example::{HttpServer, binary, raw_http, start_gateway};
use crate::support::interop::Server;

const WAIT: Duration = Duration::from_secs(20);

/// The example gateway over `upstreams` (`NAME=TARGET`), and its URL.
async fn gateway(upstreams: &[String]) -> (Child, String) {
    gateway_on("127.0.0.1:0", upstreams).await
}

/// The example gateway on `bind`, sharing its port with other replicas.
async fn gateway_on(bind: &str, upstreams: &[String]) -> (Child, String) {
    let mut args: Vec<String> = ["--bind", bind, "--grace-secs", "1", "--reuse-port"]
        .map(str::to_owned)
        .into();
    for upstream in upstreams {
        args.extend(["--upstream".to_owned(), upstream.clone()]);
    }
    start_gateway(&args).await
}

fn tool_names(catalog: &Catalog) -> BTreeSet<String> {
    let snapshot = catalog.snapshot();
    snapshot
        .tools()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

/// Calls a downstream tool through the gateway, over the catalog's own
/// connection to it.
async fn call(catalog: &Catalog, tool: &str, arguments: Value) -> Value {
    let mut params = Map::new();
    params.insert("name".into(), json!(tool));
    params.insert("arguments".into(), arguments);
    catalog
        .request("tools/call", params)
        .await
        .unwrap_or_else(|err| panic!("{tool}: {err}"))
}

/// Reads `subscription` until `wanted` holds for an event kind, skipping
/// the others (each upstream publishes on its own schedule).
async fn until_event(
    subscription: &mut Subscription,
    what: &str,
    wanted: impl Fn(&EventKind) -> bool,
) {
    tokio::time::timeout(WAIT, async {
        loop {
            match subscription.next().await {
                Some(Item::Event(event)) if wanted(event.kind()) => return,
                Some(Item::End(end)) => panic!("{what}: the stream ended: {end:?}"),
                _ => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: nothing within {WAIT:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_gateway_fronts_the_example_typescript_and_python_servers() {
    let ours = HttpServer::start(&[]).await;
    let (typescript, python) = tokio::join!(Server::TypeScript.http(), Server::Python.http());
    let stdio = format!("st=stdio:{} --stdio", binary().display());
    let upstreams = [
        format!("ex={}", ours.mcp_url()),
        format!("ts={}", typescript.url),
        format!("py={}", python.url),
        stdio,
    ];
    let (gateway_process, url) = gateway(&upstreams).await;

    // A host's catalog of the gateway: every upstream's tools, namespaced.
    let catalog = Catalog::http(url.as_str(), CatalogOptions::default())
        .await
        .unwrap();
    let names = tool_names(&catalog);
    for upstream in ["ex", "ts", "py", "st"] {
        assert!(
            names.contains(&format!("{upstream}/test_add_tool")),
            "{upstream}: {names:?}"
        );
    }

    // A listener of two of the URIs the SDK servers publish every 50 ms,
    // one of the example server's, and the tools list.
    let filter = Filter::new()
        .with_tools_list_changed()
        .with_resource("ts+file:///a")
        .with_resource("py+file:///b")
        .with_resource("ex+file:///c");
    let mut listener = Subscription::http(url.as_str(), &filter, SubscribeOptions::default())
        .await
        .unwrap();
    // Exactly what it asked for arrives, named downstream.
    let mut seen = BTreeSet::new();
    tokio::time::timeout(WAIT, async {
        while seen.len() < 2 {
            if let Some(Item::Event(event)) = listener.next().await
                && let EventKind::ResourceUpdated { uri } = event.kind()
            {
                assert!(
                    uri == "ts+file:///a" || uri == "py+file:///b",
                    "{uri} was not asked for"
                );
                seen.insert(uri.clone());
            }
        }
    })
    .await
    .expect("both SDK servers' updates arrive");
    call(
        &catalog,
        "ex/test_trigger_resource_update",
        json!({"uri": "file:///c"}),
    )
    .await;
    until_event(&mut listener, "ex's update", |kind| {
        *kind
            == EventKind::ResourceUpdated {
                uri: "ex+file:///c".into(),
            }
    })
    .await;

    // A tool added on each upstream, through the gateway: the downstream
    // list changes, and the catalog converges.
    for upstream in ["ts", "py", "st", "ex"] {
        let added = format!("{upstream}/via_gateway");
        call(
            &catalog,
            &format!("{upstream}/test_add_tool"),
            json!({"name": "via_gateway", "description": "added through the gateway"}),
        )
        .await;
        until_event(&mut listener, &added, |kind| {
            *kind == EventKind::ListChanged(ListKind::Tools)
        })
        .await;
        tokio::time::timeout(WAIT, async {
            let mut generation = catalog.snapshot().generation();
            while !tool_names(&catalog).contains(&added) {
                generation = catalog.changed(generation).await.generation();
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{added} never listed: {:?}", tool_names(&catalog)));
    }
    let answer = call(&catalog, "py/via_gateway", json!({})).await;
    assert_eq!(
        answer["content"][0]["text"], "via_gateway called",
        "{answer}"
    );

    // Its `/stats`: per upstream, the catalog's listen and one URI listen
    // where a URI is watched.
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let (_, body) = raw_http(&addr, "GET", "/stats", None).await;
    let stats: Value = serde_json::from_str(&body).unwrap();
    let upstreams = stats["upstreams"].as_array().unwrap();
    let listens = |name: &str| {
        let upstream = upstreams.iter().find(|u| u["name"] == name).unwrap();
        (
            upstream["uri_streams"].as_u64().unwrap(),
            upstream["uris"].clone(),
        )
    };
    assert_eq!(listens("ts"), (1, json!(["file:///a"])));
    assert_eq!(listens("py"), (1, json!(["file:///b"])));
    assert_eq!(listens("ex"), (1, json!(["file:///c"])));
    assert_eq!(listens("st"), (0, json!([])));
    // The example server's own count: the catalog's listen and the URI
    // listen, whatever listens downstream.
    ours.wait_for_active(2, WAIT).await;
    drop(gateway_process);
}

/// Two gateway replicas on one port, each listening upstream for its own
/// downstream demand: a replica killed, its listener re-listens to the
/// other through the shared port and is resynced, and the survivor's own
/// upstream listen now covers the URI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_replica_killed_its_listeners_relisten_to_another_and_resync() {
    let ours = HttpServer::start(&[]).await;
    let upstreams = [format!("ex={}", ours.mcp_url())];
    let (mut first, url) = gateway(&upstreams).await;
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .to_owned();
    // Opened while the first replica alone holds the port.
    let options = SubscribeOptions::default().with_relisten(
        mcp_subscriptions_client::Relisten::new(Duration::from_millis(100), Duration::from_secs(1)),
    );
    let filter = Filter::new().with_resource("ex+file:///r");
    let mut listener = Subscription::http(url.as_str(), &filter, options)
        .await
        .unwrap();
    let (_second, _) = gateway_on(&format!("127.0.0.1:{port}"), &upstreams).await;
    // Each replica's catalog listens upstream; the first also for the URI.
    ours.wait_for_active(3, WAIT).await;

    first.kill().await.unwrap();
    tokio::time::timeout(WAIT, async {
        loop {
            match listener.next().await {
                Some(Item::Resynced(granted)) => {
                    assert_eq!(
                        granted.resource_subscriptions().collect::<Vec<_>>(),
                        ["ex+file:///r"]
                    );
                    return;
                }
                Some(Item::End(end)) => panic!("the stream ended: {end:?}"),
                _ => {}
            }
        }
    })
    .await
    .expect("the listener re-listens to the surviving replica");
    // The survivor widened its own upstream listen before acknowledging,
    // so the next change reaches the listener.
    let trigger = json!({"uri": "file:///r"});
    ours.call_as("", "test_trigger_resource_update", trigger)
        .await;
    until_event(&mut listener, "the change after the kill", |kind| {
        *kind
            == EventKind::ResourceUpdated {
                uri: "ex+file:///r".into(),
            }
    })
    .await;
}
