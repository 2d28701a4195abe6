//! The interface a serving layer pulls a stream's events from.

use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use rmcp::model::RequestId;

use crate::error::{OpenError, StreamError};
use crate::event::Event;
use crate::filter::{Capabilities, Filter};
use crate::hub::Overflow;

/// What pulling from a stream produced.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Next {
    /// The next event, in publish order.
    Event(Event),
    /// The listener lost this many events to its
    /// [`DropOldest`](Overflow::DropOldest) policy since it last pulled; it
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
}

/// What a source learns about the stream being opened, and per-stream
/// options.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenContext {
    /// The id of the `subscriptions/listen` request, when there is one.
    pub subscription_id: Option<RequestId>,
    /// This stream's queue capacity, overriding the source's default.
    pub capacity: Option<NonZeroUsize>,
    /// This stream's overflow policy, overriding the source's default.
    pub overflow: Option<Overflow>,
    /// Whether this stream's queue coalesces duplicate signals, overriding
    /// the source's default.
    pub coalesce: Option<bool>,
}

impl OpenContext {
    /// Records the listen request's id.
    pub fn with_subscription_id(mut self, id: RequestId) -> Self {
        self.subscription_id = Some(id);
        self
    }

    /// Overrides the queue capacity for this stream.
    ///
    /// # Panics
    ///
    /// When `capacity` is zero.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        let capacity =
            NonZeroUsize::new(capacity).expect("a listener's capacity must be at least 1");
        self.capacity = Some(capacity);
        self
    }

    /// Overrides the overflow policy for this stream.
    pub fn with_overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = Some(overflow);
        self
    }

    /// Overrides whether this stream's queue coalesces duplicate signals.
    pub fn with_coalesce(mut self, coalesce: bool) -> Self {
        self.coalesce = Some(coalesce);
        self
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
/// for; it grants a subset and hands back a handle. The serving layer then
/// pulls with [`next`](Source::next) only after the previous event was
/// written, and closes the handle whenever the stream ends, for any reason.
/// The [`Hub`](crate::Hub) is one source; an application can write its own
/// (a directory watcher, a timer, a database change feed) and serve it the
/// same way (see `examples/custom_source.rs`).
///
/// # Closing
///
/// [`close`](Source::close) says why the stream ended. After it, `next` on
/// the same handle returns [`Next::Closed`], from whichever thread it is
/// called, and never panics.
///
/// # Example
///
/// A source that reports one tools-list change and completes:
///
/// ```
/// use std::time::Duration;
/// use mcp_subscriptions::{CloseReason, Event, Filter, Next, OpenContext, OpenError, Opened, Source};
///
/// struct Once;
///
/// impl Source for Once {
///     type Handle = Option<Event>;
///
///     fn open(&self, requested: &Filter, _: &OpenContext) -> Result<Opened<Self::Handle>, OpenError> {
///         let granted = if requested.tools_list_changed() {
///             Filter::new().with_tools_list_changed()
///         } else {
///             Filter::new()
///         };
///         let pending = granted.tools_list_changed().then(Event::tools_list_changed);
///         Ok(Opened::new(granted, pending))
///     }
///
///     async fn next(&self, handle: &mut Self::Handle) -> Next {
///         handle.take().map_or(Next::Complete, Next::Event)
///     }
///
///     fn close(&self, handle: &mut Self::Handle, _: CloseReason) {
///         *handle = None;
///     }
/// }
///
/// let mut opened = Once.open(&Filter::new().with_tools_list_changed(), &OpenContext::default()).unwrap();
/// let first = Once.next_timeout(&mut opened.handle, Duration::from_secs(1));
/// assert!(matches!(first, Some(Next::Event(_))));
/// ```
pub trait Source: Send + Sync {
    /// One open stream's state.
    type Handle: Send;

    /// The notification kinds this source can serve, which a server
    /// advertises (see [`Advertise`](crate::Advertise)) and requests are
    /// narrowed to. The default claims every core kind; override it when
    /// the source serves fewer.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
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

    /// Waits for the next item of the stream.
    ///
    /// # Cancel safety
    ///
    /// Implementations must be cancel-safe: dropping the future before it
    /// completes loses no event. The serving layer races it against
    /// cancellation, and [`next_timeout`](Self::next_timeout) drops it on
    /// timeout.
    fn next(&self, handle: &mut Self::Handle) -> impl Future<Output = Next> + Send;

    /// Waits at most `timeout` for the next item, blocking this thread;
    /// `None` when nothing came in time.
    ///
    /// The default drives [`next`](Self::next) on this thread.
    ///
    /// # Blocking
    ///
    /// Blocks the calling thread: do not call it from an async task.
    fn next_timeout(&self, handle: &mut Self::Handle, timeout: Duration) -> Option<Next> {
        block_on_timeout(self.next(handle), timeout)
    }

    /// Ends the stream for `reason`, releasing what the handle holds. After
    /// it, [`next`](Self::next) returns [`Next::Closed`].
    fn close(&self, handle: &mut Self::Handle, reason: CloseReason);
}

/// Parks this thread until unparked or `deadline`; `false` once the
/// deadline has passed.
pub(crate) fn park_until(deadline: Option<Instant>) -> bool {
    match deadline {
        None => thread::park(),
        Some(deadline) => {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            thread::park_timeout(deadline - now);
        }
    }
    true
}

/// Polls `future` on this thread until it is ready or `timeout` passes.
fn block_on_timeout<F: Future>(future: F, timeout: Duration) -> Option<F::Output> {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    // A timeout too large to add (`Duration::MAX`) means no deadline.
    let deadline = Instant::now().checked_add(timeout);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Some(output);
        }
        // A wake between the poll and this park leaves the unpark token set,
        // so the park returns at once instead of missing it.
        if !park_until(deadline) {
            return None;
        }
    }
}
