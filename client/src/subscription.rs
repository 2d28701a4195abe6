//! The reading end of one subscription, whatever its transport.

use std::fmt;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::buffer::{BufferStats, Shared};
use crate::connect::Connect;
use crate::error::SubscribeError;
use crate::item::Item;
use crate::options::SubscribeOptions;
use crate::pump::{self, Refilter};
use mcp_subscriptions::Filter;

/// One acknowledged `subscriptions/listen` stream, read on demand through a
/// bounded buffer.
///
/// Opened over Streamable HTTP ([`Subscription::http`]), stdio
/// ([`StdioClient::subscribe`](crate::StdioClient::subscribe)), the
/// notification channel (`Subscription::channel`, with the `channel`
/// feature) or in process ([`Subscription::source`]); read with
/// [`next`](Self::next) (cancel-safe), [`try_next`](Self::try_next), as a
/// [`Stream`], or from a thread through
/// [`into_receiver`](Self::into_receiver). It yields events, lag reports,
/// re-listen reports, and one [`End`](crate::End) last.
///
/// Dropping it cancels the stream, as [`cancel`](Self::cancel) does without
/// waiting.
pub struct Subscription {
    shared: Arc<Shared>,
    pump: Option<JoinHandle<()>>,
    commands: mpsc::UnboundedSender<Refilter>,
}

impl Subscription {
    /// Opens a stream through `connect`, waits for its acknowledgement and
    /// starts the task that fills the buffer.
    pub(super) async fn open<C: Connect>(
        connect: Arc<C>,
        requested: &Filter,
        options: SubscribeOptions,
    ) -> Result<Self, SubscribeError> {
        let (granted, streams) = pump::open_first(&*connect, requested, &options).await?;
        let shared = Arc::new(Shared::new(&options, granted));
        let (commands, received) = mpsc::unbounded_channel();
        let pump = tokio::spawn(pump::run(
            connect,
            requested.clone(),
            options,
            Arc::clone(&shared),
            streams,
            received,
        ));
        Ok(Self {
            shared,
            pump: Some(pump),
            commands,
        })
    }

    /// Changes what the subscription listens to, in place: new streams
    /// are opened for `filter` and acknowledged before the old ones are
    /// closed, so an event for anything both filters ask for is never
    /// missed in between. Nothing buffered is lost. The old streams are
    /// still read for the [overlap](SubscribeOptions::with_overlap), so
    /// what was in flight on them arrives, and a copy of an event that came
    /// on both is dropped ([`BufferStats::duplicates`]). Copies are told
    /// apart by content alone, so a signal dropped for an old stream's copy
    /// in the last half of the overlap is delivered once more when that
    /// stream closes: the old one may have had a later publish of it in
    /// flight. The grant, which
    /// [`granted`](Self::granted) then returns too.
    ///
    /// A filter past [`max_uris_per_stream`](SubscribeOptions::with_max_uris_per_stream)
    /// URIs is listened to as several streams, transparently (so is the
    /// first one's).
    ///
    /// # Errors
    ///
    /// The new streams' [`SubscribeError`]: the old ones go on as before.
    /// [`SubscribeError::Closed`] when the subscription has ended (or ends
    /// before the new streams are acknowledged).
    pub async fn set_filter(&self, filter: &Filter) -> Result<Filter, SubscribeError> {
        refilter(&self.commands, filter).await
    }

    /// A handle that changes the filter while the subscription is read
    /// elsewhere ([`next`](Self::next) borrows it mutably).
    pub fn filter_handle(&self) -> FilterHandle {
        FilterHandle(self.commands.clone())
    }

    /// The filter the server granted in its acknowledgement (after a
    /// re-listen, the latest one): a subset of the request.
    pub fn granted(&self) -> Filter {
        self.shared.granted()
    }

    /// Where every event the transport delivered is now.
    pub fn stats(&self) -> BufferStats {
        self.shared.stats()
    }

    /// Waits for the next item; `None` once the [`End`](crate::End) was
    /// read.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an item leaves the buffer only in the poll that returns
    /// it.
    #[allow(
        clippy::should_implement_trait,
        reason = "an async pull, named like `Listener::next` and `StreamExt::next`"
    )]
    pub async fn next(&mut self) -> Option<Item> {
        poll_fn(|cx| self.shared.pop(Some(cx))).await
    }

    /// The next item if one is ready; `None` when nothing is, or after the
    /// end was read ([`is_finished`](Self::is_finished) tells which).
    pub fn try_next(&mut self) -> Option<Item> {
        match self.shared.pop(None) {
            Poll::Ready(item) => item,
            Poll::Pending => None,
        }
    }

    /// Whether the end was read: nothing more comes.
    pub fn is_finished(&self) -> bool {
        self.shared.is_finished()
    }

    /// Cancels the stream (`notifications/cancelled` on stdio, a closed
    /// response over HTTP, a closed handle in process, the WebSocket's
    /// close handshake on the channel, which goes on by itself) and waits
    /// until the task reading the stream stopped. What was buffered is
    /// discarded.
    pub async fn cancel(mut self) {
        self.shared.cancel.cancel();
        if let Some(pump) = self.pump.take() {
            let _ = pump.await;
        }
    }

    /// Hands the items to a thread: a [`crossbeam_channel::Receiver`] that
    /// a thread can `select!` over with its own channels. A thread of its
    /// own moves each item over, one at a time, so the buffer's bound and
    /// policy still hold; dropping the receiver cancels the subscription.
    ///
    /// # Blocking
    ///
    /// The receiver's `recv` blocks; the forwarding thread parks while the
    /// buffer is empty.
    pub fn into_receiver(mut self) -> crossbeam_channel::Receiver<Item> {
        let (sender, receiver) = crossbeam_channel::bounded(0);
        std::thread::Builder::new()
            .name("mcp-subscription".into())
            .spawn(move || {
                while let Some(item) =
                    mcp_subscriptions::block_on_timeout(self.next(), std::time::Duration::MAX)
                        .flatten()
                {
                    if sender.send(item).is_err() {
                        break;
                    }
                }
            })
            .expect("a thread starts");
        receiver
    }
}

/// [`Subscription::set_filter`], apart from the subscription: a task that
/// reads the subscription and another that narrows or widens it.
#[derive(Clone)]
pub struct FilterHandle(mpsc::UnboundedSender<Refilter>);

impl std::fmt::Debug for FilterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilterHandle").finish_non_exhaustive()
    }
}

impl FilterHandle {
    /// As [`Subscription::set_filter`].
    pub async fn set_filter(&self, filter: &Filter) -> Result<Filter, SubscribeError> {
        refilter(&self.0, filter).await
    }
}

async fn refilter(
    commands: &mpsc::UnboundedSender<Refilter>,
    filter: &Filter,
) -> Result<Filter, SubscribeError> {
    let (granted, grant) = oneshot::channel();
    commands
        .send(Refilter {
            filter: filter.clone(),
            granted,
        })
        .map_err(|_| SubscribeError::Closed)?;
    grant.await.unwrap_or(Err(SubscribeError::Closed))
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // The pump task sees it and ends the stream on the wire.
        self.shared.cancel.cancel();
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("granted", &self.shared.granted())
            .field("stats", &self.shared.stats())
            .finish_non_exhaustive()
    }
}

impl Stream for Subscription {
    /// Events, lag and re-listen reports, then the end; the stream ends
    /// after it.
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        self.shared.pop(Some(cx))
    }
}
