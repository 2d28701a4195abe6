//! Two example server processes joined by `--relay` through a real broker
//! (`redis-server` or `nats-server` on a free loopback port): a change
//! triggered on server B reaches a listen stream held by server A, over
//! HTTP, as the README's "Several replicas" walk-through does by hand; and
//! replicas stopped with SIGTERM, started again or added cost the others'
//! streams nothing.

#![cfg(feature = "redis")]

use std::time::Duration;

use crate::support::example::{HttpServer, call};
use crate::support::http::{listen, post};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// Two example servers relayed through `broker`, each relay connected and
/// hearing the other (which costs neither a resync).
async fn replicas(broker: &crate::broker::Broker) -> (HttpServer, HttpServer) {
    let url = broker.url();
    let a = HttpServer::start(&["--relay", &url]).await;
    let b = HttpServer::start(&["--relay", &url]).await;
    hearing(&[&a, &b], 1).await;
    (a, b)
}

/// Waits until each of `servers` is connected and hears `others` other
/// replicas.
async fn hearing(servers: &[&HttpServer], others: u64) {
    for server in servers {
        relay_until(server, "connected, hearing the others", |relay| {
            relay["connected"] == true && relay["replicas"] == others
        })
        .await;
    }
}

/// Waits until the relay's part of `server`'s `/stats` satisfies `holds`,
/// or panics after ten seconds naming `what`.
async fn relay_until(server: &HttpServer, what: &str, holds: impl Fn(&Value) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stats = server.stats().await;
        if holds(&stats["relay"]) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "relay never {what}: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Listens on A for list changes, triggers one on B, and sees it arrive.
async fn a_list_change_crosses(broker: crate::broker::Broker) {
    let (a, b) = replicas(&broker).await;
    let body = listen(json!("tools"), json!({"toolsListChanged": true}), &[]);
    let mut stream = post(&a.base, &body, &[]).await;
    assert!(stream.is_stream());
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);

    let client = b.client().await;
    call(&client, "test_trigger_tool_change", json!({})).await;
    let notification = stream.next().await.expect("the change arrives on A");
    assert_eq!(notification["method"], "notifications/tools/list_changed");
    assert!(
        stream.is_quiet(Duration::from_millis(300)).await,
        "one change, one notification"
    );
    relay_until(&b, "published", |relay| relay["published"] == 1).await;
    relay_until(&a, "received", |relay| relay["received"] == 1).await;
}

#[tokio::test]
async fn smoke_a_list_change_on_b_reaches_a_listener_on_a_over_redis() {
    a_list_change_crosses(crate::broker::Broker::redis()).await;
}

#[cfg(feature = "nats")]
#[tokio::test]
async fn a_list_change_on_b_reaches_a_listener_on_a_over_nats() {
    a_list_change_crosses(crate::broker::Broker::nats()).await;
}

