//! One listener's bounded queue: the only state a publisher and that
//! listener's reader share.
//!
//! Everything here happens under one short lock per listener, never held
//! across an `.await` or a wake-up: a publisher pushes and takes the reader's
//! waiter (if it is waiting at all), unlocks, then wakes it. A reader that is
//! not waiting has no waiter registered, so publishing to it costs no
//! wake-up.
//!
//! The queue also keeps the listener's [`Counts`]. Every event pushed to it is,
//! at every moment, exactly one of delivered, dropped by policy, absorbed by
//! a pending duplicate (coalesced), still queued, or discarded at close:
//! `matched = delivered + dropped + coalesced + queued + discarded`.
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
use std::task::Waker;
use std::thread::Thread;

use super::budget::Budget;
use super::succession::{Admission, Successions};
use crate::counts::Counts;
use crate::error::StreamError;
use crate::event::{Event, EventKind, Succession};
use crate::overflow::Overflow;
use crate::source::Next;
use crate::sync::{Arc, Mutex};

/// Whom to wake when the queue changes.
#[derive(Debug)]
pub(crate) enum Waiter {
    /// An async reader.
    Task(Waker),
    /// A reader blocked in `next_timeout`.
    Thread(Thread),
}

impl Waiter {
    pub(crate) fn wake(self) {
        match self {
            Self::Task(waker) => waker.wake(),
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

/// What a lane's seat hands over to the queue that replaces it.
#[derive(Debug)]
pub(crate) struct Handover {
    pub(crate) events: VecDeque<Event>,
    pub(crate) counts: Counts,
    pub(crate) lag: u64,
    pub(crate) max_depth: u64,
    pub(crate) phase: Phase,
    pub(crate) waiter: Option<Waiter>,
}

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

/// A copy of the queue's state for statistics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueSnapshot {
    pub(crate) counts: Counts,
    /// The deepest the queue has been.
    pub(crate) max_depth: u64,
    /// The rendered size of the queued events, and its bound.
    pub(crate) bytes: usize,
    pub(crate) max_bytes: usize,
    pub(crate) lag: u64,
    pub(crate) capacity: usize,
    pub(crate) overflow: Overflow,
    pub(crate) coalesce: bool,
    /// Disconnected by its overflow policy, whoever retires it.
    pub(crate) overflowed: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Phase {
    /// Taking events.
    Open,
    /// The hub completed: drain what is queued, then report `Complete`.
    Completing,
    /// Disconnected for overflow after losing `dropped` events: report the
    /// error once. (Only the count is kept, so the state stays small.)
    Failed { dropped: u64 },
    /// Ended and reported, or closed: every pull returns `Closed`.
    Ended,
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

/// Every publish to this listener reads and writes this state, so it is kept
/// small: fewer cache lines to move between the publisher's core and the
/// reader's. What only some queues need (the coalescing set) is boxed.
#[derive(Debug)]
struct State {
    /// Grows on demand up to `capacity`, so an idle listener holds no buffer.
    events: VecDeque<Event>,
    capacity: usize,
    overflow: Overflow,
    /// The idempotent events in `events`, one copy each; only a coalescing
    /// queue has the set.
    #[allow(
        clippy::box_collection,
        reason = "a set is 48 bytes inline; boxed, a queue that does not coalesce pays 8"
    )]
    pending: Option<Box<HashSet<Pending>>>,
    /// What the queue knows of the successions it has seen; only a queue
    /// that has seen one has it.
    successions: Option<Box<Successions>>,
    phase: Phase,
    /// Events lost to drop-oldest that the reader has not been told about.
    lag: u64,
    waiter: Option<Waiter>,
    /// The rendered size of the queued events, and its bound.
    bytes: usize,
    max_bytes: usize,
    /// The hub-wide bound on queued bytes, when the hub has one.
    budget: Option<Arc<Budget>>,
    /// `counts.queued` stays 0 here: the queue's length says it, and a
    /// snapshot fills it in.
    counts: Counts,
    max_depth: u64,
    overflowed: bool,
}

#[derive(Debug)]
pub(crate) struct Queue {
    state: Mutex<State>,
}

impl Queue {
    pub(crate) fn new(capacity: usize, overflow: Overflow, coalesce: bool) -> Self {
        Self {
            state: Mutex::new(State {
                events: VecDeque::new(),
                capacity,
                overflow,
                pending: coalesce.then(Default::default),
                successions: None,
                phase: Phase::Open,
                lag: 0,
                waiter: None,
                bytes: 0,
                max_bytes: usize::MAX,
                budget: None,
                counts: Counts::default(),
                max_depth: 0,
                overflowed: false,
            }),
        }
    }

    /// A drop-oldest queue that goes on from where a lane's seat was when
    /// its lane split (see `lane`): what the seat had yet to read, its
    /// counts so far (`queued` is the length of `handover.events`), and its
    /// reader's waiter.
    pub(crate) fn handed_over(capacity: usize, max_bytes: usize, handover: Handover) -> Self {
        let queue =
            Self::new(capacity, Overflow::DropOldest, false).with_byte_bounds(max_bytes, None);
        {
            let mut state = queue.state.lock();
            state.bytes = handover.events.iter().map(Event::rendered_len).sum();
            state.events = handover.events;
            state.phase = handover.phase;
            state.lag = handover.lag;
            state.waiter = handover.waiter;
            state.counts = Counts {
                queued: 0,
                ..handover.counts
            };
            state.max_depth = handover.max_depth;
        }
        queue
    }

    /// Bounds the queued bytes to `max_bytes`, and to the hub-wide `budget`
    /// when there is one; the overflow policy applies when either is
    /// exceeded, as for the event count.
    pub(crate) fn with_byte_bounds(self, max_bytes: usize, budget: Option<Arc<Budget>>) -> Self {
        {
            let mut state = self.state.lock();
            state.max_bytes = max_bytes;
            state.budget = budget;
        }
        self
    }

    /// Offers `event` under the overflow policy. Never blocks on the reader.
    ///
    /// Returns the reader's waiter, if it was waiting, for the caller to wake
    /// once it holds no lock at all: waking runs executor code, which must
    /// not find the hub locked (it may drop a task that owns a listener).
    #[inline(always)]
    pub(crate) fn push(&self, event: &Event) -> (Pushed, Option<Waiter>) {
        let mut state = self.state.lock();
        let pushed = state.push(event);
        // Only a reader parked on an empty queue registered a waiter; taking
        // it here means a busy reader is never woken needlessly. Nothing new
        // to read after a refusal or an absorbed duplicate.
        let waiter = match pushed {
            Pushed::NotOpen | Pushed::Coalesced => None,
            _ => state.waiter.take(),
        };
        (pushed, waiter)
    }

    /// Takes the next item, or, when there is none yet, lets `register`
    /// install a waiter (under the lock, so no push can slip in between the
    /// check and the registration) and returns `None`.
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &self,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        let mut state = self.state.lock();
        let next = state.pop();
        if next.is_none() {
            register(&mut state.waiter);
        }
        next
    }

    /// Removes a waiter that gave up (a dropped future, a timed-out wait).
    pub(crate) fn forget_waiter(&self) {
        self.state.lock().waiter = None;
    }

    /// Stops taking events; the reader drains what is queued, then gets
    /// `Complete`. Returns the waiter to wake, as [`push`](Self::push) does.
    pub(crate) fn complete(&self) -> Option<Waiter> {
        let mut state = self.state.lock();
        if !matches!(state.phase, Phase::Open) {
            return None;
        }
        state.phase = Phase::Completing;
        state.waiter.take()
    }

    /// Ends the queue, discarding what it holds. Idempotent. Returns the
    /// waiter to wake, as [`push`](Self::push) does.
    pub(crate) fn stop(&self) -> Option<Waiter> {
        let mut state = self.state.lock();
        let discarded = state.clear() as u64;
        state.counts.discarded += discarded;
        state.lag = 0;
        state.phase = Phase::Ended;
        state.waiter.take()
    }

    pub(crate) fn snapshot(&self) -> QueueSnapshot {
        let state = self.state.lock();
        QueueSnapshot {
            counts: Counts {
                queued: state.events.len() as u64,
                ..state.counts
            },
            max_depth: state.max_depth,
            bytes: state.bytes,
            max_bytes: state.max_bytes,
            lag: state.lag,
            capacity: state.capacity,
            overflow: state.overflow,
            coalesce: state.pending.is_some(),
            overflowed: state.overflowed,
        }
    }
}

impl State {
    #[inline(always)]
    fn push(&mut self, event: &Event) -> Pushed {
        if !matches!(self.phase, Phase::Open) {
            return Pushed::NotOpen;
        }
        self.counts.matched += 1;
        if let Some(succession) = event.succession() {
            let successions = self.successions.get_or_insert_with(Default::default);
            match successions.admit(succession) {
                Admission::New => {}
                // Superseded: the newer version is pending or was taken.
                Admission::Stale => {
                    self.counts.coalesced += 1;
                    return Pushed::Coalesced;
                }
                // The older pending version gives its place to this one.
                Admission::Replaces => {
                    let older = self
                        .events
                        .iter_mut()
                        .find(|queued| {
                            queued.succession().map(Succession::key) == Some(succession.key())
                        })
                        .expect("a pending version is in the queue");
                    let replaced = std::mem::replace(older, event.clone());
                    self.counts.coalesced += 1;
                    self.give_bytes(replaced.rendered_len());
                    self.take_bytes(event.rendered_len());
                    // A larger version may not fit where the older one did.
                    return match self.make_room(0, false) {
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
            self.counts.coalesced += 1;
            return Pushed::Coalesced;
        }
        let len = event.rendered_len();
        // The common case, room to spare, without a call.
        let pushed = if self.fits(len, true) {
            Pushed::Queued
        } else {
            match self.make_room(len, true) {
                Some(false) => Pushed::Queued,
                Some(true) => Pushed::DroppedOldest,
                None => return Pushed::Disconnected,
            }
        };
        self.take_bytes(len);
        self.events.push_back(event.clone());
        if coalescible && let Some(pending) = &mut self.pending {
            pending.insert(Pending(event.clone()));
        }
        self.max_depth = self.max_depth.max(self.events.len() as u64);
        pushed
    }

    /// Whether `len` more bytes fit, by this queue's bound and the hub's,
    /// and, when `adding`, one more event by count.
    #[inline]
    fn fits(&self, len: usize, adding: bool) -> bool {
        (!adding || self.events.len() < self.capacity)
            && self.bytes.saturating_add(len) <= self.max_bytes
            && self.budget.as_ref().is_none_or(|budget| budget.fits(len))
    }

    /// Gives up queued events under the overflow policy until `len` more
    /// bytes (and, when `adding`, one more event) fit: `Some(true)` when it
    /// evicted any, `None` when the policy disconnected the listener. An
    /// event larger than a byte bound is still queued, alone, rather than
    /// never.
    #[cold]
    fn make_room(&mut self, len: usize, adding: bool) -> Option<bool> {
        let mut evicted = false;
        while !self.events.is_empty() && !self.fits(len, adding) {
            match self.overflow {
                Overflow::DropOldest => {
                    self.evict_oldest();
                    self.counts.dropped += 1;
                    self.lag += 1;
                    evicted = true;
                }
                Overflow::Disconnect => {
                    let lost = self.clear() as u64 + u64::from(adding);
                    self.counts.dropped += lost;
                    self.overflowed = true;
                    self.phase = Phase::Failed { dropped: lost };
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
    fn clear(&mut self) -> usize {
        let held = self.events.len();
        self.give_bytes(self.bytes);
        self.events = VecDeque::new();
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
                .events
                .iter()
                .position(|event| !event.is_terminal())
                .unwrap_or(0),
            None => 0,
        };
        if let Some(evicted) = self.events.remove(victim) {
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

    /// The next item: the common case, an event and no lag to report,
    /// inline; the rest in [`pop_rest`](Self::pop_rest).
    #[inline(always)]
    fn pop(&mut self) -> Option<Next> {
        if self.lag == 0
            && let Some(event) = self.events.pop_front()
        {
            return Some(self.deliver(event));
        }
        self.pop_rest()
    }

    #[inline(always)]
    fn deliver(&mut self, event: Event) -> Next {
        self.give_bytes(event.rendered_len());
        self.forget_pending(&event);
        if let (Some(successions), Some(succession)) = (&mut self.successions, event.succession()) {
            successions.delivered(succession);
        }
        self.counts.delivered += 1;
        Next::Event(event)
    }

    #[cold]
    fn pop_rest(&mut self) -> Option<Next> {
        // Lag is reported before the events that follow the gap, like
        // `broadcast::Receiver::recv`.
        if self.lag > 0 {
            return Some(Next::Lagged(std::mem::take(&mut self.lag)));
        }
        // No lag, so `pop` found the queue empty.
        match std::mem::replace(&mut self.phase, Phase::Ended) {
            Phase::Open => {
                self.phase = Phase::Open;
                None
            }
            Phase::Completing => Some(Next::Complete),
            Phase::Failed { dropped } => Some(Next::Failed(StreamError::Overflow { dropped })),
            Phase::Ended => Some(Next::Closed),
        }
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;

    fn uri(next: Option<Next>) -> String {
        match next {
            Some(Next::Event(event)) => match event.kind() {
                crate::EventKind::ResourceUpdated { uri } => uri.clone(),
                other => panic!("unexpected {other:?}"),
            },
            other => panic!("expected an event, got {other:?}"),
        }
    }

    fn pop(queue: &Queue) -> Option<Next> {
        queue.pop_or_register(|_| {})
    }

    #[test]
    fn drop_oldest_keeps_the_newest_and_reports_lag_first() {
        let queue = Queue::new(2, Overflow::DropOldest, false);
        for i in 0..5 {
            queue.push(&Event::resource_updated(i.to_string()));
        }
        assert_eq!(pop(&queue), Some(Next::Lagged(3)));
        assert_eq!(uri(pop(&queue)), "3");
        assert_eq!(uri(pop(&queue)), "4");
        assert_eq!(pop(&queue), None);
        let snap = queue.snapshot();
        assert_eq!(
            snap.counts,
            Counts {
                matched: 5,
                delivered: 2,
                dropped: 3,
                ..Counts::default()
            }
        );
        assert_eq!(snap.max_depth, 2);
    }

    #[test]
    fn disconnect_fails_once_then_closes() {
        let queue = Queue::new(2, Overflow::Disconnect, false);
        assert_eq!(queue.push(&Event::tools_list_changed()).0, Pushed::Queued);
        assert_eq!(queue.push(&Event::tools_list_changed()).0, Pushed::Queued);
        assert_eq!(
            queue.push(&Event::tools_list_changed()).0,
            Pushed::Disconnected
        );
        assert_eq!(queue.push(&Event::tools_list_changed()).0, Pushed::NotOpen);
        assert_eq!(
            pop(&queue),
            Some(Next::Failed(StreamError::Overflow { dropped: 3 }))
        );
        assert_eq!(pop(&queue), Some(Next::Closed));
        assert_eq!(queue.snapshot().counts.dropped, 3);
    }

    fn status(key: &str, version: i128, terminal: bool) -> Event {
        let mut succession = Succession::new(key, version);
        if terminal {
            succession = succession.terminal();
        }
        Event::extension("x/status", Default::default(), None).with_succession(succession)
    }

    fn version(next: Option<Next>) -> (String, i128) {
        match next {
            Some(Next::Event(event)) => {
                let succession = event.succession().unwrap();
                (succession.key().to_owned(), succession.version())
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn a_newer_version_replaces_the_pending_one_and_older_ones_never_follow() {
        let queue = Queue::new(8, Overflow::DropOldest, false);
        queue.push(&status("a", 1, false));
        queue.push(&status("b", 1, false));
        assert_eq!(queue.push(&status("a", 3, false)).0, Pushed::Queued);
        assert_eq!(queue.push(&status("a", 2, false)).0, Pushed::Coalesced);
        assert_eq!(version(pop(&queue)), ("a".into(), 3), "in the place of a:1");
        assert_eq!(version(pop(&queue)), ("b".into(), 1));
        assert_eq!(queue.push(&status("a", 2, false)).0, Pushed::Coalesced);
        assert_eq!(pop(&queue), None, "older than what the reader took");
        let snap = queue.snapshot();
        assert_eq!((snap.counts.coalesced, snap.counts.delivered), (3, 2));
        assert!(snap.counts.is_balanced());
    }

    #[test]
    fn drop_oldest_spares_terminal_versions_while_others_are_queued() {
        let queue = Queue::new(2, Overflow::DropOldest, false);
        queue.push(&status("done", 9, true));
        for i in 0..5 {
            queue.push(&status(&format!("k{i}"), 1, false));
        }
        assert_eq!(pop(&queue), Some(Next::Lagged(4)));
        assert_eq!(version(pop(&queue)), ("done".into(), 9));
        assert_eq!(version(pop(&queue)), ("k4".into(), 1));
        assert!(queue.snapshot().counts.is_balanced());
    }

    fn sized(n: usize) -> Event {
        let params = serde_json::json!({"blob": "x".repeat(n)});
        Event::extension("x/big", params.as_object().unwrap().clone(), None)
    }

    #[test]
    fn a_byte_bound_evicts_the_oldest_until_the_new_event_fits() {
        let len = sized(1_000).rendered_len();
        let queue = Queue::new(100, Overflow::DropOldest, false).with_byte_bounds(3 * len, None);
        for _ in 0..5 {
            queue.push(&sized(1_000));
        }
        let snap = queue.snapshot();
        assert_eq!((snap.counts.queued, snap.bytes), (3, 3 * len));
        assert_eq!(snap.counts.dropped, 2);
        assert_eq!(pop(&queue), Some(Next::Lagged(2)));
        // An event larger than the whole bound is queued alone.
        assert_eq!(queue.push(&sized(10_000)).0, Pushed::DroppedOldest);
        let snap = queue.snapshot();
        assert_eq!(snap.counts.queued, 1);
        assert!(snap.counts.is_balanced());
        while pop(&queue).is_some() {}
        assert_eq!(queue.snapshot().bytes, 0, "every byte given back");
    }

    #[test]
    fn a_byte_bound_disconnects_a_strict_listener() {
        let len = sized(1_000).rendered_len();
        let queue = Queue::new(100, Overflow::Disconnect, false).with_byte_bounds(2 * len, None);
        queue.push(&sized(1_000));
        queue.push(&sized(1_000));
        assert_eq!(queue.push(&sized(1_000)).0, Pushed::Disconnected);
        assert_eq!(
            pop(&queue),
            Some(Next::Failed(StreamError::Overflow { dropped: 3 }))
        );
        assert_eq!(queue.snapshot().bytes, 0);
    }

    #[test]
    fn the_hub_wide_budget_is_shared_and_given_back() {
        let len = sized(1_000).rendered_len();
        let budget = Arc::new(Budget::new(3 * len));
        let a = Queue::new(100, Overflow::DropOldest, false)
            .with_byte_bounds(usize::MAX, Some(budget.clone()));
        let b = Queue::new(100, Overflow::DropOldest, false)
            .with_byte_bounds(usize::MAX, Some(budget.clone()));
        a.push(&sized(1_000));
        a.push(&sized(1_000));
        b.push(&sized(1_000));
        // The hub is full: b makes room in its own queue.
        assert_eq!(b.push(&sized(1_000)).0, Pushed::DroppedOldest);
        assert_eq!(a.snapshot().counts.queued, 2, "a keeps what it holds");
        assert!(!budget.fits(1));
        a.stop();
        assert!(budget.fits(2 * len), "a closed queue gives its bytes back");
    }

    #[test]
    fn complete_drains_then_ends() {
        let queue = Queue::new(4, Overflow::DropOldest, false);
        queue.push(&Event::resource_updated("a"));
        queue.complete();
        assert_eq!(queue.push(&Event::resource_updated("b")).0, Pushed::NotOpen);
        assert_eq!(uri(pop(&queue)), "a");
        assert_eq!(pop(&queue), Some(Next::Complete));
        assert_eq!(pop(&queue), Some(Next::Closed));
    }

    #[test]
    fn coalescing_absorbs_pending_duplicates_and_keeps_their_place() {
        let queue = Queue::new(3, Overflow::DropOldest, true);
        for uri in ["a", "b", "a", "a", "c", "b"] {
            queue.push(&Event::resource_updated(uri));
        }
        assert_eq!(
            queue.push(&Event::tools_list_changed()).0,
            Pushed::DroppedOldest
        );
        assert_eq!(
            queue.push(&Event::tools_list_changed()).0,
            Pushed::Coalesced
        );
        // "a" was evicted, so a new "a" queues again.
        assert_eq!(
            queue.push(&Event::resource_updated("a")).0,
            Pushed::DroppedOldest
        );
        let extension = Event::extension("x/y", Default::default(), None);
        queue.push(&extension);
        queue.push(&extension);
        let snap = queue.snapshot();
        assert_eq!(snap.counts.coalesced, 4);
        assert_eq!(snap.counts.queued, 3);
        assert!(snap.counts.is_balanced());
        assert!(matches!(pop(&queue), Some(Next::Lagged(_))));
        let mut order = Vec::new();
        while let Some(Next::Event(event)) = pop(&queue) {
            order.push(event.method().to_owned());
        }
        assert_eq!(order, ["notifications/resources/updated", "x/y", "x/y"]);
        // Once delivered, a signal queues again.
        assert_eq!(queue.push(&Event::resource_updated("a")).0, Pushed::Queued);
    }

    #[test]
    fn close_discards_and_counts() {
        let queue = Queue::new(4, Overflow::DropOldest, false);
        queue.push(&Event::resource_updated("a"));
        queue.push(&Event::resource_updated("b"));
        queue.stop();
        queue.stop();
        assert_eq!(pop(&queue), Some(Next::Closed));
        let snap = queue.snapshot();
        assert_eq!((snap.counts.discarded, snap.counts.queued), (2, 0));
    }

    #[test]
    fn registers_a_waiter_only_when_empty_and_push_takes_it() {
        let queue = Queue::new(4, Overflow::DropOldest, false);
        let mut registered = false;
        assert_eq!(
            queue.pop_or_register(|slot| {
                registered = true;
                *slot = Some(Waiter::Task(Waker::noop().clone()));
            }),
            None
        );
        assert!(registered);
        let (_, waiter) = queue.push(&Event::tools_list_changed());
        assert!(matches!(waiter, Some(Waiter::Task(_))));
        assert!(queue.state.lock().waiter.is_none());
        let next = queue.pop_or_register(|_| panic!("must not register when an event is ready"));
        assert!(matches!(next, Some(Next::Event(_))));
    }
}

#[cfg(all(test, mcp_subscriptions_loom))]
mod loom_model {
    use loom::thread;

    use super::*;
    use crate::sync::Arc;

    /// A publisher pushing three events races a reader pulling; whatever the
    /// interleaving, the counts add up and delivered events keep their order.
    /// With `coalesce`, the publisher repeats a URI so duplicates meet.
    fn uris(coalesce: bool, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| {
                if coalesce {
                    (i / 2).to_string()
                } else {
                    i.to_string()
                }
            })
            .collect()
    }

    fn model(capacity: usize, overflow: Overflow, coalesce: bool) {
        loom::model(move || {
            let queue = Arc::new(Queue::new(capacity, overflow, coalesce));
            let publisher = {
                let queue = queue.clone();
                thread::spawn(move || {
                    for uri in uris(coalesce, 3) {
                        let (_, waiter) = queue.push(&Event::resource_updated(uri));
                        waiter.into_iter().for_each(Waiter::wake);
                    }
                })
            };
            let mut seen = Vec::new();
            let mut drain = |queue: &Queue| {
                while let Some(next) = queue.pop_or_register(|_| {}) {
                    match next {
                        Next::Event(event) => seen.push(event.to_plain_json()),
                        Next::Lagged(_) => {}
                        _ => break,
                    }
                }
            };
            drain(&queue);
            publisher.join().unwrap();
            drain(&queue);
            queue.stop();

            let snap = queue.snapshot();
            let t = snap.counts;
            // A disconnected queue takes nothing after it failed.
            if overflow == Overflow::DropOldest {
                assert_eq!(t.matched, 3);
            }
            assert_eq!(
                t.matched,
                t.delivered + t.dropped + t.coalesced + t.queued + t.discarded
            );
            assert_eq!(t.delivered as usize, seen.len());
            let mut sorted = seen.clone();
            sorted.sort();
            assert_eq!(seen, sorted, "delivery order must follow publish order");
        });
    }

    /// A reader that registers its waker and sleeps must be woken by the
    /// pushes and the completion: a lost wake-up is a loom deadlock.
    fn waiting_reader(capacity: usize, coalesce: bool) {
        loom::model(move || {
            let queue = Arc::new(Queue::new(capacity, Overflow::DropOldest, coalesce));
            let publisher = {
                let queue = queue.clone();
                thread::spawn(move || {
                    for uri in uris(coalesce, 2) {
                        let (_, waiter) = queue.push(&Event::resource_updated(uri));
                        waiter.into_iter().for_each(Waiter::wake);
                    }
                    queue.complete().into_iter().for_each(Waiter::wake);
                })
            };
            let mut delivered = 0;
            loom::future::block_on(std::future::poll_fn(|cx| {
                loop {
                    let next = queue.pop_or_register(|slot| {
                        *slot = Some(Waiter::Task(cx.waker().clone()));
                    });
                    match next {
                        Some(Next::Event(_)) => delivered += 1,
                        Some(Next::Lagged(_)) => {}
                        Some(Next::Complete) => return std::task::Poll::Ready(()),
                        Some(other) => panic!("unexpected {other:?}"),
                        // Registered; the publisher will wake us. Events
                        // already counted stay counted.
                        None => return std::task::Poll::Pending,
                    }
                }
            }));
            publisher.join().unwrap();
            let snap = queue.snapshot();
            assert!(delivered >= 1, "the newest event always survives");
            assert_eq!(snap.counts.queued, 0);
            let t = snap.counts;
            assert_eq!(t.matched, t.delivered + t.dropped + t.coalesced);
        });
    }

    #[test]
    fn waiting_reader_capacity_1() {
        waiting_reader(1, false);
    }

    #[test]
    fn waiting_reader_capacity_2() {
        waiting_reader(2, false);
    }

    #[test]
    fn drop_oldest_capacity_1() {
        model(1, Overflow::DropOldest, false);
    }

    #[test]
    fn drop_oldest_capacity_2() {
        model(2, Overflow::DropOldest, false);
    }

    #[test]
    fn disconnect_capacity_1() {
        model(1, Overflow::Disconnect, false);
    }

    #[test]
    fn disconnect_capacity_2() {
        model(2, Overflow::Disconnect, false);
    }

    #[test]
    fn coalescing_capacity_1() {
        model(1, Overflow::DropOldest, true);
        waiting_reader(1, true);
    }

    #[test]
    fn coalescing_capacity_2() {
        model(2, Overflow::DropOldest, true);
        waiting_reader(2, true);
    }
}
