//! The events of a listener's own queue, bounded under a policy: a count
//! and a byte bound (its own and the hub's), drop-oldest or disconnect when
//! full, coalescing of idempotent signals, and the memory of successions.
//!
//! Every event pushed is, at every moment, exactly one of delivered,
//! dropped by policy, absorbed by a pending duplicate (coalesced), still
//! queued, or discarded at close:
//! `matched = delivered + dropped + coalesced + queued + discarded`. The
//! counts are kept in the [`Reader`] pushed beside the events.
//!
//! # Coalescing
//!
//! A list-changed signal, or an update of one URI, carries nothing a second
//! copy would add. A coalescing queue keeps at most one pending copy of each
//! such event: a duplicate published while one is still queued is absorbed
//! (and counted) instead of taking a slot. The pending copy keeps its place,
//! and the reader still gets the signal after the last publish, so under
//! overload nothing a client needs is lost, and the memory is bounded by the
//! number of distinct signals.

use std::borrow::Borrow;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use super::budget::Budget;
use super::reader::{Reader, Settings, Storage};
use super::succession::{Admission, Successions};
use crate::event::{Event, EventKind, Succession};
use crate::overflow::Overflow;
use crate::sync::Arc;

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Queued; nothing lost.
    Queued,
    /// Queued after evicting the oldest event.
    DroppedOldest,
    /// Absorbed by the same signal, still pending.
    Coalesced,
    /// The queue was full under [`Overflow::Disconnect`]: everything it held
    /// and this event were dropped, and the listener failed.
    Disconnected,
    /// The listener no longer takes events (completing, failed or closed).
    NotOpen,
}

impl Pushed {
    /// How many outcomes there are, to tally them in an array (`NotOpen`
    /// is the last).
    pub(crate) const COUNT: usize = Self::NotOpen as usize + 1;
}

/// A queued idempotent event, compared by its kind (two idempotent events
/// of one kind render alike), so the pending set can be searched with an
/// `&EventKind`.
#[derive(Debug)]
struct Pending(Event);

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind()
    }
}

impl Eq for Pending {}

impl Hash for Pending {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.kind().hash(state);
    }
}

impl Borrow<EventKind> for Pending {
    fn borrow(&self) -> &EventKind {
        self.0.kind()
    }
}

/// Every publish to the listener reads and writes this, so it is kept
/// small; what only some queues need is boxed.
#[derive(Debug)]
pub(crate) struct Bounded {
    /// Grows on demand up to `capacity`, so an idle listener holds no buffer.
    queued: VecDeque<Event>,
    settings: Settings,
    /// The idempotent events queued, one copy each; only a coalescing
    /// queue has the set.
    #[allow(
        clippy::box_collection,
        reason = "a set is 48 bytes inline; boxed, a queue that does not coalesce pays 8"
    )]
    pending: Option<Box<HashSet<Pending>>>,
    /// What the queue knows of the successions it has seen; only a queue
    /// that has seen one has it.
    successions: Option<Box<Successions>>,
    /// The rendered size of the queued events.
    bytes: usize,
    /// Every event offered to it, and those absorbed by a pending one.
    matched: u64,
    coalesced: u64,
    /// The hub-wide bound on queued bytes, when the hub has one.
    budget: Option<Arc<Budget>>,
}

impl Storage for Bounded {
    #[inline(always)]
    fn take(&mut self, reader: &mut Reader) -> Option<Event> {
        // Lag is owed from the push that evicted; it goes first.
        if reader.lag > 0 {
            return None;
        }
        let event = self.queued.pop_front()?;
        self.give_bytes(event.rendered_len());
        self.forget_pending(&event);
        if let (Some(successions), Some(succession)) = (&mut self.successions, event.succession()) {
            successions.delivered(succession);
        }
        Some(event)
    }
}

