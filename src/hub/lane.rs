//! A lane: listeners whose queues would be alike share one.
//!
//! Listeners with the same granted filter and the same queue settings
//! (drop-oldest, no coalescing, one capacity and one byte bound, no
//! hub-wide byte budget) would each hold the same events in the same order.
//! A lane holds them once, in a [`Ring`], and each member, a seat, keeps
//! only its position in it. A publish into a lane is one push, however
//! many members it has, and a member's reader finds for itself what
//! eviction cost it, as `broadcast` receivers do. The ring counts members
//! per position, so a publish still reports exactly how many lost an event,
//! and each seat's counts come out as its own queue would have kept them.
//!
//! # Splitting
//!
//! A [succession](crate::Succession) needs each member's own memory of
//! what it took and what it holds. The first event with a succession that
//! reaches a lane splits it: each seat gets its own queue holding what it
//! had yet to read, with its counts and its reader's waiter, and the lane
//! pushes every later event into those queues.

use std::collections::VecDeque;

use super::queue::{Handover, Phase, Pushed, Queue, QueueSnapshot, Waiter};
use super::ring::Ring;
use crate::counts::Counts;
use crate::event::Event;
use crate::filter::Filter;
use crate::overflow::Overflow;
use crate::source::Next;
use crate::sync::Mutex;

/// What makes listeners' queues alike: their settings and what their
/// filters route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LaneKey {
    capacity: usize,
    max_bytes: usize,
    /// Tools, prompts and resources list changes.
    lists: [bool; 3],
    /// Sorted, so the order a request named them in does not matter.
    uris: Vec<String>,
}

impl LaneKey {
    /// The lane a listener with `filter` and these queue settings joins;
    /// `None` when its queue must be its own: it coalesces, disconnects on
    /// overflow, counts against a hub-wide byte budget, or takes extension
    /// events or everything.
    pub(crate) fn of(
        filter: &Filter,
        capacity: usize,
        overflow: Overflow,
        coalesce: bool,
        max_bytes: usize,
        budgeted: bool,
    ) -> Option<Self> {
        if coalesce
            || budgeted
            || overflow != Overflow::DropOldest
            || filter.is_everything()
            || !filter.extensions().is_empty()
        {
            return None;
        }
        let mut uris: Vec<String> = filter.resource_subscriptions().map(str::to_owned).collect();
        uris.sort_unstable();
        Some(Self {
            capacity,
            max_bytes,
            lists: [
                filter.tools_list_changed(),
                filter.prompts_list_changed(),
                filter.resources_list_changed(),
            ],
            uris,
        })
    }
}

#[derive(Debug)]
pub(crate) struct Lane {
    pub(crate) key: LaneKey,
    /// The first member's filter: what the index routes the lane by.
    pub(crate) filter: Filter,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// `None` once the lane has split.
    ring: Option<Ring>,
    /// Indexed by seat number; a slot is free again once its listener's
    /// entry is dropped.
    seats: Vec<Option<Seat>>,
    free: Vec<usize>,
    /// Seats that registered a waiter since the last publish (a seat is
    /// listed once, however often its reader registers).
    waiting: Vec<usize>,
}

#[derive(Debug)]
enum Seat {
    Shared(Cursor),
    /// Its own queue, since the lane split (boxed: most lanes never do).
    Own(Box<Queue>),
}

/// A member's place in the ring and its counts.
#[derive(Debug)]
struct Cursor {
    /// The position of the next event it reads, unless eviction moved it
    /// on (see [`Ring::position`]).
    next: u64,
    /// Where it joined, and where it left: it matched every event between.
    start: u64,
    end: Option<u64>,
    delivered: u64,
    dropped: u64,
    discarded: u64,
    /// Events lost to eviction that its reader has not been told about.
    lag: u64,
    max_depth: u64,
    phase: Phase,
    waiter: Option<Waiter>,
    listed: bool,
}

impl Lane {
    pub(crate) fn new(key: LaneKey, filter: Filter) -> Self {
        let ring = Ring::new(key.capacity, key.max_bytes);
        Self {
            key,
            filter,
            state: Mutex::new(State {
                ring: Some(ring),
                seats: Vec::new(),
                free: Vec::new(),
                waiting: Vec::new(),
            }),
        }
    }

