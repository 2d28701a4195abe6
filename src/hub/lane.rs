//! A lane: listeners whose queues would be alike share one.
//!
//! Listeners with the same granted filter and the same queue settings
//! (drop-oldest, no coalescing, one capacity and one byte bound, no
//! hub-wide byte budget) would each hold the same events in the same order.
//! A lane holds them once, in a [`Ring`], and each member, a seat, keeps
//! its reader and its position in the ring. A publish into a lane is
//! one push, however many members it has, and a member's reader finds for
//! itself what eviction cost it, as `broadcast` receivers do. The ring
//! counts, per event, the members yet to read it, so a publish still
//! reports exactly how many lost an event, and each seat's counts come out
//! as its own queue would have kept them.
//!
//! # Locks
//!
//! A push takes the lane's lock. A member reads under its seat's lock
//! alone (its reader and cursor, which only its reader, a snapshot and
//! the registry touch) and reads the ring without the lane's, so members
//! on different cores never wait for each other or for the publisher to
//! take an event. Only a member that finds nothing to read takes the
//! lane's lock, to register its waiter where the next push looks: one
//! lock and one wake-up per reader per wait, not per event. Lock order:
//! the lane, then a seat, then the queue a seat moved out to; the lane's
//! [`Chain`] after the lane.
//!
//! # Waking
//!
//! A waiting member's waiter is kept in the lane's own list, not in its
//! seat, so a push takes every waiter of the lane at once, under the lane's
//! lock, without touching a member's seat: a seat is written by its reader
//! alone. The push hands them to the lane's [`Chain`], which the publisher
//! wakes a few of and the woken members pass on (see `chain`): when members
//! keep up, the publisher's share of the wake-ups is a few per lane, not
//! one per member. A member finds its entry in the list by the round it
//! registered in, so a push that empties the list needs to tell no member.
//!
//! A lane seats at most 64 members (`SEATS_PER_LANE`, in the registry),
//! so that no more readers than that share a slot's cache line.
//!
//! The registry opens a lane for the second listener alike; the first keeps
//! a queue of its own, so a listener alike to no other pays for no lane.
//!
//! # Moving out
//!
//! A [succession](crate::Succession) needs each member's own memory of
//! what it took and what it holds, which a ring shared by all cannot keep.
//! Before the first event with a succession reaches a lane, the registry
//! moves every member out ([`Lane::move_out`]): each gets a queue of its
//! own holding what it had yet to read, with its reader as it was, and the
//! index routes to those queues instead of the lane. A member's reader
//! finds its seat moved at its next read and reads its queue from then on.

use std::collections::VecDeque;

use super::chain::Chain;
use super::end::{ListenerEnd, ListenerReader};
use super::id::ListenerId;
use super::own_queue::OwnQueue;
use super::ring::{Bounds, Cursor, InRing, Ring};
use crate::audience::Membership;
use crate::event::{Event, ListKind};
use crate::filter::Filter;
use crate::queue::Overflow;
use crate::queue::Pushed;
use crate::queue::Settings;
use crate::queue::reader::{Snapshot, Waiter};
use crate::source::Next;
use crate::sync::{Arc, AtomicBool, Mutex, MutexGuard, Ordering};

/// What makes listeners' queues alike: their settings and what their
/// filters route.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LaneKey {
    settings: Settings,
    /// Which lists' changes, in the order of [`ListKind::ALL`].
    lists: [bool; 3],
    /// Sorted, so the order a request named them in does not matter.
    uris: Vec<String>,
    /// Listeners of different audiences never share a ring: an event for
    /// one of them must not wait in the others' view.
    membership: Membership,
}

impl LaneKey {
    /// The lane a listener with `filter` and `settings` joins; `None` when
    /// its queue must be its own: it coalesces, disconnects on overflow,
    /// counts against a hub-wide byte budget, or takes extension events or
    /// everything.
    pub(crate) fn of(
        filter: &Filter,
        membership: &Membership,
        settings: Settings,
        budgeted: bool,
    ) -> Option<Self> {
        if settings.coalesce
            || budgeted
            || settings.overflow != Overflow::DropOldest
            || filter.is_everything()
            || !filter.extensions().is_empty()
        {
            return None;
        }
        Some(Self::new(filter, membership, settings))
    }

