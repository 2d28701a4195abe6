//! The reading end of one subscription.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use futures_core::Stream;

use super::entry::Entry;
use super::id::ListenerId;
use super::own_queue::OwnQueue;
use super::shared::Shared;
use super::stats::{ListenerStats, Retirement};
use crate::error::{OpenError, StreamError};
use crate::filter::Filter;
use crate::queue::reader::Waiter;
use crate::source::{CloseReason, Next, SourceHandle};
use crate::sync::{Arc, park_until};

/// One subscription to a [`Hub`](crate::Hub): a bounded queue of the events
/// its granted filter matches, read in publish order.
///
/// Read it with [`next`](Self::next) (async, cancel-safe),
/// [`next_timeout`](Self::next_timeout) (blocking) or
/// [`try_next`](Self::try_next), or as a [`Stream`]. Dropping it, or
/// [closing](Self::close) it, unregisters it at once; events it still held
/// are counted as discarded.
pub struct Listener {
    hub: Arc<Shared>,
    /// Its own, until it finds the seat it had in a lane moved out to a
    /// queue of its own (see `lane`): then one for that queue.
    entry: Arc<Entry>,
    /// A terminal item was returned, so the stream form ends.
    finished: bool,
    /// The hub no longer has it registered: closing again need not take
    /// the registry's write lock.
    retired: bool,
}

impl Listener {
    pub(crate) fn new(hub: Arc<Shared>, entry: Arc<Entry>) -> Self {
        Self {
            hub,
            entry,
            finished: false,
            retired: false,
        }
    }

    /// This listener's id, as listed in [`Hub::listeners`](crate::Hub::listeners).
    pub fn id(&self) -> ListenerId {
        self.entry.id
    }

    /// The filter the hub granted: the request narrowed by the hub's
    /// capabilities. This is what the acknowledgement carries.
    pub fn filter(&self) -> &Filter {
        &self.entry.filter
    }

    /// Changes what this listener receives, in place: from now on it gets
    /// the events `requested` matches, narrowed by the hub's capabilities,
    /// as [`filter`](Self::filter) then says. Nothing is lost for what both
    /// filters match, and events it already holds stay queued (a reader
    /// that must not see what the new filter leaves out checks
    /// [`filter`](Self::filter) as it reads). An older revision's session,
    /// whose `resources/subscribe` calls grow and shrink what it watches,
    /// is one listener changed this way.
    ///
    /// # Errors
    ///
    /// - [`OpenError::InvalidParams`] when `requested` names more distinct
    ///   URIs than the hub's limit (the filter is unchanged);
    /// - [`OpenError::Completed`] after the hub was completed, or once
    ///   this listener has ended.
    pub fn refilter(&mut self, requested: &Filter) -> Result<(), OpenError> {
        let filter = self.hub.config.grant(requested)?;
        let watchers = {
            let mut registry = self.hub.registry.write();
            if registry.completed {
                return Err(OpenError::Completed);
            }
            let entry = registry
                .refilter(self.entry.id, filter)
                .ok_or(OpenError::Completed)?;
            // The listener reads the new entry; dropping its old one gives
            // back the seat it had in a lane, if any.
            self.entry = entry;
            registry.interest.take_wakers()
        };
        watchers.into_iter().for_each(std::task::Waker::wake);
        Ok(())
    }

    /// The next item if one is ready, without waiting.
    pub fn try_next(&mut self) -> Option<Next> {
        let next = self.pop_or_register(|_| {});
        next.inspect(|next| self.observe(next))
    }

