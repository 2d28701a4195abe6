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
//! The registry opens a lane for the second listener alike; the first keeps
//! a queue of its own, so a listener alike to no other pays for no lane.
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
        Some(Self::new(filter, capacity, max_bytes))
    }

    fn new(filter: &Filter, capacity: usize, max_bytes: usize) -> Self {
        let mut uris: Vec<String> = filter.resource_subscriptions().map(str::to_owned).collect();
        uris.sort_unstable();
        Self {
            capacity,
            max_bytes,
            lists: [
                filter.tools_list_changed(),
                filter.prompts_list_changed(),
                filter.resources_list_changed(),
            ],
            uris,
        }
    }
}

/// The key and the routing are its members' (the registry keeps the key;
/// the index, the routing): a lane holds only what a queue would.
#[derive(Debug)]
pub(crate) struct Lane {
    capacity: usize,
    max_bytes: usize,
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
    phase: SeatPhase,
    waiter: Option<Waiter>,
    listed: bool,
}

/// Where a member is in its life (a queue's [`Phase`], less the failure
/// that drop-oldest never has), in a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeatPhase {
    Open,
    /// The hub completed: read what is left, then `Complete`.
    Completing,
    /// `Complete` was read, or it closed: every read gets `Closed`.
    Ended,
}

impl From<SeatPhase> for Phase {
    fn from(phase: SeatPhase) -> Self {
        match phase {
            SeatPhase::Open => Self::Open,
            SeatPhase::Completing => Self::Completing,
            SeatPhase::Ended => Self::Ended,
        }
    }
}

impl Lane {
    pub(crate) fn new(key: &LaneKey) -> Self {
        Self {
            capacity: key.capacity,
            max_bytes: key.max_bytes,
            state: Mutex::new(State {
                ring: Some(Ring::new(key.capacity, key.max_bytes)),
                seats: Vec::new(),
                free: Vec::new(),
                waiting: Vec::new(),
            }),
        }
    }