impl Bounded {
    /// Holding `queued` to begin with, of `matched` events offered so far.
    pub(crate) fn new(
        settings: Settings,
        budget: Option<Arc<Budget>>,
        queued: VecDeque<Event>,
        matched: u64,
    ) -> Self {
        Self {
            bytes: queued.iter().map(Event::rendered_len).sum(),
            matched,
            coalesced: 0,
            queued,
            settings,
            pending: settings.coalesce.then(Default::default),
            successions: None,
            budget,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.queued.len()
    }

    /// Every event offered to it.
    pub(crate) fn matched(&self) -> u64 {
        self.matched
    }

    /// The events absorbed by a pending one (a duplicate signal, or a
    /// superseded version).
    pub(crate) fn coalesced(&self) -> u64 {
        self.coalesced
    }

    /// The rendered size of the queued events.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn settings(&self) -> Settings {
        self.settings
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, reader: &mut Reader, event: &Event) -> Pushed {
        if !reader.is_open() {
            return Pushed::NotOpen;
        }
        self.matched += 1;
        if let Some(succession) = event.succession() {
            let successions = self.successions.get_or_insert_with(Default::default);
            match successions.admit(succession) {
                Admission::New => {}
                // Superseded: the newer version is pending or was taken.
                Admission::Stale => {
                    self.coalesced += 1;
                    return Pushed::Coalesced;
                }
                // The older pending version gives its place to this one.
                Admission::Replaces => {
                    let older = self
                        .queued
                        .iter_mut()
                        .find(|queued| {
                            queued.succession().map(Succession::key) == Some(succession.key())
                        })
                        .expect("a pending version is in the queue");
                    let replaced = std::mem::replace(older, event.clone());
                    self.coalesced += 1;
                    self.give_bytes(replaced.rendered_len());
                    self.take_bytes(event.rendered_len());
                    // A larger version may not fit where the older one did.
                    return match self.make_room(reader, 0, false) {
                        Some(_) => Pushed::Queued,
                        None => Pushed::Disconnected,
                    };
                }
            }
        }
        let coalescible = self.pending.is_some() && event.is_idempotent();
        if coalescible
            && self
                .pending
                .as_ref()
                .is_some_and(|p| p.contains(event.kind()))
        {
            self.coalesced += 1;
            return Pushed::Coalesced;
        }
        let len = event.rendered_len();
        // The common case, room to spare, without a call.
        let pushed = if self.fits(len, true) {
            Pushed::Queued
        } else {
            match self.make_room(reader, len, true) {
                Some(false) => Pushed::Queued,
                Some(true) => Pushed::DroppedOldest,
                None => return Pushed::Disconnected,
            }
        };
        self.take_bytes(len);
        self.queued.push_back(event.clone());
        if coalescible && let Some(pending) = &mut self.pending {
            pending.insert(Pending(event.clone()));
        }
        reader.max_depth = reader.max_depth.max(self.queued.len() as u64);
        pushed
    }

    /// Whether `len` more bytes fit, by this queue's bound and the hub's,
    /// and, when `adding`, one more event by count.
    #[inline]
    fn fits(&self, len: usize, adding: bool) -> bool {
        (!adding || self.queued.len() < self.settings.capacity)
            && self.bytes.saturating_add(len) <= self.settings.max_bytes
            && self.budget.as_ref().is_none_or(|budget| budget.fits(len))
    }

    /// Gives up queued events under the overflow policy until `len` more
    /// bytes (and, when `adding`, one more event) fit: `Some(true)` when it
    /// evicted any, `None` when the policy disconnected the listener. An
    /// event larger than a byte bound is still queued, alone, rather than
    /// never.
    #[cold]
    fn make_room(&mut self, reader: &mut Reader, len: usize, adding: bool) -> Option<bool> {
        let mut evicted = false;
        while !self.queued.is_empty() && !self.fits(len, adding) {
            match self.settings.overflow {
                Overflow::DropOldest => {
                    self.evict_oldest();
                    reader.dropped += 1;
                    reader.lag += 1;
                    evicted = true;
                }
                Overflow::Disconnect => {
                    let lost = self.clear() as u64 + u64::from(adding);
                    reader.fail(lost);
                    return None;
                }
            }
        }
        Some(evicted)
    }

    fn take_bytes(&mut self, len: usize) {
        self.bytes += len;
        if let Some(budget) = &self.budget {
            budget.take(len);
        }
    }

    fn give_bytes(&mut self, len: usize) {
        self.bytes -= len;
        if let Some(budget) = &self.budget {
            budget.give_back(len);
        }
    }

    /// Empties the queue (its bytes given back); how many events it held.
    pub(crate) fn clear(&mut self) -> usize {
        let held = self.queued.len();
        self.give_bytes(self.bytes);
        self.queued = VecDeque::new();
        if let Some(pending) = &mut self.pending {
            **pending = HashSet::new();
        }
        self.successions = None;
        held
    }

    /// Evicts the oldest event, sparing the terminal events of successions
    /// while anything else is queued: a thing's final state outlives its
    /// earlier ones under overload.
    fn evict_oldest(&mut self) {
        let victim = match self.successions {
            Some(_) => self
                .queued
                .iter()
                .position(|event| !event.is_terminal())
                .unwrap_or(0),
            None => 0,
        };
        if let Some(evicted) = self.queued.remove(victim) {
            self.give_bytes(evicted.rendered_len());
            self.forget_pending(&evicted);
            if let (Some(successions), Some(succession)) =
                (&mut self.successions, evicted.succession())
            {
                successions.forget(succession);
            }
        }
    }

    /// Takes `event` out of the pending set once it leaves the queue.
    fn forget_pending(&mut self, event: &Event) {
        if let Some(pending) = &mut self.pending
            && event.is_idempotent()
        {
            pending.remove(event.kind());
        }
    }
}
