//! A lane's ring: the events some member of the lane has yet to read, each
//! held once however many members will read it, and read by the members
//! without the lane's lock.
//!
//! # Two sides
//!
//! The ring has one writer at a time, the side that holds the lane's lock
//! ([`Bounds`]: pushing, evicting, members joining and leaving), and any
//! number of readers that hold only their own seat's lock ([`Ring::read`]).
//! What the readers share with the writer is what `broadcast`'s receivers
//! share with its sender, and no more: the slot they read (one short lock
//! per slot) and two positions written once per push, `head`
//! (the oldest event held) and `tail` (the next position to write). No
//! lock or counter is shared by all the readers of a lane, so members on
//! different cores read side by side.
//!
//! # Slots
//!
//! A position `p` lives in slot `p mod len`, where `len` is the capacity
//! rounded up to a power of two (and to a chunk), and a slot remembers
//! which position it holds. The writer evicts before it writes, so the ring holds at most
//! `capacity` events and never overwrites one still held. Slots are
//! allocated a chunk at a time as the ring first reaches them, so an idle
//! lane costs a table of empty chunks, not its capacity.
//!
//! # Counts that stay exact
//!
//! Beside each event the slot counts the members yet to read it. A reader
//! takes an event and lowers that count under the slot's lock, and the
//! writer evicts under it too, so an eviction sees exactly the members
//! that had not read the event: they are the members it costs an event (members read in order, so those yet to read the last
//! event evicted are those that lost at least one). A reader that finds its
//! slot evicted (emptied, or holding a later position) reads `head`, which
//! the writer moves before it lets the slot go, and has lost exactly the
//! events from its position to `head`.
//!
//! Every member of a lane has the same bounds, so evicting the ring's oldest
//! event until the newest fits keeps each member's unread events exactly as
//! its own queue would: those are a suffix of the ring, and the suffix that
//! fits a bound is the same whether the events before it were read or not.
//!
//! Events every member has read are freed by the writer at its next push
//! (or when a member leaves), not by the last reader, which holds no lock
//! that would let it move `head`: the ring holds what the slowest member has
//! not read, and what all have read since the last push.
//!
//! Why a mutex per slot and not a read-write lock, as `broadcast` has: every
//! reader writes the slot's count anyway, so a shared hold would bounce the
//! same cache line and cost a second atomic write.
//!
//! A member's place is its [`Cursor`]: the next position it reads, and
//! where it joined and left, from which its counts follow. Read through
//! [`InRing`], the cursor is the member's [`Storage`] for its reader.

use crate::event::Event;
use crate::queue::reader::{Reader, Storage, Stored};
use crate::sync::{AtomicU64, Mutex, OnceLock, Ordering};

/// Slots allocated together (a kibibyte); a fixed size, so that finding a
/// slot in its chunk is a mask with no bounds to check. Two in the loom
/// models, so that a ring of capacity 1 wraps at its third event.
#[cfg(not(mcp_subscriptions_loom))]
const CHUNK: usize = 32;
#[cfg(mcp_subscriptions_loom)]
const CHUNK: usize = 2;

/// The slots and the two positions, shared by the writer and the readers.
#[derive(Debug)]
pub(crate) struct Ring {
    chunks: Box<[OnceLock<Box<[Slot; CHUNK]>>]>,
    /// The number of slots less one (a power of two less one).
    mask: u64,
    /// The position of the oldest event held; moved by the writer before
    /// it releases the slot it evicted, so a reader that finds its slot
    /// evicted finds its loss here.
    head: AtomicU64,
    /// The position the next event takes; moved by the writer after the
    /// slot is written, so a reader that sees it sees the event.
    tail: AtomicU64,
}

#[derive(Debug, Default)]
struct Slot(Mutex<Cell>);

#[derive(Debug, Default)]
struct Cell {
    /// The position whose event this is, or was.
    position: u64,
    /// `None` once evicted or freed.
    event: Option<Event>,
    /// Members yet to read it.
    unread_by: usize,
}

/// What a member finds at its position.
pub(crate) enum Read {
    /// The event, and how many the member had yet to read, it included.
    Event(Event, u64),
    /// Nothing new yet.
    Empty,
    /// Evicted: the member's next event is at this position.
    Lost(u64),
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Self {
        let len = capacity.next_power_of_two().max(CHUNK);
        Self {
            chunks: (0..len / CHUNK).map(|_| OnceLock::new()).collect(),
            mask: len as u64 - 1,
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
        }
    }

    /// The position the next event will take.
    #[inline]
    pub(crate) fn tail(&self) -> u64 {
        self.tail.load(Ordering::Acquire)
    }

