//! A stream's hold on its source: pulling events, and closing the source
//! exactly once, whatever ends the stream; and its lease, what it holds
//! only while it lasts: its principal's slot, given back the moment the
//! stream ends however it ends (not when the stream's value is dropped),
//! and its expiry.

#[cfg(any_transport)]
use std::future::Future as _;
use std::panic::AssertUnwindSafe;
#[cfg(any_transport)]
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::FutureExt;
use rmcp::model::{ErrorCode, ErrorData};

use super::limits::Slot;
use crate::error::StreamError;
use crate::event::Event;
use crate::source::{CloseReason, Next, SourceHandle};

/// What a pull produced.
pub(crate) enum Pulled {
    Event(Event),
    /// The source completed gracefully; it is closed.
    Complete,
    /// The stream failed with this error; the source is closed.
    Failed(ErrorData),
}

/// What a stream holds while it lasts, from its admission.
#[derive(Debug, Default)]
pub(crate) struct Lease {
    /// Its place under its principal's limit, given back when dropped.
    #[allow(dead_code, reason = "held for its drop")]
    pub(crate) slot: Option<Slot>,
    /// When it ends by itself, if it does (besides its slot being taken).
    pub(crate) ends: Option<Deadline>,
    /// Its keys, held against the service's demand hooks.
    #[cfg(any_transport)]
    pub(crate) demand: Option<super::demand::Hold>,
    /// The timer of `ends`, made at the first pull that waits for it:
    /// boxed, so that a stream without an end (most) keeps a pointer for
    /// it, not the timer, and one with an end makes it once.
    #[cfg(any_transport)]
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

/// When a stream ends by itself, and why: its grant's expiry or its
/// lifetime, whichever comes first. Small, since every held stream
/// carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    /// [`CloseReason::Expired`] or [`CloseReason::Lifetime`].
    reason: CloseReason,
}

/// A stream ended for `reason` with `error`.
fn ended(reason: CloseReason, error: &StreamError) -> (CloseReason, Pulled) {
    (reason, Pulled::Failed(error.to_error_data()))
}

impl Deadline {
    /// The error the stream ends with.
    fn error(self) -> StreamError {
        match self.reason {
            CloseReason::Lifetime => StreamError::Lifetime,
            _ => StreamError::Expired,
        }
    }
}

impl Lease {
    /// A lease of `slot` until `expires_at`, holding no keys yet.
    pub(crate) fn new(slot: Option<Slot>, expires_at: Option<Instant>) -> Self {
        Self {
            slot,
            ends: expires_at.map(|at| Deadline {
                at,
                reason: CloseReason::Expired,
            }),
            #[cfg(any_transport)]
            demand: None,
            #[cfg(any_transport)]
            timer: None,
        }
    }

    /// How the stream ends now by its lease, if it does: its slot taken,
    /// or its expiry or lifetime passed.
    fn ended_now(&self) -> Option<(CloseReason, Pulled)> {
        if self.slot.as_ref().is_some_and(Slot::is_replaced) {
            return Some(ended(CloseReason::Replaced, &StreamError::Replaced));
        }
        let ending = self.ends.filter(|ending| Instant::now() >= ending.at)?;
        Some(ended(ending.reason, &ending.error()))
    }

    /// Ready when the stream ends by its lease: its slot taken by a newer
    /// stream of its principal, or its expiry or lifetime passed.
    #[cfg(any_transport)]
    fn poll_ended(&mut self, cx: &mut Context<'_>) -> Poll<(CloseReason, Pulled)> {
        if let Some(slot) = &self.slot
            && slot.poll_replaced(cx).is_ready()
        {
            return Poll::Ready(ended(CloseReason::Replaced, &StreamError::Replaced));
        }
        if let Some(ending) = self.ends {
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(ending.at.into())));
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(ended(ending.reason, &ending.error()));
            }
        }
        Poll::Pending
    }

    /// Ends it at `at` for the end of its lifetime, unless it expires
    /// first.
    #[cfg(any_transport)]
    pub(crate) fn end_lifetime_at(&mut self, at: Instant) {
        if self.ends.is_none_or(|ends| at < ends.at) {
            self.ends = Some(Deadline {
                at,
                reason: CloseReason::Lifetime,
            });
        }
    }
}

