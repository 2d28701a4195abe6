//! A reading end, one state machine over any place its events wait: a
//! [`Queue`](super::Queue) of its own, or a seat in one of the hub's lanes.
//!
//! The [`Reader`] keeps what is the reader's alone, whatever holds its
//! events: where it is in its life, the lag it is owed, the waiter to wake,
//! its counts and the deepest its events have piled up. A [`Storage`]
//! holds the events. Items come out in one order from either: lag first
//! (reported before the events that follow the gap, like
//! `broadcast::Receiver::recv`), then events, then how it ended.

use std::task::Waker;
use std::thread::Thread;

use super::counts::Counts;
use super::popped::{Handout, Popped};
use super::settings::Settings;
use crate::event::Event;

/// Whom to wake when there is something new to read.
#[derive(Debug)]
pub(crate) enum Waiter {
    /// An async reader.
    Task(Waker),
    /// A reader blocked in `next_timeout`.
    Thread(Thread),
}

impl Waiter {
    /// Wakes the reader.
    pub(crate) fn wake(self) {
        match self {
            Self::Task(waker) => waker.wake(),
            Self::Thread(thread) => thread.unpark(),
        }
    }

    /// As a waker, for an owner outside the crate.
    pub(crate) fn into_waker(self) -> Waker {
        match self {
            Self::Task(waker) => waker,
            Self::Thread(thread) => crate::sync::unparking(thread),
        }
    }
}

/// Where a reader is in its life: a byte, when its owner's ends are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase<E> {
    /// Taking events.
    #[default]
    Open,
    /// Disconnected for overflow: report it once. Only
    /// [`Overflow::Disconnect`](crate::Overflow::Disconnect) fails a reader,
    /// and under it nothing is dropped but at the failure, so the count it
    /// lost is its `dropped`.
    Failed,
    /// Ended by its owner with `E`: drain what is left (unless it was
    /// discarded), then report `E` once.
    Ending(E),
    /// Ended and reported, or closed: every pull returns `Closed`.
    Ended,
}

/// What holds a reader's items: events, and in a [`Queue`](super::Queue)
/// of the owner's choosing, markers among them.
pub(crate) trait Storage<T = Event> {
    /// Takes the next item off for the reader, counting an event as
    /// delivered and noting the depth it had; `None` when there is none,
    /// or while the reader is owed lag (which a storage that evicts
    /// without visiting its readers notes here first).
    fn take<E>(&mut self, reader: &mut Reader<E>) -> Option<T>;
}

/// What a storage holds for a reader when it is read for statistics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stored {
    /// Every event offered to the reader.
    pub(crate) matched: u64,
    /// Absorbed by one still pending, or superseded.
    pub(crate) coalesced: u64,
    /// Lost for the reader and not yet noted in it (by
    /// [`take`](Storage::take)).
    pub(crate) lost: u64,
    pub(crate) queued: u64,
    pub(crate) bytes: usize,
}

/// A copy of a reader's state for statistics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    pub(crate) counts: Counts,
    /// The deepest its queue has been.
    pub(crate) max_depth: u64,
    /// The rendered size of what it has yet to read.
    pub(crate) bytes: usize,
    pub(crate) lag: u64,
    pub(crate) settings: Settings,
    /// Disconnected by its overflow policy, whoever retires it.
    pub(crate) overflowed: bool,
}

/// The reader's side of its events: everything but the events. A lane
/// keeps one per member, so it is kept small. Its counts are those the
/// storage does not know better: how many events were matched, coalesced
/// (a policy of the storage) and queued are the storage's to say. `E` is
/// how its owner ends it (the hub's: complete or revoked).
#[derive(Debug)]
pub(crate) struct Reader<E> {
    pub(crate) phase: Phase<E>,
    /// Disconnected by its overflow policy, whoever retires it.
    pub(crate) overflowed: bool,
    /// Events lost (to drop-oldest, or before they reached the storage)
    /// that the reader has not been told about.
    pub(crate) lag: u64,
    /// Whom the next push wakes.
    pub(crate) waiter: Option<Waiter>,
    /// Events handed to the reader.
    pub(crate) delivered: u64,
    /// Events lost to the overflow policy.
    pub(crate) dropped: u64,
    /// Events still queued when the reader went away.
    pub(crate) discarded: u64,
    pub(crate) max_depth: u64,
}

