//! One listen stream, served from a [`Source`] as a sequence of messages.

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use rmcp::model::{ErrorCode, ErrorData, RequestId};

use super::{ListenService, message};
use crate::event::request_id_json;
use crate::filter::Filter;
use crate::source::{CloseReason, Next, Source};

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
///    (with the server's info);
/// 7. a source that fails, is disconnected for overflow, panics or closes
///    underneath ends it with a JSON-RPC error response instead.
pub struct ListenStream<S: Source> {
    service: ListenService<S>,
    handle: Option<S::Handle>,
    id: RequestId,
    id_json: String,
    granted: Filter,
    acknowledged: bool,
    drop_reason: CloseReason,
}

/// The error code and message of a source that panicked.
const PANICKED: &str = "Subscription source panicked";
/// The error code and message of a source closed underneath its stream.
const CLOSED: &str = "Subscription closed by the server";

impl<S: Source> ListenStream<S> {
    pub(super) fn new(
        service: ListenService<S>,
        handle: S::Handle,
        id: RequestId,
        granted: Filter,
    ) -> Self {
        Self {
            service,
            handle: Some(handle),
            id_json: request_id_json(&id),
            id,
            granted,
            acknowledged: false,
            drop_reason: CloseReason::Disconnected,
        }
    }

    /// The listen request's id, which every message carries.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The filter the source granted, which the acknowledgement carries.
    pub fn granted(&self) -> &Filter {
        &self.granted
    }

    /// Whether the stream has ended (its terminal message was produced, or
    /// it was cancelled).
    pub fn is_finished(&self) -> bool {
        self.handle.is_none()
    }

    /// Sets the reason the source is closed with if the stream is dropped
    /// before it ends (default [`CloseReason::Disconnected`]). An HTTP
    /// transport, where a closed response is the client cancelling, sets
    /// [`CloseReason::Cancelled`].
    pub fn set_drop_reason(&mut self, reason: CloseReason) {
        self.drop_reason = reason;
    }

    /// The next message to write, or `None` once the stream has ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe when the source's `next` is (as the [`Hub`](crate::Hub)'s
    /// is): dropping the future loses no event.
    pub async fn next_message(&mut self) -> Option<Vec<u8>> {
        if !self.acknowledged {
            self.acknowledged = true;
            return Some(message::acknowledgement(&self.id_json, &self.granted));
        }
        let handle = self.handle.as_mut()?;
        let source = self.service.source();
        loop {
            let next = AssertUnwindSafe(source.next(handle)).catch_unwind().await;
            let (reason, message) = match next {
                Ok(Next::Event(event)) => {
                    if !self.granted.matches(event.kind()) {
                        continue;
                    }
                    let mut out = Vec::new();
                    event.write_stamped(&self.id, &mut out);
                    return Some(out);
                }
                Ok(Next::Lagged(_)) => continue,
                Ok(Next::Complete) => (
                    CloseReason::Complete,
                    message::completion(&self.id_json, &self.service.options().server_info),
                ),
                Ok(Next::Failed(err)) => (
                    CloseReason::Error,
                    message::error_response(&self.id_json, &err.to_error_data()),
                ),
                Ok(Next::Closed) => (CloseReason::Error, self.internal_error(CLOSED)),
                Err(_panic) => (CloseReason::Error, self.internal_error(PANICKED)),
            };
            self.finish(reason);
            return Some(message);
        }
    }

    /// Ends the stream for `reason` without another message: the client
    /// cancelled it, or the transport is gone.
    pub fn cancel(&mut self, reason: CloseReason) {
        self.finish(reason);
    }

    fn internal_error(&self, message: &'static str) -> Vec<u8> {
        let error = ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None);
        message::error_response(&self.id_json, &error)
    }

    fn finish(&mut self, reason: CloseReason) {
        if let Some(mut handle) = self.handle.take() {
            self.service.source().close(&mut handle, reason);
        }
    }
}

impl<S: Source> Drop for ListenStream<S> {
    fn drop(&mut self) {
        self.finish(self.drop_reason);
    }
}

impl<S: Source> std::fmt::Debug for ListenStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenStream")
            .field("id", &self.id)
            .field("granted", &self.granted)
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}
