//! One listen stream, served from a [`Source`] as a sequence of messages.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::{ErrorData, Implementation, RequestId};

use super::pull::{Lease, Pull, Pulled, SKIPS_PER_YIELD, yield_every};
use super::teardown::Teardown;
use crate::error::Refusal;
use crate::filter::Filter;
use crate::source::{CloseReason, Opened, SourceHandle};
use crate::wire::response::{acknowledgement, cancellation, completion, error_response};
use crate::wire::{Message, SubscriptionId};

/// One `subscriptions/listen` stream: the acknowledgement, then each event
/// stamped with the request id, then the response that ends it.
///
/// A transport calls [`next_message`](Self::next_message), writes what it
/// gets, and calls again only once the write has completed: the stream
/// pulls its next event from the source only then, so the transport's write
/// is the backpressure. It enforces the rest of the serving rules itself:
///
/// 1. the acknowledgement (the granted filter, even when empty) is the first
///    message, produced before anything is pulled from the source;
/// 2. the next event is pulled only when the next message is asked for;
/// 3. the source is closed when the stream ends, whatever ends it: the
///    terminal message, [`cancel`](Self::cancel), or the stream being
///    dropped (a transport gone, a task aborted, a panic unwinding);
/// 4. every message carries the request id, verbatim;
/// 5. an event outside the granted filter is dropped, even if the source
///    returns it;
/// 6. a source that completes ends the stream with the `complete` result
///    (with the server's info), or in the other [`Teardown`] dialect with
///    `notifications/cancelled` naming the request;
/// 7. a source that fails, is disconnected for overflow, panics or closes
///    underneath ends it with a JSON-RPC error response instead; so does a
///    revocation ([`Hub::revoke`](crate::Hub::revoke)) or the expiry its
///    authorizer granted it with ([`Grant::with_expiry`](crate::Grant::with_expiry));
/// 8. a stream granted nothing (its acknowledged filter is empty: it asked
///    only for what the server does not offer or the authorizer does not
///    allow) is completed right after its acknowledgement, its source
///    closed as [`CloseReason::Complete`]: it could never carry anything,
///    and held it would cost a slot and a connection.
///
/// Its principal's slot is given back the moment it ends, by any of these
/// or by [`cancel`](Self::cancel).
pub struct ListenStream<H: SourceHandle> {
    /// `None` while it waits for demand hooks, or once they refused it.
    pull: Option<Pull<H>>,
    waiting: Option<Waiting<H>>,
    /// The reason its source is closed with if it is dropped, for a
    /// source opened after waiting.
    drop_reason: CloseReason,
    id: RequestId,
    /// The id as every message carries it, rendered once.
    stamp: SubscriptionId,
    granted: Filter,
    acknowledged: bool,
    server_info: Arc<Implementation>,
    teardown: Teardown,
}

/// Opens a waiting stream's source given its attach's outcome.
type OpenAfter<H> = dyn FnOnce(Result<(), ErrorData>) -> Result<Opened<H>, ErrorData> + Send;

/// A stream admitted but not yet opened: it waits for the demand hooks'
/// attach of its keys (see `demand`), then opens its source, or is
/// answered with the refusal.
pub(crate) struct Waiting<H> {
    pub(crate) attach: BoxFuture<'static, Result<(), ErrorData>>,
    /// Opens the source given the attach's outcome, or says why not.
    pub(crate) open: Box<OpenAfter<H>>,
    pub(crate) lease: Lease,
}

impl<H: SourceHandle> ListenStream<H> {
    pub(crate) fn new(
        handle: H,
        id: RequestId,
        granted: Filter,
        ending: (Arc<Implementation>, Teardown),
        lease: Lease,
    ) -> Self {
        Self::opening(Some(Pull::new(handle, lease)), None, id, granted, ending)
    }

    /// A stream that opens its source once `waiting` allows; `granted` is
    /// what it asks of the source until then.
    #[cfg(any_transport)]
    pub(crate) fn waiting(
        waiting: Waiting<H>,
        id: RequestId,
        granted: Filter,
        ending: (Arc<Implementation>, Teardown),
    ) -> Self {
        Self::opening(None, Some(waiting), id, granted, ending)
    }

