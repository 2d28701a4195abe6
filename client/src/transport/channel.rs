//! Listening on the Diverge notification channel: a WebSocket whose binary
//! messages are the crate's channel [`Frame`]s.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::connect::Connect;
use crate::error::{ProtocolError, SubscribeError};
use crate::item::End;
use crate::options::SubscribeOptions;
use crate::protocol::granted_kind;
use crate::subscription::Subscription;
use crate::wire::Ending;
use mcp_subscriptions::Event;
use mcp_subscriptions::Filter;
use mcp_subscriptions::channel::{Frame, NOTIFICATION_TAG};
use mcp_subscriptions::{CloseReason, Next, SourceHandle};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

struct Channel {
    url: String,
}

struct ChannelStream {
    /// `None` once closed.
    socket: Option<Socket>,
    requested: Filter,
    /// A frame arrived: a clean close is then a graceful end, not an ask
    /// left unserved.
    served: bool,
    ending: Ending,
}

impl Connect for Channel {
    type Stream = ChannelStream;

    async fn open(
        &self,
        requested: &Filter,
        options: &SubscribeOptions,
    ) -> Result<(Filter, ChannelStream), SubscribeError> {
        let mut request = self.url.as_str().into_client_request().map_err(invalid)?;
        for (name, value) in &options.headers {
            let name = tokio_tungstenite::tungstenite::http::HeaderName::try_from(name.as_str())
                .map_err(invalid)?;
            let value = tokio_tungstenite::tungstenite::http::HeaderValue::try_from(value.as_str())
                .map_err(invalid)?;
            request.headers_mut().insert(name, value);
        }
        let (socket, _) = tokio_tungstenite::connect_async(request)
            .await
            .map_err(cannot_connect)?;
        // The channel has no acknowledgement and no filter: the socket
        // being open is the grant, and the request is applied here.
        let stream = ChannelStream {
            socket: Some(socket),
            requested: requested.clone(),
            served: false,
            ending: Ending::default(),
        };
        Ok((requested.clone(), stream))
    }

    fn end(stream: &ChannelStream, last: Next) -> End {
        stream.ending.reason(last)
    }
}

impl ChannelStream {
    /// The next event, or how the channel ended.
    async fn read(&mut self) -> Result<Event, End> {
        let Some(socket) = &mut self.socket else {
            return Err(End::Cancelled);
        };
        loop {
            let message = match socket.next().await {
                None | Some(Ok(Message::Close(_))) => {
                    return Err(if self.served {
                        End::Complete
                    } else {
                        End::NotServed
                    });
                }
                Some(Err(err)) => return Err(End::Abrupt(err.to_string())),
                Some(Ok(message)) => message,
            };
            let Message::Binary(bytes) = message else {
                continue;
            };
            self.served = true;
            let invalid = |why: String| End::Protocol(ProtocolError::InvalidMessage(why));
            if let [NOTIFICATION_TAG, body @ ..] = &bytes[..] {
                // The notification's own text becomes the event.
                let event = std::str::from_utf8(body)
                    .map_err(|err| err.to_string())
                    .and_then(|text| Event::from_json(text, None).map_err(|err| err.to_string()))
                    .map_err(invalid)?;
                if granted_kind(&self.requested, event.kind()) {
                    return Ok(event);
                }
                continue;
            }
            // Any other frame of a later revision of the channel is skipped.
            if let Frame::Error(error) =
                Frame::decode(&bytes).map_err(|e| invalid(e.to_string()))?
            {
                return Err(End::failed(error));
            }
        }
    }
}

impl SourceHandle for ChannelStream {
    async fn next(&mut self) -> Next {
        if self.ending.is_over() || self.socket.is_none() {
            return Next::Closed;
        }
        match self.read().await {
            Ok(event) => Next::Event(event),
            Err(end) => self.ending.keep(end),
        }
    }

    fn close(&mut self, _: CloseReason) {
        if let Some(mut socket) = self.socket.take() {
            // The close handshake runs on its own, so closing never waits.
            tokio::spawn(async move {
                let _ = socket.close(None).await;
            });
        }
    }
}

fn invalid(err: impl std::fmt::Display) -> SubscribeError {
    SubscribeError::Invalid(err.to_string())
}

/// A failed WebSocket handshake: an HTTP status, a URL it cannot use, or
/// a server out of reach.
fn cannot_connect(err: tokio_tungstenite::tungstenite::Error) -> SubscribeError {
    use tokio_tungstenite::tungstenite::Error;
    match err {
        Error::Http(response) => SubscribeError::Status {
            status: response.status().as_u16(),
            body: String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                .into_owned(),
        },
        Error::Url(err) => invalid(err),
        err => SubscribeError::Connect(err.to_string()),
    }
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
    /// [`SubscribeError::Connect`] when the WebSocket cannot be opened,
    /// [`SubscribeError::Status`] when the handshake is answered with
    /// another HTTP status, [`SubscribeError::Invalid`] for a URL or header
    /// it cannot send, and a protocol error when not within the options'
    /// timeout.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn channel(
        url: impl Into<String>,
        requested: &Filter,
        options: SubscribeOptions,
    ) -> Result<Self, SubscribeError> {
        let url = url.into();
        crate::protocol::check_scheme(&url, &["ws"])?;
        Self::open(Arc::new(Channel { url }), requested, options).await
    }
}
