//! Graceful shutdown with a deadline: every stream gets its terminal
//! result, and those a client never reads are cut, counted, at the
//! deadline, over stdio and over HTTP.

#![cfg(all(feature = "stdio", feature = "http", feature = "tasks"))]

use std::time::Duration;

use crate::support::http::{listen, post, serve};
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{Event, Hub, ListenService, Streams, Teardown};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A stdio transport for `hub` whose output pipe is `width` bytes wide.
fn stdio(hub: &Hub, width: usize) -> (Streams, crate::support::stdio::Pipe) {
    let service = ListenService::new(hub.clone());
    crate::support::stdio::serve(width, |input, output| {
        StdioTransport::new(service, input, output)
    })
}

fn big() -> Event {
    let params = json!({"uri": "file:///a", "_meta": {"blob": "x".repeat(64 * 1024)}});
    Event::extension(
        "notifications/resources/updated",
        params.as_object().unwrap().clone(),
        None,
    )
}

#[tokio::test]
async fn smoke_a_reading_client_gets_its_complete_result_before_the_deadline() {
    let hub = Hub::new();
    let (streams, mut pipe) = stdio(&hub, 64 * 1024);
    pipe.send(&listen(json!(1), json!({"toolsListChanged": true}), &[]))
        .await;
    let ack = pipe.read().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    hub.complete();
    let drained = streams.finish_within(Duration::from_secs(5)).await;
    assert_eq!((drained.open, drained.cut), (1, 0));
    assert_eq!(pipe.read().await["result"]["resultType"], "complete");
}

#[tokio::test]
async fn in_the_cancelled_dialect_a_shutdown_cancels_each_listen_request_over_stdio_and_http() {
    let hub = Hub::new();
    let service = ListenService::new(hub.clone()).with_teardown(Teardown::Cancelled);
    let url = serve(crate::support::http::app(service.clone())).await;
    let (streams, mut pipe) = crate::support::stdio::serve(64 * 1024, |input, output| {
        StdioTransport::new(service, input, output)
    });
    let tools = |id| listen(id, json!({"toolsListChanged": true}), &[]);
    pipe.send(&tools(json!("stdio-1"))).await;
    let mut http = post(&url, &tools(json!(7)), &[]).await;
    let acknowledged = "notifications/subscriptions/acknowledged";
    assert_eq!(pipe.read().await["method"], acknowledged);
    assert_eq!(http.next().await.unwrap()["method"], acknowledged);

    hub.complete();
    for (cancelled, id) in [
        (pipe.read().await, json!("stdio-1")),
        (http.next().await.unwrap(), json!(7)),
    ] {
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], id);
        assert_eq!(
            cancelled["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
        assert!(cancelled.get("id").is_none(), "no result follows");
    }
    assert!(http.next().await.is_none(), "the response ends after it");
    let drained = streams.finish_within(Duration::from_secs(5)).await;
    assert_eq!(drained.cut, 0);
    assert_eq!(hub.stats().listeners_closed.complete, 2);
}

#[tokio::test]
async fn over_stdio_a_client_that_never_reads_is_cut_at_the_deadline() {
    let hub = Hub::new();
    // A pipe narrower than one event, never read: the stream blocks writing.
    let (streams, mut never_read) = stdio(&hub, 1024);
    let request = listen(
        json!(1),
        json!({"resourceSubscriptions": ["file:///a"]}),
        &[],
    );
    never_read.send(&request).await;
    while hub.stats().listeners_active == 0 {
        tokio::task::yield_now().await;
    }
    for _ in 0..4 {
        hub.publish(big());
    }
    hub.complete();
    let started = tokio::time::Instant::now();
    let drained = streams.finish_within(Duration::from_millis(200)).await;
    assert_eq!((drained.open, drained.cut), (1, 1));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "it did not wait for ever"
    );
    assert!(streams.is_empty(), "the cut stream ended");
    let stats = hub.stats();
    assert_eq!(stats.listeners_active, 0);
    assert_eq!(stats.listeners_closed.disconnected, 1);
    assert!(stats.events.is_balanced());
}

