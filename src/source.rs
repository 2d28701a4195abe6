//! The interface a serving layer pulls a stream's events from.
//!
//! A [`Source`] is what a server installs: it says what it can serve and
//! opens streams. Each open stream is a [`SourceHandle`] that owns its own
//! state, so whoever serves the stream (a transport task, a test, a
//! blocking thread) holds only the handle, never the source.

use std::future::Future;
use std::time::Duration;

use crate::context::OpenContext;
use crate::error::{OpenError, StreamError};
use crate::event::Event;
use crate::filter::{Capabilities, DEFAULT_MAX_URIS, Filter};
use crate::sync::block_on_timeout;

/// What pulling from a stream produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Next {
    /// The next event, in publish order.
    Event(Event),
    /// The listener lost this many events to its
    /// [`DropOldest`](crate::Overflow::DropOldest) policy since it last pulled; it
    /// stays subscribed and the following pulls continue with the oldest
    /// event it still holds.
    Lagged(u64),
    /// The source ended gracefully; everything it held was delivered.
    Complete,
    /// The stream ended in failure; send [`StreamError::to_error_data`].
    Failed(StreamError),
    /// The handle was closed, or it already reported its end.
    Closed,
}

impl Next {
    /// Whether nothing will follow this item.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Complete | Self::Failed(_) | Self::Closed)
    }
}

/// Why a stream's handle is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CloseReason {
    /// The client cancelled the stream (`notifications/cancelled`, or a
    /// closed HTTP response).
    Cancelled,
    /// The transport went away, or the task serving the stream was dropped,
    /// aborted or panicked.
    Disconnected,
    /// The stream completed gracefully.
    Complete,
    /// The stream ended because of an error.
    Error,
    /// The stream reached the expiry it was granted with.
    Expired,
    /// The stream reached the lifetime its service gives every stream
    /// (`ListenService::with_max_stream_lifetime`).
    Lifetime,
    /// The client stopped acknowledging what was written to it for longer
    /// than the server's bound (`http::Server::with_unacknowledged_timeout`):
    /// it vanished from the network (no FIN, no RST), or kept its window
    /// shut for that long.
    Unacknowledged,
    /// A newer stream of the same principal took its place at the
    /// principal's cap (`PrincipalCap::ReplaceOldest`).
    Replaced,
}

impl CloseReason {
    /// Its name in logs and metrics labels: `cancelled`, `disconnected`,
    /// `complete`, `error`, `expired`, `lifetime`, `unacknowledged` or
    /// `replaced`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::Disconnected => "disconnected",
            Self::Complete => "complete",
            Self::Error => "error",
            Self::Expired => "expired",
            Self::Lifetime => "lifetime",
            Self::Unacknowledged => "unacknowledged",
            Self::Replaced => "replaced",
        }
    }
}

/// A stream a source agreed to serve.
#[derive(Debug)]
#[non_exhaustive]
pub struct Opened<H> {
    /// The subset of the request the source honors; the acknowledgement
    /// carries it, even when empty.
    pub granted: Filter,
    /// What to pull from and eventually close.
    pub handle: H,
}

impl<H> Opened<H> {
    /// A stream granted `granted`, pulled through `handle`.
    pub fn new(granted: Filter, handle: H) -> Self {
        Self { granted, handle }
    }
}

