//! The bounded queue under every listener: the hub's own queues, the
//! relay's outbound queue and the client's buffer are each one of these.
//!
//! A [`Queue`] holds events up to its [`Settings`] (a count, a byte bound,
//! an [`Overflow`] policy, coalescing), and its reader's state: the lag it
//! is owed, how it ends, whom to wake, and where every event went. Its
//! invariants are kept inside it:
//!
//! - **Accounting.** Every event pushed is, at every moment, exactly one of
//!   delivered, dropped by the policy, coalesced into a pending copy,
//!   still queued, or discarded at close:
//!   `matched = delivered + dropped + coalesced + queued + discarded`
//!   ([`Counts::is_balanced`]).
//! - **Order.** A pop hands out lag first (the events lost before what
//!   follows, like `broadcast`'s `Lagged`), then items in the order they
//!   were pushed, then how the queue ended, once; then only
//!   [`Popped::Closed`].
//!
//! Besides events, a queue may hold its owner's markers (`T` other than
//! [`Event`], see [`Queued`]): they keep their place among the events, take
//! no room, and are never dropped or coalesced. `E` is how its owner ends
//! it.
//!
//! A queue takes no lock: share it behind your own, push and pop under it,
//! and wake the reader (the [`Waker`] that
//! [`Queue::wakeup`] gives after a push, or the call that ended it) once
//! the lock is released.
//!
//! ```
//! use mcp_subscriptions::queue::{Popped, Pushed, Queue, Settings};
//! use mcp_subscriptions::{Event, Overflow};
//!
//! let mut queue: Queue = Queue::new(Settings::new(2).with_overflow(Overflow::DropOldest));
//! for uri in ["a", "b", "c"] {
//!     queue.push(&Event::resource_updated(uri));
//! }
//! queue.finish(());
//! assert_eq!(queue.pop(), Some(Popped::Lagged(1)));
//! assert_eq!(queue.pop(), Some(Popped::Item(Event::resource_updated("b"))));
//! assert_eq!(queue.pop(), Some(Popped::Item(Event::resource_updated("c"))));
//! assert_eq!(queue.pop(), Some(Popped::End(())));
//! assert_eq!(queue.pop(), Some(Popped::Closed));
//! let counts = queue.counts();
//! assert_eq!((counts.matched, counts.delivered, counts.dropped), (3, 2, 1));
//! assert!(counts.is_balanced());
//! # assert_eq!(queue.push(&Event::tools_list_changed()), Pushed::NotOpen);
//! ```
//!
//! Across tasks, behind a lock of your own, held only within one poll and
//! never across a wait:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use std::sync::{Arc, Mutex};
//!
//! use mcp_subscriptions::Event;
//! use mcp_subscriptions::queue::{Popped, Queue, Settings};
//!
//! let queue: Arc<Mutex<Queue>> = Arc::new(Mutex::new(Queue::new(Settings::default())));
//! let reader = tokio::spawn({
//!     let queue = Arc::clone(&queue);
//!     async move { std::future::poll_fn(|cx| queue.lock().unwrap().poll_pop(cx)).await }
//! });
//! tokio::task::yield_now().await; // the reader waits
//! let waker = {
//!     let mut queue = queue.lock().unwrap();
//!     queue.push(&Event::tools_list_changed());
//!     queue.wakeup()
//! };
//! waker.expect("the reader waits").wake(); // once the lock is released
//! assert_eq!(reader.await.unwrap(), Popped::Item(Event::tools_list_changed()));
//! # }
//! ```

mod bounded;
pub(crate) mod budget;
mod counts;
mod overflow;
mod popped;
pub(crate) mod reader;
mod settings;
mod succession;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::task::{Context, Poll, Waker};

pub(crate) use bounded::Bounded;
pub use bounded::{Pushed, Queued};
pub use counts::Counts;
pub use overflow::Overflow;
pub(crate) use popped::Handout;
pub use popped::Popped;
use reader::{Reader, Snapshot, Stored, Waiter};
pub use settings::{DEFAULT_CAPACITY, DEFAULT_MAX_QUEUED_BYTES, Settings};

use crate::event::Event;

/// A bounded queue of events (and its owner's markers, `T`) with its
/// reader's state, ended by its owner with an `E`; see the [module
/// docs](self).
#[derive(Debug)]
pub struct Queue<T = Event, E = ()> {
    reader: Reader<E>,
    items: Bounded<T>,
}

impl<T: Queued, E> Queue<T, E> {
    /// An empty queue under `settings`.
    pub fn new(settings: Settings) -> Self {
        Self::with(
            Reader::default(),
            Bounded::new(settings, None, VecDeque::new(), 0),
        )
    }

    pub(crate) fn with(reader: Reader<E>, items: Bounded<T>) -> Self {
        Self { reader, items }
    }

