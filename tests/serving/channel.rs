//! The Diverge notification channel of the example server, with a real
//! WebSocket client, decoded with the crate's own decoder.

#![cfg(all(
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

use std::time::Duration;

use crate::support::example::{HttpServer, call};
use futures_util::{SinkExt, StreamExt};
use mcp_subscriptions::channel::Frame;
use rmcp::model::ServerNotification;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const WAIT: Duration = Duration::from_secs(10);

async fn connect(server: &HttpServer) -> Socket {
    let url = format!("ws://{}/mcp/notifications/main", server.addr());
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("the upgrade succeeds");
    socket
}

/// The next message that is not a ping or pong.
async fn receive(socket: &mut Socket) -> Option<Message> {
    loop {
        let message = tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("the channel moves on");
        match message {
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            Some(Ok(message)) => return Some(message),
            Some(Err(_)) | None => return None,
        }
    }
}

async fn frame(socket: &mut Socket) -> Frame {
    match receive(socket).await {
        Some(Message::Binary(bytes)) => Frame::decode(&bytes).expect("a valid frame"),
        other => panic!("expected a binary frame, got {other:?}"),
    }
}

#[tokio::test]
async fn smoke_every_kind_arrives_as_a_frame_in_publish_order() {
    let server = HttpServer::start(&[]).await;
    let mut socket = connect(&server).await;
    server.wait_for_active(1, WAIT).await;
    // Messages from the peer other than a close are ignored.
    socket.send(Message::text("hello")).await.unwrap();
    socket.send(Message::Ping(vec![1].into())).await.unwrap();

    let client = server.client().await;
    call(&client, "test_trigger_tool_change", json!({})).await;
    call(&client, "test_trigger_prompt_change", json!({})).await;
    call(
        &client,
        "test_trigger_resource_update",
        json!({"uri": "file:///any"}),
    )
    .await;
    call(
        &client,
        "test_trigger_custom",
        json!({"method": "vendor/thing_changed", "params": {"id": 7, "tags": ["a"]}}),
    )
    .await;

    assert!(matches!(
        frame(&mut socket).await,
        Frame::Notification(ServerNotification::ToolListChangedNotification(_))
    ));
    assert!(matches!(
        frame(&mut socket).await,
        Frame::Notification(ServerNotification::PromptListChangedNotification(_))
    ));
    match frame(&mut socket).await {
        Frame::Notification(ServerNotification::ResourceUpdatedNotification(updated)) => {
            assert_eq!(updated.params.uri, "file:///any");
        }
        other => panic!("expected a resource update, got {other:?}"),
    }
    match frame(&mut socket).await {
        Frame::Notification(ServerNotification::CustomNotification(custom)) => {
            assert_eq!(custom.method, "vendor/thing_changed");
            assert_eq!(custom.params, Some(json!({"id": 7, "tags": ["a"]})));
        }
        other => panic!("expected the custom notification, got {other:?}"),
    }
}

#[tokio::test]
async fn overflow_under_disconnect_ends_with_an_error_frame_then_a_close() {
    let server = HttpServer::start(&["--capacity", "1", "--overflow", "disconnect"]).await;
    let mut socket = connect(&server).await;
    server.wait_for_active(1, WAIT).await;
    let client = server.client().await;
    call(
        &client,
        "test_trigger_burst",
        json!({"uri": "r", "count": 200_000}),
    )
    .await;
    let error = loop {
        match frame(&mut socket).await {
            Frame::Notification(_) => continue,
            Frame::Error(error) => break error,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(error.code.0, -32000);
    assert_eq!(error.data.as_ref().unwrap()["reason"], "overflow");
    match receive(&mut socket).await {
        Some(Message::Close(_)) => {}
        other => panic!("nothing follows the error frame but the close, got {other:?}"),
    }
    assert_eq!(server.stats().await["listeners_closed"]["overflow"], 1);
}

#[tokio::test]
async fn graceful_shutdown_closes_cleanly_without_an_error_frame() {
    let server = HttpServer::start(&[]).await;
    let mut socket = connect(&server).await;
    server.wait_for_active(1, WAIT).await;
    server.interrupt();
    match receive(&mut socket).await {
        Some(Message::Close(Some(close))) => assert_eq!(close.code, CloseCode::Normal),
        other => panic!("expected a normal close, got {other:?}"),
    }
}

#[tokio::test]
async fn closing_the_socket_releases_the_listener() {
    let server = HttpServer::start(&[]).await;
    let mut socket = connect(&server).await;
    server.wait_for_active(1, WAIT).await;
    socket.close(None).await.unwrap();
    server.wait_for_active(0, WAIT).await;
    assert_eq!(server.stats().await["listeners_closed"]["cancelled"], 1);
}

#[tokio::test]
async fn an_ask_that_cannot_be_served_closes_without_any_frame() {
    let server = HttpServer::start(&["--max-subscriptions", "0"]).await;
    let mut socket = connect(&server).await;
    match receive(&mut socket).await {
        Some(Message::Close(_)) => {}
        other => panic!("expected a close and no frame, got {other:?}"),
    }
    assert_eq!(server.stats().await["listeners_opened"], 0);
}

#[tokio::test]
async fn a_foreign_origin_is_refused_before_the_upgrade() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let server = HttpServer::start(&[]).await;
    let mut request = format!("ws://{}/mcp/notifications/main", server.addr())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("origin", "https://evil.example".parse().unwrap());
    let err = tokio_tungstenite::connect_async(request).await.unwrap_err();
    assert!(err.to_string().contains("403"), "{err}");
    assert_eq!(server.stats().await["listeners_opened"], 0);
}