impl<E> Default for Reader<E> {
    fn default() -> Self {
        Self {
            phase: Phase::Open,
            overflowed: false,
            lag: 0,
            waiter: None,
            delivered: 0,
            dropped: 0,
            discarded: 0,
            max_depth: 0,
        }
    }
}

impl<E> Reader<E> {
    pub(crate) fn is_open(&self) -> bool {
        matches!(self.phase, Phase::Open)
    }

    /// Takes the next item from `storage`, or, when there is none yet, lets
    /// `register` install a waiter (the caller holds the lock a push takes,
    /// so no push can slip in between the check and the registration) and
    /// returns `None`. The common case, an event and no lag, inline.
    #[inline(always)]
    pub(crate) fn pop_or_register<T, O: Handout<T, E>>(
        &mut self,
        storage: &mut impl Storage<T>,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<O> {
        if let Some(item) = storage.take(self) {
            return Some(O::item(item));
        }
        let next = self.pop_rest();
        if next.is_none() {
            register(&mut self.waiter);
        }
        next.map(O::from)
    }

    /// Lag, or how the reader ended, once no item can be handed out.
    #[cold]
    fn pop_rest<T>(&mut self) -> Option<Popped<T, E>> {
        if self.lag > 0 {
            return Some(Popped::Lagged(std::mem::take(&mut self.lag)));
        }
        match std::mem::replace(&mut self.phase, Phase::Ended) {
            Phase::Open => {
                self.phase = Phase::Open;
                None
            }
            Phase::Failed => Some(Popped::Overflowed {
                dropped: self.dropped,
            }),
            Phase::Ending(end) => Some(Popped::End(end)),
            Phase::Ended => Some(Popped::Closed),
        }
    }

    /// Stops taking events; the reader drains what is left, then gets
    /// `end`. Only an open reader finishes: the first end stays. Returns
    /// the waiter to wake once no lock is held.
    pub(crate) fn finish(&mut self, end: E) -> Option<Waiter> {
        if !self.is_open() {
            return None;
        }
        self.phase = Phase::Ending(end);
        self.waiter.take()
    }

    /// Disconnected by its overflow policy after losing `dropped` events.
    pub(crate) fn fail(&mut self, dropped: u64) {
        self.dropped += dropped;
        self.overflowed = true;
        self.phase = Phase::Failed;
    }

    /// Ends it, with `discarded` events it had yet to read thrown away;
    /// the reader gets `Closed`. Returns the waiter to wake once no lock is
    /// held.
    pub(crate) fn close(&mut self, discarded: u64) -> Option<Waiter> {
        self.end_in(Phase::Ended, discarded)
    }

    /// Ends it as [`close`](Self::close) does, but its reader gets `end`
    /// first, in the place of any end still unreported; a reader whose end
    /// was reported is left as it is.
    pub(crate) fn close_with(&mut self, end: E, discarded: u64) -> Option<Waiter> {
        if matches!(self.phase, Phase::Ended) {
            self.discarded += discarded;
            return None;
        }
        self.end_in(Phase::Ending(end), discarded)
    }

    fn end_in(&mut self, phase: Phase<E>, discarded: u64) -> Option<Waiter> {
        self.discarded += discarded;
        self.lag = 0;
        self.phase = phase;
        self.waiter.take()
    }

    /// Its counts, given what its storage `stored`.
    pub(crate) fn counts(&self, stored: &Stored) -> Counts {
        Counts {
            matched: stored.matched,
            delivered: self.delivered,
            dropped: self.dropped + stored.lost,
            coalesced: stored.coalesced,
            queued: stored.queued,
            discarded: self.discarded,
        }
    }

    pub(crate) fn snapshot(&self, stored: Stored, settings: Settings) -> Snapshot {
        Snapshot {
            counts: self.counts(&stored),
            max_depth: self.max_depth.max(stored.queued),
            bytes: stored.bytes,
            lag: self.lag + stored.lost,
            settings,
            overflowed: self.overflowed,
        }
    }
}