pub(crate) struct Pull<H: SourceHandle> {
    handle: Option<H>,
    drop_reason: CloseReason,
    lease: Lease,
}

impl<H: SourceHandle> Pull<H> {
    pub(crate) fn new(handle: H, lease: Lease) -> Self {
        Self {
            handle: Some(handle),
            drop_reason: CloseReason::Disconnected,
            lease,
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.handle.is_none()
    }

    pub(crate) fn set_drop_reason(&mut self, reason: CloseReason) {
        self.drop_reason = reason;
    }

    /// Pulls the next event or the end; `None` once ended. Lag reports are
    /// skipped: no transport has a way to say them. A source that panics,
    /// or that reports itself closed underneath the stream, fails it; so
    /// does its lease's end (its expiry or lifetime, or its slot taken by
    /// a newer stream of its principal), waited for on tokio's timer where
    /// a transport brings it (and otherwise checked at each pull).
    pub(crate) async fn next(&mut self) -> Option<Pulled> {
        let handle = self.handle.as_mut()?;
        let pulled = match self.lease.ended_now() {
            Some(ended) => Err(ended),
            #[cfg(any_transport)]
            None => tokio::select! {
                pulled = pull(handle) => pulled,
                ended = std::future::poll_fn(|cx| self.lease.poll_ended(cx)) => Err(ended),
            },
            #[cfg(not(any_transport))]
            None => pull(handle).await,
        };
        match pulled {
            Ok(event) => Some(Pulled::Event(event)),
            Err((reason, end)) => {
                self.finish(reason);
                Some(end)
            }
        }
    }

    /// Closes the source for `reason`, once, and gives back what the lease
    /// holds (its slot, its keys): the stream has ended.
    pub(crate) fn finish(&mut self, reason: CloseReason) {
        if let Some(mut handle) = self.handle.take() {
            handle.close(reason);
        }
        self.lease = Lease {
            ends: self.lease.ends,
            ..Lease::default()
        };
    }
}

impl<H: SourceHandle> Drop for Pull<H> {
    fn drop(&mut self) {
        self.finish(self.drop_reason);
    }
}

/// The next event of `handle`, or how the stream ends and why.
async fn pull<H: SourceHandle>(handle: &mut H) -> Result<Event, (CloseReason, Pulled)> {
    let mut skipped = 0u32;
    loop {
        match AssertUnwindSafe(handle.next()).catch_unwind().await {
            Ok(Next::Event(event)) => return Ok(event),
            Ok(Next::Lagged(_)) => {
                skipped += 1;
                yield_every(SKIPS_PER_YIELD, skipped).await;
            }
            Ok(Next::Complete) => return Err((CloseReason::Complete, Pulled::Complete)),
            Ok(Next::Failed(err)) => {
                return Err((CloseReason::Error, Pulled::Failed(err.to_error_data())));
            }
            Ok(Next::Closed) => return Err((CloseReason::Error, internal_error(CLOSED))),
            Err(_panic) => return Err((CloseReason::Error, internal_error(PANICKED))),
        }
    }
}

/// How many items a stream may skip in a row before it lets other tasks
/// run: a source that keeps returning ready items the stream does not send
/// must not starve its executor, or a cancel racing the stream.
pub(crate) const SKIPS_PER_YIELD: u32 = 64;

/// Yields to the executor once every `every` calls (by `count`).
pub(crate) async fn yield_every(every: u32, count: u32) {
    if !count.is_multiple_of(every) {
        return;
    }
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// The message of a source that panicked.
const PANICKED: &str = "Subscription source panicked";
/// The message of a source closed underneath its stream.
const CLOSED: &str = "Subscription closed by the server";

fn internal_error(message: &'static str) -> Pulled {
    Pulled::Failed(ErrorData::new(ErrorCode::INTERNAL_ERROR, message, None))
}