    fn new(filter: &Filter, membership: &Membership, settings: Settings) -> Self {
        let mut uris: Vec<String> = filter.resource_subscriptions().map(str::to_owned).collect();
        uris.sort_unstable();
        Self {
            settings,
            lists: ListKind::ALL.map(|list| filter.list_changed(list)),
            uris,
            membership: membership.clone(),
        }
    }
}

/// The key and the routing are its members' (the registry keeps the key;
/// the index, the routing): a lane holds only what a queue would.
#[derive(Debug)]
pub(crate) struct Lane {
    settings: Settings,
    /// Some member moved out (see [`Lane::moved`]).
    moved_out: AtomicBool,
    /// Read by members holding only their seat; written under `state`.
    ring: Ring,
    state: Mutex<State>,
    /// The wake-ups of the members each push found waiting.
    chain: Chain,
}

#[derive(Debug)]
struct State {
    bounds: Bounds,
    /// Seat `i` is place `i % SEATS_PER_BLOCK` of block `i /
    /// SEATS_PER_BLOCK`; a place is free again once its listener's entry
    /// is dropped.
    blocks: Vec<Arc<Block>>,
    /// Seats of the blocks that no member holds, the next one last.
    free: Vec<usize>,
    /// The waiters members registered since the last push, each member's
    /// at the place its [`Listing`] says (`None` once it gave up).
    waiting: Vec<Option<Waiter>>,
    /// Pushes that took the waiting list, so that a member's listing of an
    /// earlier round reads as none.
    round: u64,
}

/// Where a member's waiter is in the lane's waiting list: valid only in
/// the round it was made in.
#[derive(Debug, Clone, Copy, Default)]
struct Listing {
    round: u64,
    at: u32,
}

/// Places allocated together, so that a seat costs what it holds and not
/// an allocation of its own (a lane of 64 has eight).
const SEATS_PER_BLOCK: usize = 8;

type Block = [Mutex<Option<Place>>; SEATS_PER_BLOCK];

/// A listener's seat in a lane, as its inbox holds it: its number, and
/// the block of its place, which its reader locks without the lane's lock.
#[derive(Debug)]
pub(crate) struct Seat {
    index: usize,
    block: Arc<Block>,
}

impl Seat {
    #[inline(always)]
    fn place(&self) -> MutexGuard<'_, Option<Place>> {
        self.block[self.index % SEATS_PER_BLOCK].lock()
    }
}

/// The place of a seat still held: one is freed only after its listener
/// has gone.
#[inline(always)]
fn held(place: &mut Option<Place>) -> &mut Place {
    place
        .as_mut()
        .expect("a seat is released only after its listener has gone")
}

#[derive(Debug)]
enum Place {
    Member(Member),
    /// Moved out to a queue of its own (see the module docs).
    Moved(Arc<OwnQueue>),
}

/// A member: its reader and its place in the ring. Its reader keeps no
/// waiter: the lane's waiting list does.
#[derive(Debug)]
struct Member {
    reader: ListenerReader,
    cursor: Cursor,
    listing: Listing,
}

impl Lane {
    pub(crate) fn new(key: &LaneKey) -> Self {
        let settings = key.settings;
        Self {
            settings,
            moved_out: AtomicBool::new(false),
            ring: Ring::new(settings.capacity),
            state: Mutex::new(State {
                bounds: Bounds::new(settings.capacity, settings.max_bytes),
                blocks: Vec::new(),
                free: Vec::new(),
                waiting: Vec::new(),
                // A member's default listing, round 0, is of no round.
                round: 1,
            }),
            chain: Chain::default(),
        }
    }