/// Anything a listen stream can be served from.
///
/// A [`Source`] is opened once per stream with the filter the client asked
/// for; it grants a subset and hands back a [`SourceHandle`]. The serving
/// layer then pulls with [`next`](SourceHandle::next) only after the
/// previous event was written, and closes the handle whenever the stream
/// ends, for any reason. The [`Hub`](crate::Hub) is one source; an
/// application can write its own (a directory watcher, a timer, a database
/// change feed) and serve it the same way (see `examples/custom_source.rs`).
///
/// # Example
///
/// A source that reports one tools-list change and completes:
///
/// ```
/// use std::time::Duration;
/// use mcp_subscriptions::{CloseReason, Event, Filter, Next, OpenContext, Opened, Source, SourceHandle};
/// use mcp_subscriptions::error::OpenError;
///
/// struct Once;
/// struct Pending(Option<Event>);
///
/// impl Source for Once {
///     type Handle = Pending;
///
///     fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Pending>, OpenError> {
///         let granted = if requested.tools_list_changed() {
///             Filter::new().with_tools_list_changed()
///         } else {
///             Filter::new()
///         };
///         let pending = granted.tools_list_changed().then(Event::tools_list_changed);
///         Ok(Opened::new(granted, Pending(pending)))
///     }
/// }
///
/// impl SourceHandle for Pending {
///     async fn next(&mut self) -> Next {
///         self.0.take().map_or(Next::Complete, Next::Event)
///     }
///
///     fn close(&mut self, _: CloseReason) {
///         self.0 = None;
///     }
/// }
///
/// let mut opened = Once.open(&Filter::new().with_tools_list_changed(), &OpenContext::default()).unwrap();
/// let first = opened.handle.next_timeout(Duration::from_secs(1));
/// assert!(matches!(first, Some(Next::Event(_))));
/// ```
pub trait Source: Send + Sync {
    /// One open stream, owning its state.
    type Handle: SourceHandle;

    /// The notification kinds this source can serve, which a server
    /// advertises (see [`Capabilities::advertise`]) and requests are
    /// narrowed to. The default claims every core kind; override it when
    /// the source serves fewer.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// The most distinct resource URIs one request may name; more is
    /// refused with `-32602` before the source is opened (default
    /// [`DEFAULT_MAX_URIS`]). The one limit on URIs: the serving layer
    /// reads it from here.
    fn max_uris(&self) -> usize {
        DEFAULT_MAX_URIS
    }

    /// Opens a stream for `requested`, granting a subset of it.
    ///
    /// # Errors
    ///
    /// An [`OpenError`], sent to the client as a JSON-RPC error before any
    /// acknowledgement.
    fn open(
        &self,
        requested: &Filter,
        context: &OpenContext,
    ) -> Result<Opened<Self::Handle>, OpenError>;
}

/// One open stream of a [`Source`]: pulled until it ends, then closed.
///
/// # Design note: why the handle owns its state
///
/// An earlier shape pulled through the source (`source.next(&mut handle)`),
/// so every stream had to keep the whole source (and the service around
/// it) alive beside its handle, and the serving layer and the service
/// referred to each other. With the handle owning its state, a stream is
/// its handle and a few bytes of its own; a source that needs shared state
/// puts an `Arc` of it in each handle, as the [`Hub`](crate::Hub)'s
/// [`Listener`](crate::Listener) does. The cost is that a handle cannot
/// borrow from its source; no source we know of needs to.
///
/// # Closing
///
/// [`close`](Self::close) says why the stream ended. After it,
/// [`next`](Self::next) returns [`Next::Closed`], from whichever thread it
/// is called, and never panics.
pub trait SourceHandle: Send {
    /// Waits for the next item of the stream.
    ///
    /// # Cancel safety
    ///
    /// Implementations must be cancel-safe: dropping the future before it
    /// completes loses no event. The serving layer races it against
    /// cancellation, and [`next_timeout`](Self::next_timeout) drops it on
    /// timeout.
    fn next(&mut self) -> impl Future<Output = Next> + Send;

    /// Waits at most `timeout` for the next item, blocking this thread;
    /// `None` when nothing came in time.
    ///
    /// The default drives [`next`](Self::next) on this thread.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread: do not call it from an async task.
    fn next_timeout(&mut self, timeout: Duration) -> Option<Next> {
        block_on_timeout(self.next(), timeout)
    }

    /// Ends the stream for `reason`, releasing what the handle holds. After
    /// it, [`next`](Self::next) returns [`Next::Closed`].
    fn close(&mut self, reason: CloseReason);
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::Next;

    /// Every item a reader takes is moved a few times on its way out:
    /// three words, not the ten an unboxed source error would make it.
    #[test]
    fn an_item_is_three_words_at_most() {
        assert!(size_of::<Next>() <= 3 * size_of::<usize>());
    }
}