#[tokio::test]
async fn graceful_restarts_and_a_new_replica_cost_the_other_replicas_streams_nothing() {
    let broker = crate::broker::Broker::redis();
    let url = broker.url();
    let relayed = ["--relay", url.as_str()];
    let (a, b) = replicas(&broker).await;
    let mut c = HttpServer::start(&relayed).await;
    hearing(&[&a, &b, &c], 2).await;
    let body = listen(
        json!("all"),
        json!({"toolsListChanged": true, "promptsListChanged": true,
               "resourcesListChanged": true, "resourceSubscriptions": ["file:///watched"]}),
        &[],
    );
    let mut streams = Vec::new();
    for server in [&a, &b] {
        let mut stream = post(&server.base, &body, &[]).await;
        stream.next().await.expect("acknowledged");
        relay_until(server, "subscribed the key", |relay| {
            relay["subscribed_keys"] == 1
        })
        .await;
        // Acknowledged before the key's channel was subscribed: one update.
        let catch_up = stream.next().await.unwrap();
        assert_eq!(catch_up["params"]["uri"], "file:///watched");
        streams.push(stream);
    }

    // The third replica stopped with SIGTERM and started again, twice, as
    // a rolling deploy does; then a fourth joins.
    for _ in 0..2 {
        c.terminate();
        assert!(c.child.wait().await.unwrap().success());
        hearing(&[&a, &b], 1).await;
        c = HttpServer::start(&relayed).await;
        hearing(&[&a, &b, &c], 2).await;
    }
    let d = HttpServer::start(&relayed).await;
    hearing(&[&a, &b, &c, &d], 3).await;

    // Past three heartbeats of silence (1 s each) and a resync's jitter:
    // not one notification, not one resync.
    for stream in &mut streams {
        if let Ok(next) = tokio::time::timeout(Duration::from_millis(2_000), stream.next()).await {
            panic!(
                "expected nothing, got {next:?}; {}",
                a.stats().await["relay"]
            );
        }
    }
    for server in [&a, &b] {
        let relay = server.stats().await["relay"].clone();
        assert_eq!(relay["resyncs"], 0, "{relay}");
        assert_eq!(relay["replicas_left"], 2, "{relay}");
    }

    // What the newcomer publishes still reaches both.
    call(&d.client().await, "test_trigger_tool_change", json!({})).await;
    for stream in &mut streams {
        let notification = stream.next().await.unwrap();
        assert_eq!(notification["method"], "notifications/tools/list_changed");
    }
}

#[tokio::test]
async fn a_principal_revoked_on_a_is_refused_on_both_replicas() {
    let broker = crate::broker::Broker::redis();
    let url = broker.url();
    let args: Vec<&str> = crate::example_audiences::TOKENS
        .into_iter()
        .chain(["--relay", url.as_str()])
        .collect();
    let (a, b) = (
        HttpServer::start(&args).await,
        HttpServer::start(&args).await,
    );
    hearing(&[&a, &b], 1).await;
    let told = a
        .call_as("b-secret", "test_revoke", json!({"principal": "alice"}))
        .await;
    assert_eq!(told, "revoked 0 streams here");
    crate::example_audiences::assert_refused_as_revoked(&a, "a-secret").await;
    // B learns of it through the relay, and refuses her too.
    relay_until(&b, "the revocation received", |relay| {
        relay["revocations_received"] == 1
    })
    .await;
    crate::example_audiences::assert_refused_as_revoked(&b, "a-secret").await;
    let body = listen(json!("tools"), json!({"toolsListChanged": true}), &[]);
    let answer = post(&b.base, &body, &[("authorization", "Bearer b-secret")]).await;
    assert!(answer.is_stream(), "bob is not revoked");
}

#[tokio::test]
async fn a_resource_update_on_b_reaches_only_the_replica_that_watches_it() {
    let broker = crate::broker::Broker::redis();
    let (a, b) = replicas(&broker).await;
    let body = listen(
        json!("r"),
        json!({"resourceSubscriptions": ["file:///watched"]}),
        &[],
    );
    let mut stream = post(&a.base, &body, &[]).await;
    stream.next().await.unwrap();
    // A subscribes the URI's channel once its listener needs it; B, whose
    // listeners watch nothing, does not.
    relay_until(&a, "subscribed the key", |relay| {
        relay["subscribed_keys"] == 1
    })
    .await;
    assert_eq!(b.stats().await["relay"]["subscribed_keys"], 0);
    // Each says which process it is, and its origin on the bus.
    let (ours, theirs) = (
        a.stats().await["replica"].clone(),
        b.stats().await["replica"].clone(),
    );
    assert_eq!(ours["pid"], a.child.id().unwrap());
    assert!(
        ours["origin"].is_string() && ours["origin"] != theirs["origin"],
        "{ours} {theirs}"
    );
    // The key was subscribed after the stream's acknowledgement: A tells
    // the stream it may have changed meanwhile.
    let catch_up = stream.next().await.unwrap();
    assert_eq!(catch_up["params"]["uri"], "file:///watched");
    assert_eq!(a.stats().await["relay"]["keys_caught_up"], 1);

    let client = b.client().await;
    for uri in ["file:///elsewhere", "file:///watched"] {
        call(&client, "test_trigger_resource_update", json!({"uri": uri})).await;
    }
    let notification = stream.next().await.unwrap();
    assert_eq!(notification["method"], "notifications/resources/updated");
    assert_eq!(notification["params"]["uri"], "file:///watched");
    assert!(stream.is_quiet(Duration::from_millis(300)).await);
    // Nobody subscribed file:///elsewhere's channel: A received one event.
    assert_eq!(a.stats().await["relay"]["received"], 1);
}

