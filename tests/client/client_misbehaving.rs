//! The client against servers that break the protocol on purpose: a
//! scripted HTTP server answering with canned SSE, and a scripted stdio
//! peer. Each bad case ends with its own error within the timeout; nothing
//! hangs and nothing panics.

#![cfg(feature = "client")]

use std::time::Duration;

use mcp_subscriptions::Filter;
use mcp_subscriptions_client::{
    End, Item, ProtocolError, StdioClient, SubscribeError, SubscribeOptions, Subscription,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(5);

const ACK: &str = r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{"toolsListChanged":true}}}"#;
const TOOLS: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}"#;

/// How the scripted server ends its answer.
#[derive(Clone, Copy)]
enum Then {
    Hold,
    Close,
}

/// A server that answers every POST with these SSE data lines (each one
/// message), then holds the stream open or closes it; its URL.
async fn scripted(messages: &[&str], then: Then) -> String {
    let messages: Vec<String> = messages.iter().map(|m| (*m).to_owned()).collect();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", tcp.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = tcp.accept().await.unwrap();
            let messages = messages.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as much body as it announced.
                loop {
                    let n = socket.read(&mut buf).await.unwrap();
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length: usize = text
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length: ")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                    if n == 0 {
                        return;
                    }
                }
                let mut body = String::new();
                for message in &messages {
                    body.push_str(&format!("data: {message}\n\n"));
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                socket.write_all(head.as_bytes()).await.unwrap();
                socket.write_all(body.as_bytes()).await.unwrap();
                match then {
                    Then::Close => {}
                    Then::Hold => tokio::time::sleep(Duration::from_secs(60)).await,
                }
            });
        }
    });
    url
}

fn options() -> SubscribeOptions {
    SubscribeOptions::default().with_ack_timeout(Duration::from_millis(300))
}

fn tools() -> Filter {
    Filter::new().with_tools_list_changed()
}

async fn open_error(messages: &[&str]) -> SubscribeError {
    let url = scripted(messages, Then::Hold).await;
    tokio::time::timeout(WAIT, Subscription::http(url, &tools(), options()))
        .await
        .expect("no hang")
        .unwrap_err()
}

async fn end_of(messages: &[&str], then: Then) -> End {
    let url = scripted(messages, then).await;
    let mut subscription = Subscription::http(url, &tools(), options()).await.unwrap();
    loop {
        match tokio::time::timeout(WAIT, subscription.next())
            .await
            .expect("no hang")
        {
            Some(Item::End(end)) => return end,
            Some(_) => {}
            None => panic!("ended without an end"),
        }
    }
}

#[tokio::test]
async fn smoke_a_well_behaved_script() {
    let end = end_of(
        &[
            ACK,
            TOOLS,
            r#"{"jsonrpc":"2.0","id":"listen-1","result":{"resultType":"complete"}}"#,
        ],
        Then::Hold,
    )
    .await;
    assert_eq!(end, End::Complete);
}

#[tokio::test]
async fn an_acknowledgement_granting_more_than_asked() {
    let more = r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}"#;
    let err = open_error(&[more]).await;
    assert!(
        matches!(&err, SubscribeError::Protocol(ProtocolError::GrantedMore { granted }) if granted.prompts_list_changed()),
        "{err}"
    );
}

#[tokio::test]
async fn a_notification_before_the_acknowledgement() {
    let err = open_error(&[TOOLS, ACK]).await;
    assert!(
        matches!(&err, SubscribeError::Protocol(ProtocolError::BeforeAcknowledgement { what }) if what == "notifications/tools/list_changed"),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_that_never_acknowledges() {
    let started = std::time::Instant::now();
    let err = open_error(&[]).await;
    assert!(
        matches!(
            err,
            SubscribeError::Protocol(ProtocolError::NoAcknowledgement { .. })
        ),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_notification_stamped_with_another_id() {
    let other = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-2"}}}"#;
    let end = end_of(&[ACK, other], Then::Hold).await;
    assert_eq!(
        end,
        End::Protocol(ProtocolError::WrongSubscriptionId {
            found: Some(Value::from("listen-2"))
        })
    );
}

#[tokio::test]
async fn a_kind_that_was_not_granted() {
    let prompts = r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}"#;
    let end = end_of(&[ACK, prompts], Then::Hold).await;
    assert!(
        matches!(end, End::Protocol(ProtocolError::NotGranted { .. })),
        "{end}"
    );
}

#[tokio::test]
async fn garbage_on_the_wire() {
    let end = end_of(&[ACK, "{not json"], Then::Hold).await;
    assert!(
        matches!(end, End::Protocol(ProtocolError::InvalidJson(_))),
        "{end}"
    );
    let end = end_of(&[ACK, "[1,2]"], Then::Hold).await;
    assert!(
        matches!(end, End::Protocol(ProtocolError::InvalidMessage(_))),
        "{end}"
    );
}

#[tokio::test]
async fn a_stream_that_just_stops() {
    let end = end_of(&[ACK, TOOLS], Then::Close).await;
    assert!(matches!(end, End::Abrupt(_)), "{end}");
}

#[tokio::test]
async fn stdio_garbage_and_silence() {
    // The test plays the server on a pair of pipes.
    let (client_end, server_end) = tokio::io::duplex(4096);
    let (client_read, client_write) = tokio::io::split(client_end);
    let (server_read, mut server_write) = tokio::io::split(server_end);
    let client = StdioClient::new(client_read, client_write);
    let mut requests = BufReader::new(server_read).lines();

    // Silence: no acknowledgement in time.
    let err = tokio::time::timeout(WAIT, client.subscribe(&tools(), options()))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            err,
            SubscribeError::Protocol(ProtocolError::NoAcknowledgement { .. })
        ),
        "{err}"
    );
    let first: Value = serde_json::from_str(&requests.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["method"], "subscriptions/listen");

    // Acknowledged, then garbage.
    let subscribing = tokio::spawn({
        let client = client.clone();
        async move { client.subscribe(&tools(), options()).await }
    });
    let second: Value =
        serde_json::from_str(&requests.next_line().await.unwrap().unwrap()).unwrap();
    let id = second["id"].clone();
    let ack = ACK.replace("\"listen-1\"", &id.to_string());
    server_write
        .write_all(format!("{ack}\nthis is not json\n").as_bytes())
        .await
        .unwrap();
    let mut subscription = subscribing.await.unwrap().unwrap();
    let item = tokio::time::timeout(WAIT, subscription.next())
        .await
        .unwrap();
    assert!(
        matches!(
            item,
            Some(Item::End(End::Protocol(ProtocolError::InvalidJson(_))))
        ),
        "{item:?}"
    );
    // The client cancels the broken stream on the wire.
    let cancel: Value =
        serde_json::from_str(&requests.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], id);
}