    /// Waits for the next item.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: an event leaves the queue only in the poll that returns
    /// it, so dropping the future (in a `select!`, on a timeout) loses
    /// nothing.
    #[allow(
        clippy::should_implement_trait,
        reason = "an async pull, named like `Source::next` and `StreamExt::next`"
    )]
    pub fn next(&mut self) -> NextItem<'_> {
        NextItem {
            listener: self,
            registered: false,
        }
    }

    /// Waits at most `timeout` for the next item; `None` if none came.
    ///
    /// # Blocking
    ///
    /// Parks the calling thread; a publish wakes it. Do not call it from an
    /// async task.
    pub fn next_timeout(&mut self, timeout: Duration) -> Option<Next> {
        // A timeout too large to add (`Duration::MAX`) means no deadline.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let next = self.pop_or_register(|slot| {
                *slot = Some(Waiter::Thread(thread::current()));
            });
            if let Some(next) = next {
                self.observe(&next);
                return Some(next);
            }
            // A publish between the check and this park leaves the unpark
            // token set, so the park returns at once instead of missing it.
            if !park_until(deadline) {
                self.entry.inbox.forget_waiter();
                return None;
            }
        }
    }

    /// Ends this subscription for `reason`: it stops matching, what it held
    /// is discarded, and every later pull returns [`Next::Closed`].
    /// Closing twice is harmless.
    pub fn close(&mut self, reason: CloseReason) {
        self.entry.inbox.close();
        self.retire(Retirement::Closed(reason));
    }

    fn retire(&mut self, why: Retirement) {
        if !std::mem::replace(&mut self.retired, true) {
            self.hub.retire(self.entry.id, why);
        }
    }

    /// A snapshot of this listener's counts.
    pub fn stats(&self) -> ListenerStats {
        self.entry.stats()
    }

    /// As [`Inbox::pop_or_register`]. With nothing to read, it looks
    /// whether its seat moved out to a queue of its own, and reads that
    /// from then on: the look costs nothing on the way of an event.
    #[inline(always)]
    fn pop_or_register(&mut self, register: impl FnOnce(&mut Option<Waiter>)) -> Option<Next> {
        let next = self.entry.inbox.pop_or_register(register);
        if next.is_none()
            && let Some(queue) = self.entry.inbox.moved()
        {
            self.follow(queue);
        }
        next
    }

    /// Reads `queue`, where its seat moved, from now on; the old entry,
    /// dropped, frees the seat.
    #[cold]
    fn follow(&mut self, queue: Arc<OwnQueue>) {
        self.entry.inbox.pass_on_all();
        self.entry = Arc::new(self.entry.in_queue(self.entry.filter.clone(), queue));
    }

    #[inline(always)]
    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        let next = self.pop_or_register(|slot| match slot {
            // The same task polling again: keep its waker, skip the clone.
            Some(Waiter::Task(waker)) if waker.will_wake(cx.waker()) => {}
            _ => *slot = Some(Waiter::Task(cx.waker().clone())),
        });
        match next {
            Some(next) => {
                self.observe(&next);
                Poll::Ready(next)
            }
            None => Poll::Pending,
        }
    }

    /// Bookkeeping on every item handed out: an end retires the listener
    /// (its tally is final once a terminal item was returned). An event,
    /// the common case, needs none.
    #[inline(always)]
    fn observe(&mut self, next: &Next) {
        if !matches!(next, Next::Event(_)) {
            self.observe_rest(next);
        }
    }

    #[cold]
    fn observe_rest(&mut self, next: &Next) {
        match next {
            Next::Complete => self.retire(Retirement::Closed(CloseReason::Complete)),
            // The hub retired a revoked listener as it revoked it.
            Next::Failed(StreamError::Revoked) => self.retired = true,
            // Otherwise only the overflow policy fails a hub listener.
            Next::Failed(_) => self.retire(Retirement::Overflow),
            _ => {}
        }
        if next.is_terminal() {
            self.finished = true;
        }
    }
}

impl Drop for Listener {
    /// A listener dropped without closing (its task aborted, panicked or
    /// simply went away) counts as disconnected.
    fn drop(&mut self) {
        self.close(CloseReason::Disconnected);
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("id", &self.entry.id)
            .field("filter", &self.entry.filter)
            .finish_non_exhaustive()
    }
}

impl Stream for Listener {
    /// Events and lag reports, then the terminal [`Next::Complete`] or
    /// [`Next::Failed`]; the stream ends after that, or at once when closed.
    type Item = Next;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Next>> {
        if self.finished {
            return Poll::Ready(None);
        }
        self.poll_item(cx).map(|next| match next {
            Next::Closed => None,
            next => Some(next),
        })
    }
}

/// The future returned by [`Listener::next`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct NextItem<'a> {
    listener: &'a mut Listener,
    registered: bool,
}

impl Future for NextItem<'_> {
    type Output = Next;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Next> {
        let poll = self.listener.poll_item(cx);
        self.registered = poll.is_pending();
        poll
    }
}

impl Drop for NextItem<'_> {
    fn drop(&mut self) {
        // A future dropped while waiting leaves no stale waker for the next
        // publish to wake for nothing.
        if self.registered {
            self.listener.entry.inbox.forget_waiter();
        }
    }
}

/// The hub's listener is the handle a [`Hub`](crate::Hub) source hands out.
impl SourceHandle for Listener {
    fn next(&mut self) -> impl Future<Output = Next> + Send {
        Listener::next(self)
    }

    fn next_timeout(&mut self, timeout: Duration) -> Option<Next> {
        Listener::next_timeout(self, timeout)
    }

    fn close(&mut self, reason: CloseReason) {
        Listener::close(self, reason);
    }
}
