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
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// Reads `socket` into `seen` until what it sent contains `wanted`.
async fn read_until(socket: &mut tokio::net::TcpStream, seen: &mut String, wanted: &str) {
    read_while(socket, seen, wanted, |seen| !seen.contains(wanted)).await;
}

/// Reads `socket` into `seen` while `more` says so; `what` names what is
/// awaited, for the failure.
async fn read_while(
    socket: &mut tokio::net::TcpStream,
    seen: &mut String,
    what: &str,
    more: impl Fn(&str) -> bool,
) {
    let mut chunk = [0; 4096];
    while more(seen) {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("{what:?} comes; so far {seen:?}"))
            .unwrap();
        assert!(n > 0, "closed before {what:?}: {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
}

/// A connection whose first request is a listen is answered on the
/// socket: chunked, `connection: close`, events as they are published,
/// and the listener closed as soon as the client goes.
#[tokio::test]
async fn a_listen_opening_its_connection_is_answered_on_the_socket_until_the_client_goes() {
    let hub = Hub::new();
    let url =
        crate::support::http::serve(crate::support::http::app(ListenService::new(hub.clone())))
            .await;
    let addr = url.trim_start_matches("http://");
    let body = listen_request(json!(7), json!({"toolsListChanged": true})).to_string();
    let mut socket = send_raw(addr, &http_request("POST", "/mcp", addr, "", &body)).await;
    let mut seen = String::new();
    read_until(&mut socket, &mut seen, "subscriptions/acknowledged").await;
    let head = seen.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
    for line in [
        "content-type: text/event-stream",
        "transfer-encoding: chunked",
        "connection: close",
        "date: ",
    ] {
        assert!(head.contains(line), "{line:?} in {head}");
    }
    hub.notify_tools_list_changed();
    read_until(&mut socket, &mut seen, "notifications/tools/list_changed").await;
    assert_eq!(hub.stats().listeners_active, 1);

    drop(socket);
    tokio::time::timeout(Duration::from_secs(5), async {
        while hub.stats().listeners_active > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the client leaving closes its listener");
}

/// A connection opened by any other request is hyper's, kept alive: the
/// request it opened with is answered whole, and a listen stream later on
/// the same connection is served there.
#[tokio::test]
async fn a_connection_opened_by_another_request_stays_open_for_a_listen_after_it() {
    let hub = Hub::new();
    let url =
        crate::support::http::serve(crate::support::http::app(ListenService::new(hub.clone())))
            .await;
    let addr = url.trim_start_matches("http://");
    // The router behind answers anything but a listen 404.
    let other = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let mut socket = send_raw(addr, &http_request("POST", "/mcp", addr, "", &other)).await;
    let mut seen = String::new();
    read_until(&mut socket, &mut seen, "\r\n\r\n").await;
    let head = seen.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 404"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .expect("a whole answer")
        .trim()
        .parse()
        .unwrap();
    let head_len = seen.find("\r\n\r\n").unwrap() + 4;
    read_while(&mut socket, &mut seen, "the whole answer", |seen| {
        seen.len() < head_len + length
    })
    .await;

    let listen = listen_request(json!(2), json!({"toolsListChanged": true})).to_string();
    socket
        .write_all(http_request("POST", "/mcp", addr, "", &listen).as_bytes())
        .await
        .unwrap();
    let mut stream = String::new();
    read_until(&mut socket, &mut stream, "subscriptions/acknowledged").await;
    assert!(!stream.to_ascii_lowercase().contains("connection: close"));
    hub.notify_tools_list_changed();
    read_until(&mut socket, &mut stream, "notifications/tools/list_changed").await;
}
