//! A lane's ring: the events some member of the lane has yet to read, each
//! held once however many members will read it.
//!
//! Beside each event the ring counts the members yet to read it. So a
//! publish that evicts the oldest event knows exactly how many members lose
//! it, without visiting any member (members read in order, so those yet to
//! read the last event evicted are those that lost at least one), and a
//! read knows when the oldest event is no longer anyone's and frees it, so
//! the ring holds what the slowest member has not read and no more. A read
//! updates one count, the event's it takes.
//!
//! Every member of a lane has the same bounds, so evicting the ring's oldest
//! event until the newest fits keeps each member's unread events exactly as
//! its own queue would: those are a suffix of the ring, and the suffix that
//! fits a bound is the same whether the events before it were read or not.
//!
//! A member's place is its [`Cursor`]: the next position it reads, and
//! where it joined and left, from which its counts follow. Read through
//! [`InRing`], the cursor is the member's [`Storage`] for its reader.

use std::collections::VecDeque;

use super::reader::{Held, Reader, Storage};
use crate::event::Event;

#[derive(Debug)]
pub(crate) struct Ring {
    slots: VecDeque<Slot>,
    /// The position of `slots[0]`; positions count every event the lane
    /// was given.
    first: u64,
    /// The rendered size of the events held.
    bytes: usize,
    capacity: usize,
    max_bytes: usize,
    members: usize,
}

/// One event, and how many members are yet to read it.
#[derive(Debug)]
struct Slot {
    event: Event,
    unread_by: usize,
}

impl Ring {
    pub(crate) fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            slots: VecDeque::new(),
            first: 0,
            bytes: 0,
            capacity,
            max_bytes,
            members: 0,
        }
    }

    /// The position the next event will take.
    #[inline]
    pub(crate) fn tail(&self) -> u64 {
        self.first + self.slots.len() as u64
    }

    /// Members that take events now.
    pub(crate) fn members(&self) -> usize {
        self.members
    }

    /// Adds a member that reads from the next event on; returns its
    /// position.
    pub(crate) fn join(&mut self) -> u64 {
        self.members += 1;
        self.tail()
    }

    /// Removes the member whose next event was `next`; returns how many
    /// events it had not read (`next` as [`position`](Self::position)
    /// reports it).
    pub(crate) fn leave(&mut self, next: u64) -> u64 {
        let at = self.position(next);
        let offset = self.offset(at);
        for slot in self.slots.range_mut(offset..) {
            slot.unread_by -= 1;
        }
        self.members -= 1;
        self.trim();
        self.tail() - at
    }

    /// Where a member whose next event was `next` reads now: eviction may
    /// have moved it past events it never read.
    #[inline]
    pub(crate) fn position(&self, next: u64) -> u64 {
        next.max(self.first)
    }

    /// How many events the member at `at` has yet to read, and their
    /// rendered size.
    pub(crate) fn unread(&self, at: u64) -> (u64, usize) {
        let bytes = self.unread_events(at).map(Event::rendered_len).sum();
        (self.tail() - at, bytes)
    }

    /// The events the member at `at` has yet to read, oldest first.
    pub(crate) fn unread_events(&self, at: u64) -> impl Iterator<Item = &Event> {
        self.slots.range(self.offset(at)..).map(|slot| &slot.event)
    }

    /// Whether pushing `event` evicts for the byte bound, which may leave
    /// members with fewer unread events than they had.
    pub(crate) fn evicts_bytes_for(&self, event: &Event) -> bool {
        !self.slots.is_empty() && self.bytes + event.rendered_len() > self.max_bytes
    }

    /// How many events the member at `next` has yet to read.
    #[inline]
    pub(crate) fn depth(&self, next: u64) -> u64 {
        self.tail() - self.position(next)
    }

    /// Appends `event` for every member, then evicts the oldest events
    /// until the ring is back within its bounds (an event larger than the
    /// byte bound still stays, alone). Returns how many members lost an
    /// event to that.
    pub(crate) fn push(&mut self, event: &Event) -> usize {
        if self.members == 0 {
            // Nobody would read it.
            return 0;
        }
        self.bytes += event.rendered_len();
        self.slots.push_back(Slot {
            event: event.clone(),
            unread_by: self.members,
        });
        let mut lost = 0;
        while (self.slots.len() > self.capacity || self.bytes > self.max_bytes)
            && self.slots.len() > 1
        {
            // Those yet to read an evicted event were yet to read the
            // ones before it, so the last count is everyone who lost one.
            lost = self.pop_front();
        }
        self.trim();
        lost
    }

    /// The event at `at` for the member there, which moves on past it;
    /// `None` when it has read everything.
    #[inline]
    pub(crate) fn take(&mut self, at: u64) -> Option<Event> {
        let offset = self.offset(at);
        let slot = self.slots.get_mut(offset)?;
        let event = slot.event.clone();
        slot.unread_by -= 1;
        // Members read in order, so only the oldest event can be left
        // with no reader by a read.
        if slot.unread_by == 0 && offset == 0 {
            self.trim();
        }
        Some(event)
    }

    /// Frees the oldest events no member has yet to read.
    fn trim(&mut self) {
        while self.slots.front().is_some_and(|slot| slot.unread_by == 0) {
            self.pop_front();
        }
    }

    /// Drops the oldest event; returns how many members were yet to read
    /// it (they find their loss at their next read: see
    /// [`position`](Self::position)).
    fn pop_front(&mut self) -> usize {
        let Some(slot) = self.slots.pop_front() else {
            return 0;
        };
        self.bytes -= slot.event.rendered_len();
        self.first += 1;
        slot.unread_by
    }

    #[inline]
    fn offset(&self, at: u64) -> usize {
        (at - self.first) as usize
    }
}

