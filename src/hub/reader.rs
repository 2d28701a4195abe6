//! A listener's reading end, one state machine over either place its
//! events wait: its own queue (`queue`) or a seat in a lane (`lane`).
//!
//! The [`Reader`] keeps what is the listener's alone, whatever holds its
//! events: where it is in its life, the lag its reader is owed, the waiter
//! to wake, its counts and the deepest its events have piled up. A
//! [`Storage`] holds the events. Items come out in one order from either:
//! lag first (reported before the events that follow the gap, like
//! `broadcast::Receiver::recv`), then events, then how the listener ended.

use std::task::Waker;
use std::thread::Thread;

use crate::counts::Counts;
use crate::error::StreamError;
use crate::event::Event;
use crate::overflow::Overflow;
use crate::source::Next;

/// Whom to wake when there is something new to read.
#[derive(Debug)]
pub enum Waiter {
    /// An async reader.
    Task(Waker),
    /// A reader blocked in `next_timeout`.
    Thread(Thread),
}

impl Waiter {
    /// Wakes the reader.
    pub fn wake(self) {
        match self {
            Self::Task(waker) => waker.wake(),
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

/// Where a listener is in its life, in a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    /// Taking events.
    #[default]
    Open,
    /// The hub completed: drain what is queued, then report `Complete`.
    Completing,
    /// Disconnected for overflow: report the error once. Only
    /// [`Overflow::Disconnect`] fails a listener, and under it nothing is
    /// dropped but at the failure, so the count it lost is its `dropped`.
    Failed,
    /// Revoked (see `Hub::revoke`), with what it held discarded: report
    /// the error once.
    Revoked,
    /// Ended and reported, or closed: every pull returns `Closed`.
    Ended,
}

/// A listener's queue settings: its bounds and its policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Settings {
    /// The most events it holds.
    pub capacity: usize,
    /// The most rendered bytes it holds.
    pub max_bytes: usize,
    /// What a push into a full queue does.
    pub overflow: Overflow,
    /// Whether a pending idempotent signal absorbs its duplicates.
    pub coalesce: bool,
}

#[cfg(test)]
impl Settings {
    /// `capacity` events under `overflow`, with no byte bound.
    pub(crate) fn new(capacity: usize, overflow: Overflow, coalesce: bool) -> Self {
        Self {
            capacity,
            max_bytes: usize::MAX,
            overflow,
            coalesce,
        }
    }
}

/// What holds a reader's events.
pub(crate) trait Storage {
    /// Takes the next event off for the reader, noting the depth it had;
    /// `None` when there is none, or while the reader is owed lag (which a
    /// storage that evicts without visiting its readers notes here first).
    fn take(&mut self, reader: &mut Reader) -> Option<Event>;
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

/// The listener's side of its events: everything but the events. A lane
/// keeps one per member, so it is kept small. Its counts are those the
/// storage does not know better: how many events were matched, coalesced
/// (a policy of the storage) and queued are the storage's to say.
#[derive(Debug, Default)]
pub struct Reader {
    pub(crate) phase: Phase,
    /// Disconnected by its overflow policy, whoever retires it.
    pub(crate) overflowed: bool,
    /// Events lost to drop-oldest that the reader has not been told about.
    pub lag: u64,
    /// Whom the next push wakes.
    pub waiter: Option<Waiter>,
    /// Events handed to the reader.
    pub delivered: u64,
    /// Events lost to the overflow policy.
    pub dropped: u64,
    /// Events still queued when the reader went away.
    pub discarded: u64,
    pub(crate) max_depth: u64,
}

impl Reader {
    pub(crate) fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// Takes the next item from `storage`, or, when there is none yet, lets
    /// `register` install a waiter (the caller holds the lock a push takes,
    /// so no push can slip in between the check and the registration) and
    /// returns `None`. The common case, an event and no lag, inline.
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &mut self,
        storage: &mut impl Storage,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        if let Some(event) = storage.take(self) {
            self.delivered += 1;
            return Some(Next::Event(event));
        }
        let next = self.pop_rest();
        if next.is_none() {
            register(&mut self.waiter);
        }
        next
    }

    /// Lag, or how the listener ended, once no event can be handed out.
    #[cold]
    fn pop_rest(&mut self) -> Option<Next> {
        if self.lag > 0 {
            return Some(Next::Lagged(std::mem::take(&mut self.lag)));
        }
        match std::mem::replace(&mut self.phase, Phase::Ended) {
            Phase::Open => {
                self.phase = Phase::Open;
                None
            }
            Phase::Completing => Some(Next::Complete),
            Phase::Failed => Some(Next::Failed(StreamError::Overflow {
                dropped: self.dropped,
            })),
            Phase::Revoked => Some(Next::Failed(StreamError::Revoked)),
            Phase::Ended => Some(Next::Closed),
        }
    }

    /// Stops taking events; the reader drains what is left, then gets
    /// `Complete`. Returns the waiter to wake once no lock is held.
    pub(crate) fn complete(&mut self) -> Option<Waiter> {
        if !self.is_open() {
            return None;
        }
        self.phase = Phase::Completing;
        self.waiter.take()
    }

    /// Disconnected by its overflow policy after losing `dropped` events.
    pub(crate) fn fail(&mut self, dropped: u64) {
        self.dropped += dropped;
        self.overflowed = true;
        self.phase = Phase::Failed;
    }

    /// Ends it, with `discarded` events it had yet to read thrown away.
    /// Returns the waiter to wake once no lock is held.
    pub fn end(&mut self, discarded: u64) -> Option<Waiter> {
        self.end_in(Phase::Ended, discarded)
    }

    /// Ends it as [`end`](Self::end) does, but its reader is told it was
    /// revoked; a reader that has already ended is left as it is.
    pub(crate) fn revoke(&mut self, discarded: u64) -> Option<Waiter> {
        if self.phase == Phase::Ended {
            self.discarded += discarded;
            return None;
        }
        self.end_in(Phase::Revoked, discarded)
    }

    fn end_in(&mut self, phase: Phase, discarded: u64) -> Option<Waiter> {
        self.discarded += discarded;
        self.lag = 0;
        self.phase = phase;
        self.waiter.take()
    }

    pub(crate) fn snapshot(&self, stored: Stored, settings: Settings) -> Snapshot {
        let counts = Counts {
            matched: stored.matched,
            delivered: self.delivered,
            dropped: self.dropped + stored.lost,
            coalesced: stored.coalesced,
            queued: stored.queued,
            discarded: self.discarded,
        };
        Snapshot {
            counts,
            max_depth: self.max_depth.max(stored.queued),
            bytes: stored.bytes,
            lag: self.lag + stored.lost,
            settings,
            overflowed: self.overflowed,
        }
    }
}