#[tokio::test]
async fn a_task_started_on_b_is_followed_to_its_end_on_a() {
    let broker = crate::broker::Broker::redis();
    let (a, b) = replicas(&broker).await;
    let client = b.client().await;
    let arguments = json!({"steps": 20, "interval_ms": 50});
    let started = client
        .call_tool(
            CallToolRequestParams::new("test_start_task")
                .with_arguments(arguments.as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let id = started.content[0].as_text().unwrap().text.clone();
    assert!(
        id.starts_with("task-") && id.len() > "task-1".len(),
        "a relayed replica's task ids name it: {id}"
    );

    let tasks = mcp_subscriptions::tasks::EXTENSION_ID;
    let body = listen(json!("t"), json!({"taskIds": [id]}), &[tasks]);
    let mut stream = post(&a.base, &body, &[]).await;
    stream.next().await.unwrap();
    let mut last = Value::Null;
    while last["params"]["status"] != "completed" {
        last = stream
            .next()
            .await
            .expect("statuses until the terminal one");
        assert_eq!(last["method"], "notifications/tasks", "{last}");
        assert_eq!(last["params"]["taskId"], id.as_str());
    }
}

/// Two replicas on one port (`--reuse-port`), joined by the relay: the
/// kernel spreads the listen streams over both, a change triggered on
/// whichever answers reaches every stream, and killing one replica ends
/// only the streams it held.
#[tokio::test]
async fn replicas_sharing_one_port_split_its_streams_and_each_change_reaches_all() {
    let broker = crate::broker::Broker::redis();
    let url = broker.url();
    let a = HttpServer::start(&["--reuse-port", "--relay", &url]).await;
    let b = HttpServer::start_on(&a.addr(), &["--reuse-port", "--relay", &url]).await;
    assert_eq!(a.base, b.base, "one port");
    // `/stats` reaches either replica: both are ready once a run of
    // answers all are (each is one chance in two of asking the other).
    let mut ready_in_a_row = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while ready_in_a_row < 16 {
        let relay = a.stats().await["relay"].clone();
        let ready = relay["connected"] == true && relay["replicas"] == 1;
        ready_in_a_row = if ready { ready_in_a_row + 1 } else { 0 };
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready: {relay}"
        );
    }

    let body = listen(json!("tools"), json!({"toolsListChanged": true}), &[]);
    let mut streams = Vec::new();
    for _ in 0..24 {
        let mut stream = post(&a.base, &body, &[]).await;
        assert!(stream.is_stream());
        stream.next().await.expect("acknowledged");
        streams.push(stream);
    }
    let client = a.client().await;
    call(&client, "test_trigger_tool_change", json!({})).await;
    drop(client);
    for stream in &mut streams {
        let notification = stream
            .next()
            .await
            .expect("the change reaches every stream");
        assert_eq!(notification["method"], "notifications/tools/list_changed");
    }

    // Killing the replica that started first ends the streams it held, and
    // only those: the port's connections were spread over both.
    let mut a = a;
    a.child.kill().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut ended = 0;
    for stream in &mut streams {
        if stream.ends_within(Duration::from_millis(200)).await {
            ended += 1;
        }
    }
    assert!(
        0 < ended && ended < streams.len(),
        "{ended} of {} streams were on the killed replica",
        streams.len()
    );
}