    /// Its key, given a member's `filter` and `membership`.
    pub(crate) fn key(&self, filter: &Filter, membership: &Membership) -> LaneKey {
        LaneKey::new(filter, membership, self.settings)
    }

    /// A new member, reading from the next event on.
    pub(crate) fn join(&self) -> Seat {
        let mut state = self.state.lock();
        let at = state.bounds.join(&self.ring);
        if state.free.is_empty() {
            // A new block's seats, lowest number taken first.
            let first = state.blocks.len() * SEATS_PER_BLOCK;
            state.blocks.push(Arc::default());
            state.free.extend((first..first + SEATS_PER_BLOCK).rev());
        }
        let index = state
            .free
            .pop()
            .expect("a block of free seats was just added");
        let seat = Seat {
            index,
            block: state.blocks[index / SEATS_PER_BLOCK].clone(),
        };
        *seat.place() = Some(Place::Member(Member {
            reader: ListenerReader::default(),
            cursor: Cursor::at(at),
            listing: Listing::default(),
        }));
        seat
    }

    /// Offers `event` to every member, tallying each member's outcome as
    /// its own queue's push would, and collecting the waiters the
    /// publisher wakes itself; the others' wake-ups go to the lane's chain.
    /// Events with a succession never reach a lane (see the module docs).
    pub(crate) fn push(
        &self,
        event: &Event,
        tally: &mut [usize; Pushed::COUNT],
        waiters: &mut Vec<Option<Waiter>>,
    ) {
        debug_assert!(event.succession().is_none(), "a lane takes no successions");
        let mut state = self.state.lock();
        let State {
            bounds,
            blocks,
            waiting,
            round,
            ..
        } = &mut *state;
        if bounds.evicts_bytes_for(&self.ring, event) {
            // Each member's deepest is noted as its reader would find it,
            // so a queue shrunk by the byte bound must be noted before.
            // Lock order: the lane, then a seat.
            for place in blocks.iter().flat_map(|block| block.iter()) {
                if let Some(Place::Member(member)) = &mut *place.lock() {
                    member.cursor.note_depth(&self.ring, &mut member.reader);
                }
            }
        }
        // Only readers that found nothing registered, under this lock: one
        // wake-up each until they read again, whatever is published. A new
        // round makes every member's listing stale, so none is visited.
        // Handed before the event can be read: a member that reads it, woken
        // or not, finds the chain's wake-ups to pass on (see `chain`).
        if !waiting.is_empty() {
            *round += 1;
            self.chain.hand(waiting, waiters);
        }
        let members = bounds.members();
        let lost = bounds.push(&self.ring, event);
        tally[Pushed::Queued as usize] += members - lost;
        tally[Pushed::DroppedOldest as usize] += lost;
    }

