//! The notification channel over a WebSocket: one binary message per
//! frame.

use axum::extract::WebSocketUpgrade;
use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use axum::http::request::Parts;
use axum::routing::{MethodRouter, get};
use futures_util::{SinkExt, StreamExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::context::{OpenContext, TransportKind};
use crate::serve::ListenService;
use crate::source::{CloseReason, Source};
use crate::transport::hosts::{AllowedHosts, forbidden};
use crate::transport::streams::Streams;

/// The notification-channel endpoint: a `GET` upgraded to a WebSocket that
/// carries every notification the source produces, one binary message per
/// [`Frame`](super::Frame).
///
/// Mount it at `/mcp/notifications/{channel}`. Text, ping and pong messages
/// from the peer are ignored; the peer closing the socket is a cancellation
/// (the source is closed at once). The channel closes cleanly (a normal
/// close, no error frame) when the source completes, after an error frame
/// when it fails, and without any frame when the ask cannot be served (a
/// full hub, say).
///
/// ```no_run
/// use mcp_subscriptions::channel::ChannelTransport;
/// use mcp_subscriptions::{Hub, ListenService};
///
/// let hub = Hub::new();
/// let channel = ChannelTransport::new(ListenService::new(hub.clone()));
/// let streams = channel.streams(); // to await at shutdown
/// let app: axum::Router = axum::Router::new()
///     .route("/mcp/notifications/{channel}", channel.into_method_router());
/// ```
pub struct ChannelTransport<S> {
    listen: ListenService<S>,
    allowed_hosts: AllowedHosts,
    tasks: TaskTracker,
    cut: CancellationToken,
}

impl<S> ChannelTransport<S>
where
    S: Source + 'static,
    S::Handle: 'static,
{
    /// Serves channels from `listen`'s source.
    pub fn new(listen: ListenService<S>) -> Self {
        Self {
            listen,
            allowed_hosts: AllowedHosts::default(),
            tasks: TaskTracker::new(),
            cut: CancellationToken::new(),
        }
    }

    /// The host names accepted in `Host` and `Origin`, against DNS
    /// rebinding (default: `localhost`, `127.0.0.1`, `::1`); empty accepts
    /// any.
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = AllowedHosts::new(hosts);
        self
    }

    /// The channels being served, for a graceful shutdown to wait on.
    pub fn streams(&self) -> Streams {
        Streams::new(self.tasks.clone(), self.cut.clone())
    }

    /// The route: `GET` with a WebSocket upgrade.
    pub fn into_method_router(self) -> MethodRouter {
        let Self {
            listen,
            allowed_hosts,
            tasks,
            cut,
        } = self;
        get(move |parts: Parts, upgrade: WebSocketUpgrade| {
            let (listen, tasks, cut) = (listen.clone(), tasks.clone(), cut.clone());
            let admitted = allowed_hosts.admit(&parts.headers);
            async move {
                if !admitted {
                    return forbidden();
                }
                let context = OpenContext::default()
                    .with_transport(TransportKind::Channel)
                    .with_http(parts);
                let span = tracing::info_span!(
                    target: "mcp_subscriptions",
                    "notification channel",
                    principal = context.principal.as_ref().map(|p| p.as_str()),
                );
                upgrade.on_upgrade(move |socket| {
                    tasks.track_future(serve(listen, context, socket, cut).instrument(span))
                })
            }
        })
    }
}

impl<S> std::fmt::Debug for ChannelTransport<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelTransport").finish_non_exhaustive()
    }
}

async fn serve<S: Source + 'static>(
    listen: ListenService<S>,
    context: OpenContext,
    socket: WebSocket,
    cut: CancellationToken,
) {
    let (mut outgoing, mut incoming) = socket.split();
    let Ok(mut channel) = listen.open_channel_with(context) else {
        // The ask cannot be served: a clean close, and no frame at all.
        let _ = outgoing.send(Message::Close(None)).await;
        return;
    };
    loop {
        tokio::select! {
            // The shutdown deadline passed: the socket is dropped as it is.
            () = cut.cancelled() => {
                channel.cancel(CloseReason::Disconnected);
                return;
            }
            frame = channel.next_frame() => {
                let Some(frame) = frame else {
                    let normal = CloseFrame { code: close_code::NORMAL, reason: "".into() };
                    tokio::select! {
                        () = cut.cancelled() => {}
                        _ = outgoing.send(Message::Close(Some(normal))) => {}
                    }
                    return;
                };
                // The frame is written before the next event is pulled; a
                // peer that never reads holds it until the deadline.
                let sent = tokio::select! {
                    () = cut.cancelled() => Err(()),
                    sent = outgoing.send(Message::Binary(frame.into())) => sent.map_err(drop),
                };
                if sent.is_err() {
                    channel.cancel(CloseReason::Disconnected);
                    return;
                }
            }
            message = incoming.next() => match message {
                Some(Ok(Message::Close(_))) => {
                    channel.cancel(CloseReason::Cancelled);
                    // Flushes the close reply the WebSocket queued.
                    let _ = outgoing.close().await;
                    return;
                }
                Some(Err(_)) | None => {
                    channel.cancel(CloseReason::Disconnected);
                    return;
                }
                // Text, ping, pong, and any bytes a newer peer sends.
                Some(Ok(_)) => {}
            },
        }
    }
}
