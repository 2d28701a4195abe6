//! A raw client of the notification channel: a WebSocket to a server's
//! `/mcp/notifications/{channel}`, read frame by frame with the crate's own
//! decoder.

use std::time::Duration;

use futures_util::StreamExt;
use mcp_subscriptions::channel::Frame;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderName;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One open notification channel.
pub struct Channel {
    socket: Socket,
}

/// What the channel said next.
#[derive(Debug)]
pub enum Received {
    /// A notification frame: the notification, as written.
    Notification(Value),
    /// An error frame: the JSON-RPC error object.
    Error(Value),
    /// The socket closed (cleanly or not).
    Closed,
}

impl Channel {
    /// Opens the channel at `url` (`ws://…/mcp/notifications/…`), the
    /// upgrade request carrying `headers` (name, value pairs).
    pub async fn connect(url: &str, headers: &[(&str, &str)]) -> Self {
        let mut request = url.into_client_request().unwrap();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            request.headers_mut().insert(name, value.parse().unwrap());
        }
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("the upgrade succeeds");
        Self { socket }
    }

    /// The next frame or the close, skipping pings and pongs; panics after
    /// 5 s of silence.
    pub async fn receive(&mut self) -> Received {
        loop {
            let message = tokio::time::timeout(Duration::from_secs(5), self.socket.next())
                .await
                .expect("the channel says something within 5 s");
            match message {
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Binary(bytes))) => {
                    // Decoded by the crate, read raw for what the decoder
                    // does not keep (a notification's extra params).
                    let frame = Frame::decode(&bytes).expect("a valid frame");
                    let body = serde_json::from_slice(&bytes[1..]).unwrap();
                    return match frame {
                        Frame::Notification(_) => Received::Notification(body),
                        Frame::Error(_) => Received::Error(body),
                        other => panic!("an unknown frame {other:?}"),
                    };
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return Received::Closed,
                Some(Ok(other)) => panic!("expected a binary frame, got {other:?}"),
            }
        }
    }
}
