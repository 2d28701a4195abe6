//! Where a listener's events wait: its own queue, or a seat in a lane it
//! shares with listeners whose queues would be alike.
//!
//! A seat can move out of its lane into a queue of its own (see `lane`).
//! An operation on a moved seat is done on its queue; a listener that
//! finds its seat moved (it looks when it has nothing to read:
//! [`Inbox::moved`]) reads the queue directly from then on.

use super::lane::{Lane, Seat};
use super::own_queue::OwnQueue;
use crate::queue::reader::{Snapshot, Waiter};
use crate::source::Next;
use crate::sync::Arc;

#[derive(Debug)]
pub(crate) enum Inbox {
    Own(Arc<OwnQueue>),
    /// A lane, and the member's seat in it.
    Seat(Arc<Lane>, Seat),
}

impl Inbox {
    /// Takes the next item, or, when there is none yet, lets `register`
    /// install a waiter (see [`Reader::pop_or_register`]).
    ///
    /// [`Reader::pop_or_register`]: crate::queue::reader::Reader::pop_or_register
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &self,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        match self {
            Self::Own(queue) => queue.pop_or_register(register),
            Self::Seat(lane, seat) => lane.pop_or_register(seat, register),
        }
    }

    /// The queue a seat moved out to, if it did.
    #[inline]
    pub(crate) fn moved(&self) -> Option<Arc<OwnQueue>> {
        match self {
            Self::Seat(lane, seat) if lane.has_moved_out() => lane.moved(seat),
            _ => None,
        }
    }

    /// Passes on every wake-up its lane's chain holds, as a member that
    /// leaves the lane for its own queue must; nothing for a queue.
    pub(crate) fn pass_on_all(&self) {
        if let Self::Seat(lane, _) = self {
            lane.pass_on_all();
        }
    }

    /// Removes a waiter that gave up.
    pub(crate) fn forget_waiter(&self) {
        match self {
            Self::Own(queue) => queue.forget_waiter(),
            Self::Seat(lane, seat) => lane.forget_waiter(seat),
        }
    }

    /// Stops taking events; the reader drains, then gets `Complete`.
    /// Returns the waiter to wake once no lock is held.
    pub(crate) fn complete(&self) -> Option<Waiter> {
        match self {
            Self::Own(queue) => queue.complete(),
            Self::Seat(lane, seat) => lane.complete(seat),
        }
    }

    /// Ends it, discarding what it holds, and wakes its reader. Idempotent.
    pub(crate) fn close(&self) {
        let waiter = match self {
            Self::Own(queue) => queue.stop(),
            Self::Seat(lane, seat) => lane.stop(seat),
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    /// Ends it as [`close`](Self::close) does, but its reader is told it
    /// was revoked. Returns the waiter to wake once no lock is held.
    pub(crate) fn revoke(&self) -> Option<Waiter> {
        match self {
            Self::Own(queue) => queue.revoke(),
            Self::Seat(lane, seat) => lane.revoke(seat),
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        match self {
            Self::Own(queue) => queue.snapshot(),
            Self::Seat(lane, seat) => lane.snapshot(seat),
        }
    }
}