    /// `ending`: the server's info for the `complete` result, and the
    /// dialect of a graceful end.
    fn opening(
        pull: Option<Pull<H>>,
        waiting: Option<Waiting<H>>,
        id: RequestId,
        granted: Filter,
        (server_info, teardown): (Arc<Implementation>, Teardown),
    ) -> Self {
        Self {
            pull,
            waiting,
            drop_reason: CloseReason::Disconnected,
            stamp: SubscriptionId::new(&id),
            id,
            granted,
            acknowledged: false,
            server_info,
            teardown,
        }
    }

    /// The listen request's id, which every message carries.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The filter the source granted, which the acknowledgement carries
    /// (while it waits for demand hooks, what it will ask the source for).
    pub fn granted(&self) -> &Filter {
        &self.granted
    }

    /// Whether the stream has ended (its terminal message was produced, or
    /// it was cancelled).
    pub fn is_finished(&self) -> bool {
        self.waiting.is_none() && self.pull.as_ref().is_none_or(Pull::is_finished)
    }

    /// Sets the reason the source is closed with if the stream is dropped
    /// before it ends (default [`CloseReason::Disconnected`]). An HTTP
    /// transport, where a closed response is the client cancelling, sets
    /// [`CloseReason::Cancelled`].
    pub fn set_drop_reason(&mut self, reason: CloseReason) {
        self.drop_reason = reason;
        if let Some(pull) = &mut self.pull {
            pull.set_drop_reason(reason);
        }
    }

    /// Waits until the stream's source is open: at once, unless the
    /// service's demand hooks (`Demand`) must first attach what it
    /// asks for. A transport that answers a refusal differently from a
    /// stream (HTTP answers it as plain JSON, before any event-stream
    /// head) awaits this before it starts one; otherwise the refusal is
    /// the stream's first and only message.
    ///
    /// # Errors
    ///
    /// The hooks' refusal, or the source's, with the request's id; the
    /// stream has then ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: the attach stays in the stream until it settles.
    pub async fn opened(&mut self) -> Result<(), Refusal> {
        let Some(waiting) = &mut self.waiting else {
            return Ok(());
        };
        let outcome = (&mut waiting.attach).await;
        let waiting = self.waiting.take().expect("it was waiting");
        // A refused stream's lease goes with it: nothing was opened.
        let opened =
            (waiting.open)(outcome).map_err(|error| Refusal::new(self.id.clone(), error))?;
        let mut pull = Pull::new(opened.handle, waiting.lease);
        pull.set_drop_reason(self.drop_reason);
        self.pull = Some(pull);
        self.granted = opened.granted;
        Ok(())
    }

    /// The next message to write, or `None` once the stream has ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe when the source's `next` is (as the [`Hub`](crate::Hub)'s
    /// is): dropping the future loses no event.
    pub async fn next_message(&mut self) -> Option<Message> {
        if self.is_finished() {
            return None;
        }
        if !self.acknowledged {
            if let Err(refusal) = self.opened().await {
                return Some(refusal.to_message().into());
            }
            self.acknowledged = true;
            return Some(acknowledgement(self.stamp.as_json(), &self.granted).into());
        }
        if self.granted.is_empty() {
            // Rule 8.
            self.cancel(CloseReason::Complete);
            return Some(completion(self.stamp.as_json(), &self.server_info).into());
        }
        let mut skipped = 0u32;
        let message = loop {
            match self.pull.as_mut()?.next().await? {
                // Rule 5: what the client was not granted is never sent.
                Pulled::Event(event) if !self.granted.matches(event.kind()) => {
                    skipped += 1;
                    yield_every(SKIPS_PER_YIELD, skipped).await;
                }
                Pulled::Event(event) => break event.stamped(&self.stamp),
                Pulled::Complete => break self.graceful_end(),
                Pulled::Failed(error) => {
                    break error_response(self.stamp.as_json(), &error).into();
                }
            }
        };
        Some(message)
    }

    /// The last message of a source that completed, in the service's
    /// dialect.
    fn graceful_end(&self) -> Message {
        match self.teardown {
            Teardown::Complete => completion(self.stamp.as_json(), &self.server_info).into(),
            Teardown::Cancelled => cancellation(self.stamp.as_json()).into(),
        }
    }

    /// Ends the stream for `reason` without another message: the client
    /// cancelled it, or the transport is gone.
    pub fn cancel(&mut self, reason: CloseReason) {
        self.waiting = None;
        if let Some(pull) = &mut self.pull {
            pull.finish(reason);
        }
    }
}

impl<H: SourceHandle> std::fmt::Debug for ListenStream<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenStream")
            .field("id", &self.id)
            .field("granted", &self.granted)
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}
