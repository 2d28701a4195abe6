//! Admission limits: connections and listens opened faster than a limit,
//! from one address or as one principal, are answered 429 with
//! `Retry-After` and a JSON-RPC error naming the limit; everyone else,
//! and the refused listen's connection, go on; with the limits off (the
//! default) nothing is refused.

#![cfg(all(feature = "http", feature = "tasks"))]

use mcp_subscriptions::http::{AdmissionLimits, ConnectionStats, Rate, Server};
use mcp_subscriptions::{Hub, ListenService};
use serde_json::{Value, json};

use crate::support::http::{Answer, app, listen, post, post_on, with_user_header};

/// A limit that lets `burst` through, then nothing more within a test.
fn only(burst: u32) -> Rate {
    Rate::new(0.001, burst)
}

/// Serves a hub's listens, with `x-user` as the principal, under `server`.
async fn serve(server: Server) -> (String, Hub) {
    let hub = Hub::new();
    let router = with_user_header(app(ListenService::new(hub.clone())));
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", tcp.local_addr().unwrap());
    tokio::spawn(server.serve(tcp, router, std::future::pending()));
    (url, hub)
}

fn tools(id: u64) -> Value {
    listen(json!(id), json!({"toolsListChanged": true}), &[])
}

async fn acknowledged(mut answer: Answer) -> Answer {
    let ack = answer.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    answer
}

/// A 429 that names `limit`, with its `Retry-After`; the request's id.
async fn too_many(answer: Answer, limit: &str) -> Value {
    assert_eq!(answer.status, 429);
    let retry_after: u64 = answer.header("retry-after").unwrap().parse().unwrap();
    let body = answer.json().await;
    assert_eq!(body["error"]["code"], -32006);
    assert_eq!(body["error"]["data"]["reason"], "rate_limited");
    assert_eq!(body["error"]["data"]["limit"], limit);
    assert_eq!(body["error"]["data"]["retryAfterSecs"], retry_after);
    assert!(retry_after >= 1);
    body["id"].clone()
}

fn limited(stats: ConnectionStats) -> [u64; 4] {
    let limited = stats.rate_limited;
    [
        limited.connections_per_address,
        limited.connections_per_principal,
        limited.listens_per_address,
        limited.listens_per_principal,
    ]
}

#[tokio::test]
async fn listens_over_a_principals_or_an_addresss_limit_get_429_and_others_go_on() {
    let limits = AdmissionLimits::default()
        .with_listens_per_principal(only(2))
        .with_listens_per_address(only(4));
    let server = Server::new().with_admission_limits(limits);
    let (url, hub) = serve(server.clone()).await;
    let alice = [("x-user", "alice")];
    let mut held = vec![
        acknowledged(post(&url, &tools(1), &alice).await).await,
        acknowledged(post(&url, &tools(2), &alice).await).await,
    ];
    let id = too_many(post(&url, &tools(3), &alice).await, "listens_per_principal").await;
    assert_eq!(id, 3, "answered to the refused request");
    held.push(acknowledged(post(&url, &tools(4), &[("x-user", "bob")]).await).await);
    // The address has had its four: a listen counts against its address
    // first, whatever its principal's limit then says.
    too_many(
        post(&url, &tools(5), &[("x-user", "carol")]).await,
        "listens_per_address",
    )
    .await;
    assert_eq!(limited(server.connections()), [0, 0, 1, 1]);

    // The streams admitted go on.
    hub.notify_tools_list_changed();
    for stream in &mut held {
        assert_eq!(
            stream.next().await.unwrap()["method"],
            "notifications/tools/list_changed"
        );
    }
}

#[tokio::test]
async fn a_refused_listen_leaves_its_connection_to_its_other_requests() {
    let limits = AdmissionLimits::default().with_listens_per_address(only(1));
    let server = Server::new().with_admission_limits(limits);
    let (url, _hub) = serve(server.clone()).await;
    let client = reqwest::Client::new();
    // Not a listen: answered by the service behind (which has no methods).
    let other = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    let first = post_on(&client, &url, &other, &[]).await;
    assert_ne!(first.status, 429);
    let _ = first.json().await;
    let _held = acknowledged(post(&url, &tools(1), &[]).await).await;
    too_many(
        post_on(&client, &url, &tools(2), &[]).await,
        "listens_per_address",
    )
    .await;
    let after = post_on(&client, &url, &other, &[]).await;
    assert_ne!(after.status, 429);
    let _ = after.json().await;
    let stats = server.connections();
    assert_eq!(
        stats.accepted, 2,
        "the pooled connection served all three of its requests: {stats:?}"
    );
}

#[tokio::test]
async fn connections_over_an_addresss_or_a_principals_limit_get_429_and_are_closed() {
    let limits = AdmissionLimits::default()
        .with_connections_per_address(only(3))
        .with_connections_per_principal(only(1));
    let server = Server::new().with_admission_limits(limits);
    let (url, _hub) = serve(server.clone()).await;
    let _alice = acknowledged(post(&url, &tools(1), &[("x-user", "alice")]).await).await;
    too_many(
        post(&url, &tools(2), &[("x-user", "alice")]).await,
        "connections_per_principal",
    )
    .await;
    let _bob = acknowledged(post(&url, &tools(3), &[("x-user", "bob")]).await).await;
    let refused = post(&url, &tools(4), &[("x-user", "carol")]).await;
    assert_eq!(refused.header("connection").as_deref(), Some("close"));
    let id = too_many(refused, "connections_per_address").await;
    assert_eq!(id, Value::Null, "refused before its request was read");
    assert_eq!(limited(server.connections()), [1, 1, 0, 0]);
}

#[tokio::test]
async fn with_the_limits_off_nothing_is_refused() {
    let server = Server::new();
    let (url, hub) = serve(server.clone()).await;
    let mut held = Vec::new();
    for id in 0..50 {
        held.push(acknowledged(post(&url, &tools(id), &[("x-user", "alice")]).await).await);
    }
    assert_eq!(hub.stats().listeners_active, 50);
    assert_eq!(limited(server.connections()), [0; 4]);
}