    /// Its key, given a member's `filter`.
    pub(crate) fn key(&self, filter: &Filter) -> LaneKey {
        LaneKey::new(filter, self.capacity, self.max_bytes)
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
                    phase: SeatPhase::Open,
                    waiter: None,
                    listed: false,
                })
            }
            None => Seat::Own(Box::new(
                Queue::new(self.capacity, Overflow::DropOldest, false)
                    .with_byte_bounds(self.max_bytes, None),
            )),
        };
        if let Some(index) = state.free.pop() {
            state.seats[index] = Some(seat);
            return index;
        }
        // Doubling from one, not four: most lanes have one member.
        let seats = &mut state.seats;
        if seats.len() == seats.capacity() {
            seats.reserve_exact(seats.len().max(1));
        }
        seats.push(Some(seat));
        seats.len() - 1
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
            state.split(self.capacity, self.max_bytes);
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
        if ring.evicts_bytes_for(event) {
            // Each member's deepest is noted as its reader would find it,
            // so a queue shrunk by the byte bound must be noted before.
            for seat in seats.iter_mut().flatten() {
                if let Seat::Shared(cursor) = seat {
                    cursor.note_depth(ring);
                }
            }
        }
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
                if cursor.phase != SeatPhase::Open {
                    return None;
                }
                cursor.phase = SeatPhase::Completing;
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
                    cursor.note_depth(ring);
                    cursor.catch_up(ring);
                    cursor.discarded += ring.leave(cursor.next);
                    cursor.end = Some(ring.tail());
                }
                cursor.lag = 0;
                cursor.phase = SeatPhase::Ended;
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
                    max_bytes: self.max_bytes,
                    lag,
                    capacity: self.capacity,
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
    fn split(&mut self, capacity: usize, max_bytes: usize) {
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
                    phase: cursor.phase.into(),
                    waiter: cursor.waiter.take(),
                };
                *seat = Seat::Own(Box::new(Queue::handed_over(capacity, max_bytes, handover)));
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

    /// Notes how deep its queue is now. Its depth only grows between its
    /// reads, except when the byte bound evicts, so noting it at each read,
    /// before such an eviction, on leaving and in each snapshot finds the
    /// deepest it has been.
    fn note_depth(&mut self, ring: &Ring) {
        if self.end.is_none() {
            self.max_depth = self.max_depth.max(ring.depth(self.next));
        }
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
            let depth = ring.depth(self.next);
            if let Some(event) = ring.take(self.next) {
                self.max_depth = self.max_depth.max(depth);
                self.next += 1;
                self.delivered += 1;
                return Some(Next::Event(event));
            }
        }
        match self.phase {
            SeatPhase::Open => None,
            SeatPhase::Completing => {
                self.phase = SeatPhase::Ended;
                Some(Next::Complete)
            }
            SeatPhase::Ended => Some(Next::Closed),
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

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;
    use crate::event::Succession;

    fn lane(capacity: usize) -> Lane {
        let filter = Filter::new().with_resource("a");
        let key = LaneKey::of(
            &filter,
            capacity,
            Overflow::DropOldest,
            false,
            usize::MAX,
            false,
        )
        .unwrap();
        Lane::new(&key)
    }

    /// Pushes `event`; the tally of outcomes, and the waiters it took.
    fn push(lane: &Lane, event: &Event) -> ([usize; Pushed::COUNT], usize) {
        let (mut tally, mut waiters) = ([0; Pushed::COUNT], Vec::new());
        lane.push(event, &mut tally, &mut waiters);
        (tally, waiters.len())
    }

    fn update(i: usize) -> Event {
        Event::resource_updated(i.to_string())
    }

    fn pop(lane: &Lane, seat: usize) -> Option<Next> {
        lane.pop_or_register(seat, |_| {})
    }

    fn uri(next: Option<Next>) -> String {
        match next {
            Some(Next::Event(event)) => event.to_plain_json(),
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn only_settings_and_routing_that_a_lane_can_keep_make_a_key() {
        let filter = Filter::new().with_tools_list_changed();
        let key = |overflow, coalesce, budgeted, filter: &Filter| {
            LaneKey::of(filter, 8, overflow, coalesce, 100, budgeted)
        };
        assert!(key(Overflow::DropOldest, false, false, &filter).is_some());
        assert!(key(Overflow::Disconnect, false, false, &filter).is_none());
        assert!(key(Overflow::DropOldest, true, false, &filter).is_none());
        assert!(key(Overflow::DropOldest, false, true, &filter).is_none());
        assert!(key(Overflow::DropOldest, false, false, &Filter::everything()).is_none());
        let tasks = filter
            .clone()
            .with_extension("taskIds", serde_json::json!(["t"]));
        assert!(key(Overflow::DropOldest, false, false, &tasks).is_none());
        // The order a request names its URIs in does not matter.
        let ab = Filter::new().with_resource("a").with_resource("b");
        let ba = Filter::new().with_resource("b").with_resource("a");
        assert_eq!(
            key(Overflow::DropOldest, false, false, &ab),
            key(Overflow::DropOldest, false, false, &ba)
        );
    }

    #[test]
    fn members_read_at_their_own_pace_and_the_slow_one_finds_its_loss() {
        let lane = lane(2);
        let (slow, fast) = (lane.join(), lane.join());
        for i in 0..3 {
            let (tally, _) = push(&lane, &update(i));
            assert_eq!(
                tally[Pushed::DroppedOldest as usize],
                usize::from(i == 2),
                "the third event costs only the slow member its first"
            );
            assert_eq!(uri(pop(&lane, fast)), update(i).to_plain_json());
        }
        assert_eq!(pop(&lane, fast), None);
        let snap = lane.snapshot(slow);
        assert_eq!(
            (snap.counts.dropped, snap.lag, snap.counts.queued),
            (1, 1, 2)
        );
        assert_eq!(pop(&lane, slow), Some(Next::Lagged(1)));
        assert_eq!(uri(pop(&lane, slow)), update(1).to_plain_json());
        assert_eq!(uri(pop(&lane, slow)), update(2).to_plain_json());
        for seat in [slow, fast] {
            let counts = lane.snapshot(seat).counts;
            assert!(counts.is_balanced(), "{counts:?}");
            assert_eq!(counts.matched, 3);
        }
    }

    #[test]
    fn a_registered_reader_is_woken_once_per_publish_and_not_after_forgetting() {
        let lane = lane(4);
        let seat = lane.join();
        let waker = std::task::Waker::noop();
        for _ in 0..2 {
            // Registering twice lists the seat once.
            assert!(
                lane.pop_or_register(seat, |slot| *slot = Some(Waiter::Task(waker.clone())))
                    .is_none()
            );
        }
        assert_eq!(push(&lane, &update(0)).1, 1);
        assert_eq!(push(&lane, &update(1)).1, 0, "nobody is waiting now");
        uri(pop(&lane, seat));
        uri(pop(&lane, seat));
        lane.pop_or_register(seat, |slot| *slot = Some(Waiter::Task(waker.clone())));
        lane.forget_waiter(seat);
        assert_eq!(push(&lane, &update(2)).1, 0);
    }

    #[test]
    fn closing_discards_what_the_member_had_left_and_completing_drains_first() {
        let lane = lane(8);
        let (closing, completing) = (lane.join(), lane.join());
        push(&lane, &update(0));
        push(&lane, &update(1));
        uri(pop(&lane, closing));
        lane.stop(closing);
        assert_eq!(pop(&lane, closing), Some(Next::Closed));
        let counts = lane.snapshot(closing).counts;
        assert_eq!((counts.delivered, counts.discarded), (1, 1));
        assert!(counts.is_balanced());
        // It left: a later event is not its own.
        assert_eq!(push(&lane, &update(2)).0[Pushed::Queued as usize], 1);
        assert_eq!(lane.snapshot(closing).counts.matched, 2);

        lane.complete(completing);
        for i in 0..3 {
            assert_eq!(uri(pop(&lane, completing)), update(i).to_plain_json());
        }
        assert_eq!(pop(&lane, completing), Some(Next::Complete));
        assert_eq!(pop(&lane, completing), Some(Next::Closed));
    }

    #[test]
    fn a_succession_splits_the_lane_and_each_member_goes_on_with_its_own_queue() {
        let lane = lane(2);
        let (behind, current) = (lane.join(), lane.join());
        for i in 0..3 {
            push(&lane, &update(i));
            uri(pop(&lane, current));
        }
        let status =
            |version| Event::resource_updated("s").with_succession(Succession::new("job", version));
        let (tally, _) = push(&lane, &status(1));
        // Split, the behind member's own queue is full and evicts its
        // oldest; the current one's is empty.
        assert_eq!(tally[Pushed::DroppedOldest as usize], 1);
        assert_eq!(tally[Pushed::Queued as usize], 1);
        // A newer version takes the pending one's place in each queue.
        let (tally, _) = push(&lane, &status(2));
        assert_eq!(tally[Pushed::Queued as usize], 2);

        assert_eq!(pop(&lane, behind), Some(Next::Lagged(2)));
        assert_eq!(uri(pop(&lane, behind)), update(2).to_plain_json());
        assert_eq!(uri(pop(&lane, behind)), status(2).to_plain_json());
        assert_eq!(uri(pop(&lane, current)), status(2).to_plain_json());
        for seat in [behind, current] {
            let counts = lane.snapshot(seat).counts;
            assert!(counts.is_balanced(), "{counts:?}");
            assert_eq!((counts.matched, counts.coalesced), (5, 1));
        }
        // A member that joins a split lane gets its own queue at once.
        let late = lane.join();
        push(&lane, &update(9));
        assert_eq!(uri(pop(&lane, late)), update(9).to_plain_json());
    }

    #[test]
    fn a_released_seat_is_reused() {
        let lane = lane(2);
        let first = lane.join();
        lane.stop(first);
        lane.release(first);
        assert_eq!(lane.join(), first);
    }
}

#[cfg(all(test, mcp_subscriptions_loom))]
mod loom_model {
    use loom::thread;

    use super::*;
    use crate::sync::Arc;

    /// A publisher pushing two events into a lane of capacity 1 (so the
    /// second evicts) races two members reading, one of them waiting on its
    /// waker until the last event; whatever the interleaving, no wake-up is
    /// lost (loom reports a reader left waiting as a deadlock), each
    /// member's counts add up, and what it gets keeps publish order. Every step takes
    /// the lane's one lock, so a preemption bound of 3 covers the orders
    /// that matter and keeps the model to seconds.
    #[test]
    fn two_members_race_a_publisher() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(6);
        model.check(|| {
            let filter = Filter::new().with_resource("a");
            let key =
                LaneKey::of(&filter, 1, Overflow::DropOldest, false, usize::MAX, false).unwrap();
            let lane = Arc::new(Lane::new(&key));
            let (waiting, polling) = (lane.join(), lane.join());
            let publisher = {
                let lane = lane.clone();
                thread::spawn(move || {
                    for i in 0..2 {
                        let (mut tally, mut waiters) = ([0; Pushed::COUNT], Vec::new());
                        lane.push(
                            &Event::resource_updated(i.to_string()),
                            &mut tally,
                            &mut waiters,
                        );
                        waiters.into_iter().for_each(Waiter::wake);
                    }
                })
            };
            let reader = {
                let lane = lane.clone();
                let last = Event::resource_updated("1");
                thread::spawn(move || {
                    let mut seen = Vec::new();
                    loom::future::block_on(std::future::poll_fn(|cx| {
                        loop {
                            let next = lane.pop_or_register(waiting, |slot| {
                                *slot = Some(Waiter::Task(cx.waker().clone()));
                            });
                            match next {
                                Some(Next::Event(event)) => {
                                    seen.push(event.to_plain_json());
                                    // The last event always survives: a
                                    // lost wake-up would leave the reader
                                    // waiting for it forever.
                                    if event == last {
                                        return std::task::Poll::Ready(());
                                    }
                                }
                                Some(Next::Lagged(_)) => {}
                                Some(other) => panic!("unexpected {other:?}"),
                                None => return std::task::Poll::Pending,
                            }
                        }
                    }));
                    seen
                })
            };
            let mut polled = Vec::new();
            while let Some(next) = lane.pop_or_register(polling, |_| {}) {
                if let Next::Event(event) = next {
                    polled.push(event.to_plain_json());
                }
            }
            publisher.join().unwrap();
            let waited = reader.join().unwrap();
            lane.stop(polling);
            for (seat, seen) in [(waiting, waited), (polling, polled)] {
                let counts = lane.snapshot(seat).counts;
                assert_eq!(counts.matched, 2);
                assert!(counts.is_balanced(), "{counts:?}");
                assert_eq!(counts.delivered as usize, seen.len());
                let mut sorted = seen.clone();
                sorted.sort();
                assert_eq!(seen, sorted, "delivery order must follow publish order");
            }
        });
    }
}
