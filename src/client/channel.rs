//! Listening on the Diverge notification channel: a WebSocket whose binary
//! messages are the crate's channel [`Frame`]s.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::error::{ProtocolError, SubscribeError};
use super::item::End;
use super::options::SubscribeOptions;
use super::protocol::{event, granted_kind};
use super::pump::{Arrival, Connect, Feed, Opening};
use super::subscription::Subscription;
use crate::channel::Frame;
use crate::event::Event;
use crate::filter::Filter;
use serde_json::{Map, Value};

struct Channel {
    url: String,
}

struct ChannelFeed {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    requested: Filter,
    /// A frame arrived: a clean close is then a graceful end, not an ask
    /// left unserved.
    served: bool,
}

impl Connect for Channel {
    fn open<'a>(&'a self, requested: &'a Filter, options: &'a SubscribeOptions) -> Opening<'a> {
        async move {
            let mut request = self
                .url
                .as_str()
                .into_client_request()
                .map_err(|err| SubscribeError::Connect(err.to_string()))?;
            for (name, value) in &options.headers {
                let name =
                    tokio_tungstenite::tungstenite::http::HeaderName::try_from(name.as_str())
                        .map_err(|err| SubscribeError::Connect(err.to_string()))?;
                let value =
                    tokio_tungstenite::tungstenite::http::HeaderValue::try_from(value.as_str())
                        .map_err(|err| SubscribeError::Connect(err.to_string()))?;
                request.headers_mut().insert(name, value);
            }
            let (socket, _) = tokio_tungstenite::connect_async(request)
                .await
                .map_err(|err| SubscribeError::Connect(err.to_string()))?;
            // The channel has no acknowledgement and no filter: the socket
            // being open is the grant, and the request is applied here.
            let feed = ChannelFeed {
                socket,
                requested: requested.clone(),
                served: false,
            };
            Ok((requested.clone(), Box::new(feed) as Box<dyn Feed>))
        }
        .boxed()
    }
}

impl Feed for ChannelFeed {
    fn next(&mut self) -> BoxFuture<'_, Arrival> {
        async move {
            loop {
                let message = match self.socket.next().await {
                    None | Some(Ok(Message::Close(_))) => {
                        return Arrival::End(if self.served {
                            End::Complete
                        } else {
                            End::NotServed
                        });
                    }
                    Some(Err(err)) => return Arrival::End(End::Abrupt(err.to_string())),
                    Some(Ok(message)) => message,
                };
                let Message::Binary(bytes) = message else {
                    continue;
                };
                self.served = true;
                let frame = match Frame::decode(&bytes) {
                    Ok(frame) => frame,
                    Err(err) => {
                        return Arrival::End(End::Protocol(ProtocolError::InvalidMessage(
                            err.to_string(),
                        )));
                    }
                };
                match frame {
                    Frame::Notification(notification) => {
                        let value = serde_json::to_value(notification).expect("JSON serializes");
                        match channel_event(value) {
                            Ok(event) if granted_kind(&self.requested, event.kind()) => {
                                return Arrival::Event(event);
                            }
                            Ok(_) => {}
                            Err(err) => return Arrival::End(End::Protocol(err)),
                        }
                    }
                    Frame::Error(error) => return Arrival::End(End::Failed(error)),
                }
            }
        }
        .boxed()
    }

    fn cancel(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        async move {
            let _ = self.socket.close(None).await;
        }
        .boxed()
    }
}

/// A notification from the notification channel (no stamp to check).
fn channel_event(notification: Value) -> Result<Event, ProtocolError> {
    let Value::Object(mut notification) = notification else {
        return Err(ProtocolError::InvalidMessage("not an object".into()));
    };
    let Some(Value::String(method)) = notification.remove("method") else {
        return Err(ProtocolError::InvalidMessage("no method".into()));
    };
    let params = match notification.remove("params") {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    Ok(event(method, params))
}

impl Subscription {
    /// Listens on a notification channel at `url`
    /// (`ws://host/mcp/notifications/{channel}`). The channel carries every
    /// notification the server produces and has no acknowledgement: the
    /// grant is the request, applied here (core kinds by the filter,
    /// extension notifications always). An error frame ends the
    /// subscription with [`End::Failed`]; a clean close with no frame at
    /// all with [`End::NotServed`].
    ///
    /// # Errors
    ///
    /// [`SubscribeError::Connect`] when the WebSocket cannot be opened, or
    /// not within the options' timeout.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn channel(
        url: impl Into<String>,
        requested: &Filter,
        options: SubscribeOptions,
    ) -> Result<Self, SubscribeError> {
        Self::open(Arc::new(Channel { url: url.into() }), requested, options).await
    }
}
