//! The task between a transport and a subscription's buffer: it reads the
//! stream while the buffer has room, and listens again when asked to.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::buffer::Shared;
use super::error::SubscribeError;
use super::item::{End, Item, Relistening};
use super::options::SubscribeOptions;
use crate::event::Event;
use crate::filter::Filter;

/// What one open stream delivers after its acknowledgement.
pub(super) enum Arrival {
    Event(Event),
    /// Events lost upstream (in process: the source's own lag).
    Lagged(u64),
    End(End),
}

/// One acknowledged stream of a transport.
pub(super) trait Feed: Send {
    /// The next arrival. The pump drops this future only to cancel.
    fn next(&mut self) -> BoxFuture<'_, Arrival>;

    /// Ends the stream from our side: `notifications/cancelled` on stdio, a
    /// closed response over HTTP, a closed socket on the channel, a closed
    /// handle in process.
    fn cancel(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// An attempt to open a stream: the grant and the stream, once
/// acknowledged.
pub(super) type Opening<'a> = BoxFuture<'a, Result<(Filter, Box<dyn Feed>), SubscribeError>>;

/// How a transport opens a stream: once, and again for each re-listen.
pub(super) trait Connect: Send + Sync + 'static {
    /// Sends a listen request for `requested` and waits for its
    /// acknowledgement: the grant, and the stream.
    fn open<'a>(&'a self, requested: &'a Filter, options: &'a SubscribeOptions) -> Opening<'a>;
}

/// Opens a first stream within the acknowledgement timeout.
pub(super) async fn open_within(
    connect: &dyn Connect,
    requested: &Filter,
    options: &SubscribeOptions,
) -> Result<(Filter, Box<dyn Feed>), SubscribeError> {
    match tokio::time::timeout(options.ack_timeout, connect.open(requested, options)).await {
        Ok(opened) => opened,
        Err(_) => Err(super::error::ProtocolError::NoAcknowledgement {
            waited: options.ack_timeout,
        }
        .into()),
    }
}

/// Drives a subscription until it ends for good.
pub(super) async fn run(
    connect: Arc<dyn Connect>,
    requested: Filter,
    options: SubscribeOptions,
    shared: Arc<Shared>,
    mut feed: Box<dyn Feed>,
) {
    loop {
        let end = drive(&mut *feed, &shared).await;
        if end == End::Cancelled {
            feed.cancel().await;
            shared.finish(End::Cancelled);
            return;
        }
        // A stream the server did not end itself is ended from our side, so
        // a server that is still there stops sending.
        if matches!(end, End::Overflowed { .. } | End::Protocol(_)) {
            feed.cancel().await;
        } else {
            drop(feed);
        }
        let relisten = match &options.relisten {
            Some(relisten) if end.may_relisten(relisten.after_complete) => relisten,
            _ => {
                shared.finish(end);
                return;
            }
        };
        let mut reason = end.to_string();
        let mut attempt = 0u32;
        feed = loop {
            attempt += 1;
            if relisten.max_attempts.is_some_and(|max| attempt > max) {
                shared.finish(end);
                return;
            }
            let delay = relisten.delay(attempt);
            shared.push_marker(Item::Relistening(Relistening {
                attempt,
                delay,
                reason: reason.clone(),
            }));
            tokio::select! {
                () = shared.cancel.cancelled() => {
                    shared.finish(End::Cancelled);
                    return;
                }
                () = tokio::time::sleep(delay) => {}
            }
            let opened = tokio::select! {
                () = shared.cancel.cancelled() => {
                    shared.finish(End::Cancelled);
                    return;
                }
                opened = open_within(&*connect, &requested, &options) => opened,
            };
            match opened {
                Ok((granted, feed)) => {
                    shared.push_marker(Item::Resynced(granted));
                    break feed;
                }
                Err(err) => reason = err.to_string(),
            }
        };
    }
}

/// Moves one stream's arrivals into the buffer until it ends.
async fn drive(feed: &mut dyn Feed, shared: &Shared) -> End {
    loop {
        // Read the transport only while the buffer has room (under `Wait`),
        // so a slow reader pushes back on the server.
        let arrival = tokio::select! {
            biased;
            () = shared.cancel.cancelled() => return End::Cancelled,
            arrival = async {
                shared.room().await;
                feed.next().await
            } => arrival,
        };
        match arrival {
            Arrival::Event(event) => {
                if let Err(dropped) = shared.push_event(event) {
                    return End::Overflowed { dropped };
                }
            }
            Arrival::Lagged(lost) => shared.add_lag(lost),
            Arrival::End(end) => return end,
        }
    }
}