    /// As `Reader::pop_or_register`, for the member at `seat` (read on
    /// its queue if it moved out). An event is taken under the seat's lock
    /// alone, so members read side by side; only a member that finds
    /// nothing takes the lane's lock, to register where the next push
    /// looks. A member that takes something passes on the wake-ups the
    /// lane's chain holds, if any. Always inlined, as the queue's is: it is
    /// the fan-out's hot path.
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &self,
        seat: &Seat,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        // After each take, with the seat let go: whoever reads an event sees
        // what the push that made it handed to the chain (`chain`'s
        // liveness). A member moved out passes it on too.
        {
            let mut place = seat.place();
            match held(&mut place) {
                Place::Member(member) => {
                    if let Some(next) = member.pop(&self.ring) {
                        drop(place);
                        self.chain.pass_on();
                        return Some(next);
                    }
                }
                // Lock order allows it: a seat, then a queue.
                Place::Moved(queue) => {
                    let next = queue.pop_or_register(register);
                    drop(place);
                    if next.is_some() {
                        self.chain.pass_on();
                    }
                    return next;
                }
            }
        }
        let next = self.pop_or_register_waiting(seat, register);
        if next.is_some() {
            self.chain.pass_on();
        }
        next
    }

    /// The member found nothing: look again under the lane's lock, which
    /// every push takes, so that no push slips in between the look and the
    /// registration.
    #[cold]
    fn pop_or_register_waiting(
        &self,
        seat: &Seat,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        let mut state = self.state.lock();
        let mut place = seat.place();
        let member = match held(&mut place) {
            Place::Member(member) => member,
            Place::Moved(queue) => return queue.pop_or_register(register),
        };
        let Member {
            reader,
            cursor,
            listing,
        } = member;
        let mut storage = InRing {
            cursor,
            ring: &self.ring,
        };
        let state = &mut *state;
        // The member's reader keeps no waiter: the one it registers goes
        // to the lane's list, once per round however often it registers.
        reader.pop_or_register(&mut storage, |_| {
            if let Some(listed) = state.listed(listing) {
                return register(listed);
            }
            let mut waiter = None;
            register(&mut waiter);
            if waiter.is_some() {
                *listing = Listing {
                    round: state.round,
                    at: u32::try_from(state.waiting.len())
                        .expect("a round lists each member at most once"),
                };
                state.waiting.push(waiter);
            }
        })
    }

    /// Passes on every wake-up the lane's chain holds: its member leaves
    /// it for good (to read the queue it moved out to).
    pub(crate) fn pass_on_all(&self) {
        self.chain.pass_on_all();
    }

    /// Whether some member moved out: a relaxed flag, read without the
    /// lock (a reader that misses a move that just happened reads through
    /// the lane once more).
    #[inline]
    pub(crate) fn has_moved_out(&self) -> bool {
        self.moved_out.load(Ordering::Relaxed)
    }

    /// The queue the member at `seat` moved out to, if it did.
    pub(crate) fn moved(&self, seat: &Seat) -> Option<Arc<OwnQueue>> {
        match held(&mut seat.place()) {
            Place::Moved(queue) => Some(queue.clone()),
            Place::Member(_) => None,
        }
    }

    /// Removes a waiter that gave up, and passes on every wake-up the
    /// lane's chain holds, which a member going away must not strand.
    pub(crate) fn forget_waiter(&self, seat: &Seat) {
        self.with_member(
            seat,
            |member, _, state| drop(state.take_listed(member)),
            OwnQueue::forget_waiter,
        );
        self.chain.pass_on_all();
    }

    /// As [`OwnQueue::complete`], with the waiter the member listed.
    pub(crate) fn complete(&self, seat: &Seat) -> Option<Waiter> {
        self.with_member(
            seat,
            |member, _, state| {
                // Only an open member registers, and only it needs waking.
                member.reader.finish(ListenerEnd::Complete);
                state.take_listed(member)
            },
            OwnQueue::complete,
        )
    }

    /// As [`OwnQueue::stop`]: the member leaves, and what it had yet to read
    /// is discarded. It reads no more, so it passes on every wake-up the
    /// lane's chain holds.
    pub(crate) fn stop(&self, seat: &Seat) -> Option<Waiter> {
        let waiter = self.leave(
            seat,
            |reader, discarded| drop(reader.close(discarded)),
            OwnQueue::stop,
        );
        self.chain.pass_on_all();
        waiter
    }

    /// As [`OwnQueue::revoke`]: the member leaves, discarding what it had yet
    /// to read, and its reader is told it was revoked (reading that, it
    /// passes the chain on as any take does).
    pub(crate) fn revoke(&self, seat: &Seat) -> Option<Waiter> {
        self.leave(
            seat,
            |reader, discarded| drop(reader.close_with(ListenerEnd::Revoked, discarded)),
            OwnQueue::revoke,
        )
    }

    /// The member at `seat` leaves the ring, `end` telling its reader how
    /// many events it had yet to read, or `on_moved` ends the queue it
    /// moved out to; the waiter to wake either way.
    fn leave(
        &self,
        seat: &Seat,
        end: impl FnOnce(&mut ListenerReader, u64),
        on_moved: impl FnOnce(&OwnQueue) -> Option<Waiter>,
    ) -> Option<Waiter> {
        self.with_member(
            seat,
            |member, ring, state| {
                let discarded = member
                    .cursor
                    .leave(ring, &mut state.bounds, &mut member.reader);
                end(&mut member.reader, discarded);
                state.take_listed(member)
            },
            on_moved,
        )
    }

    /// As [`OwnQueue::snapshot`]; under the lane's lock, so that no push moves
    /// the ring between the counts it reads.
    pub(crate) fn snapshot(&self, seat: &Seat) -> Snapshot {
        self.with_member(
            seat,
            |member, ring, _| {
                member
                    .reader
                    .snapshot(member.cursor.stored(ring), self.settings)
            },
            OwnQueue::snapshot,
        )
    }

    /// Moves the member at `seat`, listener `id`'s, out of the lane into a
    /// queue of its own (see the module docs), and returns that queue.
    pub(crate) fn move_out(&self, seat: &Seat, id: ListenerId) -> Arc<OwnQueue> {
        let mut state = self.state.lock();
        let mut place = seat.place();
        let place = held(&mut place);
        let member = match place {
            Place::Moved(queue) => return queue.clone(),
            Place::Member(member) => member,
        };
        // Its queue's next push wakes it, if it waits.
        let listed = state.take_listed(member);
        let Member { reader, cursor, .. } = member;
        reader.waiter = listed;
        let mut unread = VecDeque::new();
        if !cursor.has_left() {
            cursor.catch_up(&self.ring, reader);
            self.ring
                .for_each_unread(cursor.next, |event| unread.push_back(event.clone()));
            // What it had yet to read goes with it, not discarded.
            cursor.leave(&self.ring, &mut state.bounds, reader);
        }
        let matched = cursor.stored(&self.ring).matched;
        let reader = std::mem::take(reader);
        let queue = Arc::new(OwnQueue::handed_over(
            id,
            self.settings,
            reader,
            unread,
            matched,
        ));
        *place = Place::Moved(queue.clone());
        self.moved_out.store(true, Ordering::Relaxed);
        queue
    }

    /// Frees `seat` for a later member; its listener has gone.
    pub(crate) fn release(&self, seat: &Seat) {
        let mut state = self.state.lock();
        if let Some(Place::Member(mut member)) = seat.place().take() {
            drop(state.take_listed(&mut member));
            if !member.cursor.has_left() {
                state.bounds.leave(&self.ring, member.cursor.next);
            }
        }
        state.free.push(seat.index);
    }

    /// Runs `on_member` on the member at `seat`, the ring and the lane's
    /// state, under the lane's lock and then the seat's, or `on_moved` on
    /// the queue it moved out to.
    fn with_member<T>(
        &self,
        seat: &Seat,
        on_member: impl FnOnce(&mut Member, &Ring, &mut State) -> T,
        on_moved: impl FnOnce(&OwnQueue) -> T,
    ) -> T {
        let mut state = self.state.lock();
        match held(&mut seat.place()) {
            Place::Member(member) => on_member(member, &self.ring, &mut state),
            // Lock order allows it: a lane, a seat, then a queue.
            Place::Moved(queue) => on_moved(queue),
        }
    }
}

impl State {
    /// The member's entry in the waiting list, if it listed one this round.
    fn listed(&mut self, listing: &Listing) -> Option<&mut Option<Waiter>> {
        if listing.round != self.round {
            return None;
        }
        self.waiting.get_mut(listing.at as usize)
    }

    /// Takes the waiter `member` listed this round, if any.
    fn take_listed(&mut self, member: &mut Member) -> Option<Waiter> {
        self.listed(&member.listing).and_then(Option::take)
    }
}

impl Member {
    /// As `Reader::pop_or_register` with nothing to register: reading
    /// the ring at its cursor.
    #[inline(always)]
    fn pop(&mut self, ring: &Ring) -> Option<Next> {
        let mut storage = InRing {
            cursor: &mut self.cursor,
            ring,
        };
        self.reader.pop_or_register(&mut storage, |_| {})
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests;
