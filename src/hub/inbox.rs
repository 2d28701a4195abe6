//! Where a listener's events wait: its own queue, or a seat in a lane it
//! shares with listeners whose queues would be alike.
//!
//! A seat can move out of its lane into a queue of its own (see `lane`).
//! An operation on a moved seat is done on its queue; a listener that
//! finds its seat moved reads the queue directly from then on
//! ([`Inbox::pop_or_register`] tells it where).

use super::lane::Lane;
use super::queue::Queue;
use super::reader::{Snapshot, Waiter};
use crate::source::Next;
use crate::sync::Arc;

#[derive(Debug, Clone)]
pub(crate) enum Inbox {
    Own(Arc<Queue>),
    /// A lane, and the member's seat number in it.
    Seat(Arc<Lane>, usize),
}

impl Inbox {
    /// Takes the next item, or, when there is none yet, lets `register`
    /// install a waiter (see [`Reader::pop_or_register`]); the queue a seat
    /// moved to, if it moved, for the caller to read instead.
    ///
    /// [`Reader::pop_or_register`]: super::reader::Reader::pop_or_register
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &self,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Result<Option<Next>, Arc<Queue>> {
        match self {
            Self::Own(queue) => Ok(queue.pop_or_register(register)),
            Self::Seat(lane, seat) => lane.pop_or_register(*seat, register),
        }
    }

    /// Removes a waiter that gave up.
    pub(crate) fn forget_waiter(&self) {
        self.visit(Queue::forget_waiter, Lane::forget_waiter);
    }

    /// Stops taking events; the reader drains, then gets `Complete`.
    /// Returns the waiter to wake once no lock is held.
    pub(crate) fn complete(&self) -> Option<Waiter> {
        self.visit(Queue::complete, Lane::complete)
    }

    /// Ends it, discarding what it holds, and wakes its reader. Idempotent.
    pub(crate) fn close(&self) {
        if let Some(waiter) = self.visit(Queue::stop, Lane::stop) {
            waiter.wake();
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        self.visit(Queue::snapshot, Lane::snapshot)
    }

    /// `on_queue` for a queue of its own, `on_seat` for a seat, and
    /// `on_queue` again on the queue a seat moved to.
    fn visit<T>(
        &self,
        on_queue: impl FnOnce(&Queue) -> T,
        on_seat: impl FnOnce(&Lane, usize) -> Result<T, Arc<Queue>>,
    ) -> T {
        match self {
            Self::Own(queue) => on_queue(queue),
            Self::Seat(lane, seat) => match on_seat(lane, *seat) {
                Ok(done) => done,
                Err(moved) => on_queue(&moved),
            },
        }
    }
}
