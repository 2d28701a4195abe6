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
//! It keeps markers (the client's re-listen and resync) in their place
//! among the events: a marker takes no room and is never dropped or
//! coalesced.
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

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

use super::budget::Budget;
use super::overflow::Overflow;
use super::reader::{Reader, Storage};
use super::settings::Settings;
use super::succession::{Admission, Successions};
use crate::event::{Event, Succession};
use crate::sync::Arc;

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pushed {
    /// Queued; nothing lost.
    Queued,
    /// Queued after evicting the oldest event.
    DroppedOldest,
    /// Absorbed by the same signal, still pending.
    Coalesced,
    /// The queue was full under [`Overflow::Disconnect`]: everything it held
    /// and this event were dropped, and the listener failed.
    Disconnected,
    /// The reader no longer takes events (finishing, failed or closed).
    NotOpen,
}

impl Pushed {
    /// How many outcomes there are, to tally them in an array (`NotOpen`
    /// is the last).
    pub(crate) const COUNT: usize = Self::NotOpen as usize + 1;
}

/// A queued idempotent event, compared by its kind (two idempotent events
/// of one kind render alike) and its audience: a signal for some is no
/// duplicate of one for others, in a queue that holds both (the relay's
/// outbound queue), or of one for everyone.
#[derive(Debug)]
struct Pending(Event);

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.0.kind() == other.0.kind() && self.0.audience() == other.0.audience()
    }
}

impl Eq for Pending {}

impl Hash for Pending {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.kind().hash(state);
    }
}

/// What a [`Queue`](super::Queue) holds: events, and, if its owner has
/// any, markers between them (the client's buffer marks a re-listen and a
/// resync in their place among the events).
pub trait Queued: From<Event> {
    /// The event, if this is one rather than a marker.
    fn event(&self) -> Option<&Event>;
}

impl Queued for Event {
    #[inline(always)]
    fn event(&self) -> Option<&Event> {
        Some(self)
    }
}

/// Every publish to the listener reads and writes this, so it is kept
/// small; what only some queues need is boxed.
#[derive(Debug)]
pub(crate) struct Bounded<T = Event> {
    /// Grows on demand up to `capacity` events, so an idle listener holds
    /// no buffer.
    queued: VecDeque<T>,
    /// How many of `queued` are markers.
    markers: usize,
    settings: Settings,
    /// The rendered size of the queued events.
    bytes: usize,
    /// Every event offered to it, and those absorbed by a pending one.
    matched: u64,
    coalesced: u64,
    /// Only a queue that coalesces, has seen a succession or counts against
    /// a hub-wide bound has this; the others pay one pointer.
    rare: Option<Box<Rare>>,
}

/// What only some queues need.
#[derive(Debug, Default)]
struct Rare {
    /// The idempotent events queued, one copy each, when coalescing.
    pending: Option<HashSet<Pending>>,
    /// What the queue knows of the successions it has seen, once it has
    /// seen one.
    successions: Option<Successions>,
    /// The hub-wide bound on queued bytes, when the hub has one.
    budget: Option<Arc<Budget>>,
}

impl<T: Queued> Storage<T> for Bounded<T> {
    /// Takes the next event or marker off for the reader; `None` when
    /// there is none, or while the reader is owed lag.
    #[inline(always)]
    fn take<E>(&mut self, reader: &mut Reader<E>) -> Option<T> {
        // Lag is owed from the push that evicted; it goes first.
        if reader.lag > 0 {
            return None;
        }
        let entry = self.queued.pop_front()?;
        match entry.event() {
            Some(event) => {
                self.left(event, true);
                reader.delivered += 1;
            }
            None => self.markers -= 1,
        }
        Some(entry)
    }
}

impl<T: Queued> Bounded<T> {
    /// Holding `queued` events to begin with, of `matched` offered so far.
    pub(crate) fn new(
        settings: Settings,
        budget: Option<Arc<Budget>>,
        queued: VecDeque<T>,
        matched: u64,
    ) -> Self {
        let events = || queued.iter().filter_map(T::event);
        Self {
            bytes: events().map(Event::rendered_len).sum(),
            markers: queued.len() - events().count(),
            matched,
            coalesced: 0,
            queued,
            settings,
            rare: (settings.coalesce || budget.is_some()).then(|| {
                Box::new(Rare {
                    pending: settings.coalesce.then(HashSet::new),
                    successions: None,
                    budget,
                })
            }),
        }
    }

    /// The events queued (markers aside).
    pub(crate) fn len(&self) -> usize {
        self.queued.len() - self.markers
    }

