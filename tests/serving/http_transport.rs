//! The Streamable HTTP transport in process: its `Streams` handle counts
//! the open listen streams and resolves once each has written its end; and
//! what `http::serve` reads.

#![cfg(all(
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

use std::time::Duration;

use crate::support::example::{http_request, listen_request, send_raw};
use mcp_subscriptions::http::HttpTransport;
use mcp_subscriptions::{Hub, ListenService};
use serde_json::json;
use tokio::io::AsyncReadExt;

#[tokio::test]
async fn streams_counts_open_listen_streams_and_drains_them_at_shutdown() {
    let hub = Hub::new();
    // Every other message would go to this service; an empty router
    // answers 404, which this test never asks for.
    let http = HttpTransport::new(ListenService::new(hub.clone()), axum::Router::new())
        .with_keepalive(Duration::from_secs(60));
    let streams = http.streams();
    let app = axum::Router::new().route("/mcp", http.into_method_router());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap().to_string();
    tokio::spawn(mcp_subscriptions::http::serve(
        tcp,
        app,
        std::future::pending(),
    ));

    let body = listen_request(json!(1), json!({"toolsListChanged": true})).to_string();
    let mut socket = send_raw(&addr, &http_request("POST", "/mcp", &addr, "", &body)).await;
    let mut seen = String::new();
    let mut chunk = [0; 4096];
    while !seen.contains("subscriptions/acknowledged") {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut chunk))
            .await
            .expect("the acknowledgement comes")
            .unwrap();
        assert!(n > 0, "the stream ended early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    assert_eq!(streams.len(), 1, "one listen stream is being served");

    hub.complete();
    tokio::time::timeout(Duration::from_secs(5), streams.finished())
        .await
        .expect("the stream finishes once the hub completes");
    assert!(streams.is_empty());
    while !seen.contains(r#""resultType":"complete""#) {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut chunk))
            .await
            .expect("the end comes")
            .unwrap();
        assert!(n > 0, "closed before the complete result: {seen}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
}

/// `http::serve` reads request heads of up to 8 KiB: a longer one is
/// answered 431 and its connection closed; the server goes on.
#[tokio::test]
async fn serve_answers_a_head_over_8_kib_with_431_and_goes_on() {
    let hub = Hub::new();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap().to_string();
    let app = crate::support::http::app(ListenService::new(hub.clone()));
    tokio::spawn(mcp_subscriptions::http::serve(
        tcp,
        app,
        std::future::pending(),
    ));
    let body = listen_request(json!(1), json!({"toolsListChanged": true})).to_string();
    let status =
        |headers: String| status_line(&addr, http_request("POST", "/mcp", &addr, &headers, &body));
    let token = "t".repeat(9 * 1024);
    let refused = status(format!("Authorization: Bearer {token}\r\n")).await;
    assert_eq!(refused, "HTTP/1.1 431");
    let token = "t".repeat(6 * 1024);
    let served = status(format!("Authorization: Bearer {token}\r\n")).await;
    assert_eq!(served, "HTTP/1.1 200");
}

/// The status line's first 12 bytes of the answer to `request`.
async fn status_line(addr: &str, request: String) -> String {
    let mut socket = send_raw(addr, &request).await;
    let mut head = vec![0; 12];
    tokio::time::timeout(Duration::from_secs(5), socket.read_exact(&mut head))
        .await
        .expect("an answer comes")
        .unwrap();
    String::from_utf8(head).unwrap()
}