    /// The position of the oldest event held.
    #[inline]
    fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Where a member whose next event was `next` reads now: eviction may
    /// have moved it past events it never read.
    #[inline]
    pub(crate) fn position(&self, next: u64) -> u64 {
        next.max(self.head())
    }

    /// How many events the member at `next` has yet to read.
    #[inline]
    pub(crate) fn depth(&self, next: u64) -> u64 {
        self.tail() - self.position(next)
    }

    /// The event at `at` for the member there, which moves on past it. Takes
    /// no lock but the slot's.
    #[inline(always)]
    pub(crate) fn read(&self, at: u64) -> Read {
        let tail = self.tail();
        if at == tail {
            return Read::Empty;
        }
        let mut cell = self.slot(at).0.lock();
        if cell.position == at
            && let Some(event) = &cell.event
        {
            let event = event.clone();
            cell.unread_by -= 1;
            return Read::Event(event, tail - at);
        }
        drop(cell);
        // Evicted: `head` moved before the slot was let go.
        Read::Lost(self.head())
    }

    /// How many events the member at `at` has yet to read, and their
    /// rendered size. Exact only under the lane's lock (no push moves the
    /// positions meanwhile).
    pub(crate) fn unread(&self, at: u64) -> (u64, usize) {
        let mut bytes = 0;
        self.for_each_unread(at, |event| bytes += event.rendered_len());
        (self.tail() - at, bytes)
    }

    /// Calls `f` on each event the member at `at` has yet to read, oldest
    /// first, under the lane's lock.
    pub(crate) fn for_each_unread(&self, at: u64, mut f: impl FnMut(&Event)) {
        for position in at..self.tail() {
            if let Some(event) = &self.slot(position).0.lock().event {
                f(event);
            }
        }
    }

    #[inline(always)]
    fn slot(&self, position: u64) -> &Slot {
        let index = (position & self.mask) as usize;
        let chunk = self.chunks[index / CHUNK]
            .get()
            .expect("a position below the tail has its chunk");
        &chunk[index % CHUNK]
    }

    /// The slot for `position`, allocating its chunk on first use; the
    /// writer's alone.
    fn slot_to_write(&self, position: u64) -> &Slot {
        let index = (position & self.mask) as usize;
        let chunk = self.chunks[index / CHUNK].get_or_init(Box::default);
        &chunk[index % CHUNK]
    }
}

/// The writer's side of a ring: its bounds and what they count. Every
/// method is called under the lane's lock, with the ring it keeps.
#[derive(Debug)]
pub(crate) struct Bounds {
    /// The rendered size of the events held.
    bytes: usize,
    capacity: usize,
    max_bytes: usize,
    members: usize,
}

impl Bounds {
    pub(crate) fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            bytes: 0,
            capacity: capacity.max(1),
            max_bytes,
            members: 0,
        }
    }

    /// Members that take events now.
    pub(crate) fn members(&self) -> usize {
        self.members
    }

    /// Adds a member that reads from the next event on; returns its
    /// position.
    pub(crate) fn join(&mut self, ring: &Ring) -> u64 {
        self.members += 1;
        ring.tail()
    }

    /// Removes the member whose next event was `next`; returns how many
    /// events it had not read (from `next` as [`Ring::position`] reports
    /// it). Its reader must not read meanwhile (the caller holds its seat).
    pub(crate) fn leave(&mut self, ring: &Ring, next: u64) -> u64 {
        let at = ring.position(next);
        for position in at..ring.tail() {
            ring.slot(position).0.lock().unread_by -= 1;
        }
        self.members -= 1;
        self.trim(ring);
        ring.tail() - at
    }

    /// Whether pushing `event` evicts for the byte bound, which may leave
    /// members with fewer unread events than they had.
    pub(crate) fn evicts_bytes_for(&self, ring: &Ring, event: &Event) -> bool {
        events_held(ring) > 0 && self.bytes + event.rendered_len() > self.max_bytes
    }

    /// Evicts the oldest events until `event` fits (an event larger than
    /// the byte bound still goes in, alone), then appends it for every
    /// member. Returns how many members lost an event to that.
    pub(crate) fn push(&mut self, ring: &Ring, event: &Event) -> usize {
        if self.members == 0 {
            // Nobody would read it.
            return 0;
        }
        // What everyone has read is not a loss: free it first.
        self.trim(ring);
        let len = event.rendered_len();
        let mut lost = 0;
        while events_held(ring) > 0
            && (events_held(ring) >= self.capacity as u64 || self.bytes + len > self.max_bytes)
        {
            // Those yet to read an evicted event were yet to read the
            // ones before it, so the last count is everyone who lost one.
            lost = self.evict(ring);
        }
        let tail = ring.tail();
        {
            let mut cell = ring.slot_to_write(tail).0.lock();
            cell.position = tail;
            cell.event = Some(event.clone());
            cell.unread_by = self.members;
        }
        self.bytes += len;
        // After the slot is written: a reader that sees the new tail finds
        // the event in it.
        ring.tail.store(tail + 1, Ordering::Release);
        lost
    }

    /// Frees the oldest events no member has yet to read.
    fn trim(&mut self, ring: &Ring) {
        while events_held(ring) > 0 && self.evict_if_read(ring) {}
    }

    /// Drops the oldest event; returns how many members were yet to read
    /// it (they find their loss at their next read).
    fn evict(&mut self, ring: &Ring) -> usize {
        self.evict_where(ring, |_| true)
            .expect("evicting with no condition always evicts")
    }

    /// Drops the oldest event if every member has read it.
    fn evict_if_read(&mut self, ring: &Ring) -> bool {
        self.evict_where(ring, |unread_by| unread_by == 0).is_some()
    }

    /// Drops the oldest event if `evict` says so of its unread count,
    /// which is exact under the slot's lock; returns that count.
    fn evict_where(&mut self, ring: &Ring, evict: impl FnOnce(usize) -> bool) -> Option<usize> {
        let head = ring.head.load(Ordering::Relaxed);
        let mut cell = ring.slot(head).0.lock();
        let unread_by = cell.unread_by;
        if !evict(unread_by) {
            return None;
        }
        if let Some(event) = cell.event.take() {
            self.bytes -= event.rendered_len();
        }
        // Before the slot is let go: a reader that finds it emptied finds
        // the new head.
        ring.head.store(head + 1, Ordering::Release);
        Some(unread_by)
    }
}