    /// Queues a marker after what is queued; `supersedes` says whether it
    /// replaces the last entry, if that is a marker too.
    pub(crate) fn push_marker(&mut self, marker: T, supersedes: impl FnOnce(&T) -> bool) {
        debug_assert!(marker.event().is_none(), "a marker is no event");
        match self.queued.back() {
            Some(last) if last.event().is_none() && supersedes(last) => {
                self.queued.pop_back();
            }
            _ => self.markers += 1,
        }
        self.queued.push_back(marker);
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

    /// Offers `event`: queued, coalesced, or left to the overflow policy.
    #[inline(always)]
    pub(crate) fn push<E>(&mut self, reader: &mut Reader<E>, event: &Event) -> Pushed {
        if !reader.is_open() {
            return Pushed::NotOpen;
        }
        self.matched += 1;
        if let Some(succession) = event.succession() {
            let rare = self.rare.get_or_insert_with(Default::default);
            let successions = rare.successions.get_or_insert_with(Default::default);
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
                            queued
                                .event()
                                .and_then(Event::succession)
                                .map(Succession::key)
                                == Some(succession.key())
                        })
                        .expect("a pending version is in the queue");
                    let replaced = std::mem::replace(older, T::from(event.clone()));
                    let replaced = replaced.event().map_or(0, Event::rendered_len);
                    self.coalesced += 1;
                    self.give_bytes(replaced);
                    self.take_bytes(event.rendered_len());
                    // A larger version may not fit where the older one did.
                    return match self.make_room(reader, 0, false) {
                        Some(_) => Pushed::Queued,
                        None => Pushed::Disconnected,
                    };
                }
            }
        }
        let pending = self.rare.as_ref().and_then(|rare| rare.pending.as_ref());
        let coalescible = pending.is_some() && event.is_idempotent();
        if coalescible && pending.is_some_and(|pending| pending.contains(&Pending(event.clone()))) {
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
        self.queued.push_back(T::from(event.clone()));
        if coalescible && let Some(pending) = self.rare.as_mut().and_then(|r| r.pending.as_mut()) {
            pending.insert(Pending(event.clone()));
        }
        reader.max_depth = reader.max_depth.max(self.len() as u64);
        pushed
    }

    /// Whether `len` more bytes fit, by this queue's bound and the hub's,
    /// and, when `adding`, one more event by count.
    #[inline]
    fn fits(&self, len: usize, adding: bool) -> bool {
        (!adding || self.len() < self.settings.capacity)
            && self.bytes.saturating_add(len) <= self.settings.max_bytes
            && self.budget().is_none_or(|budget| budget.fits(len))
    }

    /// Gives up queued events under the overflow policy until `len` more
    /// bytes (and, when `adding`, one more event) fit: `Some(true)` when it
    /// evicted any, `None` when the policy disconnected the listener. An
    /// event larger than a byte bound is still queued, alone, rather than
    /// never.
    #[cold]
    fn make_room<E>(&mut self, reader: &mut Reader<E>, len: usize, adding: bool) -> Option<bool> {
        let mut evicted = false;
        while self.len() > 0 && !self.fits(len, adding) {
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
        if let Some(budget) = self.budget() {
            budget.take(len);
        }
    }

    fn give_bytes(&mut self, len: usize) {
        self.bytes -= len;
        if let Some(budget) = self.budget() {
            budget.give_back(len);
        }
    }

    /// Empties the queue, markers too (its bytes given back); how many
    /// events it held.
    pub(crate) fn clear(&mut self) -> usize {
        let held = self.len();
        self.give_bytes(self.bytes);
        self.queued = VecDeque::new();
        self.markers = 0;
        if let Some(rare) = &mut self.rare {
            if let Some(pending) = &mut rare.pending {
                *pending = HashSet::new();
            }
            rare.successions = None;
        }
        held
    }

    /// Evicts the oldest event, sparing the terminal events of successions
    /// while anything else is queued: a thing's final state outlives its
    /// earlier ones under overload.
    fn evict_oldest(&mut self) {
        let spare_terminal = self.rare.as_ref().is_some_and(|r| r.successions.is_some());
        let events = || self.queued.iter().map(T::event);
        let Some(victim) = events()
            .position(|event| event.is_some_and(|e| !(spare_terminal && e.is_terminal())))
            .or_else(|| events().position(|event| event.is_some()))
        else {
            return;
        };
        let Some(evicted) = self.queued.remove(victim) else {
            return;
        };
        if let Some(evicted) = evicted.event() {
            self.left(evicted, false);
        }
    }

    /// `event` left the queue, `delivered` to the reader or evicted: its
    /// bytes are given back, and it is no longer pending.
    #[inline(always)]
    fn left(&mut self, event: &Event, delivered: bool) {
        self.give_bytes(event.rendered_len());
        let Some(rare) = &mut self.rare else {
            return;
        };
        if let Some(pending) = &mut rare.pending
            && event.is_idempotent()
        {
            pending.remove(&Pending(event.clone()));
        }
        if let (Some(successions), Some(succession)) = (&mut rare.successions, event.succession()) {
            if delivered {
                successions.delivered(succession);
            } else {
                successions.forget(succession);
            }
        }
    }

    /// The hub-wide bound on queued bytes, when the hub has one.
    #[inline]
    fn budget(&self) -> Option<&Budget> {
        self.rare.as_ref()?.budget.as_deref()
    }
}