/// A member's place in the ring.
#[derive(Debug)]
pub(crate) struct Cursor {
    /// The position of the next event it reads, unless eviction moved it
    /// on (see [`Ring::position`]).
    pub(crate) next: u64,
    /// Where it joined, and where it left: it matched every event between.
    start: u64,
    /// [`STILL_IN`] until it leaves (a plain number, not an `Option`, as a
    /// lane keeps one cursor per member).
    end: u64,
}

/// The end of a member that has not left.
const STILL_IN: u64 = u64::MAX;

/// A member's storage: its cursor into the ring.
pub(crate) struct InRing<'a> {
    pub(crate) cursor: &'a mut Cursor,
    pub(crate) ring: &'a mut Ring,
}

impl Storage for InRing<'_> {
    #[inline(always)]
    fn take(&mut self, reader: &mut Reader) -> Option<Event> {
        if self.cursor.has_left() {
            return None;
        }
        // Eviction moves a member on without visiting it: the reader finds
        // its loss here, and is told of it before the next event. (Only
        // this owes a member's reader lag, and the reader takes it at once,
        // so no lag is owed past this point.)
        if self.ring.position(self.cursor.next) != self.cursor.next {
            self.cursor.catch_up(self.ring, reader);
            return None;
        }
        let depth = self.ring.depth(self.cursor.next);
        let event = self.ring.take(self.cursor.next)?;
        reader.max_depth = reader.max_depth.max(depth);
        self.cursor.next += 1;
        Some(event)
    }
}

impl Cursor {
    /// A new member's, reading from `at` on.
    pub(crate) fn at(at: u64) -> Self {
        Self {
            next: at,
            start: at,
            end: STILL_IN,
        }
    }

    #[inline]
    pub(crate) fn has_left(&self) -> bool {
        self.end != STILL_IN
    }

    /// Moves on past what eviction took from it, counting it as dropped
    /// and owed to the reader as lag.
    #[cold]
    pub(crate) fn catch_up(&mut self, ring: &Ring, reader: &mut Reader) {
        let at = ring.position(self.next);
        let lost = at - self.next;
        reader.dropped += lost;
        reader.lag += lost;
        self.next = at;
    }