    /// A new member, reading from the next event on; returns its seat.
    pub(crate) fn join(&self) -> usize {
        let mut state = self.state.lock();
        let seat = match &mut state.ring {
            Some(ring) => {
                let at = ring.join();
                Seat::Shared(Cursor {
                    next: at,
                    start: at,
                    end: None,
                    delivered: 0,
                    dropped: 0,
                    discarded: 0,
                    lag: 0,
                    max_depth: 0,
                    phase: Phase::Open,
                    waiter: None,
                    listed: false,
                })
            }
            None => Seat::Own(Box::new(
                Queue::new(self.key.capacity, Overflow::DropOldest, false)
                    .with_byte_bounds(self.key.max_bytes, None),
            )),
        };
        match state.free.pop() {
            Some(index) => {
                state.seats[index] = Some(seat);
                index
            }
            None => {
                state.seats.push(Some(seat));
                state.seats.len() - 1
            }
        }
    }

    /// Offers `event` to every member, tallying each member's outcome as
    /// its own queue's push would, and collecting the waiters to wake.
    pub(crate) fn push(
        &self,
        event: &Event,
        tally: &mut [usize; Pushed::COUNT],
        waiters: &mut Vec<Waiter>,
    ) {
        let mut state = self.state.lock();
        if event.succession().is_some() {
            state.split(&self.key);
        }
        let State {
            ring,
            seats,
            waiting,
            ..
        } = &mut *state;
        let Some(ring) = ring else {
            for seat in seats.iter().flatten() {
                if let Seat::Own(queue) = seat {
                    let (pushed, waiter) = queue.push(event);
                    tally[pushed as usize] += 1;
                    waiters.extend(waiter);
                }
            }
            return;
        };
        let members = ring.members();
        let lost = ring.push(event);
        tally[Pushed::Queued as usize] += members - lost;
        tally[Pushed::DroppedOldest as usize] += lost;
        for index in waiting.drain(..) {
            if let Some(Some(Seat::Shared(cursor))) = seats.get_mut(index) {
                cursor.listed = false;
                waiters.extend(cursor.waiter.take());
            }
        }
    }

    /// As [`Queue::pop_or_register`], for the member at `seat`.
    #[inline]
    pub(crate) fn pop_or_register(
        &self,
        seat: usize,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        let mut state = self.state.lock();
        let State {
            ring,
            seats,
            waiting,
            ..
        } = &mut *state;
        match seat_mut(seats, seat) {
            Seat::Shared(cursor) => {
                let next = cursor.pop(ring.as_mut().expect("a split lane has no shared seat"));
                if next.is_none() {
                    register(&mut cursor.waiter);
                    if cursor.waiter.is_some() && !std::mem::replace(&mut cursor.listed, true) {
                        waiting.push(seat);
                    }
                }
                next
            }
            Seat::Own(queue) => queue.pop_or_register(register),
        }
    }

    /// As [`Queue::forget_waiter`].
    pub(crate) fn forget_waiter(&self, seat: usize) {
        match seat_mut(&mut self.state.lock().seats, seat) {
            Seat::Shared(cursor) => cursor.waiter = None,
            Seat::Own(queue) => queue.forget_waiter(),
        }
    }

    /// As [`Queue::complete`].
    pub(crate) fn complete(&self, seat: usize) -> Option<Waiter> {
        match seat_mut(&mut self.state.lock().seats, seat) {
            Seat::Shared(cursor) => {
                if !matches!(cursor.phase, Phase::Open) {
                    return None;
                }
                cursor.phase = Phase::Completing;
                cursor.waiter.take()
            }
            Seat::Own(queue) => queue.complete(),
        }
    }

    /// As [`Queue::stop`]: the member leaves, and what it had yet to read
    /// is discarded.
    pub(crate) fn stop(&self, seat: usize) -> Option<Waiter> {
        let mut state = self.state.lock();
        let State { ring, seats, .. } = &mut *state;
        match seat_mut(seats, seat) {
            Seat::Shared(cursor) => {
                if cursor.end.is_none() {
                    let ring = ring.as_mut().expect("a split lane has no shared seat");
                    cursor.catch_up(ring);
                    cursor.discarded += ring.leave(cursor.next);
                    cursor.end = Some(ring.tail());
                }
                cursor.lag = 0;
                cursor.phase = Phase::Ended;
                cursor.waiter.take()
            }
            Seat::Own(queue) => queue.stop(),
        }
    }

