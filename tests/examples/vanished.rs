//! Clients that vanish from the network (no FIN, no RST, as when a laptop
//! lid shuts): their streams are reaped within a minute by default, and
//! their principal is not locked out meanwhile. Each test runs in a
//! network namespace of its own, where the vanished client's packets are
//! dropped both ways.

#![cfg(target_os = "linux")]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::support::example::HttpServer;
use crate::support::http::{Answer, listen, post_from};
use crate::support::netns::{run_inside, vanish};

/// Where the client that vanishes listens from.
const GONE: &str = "127.0.0.2";
/// Where its principal comes back from.
const BACK: &str = "127.0.0.3";
/// Where the healthy client listens from.
const HEALTHY: &str = "127.0.0.1";
const CAP: usize = 20;
/// The bound the issue sets on reaping, with the server's defaults.
const WITHIN: Duration = Duration::from_secs(60);

#[test]
fn a_vanished_clients_streams_are_reaped_and_its_principal_listens_again_within_a_minute() {
    run_inside(
        "vanished::a_vanished_clients_streams_are_reaped_and_its_principal_listens_again_within_a_minute",
        || runtime().block_on(scenario("refuse")),
    );
}

#[test]
fn under_replace_oldest_the_principal_of_vanished_streams_listens_again_at_once() {
    run_inside(
        "vanished::under_replace_oldest_the_principal_of_vanished_streams_listens_again_at_once",
        || runtime().block_on(scenario("replace-oldest")),
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Twenty streams of alice (her cap) vanish with their client; bob's
/// healthy stream hears every change meanwhile; alice comes back from
/// another address; every vanished stream is reaped, counted apart.
async fn scenario(cap_policy: &str) {
    let cap = CAP.to_string();
    let server = HttpServer::start(&[
        "--bearer-token",
        "alice:alice-token",
        "--bearer-token",
        "bob:bob-token",
        "--max-streams-per-principal",
        &cap,
        "--cap-policy",
        cap_policy,
    ])
    .await;
    let mut bob = acknowledged(open(&server, HEALTHY, "bob-token", 0).await).await;
    let mut vanishing = Vec::new();
    for id in 1..=CAP {
        vanishing.push(acknowledged(open(&server, GONE, "alice-token", id).await).await);
    }
    server
        .wait_for_active(CAP as u64 + 1, Duration::from_secs(5))
        .await;

    vanish(GONE);
    let vanished = Instant::now();
    let mut attempts = 0;
    let _back = loop {
        attempts += 1;
        let again = open(&server, BACK, "alice-token", 100 + attempts).await;
        if again.is_stream() {
            break acknowledged(again).await;
        }
        let refusal = again.json().await;
        assert_eq!(refusal["error"]["message"], "Subscription limit reached");
        assert!(
            vanished.elapsed() < WITHIN,
            "alice was locked out by her vanished streams for a minute"
        );
        a_change_reaches(&server, &mut bob).await;
    };
    let came_back = vanished.elapsed();
    if cap_policy == "replace-oldest" {
        assert_eq!(attempts, 1, "admitted at once in place of her oldest");
    }

    let closed = loop {
        let closed = server.stats().await["listeners_closed"].clone();
        if closed["unacknowledged"].as_u64().unwrap() + closed["replaced"].as_u64().unwrap()
            == CAP as u64
        {
            break closed;
        }
        assert!(
            vanished.elapsed() < WITHIN,
            "vanished streams still held after a minute: {closed}"
        );
        a_change_reaches(&server, &mut bob).await;
    };
    let reaped = vanished.elapsed();
    println!("alice back after {came_back:?}, every stream reaped after {reaped:?}");
    let replaced = u64::from(cap_policy == "replace-oldest");
    assert_eq!(closed["replaced"], replaced);
    assert_eq!(closed["unacknowledged"], CAP as u64 - replaced);
    let stats = server.stats().await;
    assert_eq!(stats["listeners_active"], 2, "bob's and alice's new one");
    let events = &stats["events"];
    let number = |name: &str| events[name].as_u64().unwrap();
    assert_eq!(
        number("matched"),
        number("delivered")
            + number("dropped")
            + number("coalesced")
            + number("queued")
            + number("discarded"),
        "{events}"
    );
    a_change_reaches(&server, &mut bob).await;
    drop(vanishing);
}

async fn open(server: &HttpServer, from: &str, token: &str, id: usize) -> Answer {
    let authorization = format!("Bearer {token}");
    let body: Value = listen(json!(id), json!({"toolsListChanged": true}), &[]);
    let from = Some(from.parse().unwrap());
    post_from(
        from,
        &server.base,
        &body,
        &[("authorization", &authorization)],
    )
    .await
}

async fn acknowledged(mut stream: Answer) -> Answer {
    let ack = stream.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    stream
}

/// Publishes a tools-list change, sees it reach bob, and waits a second.
async fn a_change_reaches(server: &HttpServer, bob: &mut Answer) {
    server
        .call_as("bob-token", "test_trigger_tool_change", json!({}))
        .await;
    let change = bob.next().await.expect("bob hears every change");
    assert_eq!(change["method"], "notifications/tools/list_changed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