    /// Offers `event`: queued, coalesced into a pending copy, or left to
    /// the overflow policy. Never blocks; a reader waiting for it is woken
    /// by the [`wakeup`](Self::wakeup) taken after.
    #[inline(always)]
    pub fn push(&mut self, event: &Event) -> Pushed {
        self.items.push(&mut self.reader, event)
    }

    /// Queues a marker after what is queued, while the queue is open. It
    /// replaces the last item when that is a marker too and `supersedes`
    /// says so (a re-listen replacing one still unread).
    pub fn push_marker(&mut self, marker: T, supersedes: impl FnOnce(&T) -> bool) {
        if self.reader.is_open() {
            self.items.push_marker(marker, supersedes);
        }
    }

    /// Notes `lost` events that never reached the queue (a source's own
    /// loss): the reader is told of them as lag before its next item.
    /// They are counted nowhere here, as they were never matched.
    pub fn add_lag(&mut self, lost: u64) {
        if self.reader.is_open() {
            self.reader.lag += lost;
        }
    }

    /// Takes the next lag, item or end, if any.
    pub fn pop(&mut self) -> Option<Popped<T, E>> {
        self.pop_or_register(|_| {})
    }

    /// As [`pop`](Self::pop), but when there is nothing yet the task in
    /// `cx` is woken by the next [`wakeup`](Self::wakeup).
    pub fn poll_pop(&mut self, cx: &Context<'_>) -> Poll<Popped<T, E>> {
        let popped = self.pop_or_register(|waiter| {
            if !matches!(waiter, Some(Waiter::Task(waker)) if waker.will_wake(cx.waker())) {
                *waiter = Some(Waiter::Task(cx.waker().clone()));
            }
        });
        popped.map_or(Poll::Pending, Poll::Ready)
    }

    /// The reader to wake, if one is waiting: take it after a push, a
    /// marker or lag, and wake it once no lock is held (waking runs the
    /// executor's code, which must not find the lock held).
    pub fn wakeup(&mut self) -> Option<Waker> {
        self.reader.waiter.take().map(Waiter::into_waker)
    }

    /// Stops taking events: the reader drains what is queued, then gets
    /// [`Popped::End`] with `end`. Only an open queue finishes: the first
    /// end stays (an overflow is one). Returns the reader to wake.
    pub fn finish(&mut self, end: E) -> Option<Waker> {
        self.reader.finish(end).map(Waiter::into_waker)
    }

    /// Ends the queue at once: what it holds is discarded (and counted so),
    /// and the reader gets [`Popped::End`] with `end` in the place of any
    /// end it has not yet been told. Returns the reader to wake.
    pub fn close(&mut self, end: E) -> Option<Waker> {
        self.close_with(end).map(Waiter::into_waker)
    }

    /// As [`close`](Self::close), with the waiter as the hub wakes it.
    pub(crate) fn close_with(&mut self, end: E) -> Option<Waiter> {
        let discarded = self.discard();
        self.reader.close_with(end, discarded)
    }

    /// Ends the queue at once, as [`close`](Self::close) does, with no end
    /// to tell: the reader's next pop is [`Popped::Closed`].
    pub(crate) fn stop(&mut self) -> Option<Waiter> {
        let discarded = self.discard();
        self.reader.close(discarded)
    }

    /// Empties it; how many events it held.
    fn discard(&mut self) -> u64 {
        self.items.clear() as u64
    }

    /// Whether its reader was told how it ended: every pop returns
    /// [`Popped::Closed`].
    pub fn is_closed(&self) -> bool {
        matches!(self.reader.phase, reader::Phase::Ended)
    }

    /// The rendered size of the events queued.
    pub fn bytes(&self) -> usize {
        self.items.bytes()
    }

    /// Where every event pushed is now.
    pub fn counts(&self) -> Counts {
        self.reader.counts(&self.stored())
    }

    fn stored(&self) -> Stored {
        Stored {
            matched: self.items.matched(),
            coalesced: self.items.coalesced(),
            lost: 0,
            queued: self.items.len() as u64,
            bytes: self.items.bytes(),
        }
    }

    /// A copy of its state for the hub's statistics.
    pub(crate) fn snapshot(&self) -> Snapshot {
        self.reader.snapshot(self.stored(), self.items.settings())
    }

    /// As [`pop`](Self::pop), letting `register` install a waiter of any
    /// kind when there is nothing yet.
    #[inline(always)]
    pub(crate) fn pop_or_register<O: Handout<T, E>>(
        &mut self,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<O> {
        self.reader.pop_or_register(&mut self.items, register)
    }

    pub(crate) fn reader(&mut self) -> &mut Reader<E> {
        &mut self.reader
    }
}