/// Over HTTP a stalled body ends only when hyper polls it again or its
/// connection goes, so what the deadline proves here is the count; the
/// stream is gone once the client's connection is.
#[tokio::test]
async fn over_http_a_client_that_never_reads_is_counted_at_the_deadline() {
    let hub = Hub::new();
    let http = mcp_subscriptions::http::HttpTransport::new(
        ListenService::new(hub.clone()),
        axum::Router::new(),
    );
    let streams = http.streams();
    let url = serve(axum::Router::new().route("/mcp", http.into_method_router())).await;
    let request = listen(
        json!(1),
        json!({"resourceSubscriptions": ["file:///a"]}),
        &[],
    );
    let stalled = post(&url, &request, &[]).await;
    assert!(stalled.is_stream());
    for _ in 0..200 {
        hub.publish(big());
    }
    hub.complete();
    let drained = streams.finish_within(Duration::from_millis(200)).await;
    assert_eq!((drained.open, drained.cut), (1, 1));
    drop(stalled);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !streams.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stream outlived its connection"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(hub.stats().listeners_active, 0);
}

/// `http::serve`'s graceful shutdown: once its signal resolves it accepts
/// no more connections, a listen stream ends with its result, an idle
/// keep-alive connection is closed, and it returns.
#[tokio::test]
async fn http_serve_stops_accepting_ends_streams_closes_idle_connections_and_returns() {
    let hub = Hub::new();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let (stop, stopping) = tokio::sync::oneshot::channel::<()>();
    let completing = hub.clone();
    let app = crate::support::http::app(ListenService::new(hub.clone()));
    let served = tokio::spawn(mcp_subscriptions::http::serve(tcp, app, async move {
        let _ = stopping.await;
        completing.complete();
    }));

    let request = listen(json!(1), json!({"toolsListChanged": true}), &[]);
    let mut stream = post(&format!("http://{addr}"), &request, &[]).await;
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    hub.notify_tools_list_changed();
    let change = stream.next().await.unwrap();
    assert_eq!(change["method"], "notifications/tools/list_changed");

    // A GET is answered (405) and the connection kept for the next request.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let get = format!("GET /mcp HTTP/1.1\r\nhost: {addr}\r\n\r\n");
    idle.write_all(get.as_bytes()).await.unwrap();
    let mut answer = [0; 4096];
    let n = idle.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 405"));
    let kept = tokio::time::timeout(Duration::from_millis(200), idle.read(&mut answer)).await;
    assert!(kept.is_err(), "kept alive until the shutdown");

    stop.send(()).unwrap();
    let result = stream.next().await.unwrap();
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(stream.next().await, None, "the stream ended");
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("serve returns once its connections closed")
        .unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(1), idle.read(&mut answer)).await;
    assert_eq!(
        closed.unwrap().unwrap(),
        0,
        "the idle connection was closed"
    );
    assert!(TcpStream::connect(addr).await.is_err(), "no more accepted");
    assert_eq!(hub.stats().listeners_active, 0);
}

/// `http::serve_until_drained`: once its signal resolves (completing the
/// hub), a client that reads gets its result, one that never reads is cut
/// at the deadline, and it returns what it found.
#[tokio::test]
async fn serve_until_drained_ends_read_streams_and_cuts_stalled_ones_at_the_deadline() {
    let hub = Hub::new();
    let http = mcp_subscriptions::http::HttpTransport::new(
        ListenService::new(hub.clone()),
        axum::Router::new(),
    );
    let streams = http.streams();
    let app = axum::Router::new().route("/mcp", http.into_method_router());
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", tcp.local_addr().unwrap());
    let (stop, stopping) = tokio::sync::oneshot::channel::<()>();
    let completing = hub.clone();
    let shutdown = async move {
        let _ = stopping.await;
        completing.complete();
    };
    let served = tokio::spawn(mcp_subscriptions::http::serve_until_drained(
        tcp,
        app,
        shutdown,
        streams,
        Duration::from_millis(300),
    ));

    let tools = json!({"toolsListChanged": true});
    let mut reading = post(&url, &listen(json!(1), tools, &[]), &[]).await;
    reading.next().await.expect("acknowledged");
    let watched = json!({"resourceSubscriptions": ["file:///a"]});
    let stalled = post(&url, &listen(json!(2), watched, &[]), &[]).await;
    assert!(stalled.is_stream());
    for _ in 0..200 {
        hub.publish(big());
    }
    stop.send(()).unwrap();
    let result = reading.next().await.unwrap();
    assert_eq!(result["result"]["resultType"], "complete");
    let drained = tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("it returns once the stalled stream is cut")
        .unwrap();
    // The reading stream may have ended before the drain began counting.
    assert!(matches!(drained.open, 1 | 2), "{drained:?}");
    assert_eq!(drained.cut, 1, "the stalled stream was cut");
    drop(stalled);
}
