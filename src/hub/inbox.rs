//! Where a listener's events wait: its own queue, or a seat in a lane it
//! shares with listeners whose queues would be alike.

use super::lane::Lane;
use super::queue::{Queue, QueueSnapshot, Waiter};
use crate::source::Next;
use crate::sync::Arc;

#[derive(Debug)]
pub(crate) enum Inbox {
    /// Boxed, so that a listener in a lane does not carry a queue's room.
    Own(Box<Queue>),
    Seat(Seat),
}

/// A member's place in a lane, given back when the listener's entry goes.
#[derive(Debug)]
pub(crate) struct Seat {
    pub(crate) lane: Arc<Lane>,
    index: usize,
}

impl Seat {
    pub(crate) fn join(lane: Arc<Lane>) -> Self {
        let index = lane.join();
        Self { lane, index }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.lane.release(self.index);
    }
}

impl Inbox {
    /// Takes the next item, or, when there is none yet, lets `register`
    /// install a waiter (see [`Queue::pop_or_register`]).
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &self,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        match self {
            Self::Own(queue) => queue.pop_or_register(register),
            Self::Seat(seat) => seat.lane.pop_or_register(seat.index, register),
        }
    }

    /// Removes a waiter that gave up.
    pub(crate) fn forget_waiter(&self) {
        match self {
            Self::Own(queue) => queue.forget_waiter(),
            Self::Seat(seat) => seat.lane.forget_waiter(seat.index),
        }
    }

    /// Stops taking events; the reader drains, then gets `Complete`.
    /// Returns the waiter to wake once no lock is held.
    pub(crate) fn complete(&self) -> Option<Waiter> {
        match self {
            Self::Own(queue) => queue.complete(),
            Self::Seat(seat) => seat.lane.complete(seat.index),
        }
    }

    /// Ends it, discarding what it holds, and wakes its reader. Idempotent.
    pub(crate) fn close(&self) {
        let waiter = match self {
            Self::Own(queue) => queue.stop(),
            Self::Seat(seat) => seat.lane.stop(seat.index),
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    pub(crate) fn snapshot(&self) -> QueueSnapshot {
        match self {
            Self::Own(queue) => queue.snapshot(),
            Self::Seat(seat) => seat.lane.snapshot(seat.index),
        }
    }
}