/// How many events the ring holds, read by its writer.
fn events_held(ring: &Ring) -> u64 {
    ring.tail.load(Ordering::Relaxed) - ring.head.load(Ordering::Relaxed)
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
    pub(crate) ring: &'a Ring,
}

impl Storage for InRing<'_> {
    #[inline(always)]
    fn take<E>(&mut self, reader: &mut Reader<E>) -> Option<Event> {
        if self.cursor.has_left() {
            return None;
        }
        match self.ring.read(self.cursor.next) {
            Read::Event(event, depth) => {
                reader.max_depth = reader.max_depth.max(depth);
                reader.delivered += 1;
                self.cursor.next += 1;
                Some(event)
            }
            Read::Empty => None,
            // Eviction moves a member on without visiting it: the reader
            // finds its loss here, and is told of it before the next
            // event. (Only this owes a member's reader lag, and the reader
            // takes it at once, so no lag is owed past this point.)
            Read::Lost(head) => {
                self.cursor.lost_up_to(head, reader);
                None
            }
        }
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
    pub(crate) fn catch_up<E>(&mut self, ring: &Ring, reader: &mut Reader<E>) {
        self.lost_up_to(ring.position(self.next), reader);
    }

    #[cold]
    fn lost_up_to<E>(&mut self, at: u64, reader: &mut Reader<E>) {
        let lost = at.saturating_sub(self.next);
        reader.dropped += lost;
        reader.lag += lost;
        self.next = self.next.max(at);
    }

    /// Notes how deep its queue is now. Its depth only grows between its
    /// reads, except when the byte bound evicts, so noting it at each read,
    /// before such an eviction, on leaving and in each snapshot finds the
    /// deepest it has been.
    pub(crate) fn note_depth<E>(&self, ring: &Ring, reader: &mut Reader<E>) {
        if !self.has_left() {
            reader.max_depth = reader.max_depth.max(ring.depth(self.next));
        }
    }

    /// Leaves the ring, if it has not yet; how many events it had not read.
    pub(crate) fn leave<E>(
        &mut self,
        ring: &Ring,
        bounds: &mut Bounds,
        reader: &mut Reader<E>,
    ) -> u64 {
        if self.has_left() {
            return 0;
        }
        self.note_depth(ring, reader);
        self.catch_up(ring, reader);
        let unread = bounds.leave(ring, self.next);
        self.end = ring.tail();
        unread
    }

    /// What it holds as of now, with what eviction cost it that its reader
    /// has not yet seen; exact under the lane's lock.
    pub(crate) fn stored(&self, ring: &Ring) -> Stored {
        if self.has_left() {
            return Stored {
                matched: self.end - self.start,
                coalesced: 0,
                lost: 0,
                queued: 0,
                bytes: 0,
            };
        }
        let at = ring.position(self.next);
        let (queued, bytes) = ring.unread(at);
        Stored {
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

    /// A ring of `capacity` events and `max_bytes`, with its writer.
    fn ring(capacity: usize, max_bytes: usize) -> (Ring, Bounds) {
        (Ring::new(capacity), Bounds::new(capacity, max_bytes))
    }

    fn take(ring: &Ring, at: u64) -> Option<Event> {
        match ring.read(at) {
            Read::Event(event, _) => Some(event),
            _ => None,
        }
    }

    #[test]
    fn an_event_is_held_until_its_last_reader_takes_it() {
        let (ring, mut bounds) = ring(8, usize::MAX);
        let (a, b) = (bounds.join(&ring), bounds.join(&ring));
        assert_eq!(bounds.push(&ring, &event(0)), 0);
        assert!(take(&ring, a).is_some());
        assert_eq!(ring.unread(b).0, 1);
        assert!(take(&ring, b).is_some());
        assert_eq!(ring.unread(ring.tail()), (0, 0));
        // Read by both, so freed at the next push, not counted as a loss.
        assert_eq!(bounds.push(&ring, &event(1)), 0);
        assert_eq!(events_held(&ring), 1);
    }

    #[test]
    fn eviction_counts_the_members_that_lose_an_event() {
        let (ring, mut bounds) = ring(2, usize::MAX);
        let (slow, fast) = (bounds.join(&ring), bounds.join(&ring));
        bounds.push(&ring, &event(0));
        take(&ring, fast).unwrap();
        let fast = fast + 1;
        bounds.push(&ring, &event(1));
        // The third event evicts the first, which only `slow` had not read.
        assert_eq!(bounds.push(&ring, &event(2)), 1);
        assert_eq!(ring.position(slow), 1);
        assert!(matches!(ring.read(slow), Read::Lost(1)));
        // The fourth evicts the second, unread by both.
        assert_eq!(bounds.push(&ring, &event(3)), 2);
        assert_eq!(ring.position(fast), 2);
        assert_eq!(ring.unread(2).0, 2);
    }

    #[test]
    fn a_position_wraps_into_a_slot_of_a_later_event() {
        let (ring, mut bounds) = ring(3, usize::MAX);
        let member = bounds.join(&ring);
        let pushed = CHUNK as u64 + 8;
        for i in 0..pushed {
            bounds.push(&ring, &event(i as usize));
        }
        // Position 0's slot has held a later position since; it reads as
        // lost up to the head (capacity 3 keeps the last three).
        let head = pushed - 3;
        assert!(matches!(ring.read(member), Read::Lost(at) if at == head));
        assert_eq!(take(&ring, head), Some(event(head as usize)));
        assert_eq!(take(&ring, pushed - 1), Some(event(pushed as usize - 1)));
        assert!(matches!(ring.read(pushed), Read::Empty));
    }

    #[test]
    fn the_byte_bound_evicts_but_keeps_one_event_larger_than_it() {
        let len = event(0).rendered_len();
        let (ring, mut bounds) = ring(100, len * 2);
        let member = bounds.join(&ring);
        for i in 0..3 {
            bounds.push(&ring, &event(i));
        }
        assert_eq!(ring.unread(ring.position(member)), (2, len * 2));
        let big = Event::resource_updated("x".repeat(len * 3));
        assert_eq!(bounds.push(&ring, &big), 1);
        assert_eq!(ring.unread(ring.position(member)).0, 1);
    }

    #[test]
    fn the_byte_bound_holds_as_events_come_and_go() {
        let len = event(0).rendered_len();
        let (ring, mut bounds) = ring(100, len * 3);
        let member = bounds.join(&ring);
        for i in 0..9 {
            bounds.push(&ring, &event(i));
            let held = (i + 1).min(3);
            assert_eq!(
                ring.unread(ring.position(member)),
                (held as u64, len * held)
            );
        }
    }

    #[test]
    fn a_member_leaving_frees_what_only_it_had_left() {
        let (ring, mut bounds) = ring(8, usize::MAX);
        let member = bounds.join(&ring);
        bounds.push(&ring, &event(0));
        bounds.push(&ring, &event(1));
        assert_eq!(bounds.leave(&ring, member), 2);
        assert_eq!(bounds.members(), 0);
        assert_eq!(events_held(&ring), 0);
        // With nobody to read it, an event is not kept.
        bounds.push(&ring, &event(2));
        assert_eq!(events_held(&ring), 0);
    }

    #[test]
    fn an_idle_ring_allocates_no_slots() {
        let ring = Ring::new(1_024);
        assert_eq!(ring.chunks.len(), 1_024 / CHUNK);
        assert!(ring.chunks.iter().all(|chunk| chunk.get().is_none()));
    }
}