    /// Notes how deep its queue is now. Its depth only grows between its
    /// reads, except when the byte bound evicts, so noting it at each read,
    /// before such an eviction, on leaving and in each snapshot finds the
    /// deepest it has been.
    pub(crate) fn note_depth(&self, ring: &Ring, reader: &mut Reader) {
        if !self.has_left() {
            reader.max_depth = reader.max_depth.max(ring.depth(self.next));
        }
    }

    /// Leaves the ring, if it has not yet; how many events it had not read.
    pub(crate) fn leave(&mut self, ring: &mut Ring, reader: &mut Reader) -> u64 {
        if self.has_left() {
            return 0;
        }
        self.note_depth(ring, reader);
        self.catch_up(ring, reader);
        let unread = ring.leave(self.next);
        self.end = ring.tail();
        unread
    }

    /// What it holds as of now, with what eviction cost it that its reader
    /// has not yet seen.
    pub(crate) fn held(&self, ring: &Ring) -> Held {
        if self.has_left() {
            return Held {
                matched: self.end - self.start,
                coalesced: 0,
                lost: 0,
                queued: 0,
                bytes: 0,
            };
        }
        let at = ring.position(self.next);
        let (queued, bytes) = ring.unread(at);
        Held {
            matched: ring.tail() - self.start,
            coalesced: 0,
            lost: at - self.next,
            queued,
            bytes,
        }
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;

    fn event(i: usize) -> Event {
        Event::resource_updated(i.to_string())
    }

    #[test]
    fn an_event_is_held_until_its_last_reader_takes_it() {
        let mut ring = Ring::new(8, usize::MAX);
        let (a, b) = (ring.join(), ring.join());
        assert_eq!(ring.push(&event(0)), 0);
        assert!(ring.take(a).is_some());
        assert_eq!(ring.unread(b).0, 1);
        assert!(ring.take(b).is_some());
        assert_eq!(ring.unread(ring.tail()), (0, 0));
        assert!(ring.slots.is_empty(), "read by both, so freed");
    }

    #[test]
    fn eviction_counts_the_members_that_lose_an_event() {
        let mut ring = Ring::new(2, usize::MAX);
        let (slow, fast) = (ring.join(), ring.join());
        ring.push(&event(0));
        let fast = {
            ring.take(fast).unwrap();
            fast + 1
        };
        ring.push(&event(1));
        // The third event evicts the first, which only `slow` had not read.
        assert_eq!(ring.push(&event(2)), 1);
        assert_eq!(ring.position(slow), 1);
        // The fourth evicts the second, unread by both.
        assert_eq!(ring.push(&event(3)), 2);
        assert_eq!(ring.position(fast), 2);
        assert_eq!(ring.unread(2).0, 2);
    }

    #[test]
    fn the_byte_bound_evicts_but_keeps_one_event_larger_than_it() {
        let len = event(0).rendered_len();
        let mut ring = Ring::new(100, len * 2);
        let member = ring.join();
        for i in 0..3 {
            ring.push(&event(i));
        }
        assert_eq!(ring.unread(ring.position(member)), (2, len * 2));
        let big = Event::resource_updated("x".repeat(len * 3));
        assert_eq!(ring.push(&big), 1);
        assert_eq!(ring.unread(ring.position(member)).0, 1);
    }

    #[test]
    fn a_member_leaving_frees_what_only_it_had_left() {
        let mut ring = Ring::new(8, usize::MAX);
        let member = ring.join();
        ring.push(&event(0));
        ring.push(&event(1));
        assert_eq!(ring.leave(member), 2);
        assert_eq!(ring.members(), 0);
        assert!(ring.slots.is_empty());
        // With nobody to read it, an event is not kept.
        ring.push(&event(2));
        assert!(ring.slots.is_empty());
    }
}