    /// As [`Queue::snapshot`].
    pub(crate) fn snapshot(&self, seat: usize) -> QueueSnapshot {
        let mut state = self.state.lock();
        let State { ring, seats, .. } = &mut *state;
        match seat_mut(seats, seat) {
            Seat::Shared(cursor) => {
                let ring = ring.as_ref().expect("a split lane has no shared seat");
                let (counts, lag, bytes) = cursor.counts(ring);
                QueueSnapshot {
                    counts,
                    max_depth: cursor.max_depth.max(counts.queued),
                    bytes,
                    max_bytes: self.key.max_bytes,
                    lag,
                    capacity: self.key.capacity,
                    overflow: Overflow::DropOldest,
                    coalesce: false,
                    overflowed: false,
                }
            }
            Seat::Own(queue) => queue.snapshot(),
        }
    }

    /// Frees `seat` for a later member; its listener has gone.
    pub(crate) fn release(&self, seat: usize) {
        let mut state = self.state.lock();
        let State {
            ring, seats, free, ..
        } = &mut *state;
        if let Some(Seat::Shared(cursor)) = seats[seat].take()
            && cursor.end.is_none()
            && let Some(ring) = ring
        {
            ring.leave(cursor.next);
        }
        free.push(seat);
    }
}

impl State {
    /// Gives every seat its own queue (see the module docs); a no-op once
    /// split.
    fn split(&mut self, key: &LaneKey) {
        let Some(ring) = self.ring.take() else {
            return;
        };
        for seat in self.seats.iter_mut().flatten() {
            if let Seat::Shared(cursor) = seat {
                let (counts, lag, _) = cursor.counts(&ring);
                let events: VecDeque<Event> = match cursor.end {
                    None => ring
                        .unread_events(ring.position(cursor.next))
                        .cloned()
                        .collect(),
                    Some(_) => VecDeque::new(),
                };
                let handover = Handover {
                    events,
                    counts,
                    lag,
                    max_depth: cursor.max_depth.max(counts.queued),
                    phase: cursor.phase,
                    waiter: cursor.waiter.take(),
                };
                *seat = Seat::Own(Box::new(Queue::handed_over(
                    key.capacity,
                    key.max_bytes,
                    handover,
                )));
            }
        }
        self.waiting = Vec::new();
    }
}

#[inline]
fn seat_mut(seats: &mut [Option<Seat>], seat: usize) -> &mut Seat {
    seats[seat]
        .as_mut()
        .expect("a seat is released only after its listener has gone")
}

impl Cursor {
    /// Moves on past what eviction took from it, counting it as dropped
    /// and owed to the reader as lag.
    #[cold]
    fn catch_up(&mut self, ring: &Ring) {
        let at = ring.position(self.next);
        let lost = at - self.next;
        self.dropped += lost;
        self.lag += lost;
        self.next = at;
    }

    /// The next item, as [`Queue`]'s pop hands them out: lag first, then
    /// events, then how the member ended.
    #[inline(always)]
    fn pop(&mut self, ring: &mut Ring) -> Option<Next> {
        if self.end.is_none() {
            if ring.position(self.next) != self.next {
                self.catch_up(ring);
            }
            if self.lag > 0 {
                return Some(Next::Lagged(std::mem::take(&mut self.lag)));
            }
            let depth = ring.tail() - self.next;
            if let Some(event) = ring.take(self.next) {
                self.max_depth = self.max_depth.max(depth);
                self.next += 1;
                self.delivered += 1;
                return Some(Next::Event(event));
            }
        }
        match self.phase {
            Phase::Open => None,
            Phase::Completing => {
                self.phase = Phase::Ended;
                Some(Next::Complete)
            }
            Phase::Failed { .. } | Phase::Ended => Some(Next::Closed),
        }
    }

    /// Its counts as of now (with what eviction cost it and its reader has
    /// not yet seen), the lag owed, and the bytes it has yet to read.
    fn counts(&self, ring: &Ring) -> (Counts, u64, usize) {
        let (lost, queued, bytes) = match self.end {
            None => {
                let at = ring.position(self.next);
                let (queued, bytes) = ring.unread(at);
                (at - self.next, queued, bytes)
            }
            Some(_) => (0, 0, 0),
        };
        let counts = Counts {
            matched: self.end.unwrap_or_else(|| ring.tail()) - self.start,
            delivered: self.delivered,
            dropped: self.dropped + lost,
            coalesced: 0,
            queued,
            discarded: self.discarded,
        };
        (counts, self.lag + lost, bytes)
    }
}
