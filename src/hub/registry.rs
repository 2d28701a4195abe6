//! Who is listening: every live listener, the lanes that listeners with
//! alike queues share, the routing index over those that still take events,
//! and the totals of those that are gone.
//!
//! The registry sits behind the hub's one read-write lock. Publishing only
//! reads it (many publishers at once); opening, retiring and completing
//! write it, briefly. Lock order is always registry, then a lane, then a
//! lane's seat, then a listener's queue, never the reverse.

use std::collections::{HashMap, HashSet, hash_map};
use std::hash::BuildHasher;

use super::entry::Entry;
use super::id::ListenerId;
use super::inbox::Inbox;
use super::index::Target;
use super::interest::Interest;
use super::lane::{Lane, LaneKey};
use super::own_queue::OwnQueue;
use super::routes::Routes;
use super::stats::{ClosedCounts, Retired, Retirement};
use crate::audience::{Audience, Member, Membership};
use crate::event::EventKind;
use crate::filter::Filter;
use crate::queue::Counts;
use crate::queue::reader::Waiter;
use crate::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) entries: HashMap<ListenerId, Arc<Entry>>,
    /// The lanes of each key, with how many registered listeners sit in
    /// each: a new listener takes a seat in the first with fewer than
    /// [`SEATS_PER_LANE`].
    lanes: HashMap<LaneKey, Vec<(Arc<Lane>, usize)>>,
    /// An event with a succession was about to reach a lane: every member
    /// moved out to a queue of its own, and no lane opens from then on.
    lanes_closed: bool,
    /// Listeners with a queue of their own that a lane could hold, counted
    /// by their lane key's hash, while no lane has that key: the next
    /// listener alike opens the lane, so one alike to no other pays for no
    /// lane.
    unpaired: HashMap<u64, usize>,
    /// Where events go: by kind, among everyone and among each member's.
    pub(crate) routes: Routes,
    /// The listeners of each principal and label, for revoking them.
    members: HashMap<Member, HashSet<ListenerId>>,
    /// The final counts of retired listeners, so totals survive them.
    pub(crate) retired: Counts,
    /// The deepest any retired listener's queue has been.
    pub(crate) retired_max_depth: u64,
    pub(crate) closed: ClosedCounts,
    pub(crate) opened: u64,
    pub(crate) completed: bool,
    /// The keys listeners watch, for whoever asked (`Hub::watch_interest`).
    pub(crate) interest: Interest,
}

impl Registry {
    /// Where a new listener keeps its events: a seat in the lane for its
    /// `lane` key, if it has one and there is such a lane or a listener
    /// alike already has a queue of its own; else `queue()`, with the hash
    /// of its lane key, under which it is counted in `unpaired`.
    pub(crate) fn place(
        &mut self,
        lane: Option<LaneKey>,
        filter: &Filter,
        membership: &Membership,
        queue: impl FnOnce() -> OwnQueue,
    ) -> (Inbox, Option<u64>) {
        let own = |unpaired| (Inbox::Own(Arc::new(queue())), unpaired);
        let Some(key) = lane.filter(|_| !self.lanes_closed) else {
            return own(None);
        };
        if !self.lanes.contains_key(&key) {
            let hash = self.unpaired.hasher().hash_one(&key);
            let alike = self.unpaired.entry(hash).or_default();
            if *alike == 0 {
                *alike = 1;
                return own(Some(hash));
            }
        }
        let lanes = self.lanes.entry(key.clone()).or_default();
        let open = lanes
            .iter()
            .position(|(_, seated)| *seated < SEATS_PER_LANE);
        let at = match open {
            Some(at) => at,
            None => {
                let lane = Arc::new(Lane::new(&key));
                self.routes
                    .insert(&Target::Lane(lane.clone()), filter, membership);
                lanes.push((lane, 0));
                lanes.len() - 1
            }
        };
        let (lane, seated) = &mut lanes[at];
        *seated += 1;
        (Inbox::Seat(lane.clone(), lane.join()), None)
    }

    pub(crate) fn admit(&mut self, entry: Arc<Entry>) {
        if let Inbox::Own(queue) = &entry.inbox {
            self.routes.insert(
                &Target::Own(queue.clone()),
                &entry.filter,
                &entry.membership,
            );
        }
        for member in entry.membership.members() {
            self.members.entry(member).or_default().insert(entry.id);
        }
        self.interest.admit(&entry.filter);
        self.entries.insert(entry.id, entry);
        self.opened += 1;
    }

    /// Removes listener `id` and folds its counts into the totals. Only the
    /// first retirement of a listener counts; later ones are no-ops.
    ///
    /// The caller has already stopped the queue (closed, failed or drained),
    /// so the counts read here are final.
    pub(crate) fn retire(&mut self, id: ListenerId, why: Retirement) -> Option<Retired> {
        let entry = self.entries.remove(&id)?;
        match &entry.inbox {
            Inbox::Own(queue) => self.routes.remove(
                &Target::Own(queue.clone()),
                &entry.filter,
                &entry.membership,
            ),
            Inbox::Seat(lane, _) => self.unseat(lane, &entry),
        }
        for member in entry.membership.members() {
            if let hash_map::Entry::Occupied(mut ids) = self.members.entry(member) {
                ids.get_mut().remove(&id);
                if ids.get().is_empty() {
                    ids.remove();
                }
            }
        }
        self.unpair(&entry);
        self.interest.retire(&entry.filter);
        let snap = entry.inbox.snapshot();
        self.retired += snap.counts;
        self.retired_max_depth = self.retired_max_depth.max(snap.max_depth);
        // A listener its policy disconnected counts as overflowed, even if
        // its reader saw the failure and closed it before the publisher got
        // round to retiring it.
        let why = if snap.overflowed {
            Retirement::Overflow
        } else {
            why
        };
        self.closed.count(why);
        Some(Retired {
            id,
            why,
            events: snap.counts,
        })
    }

    /// Routes listener `id` by `filter` from now on: its entry in the
    /// registry is replaced, and the new one returned for the listener to
    /// read. It keeps its events in a queue of its own (moved out of its
    /// lane if it sat in one), and never sits in a lane again: lanes hold
    /// listeners alike, and this one's filter does not stay put. `None`
    /// once it is retired.
    pub(crate) fn refilter(&mut self, id: ListenerId, filter: Filter) -> Option<Arc<Entry>> {
        let (entry, queue) = self.unroute(id)?;
        let target = Target::Own(queue.clone());
        self.routes.insert(&target, &filter, &entry.membership);
        // Admitted before the old is retired: a key in both stays watched.
        self.interest.admit(&filter);
        self.interest.retire(&entry.filter);
        let refiltered = Arc::new(entry.in_queue(filter, queue));
        self.entries.insert(id, refiltered.clone());
        Some(refiltered)
    }

    /// Gives listener `id` a queue of its own if it sits in a lane, so that
    /// an event for it alone can reach it (its reader follows, as after
    /// [`close_lanes`](Self::close_lanes)).
    pub(crate) fn seat_alone(&mut self, id: ListenerId) {
        let Some(entry) = self.entries.get(&id) else {
            return;
        };
        if matches!(entry.inbox, Inbox::Own(_)) {
            return;
        }
        if let Some((entry, queue)) = self.unroute(id) {
            let target = Target::Own(queue.clone());
            self.routes
                .insert(&target, &entry.filter, &entry.membership);
            let alone = entry.in_queue(entry.filter.clone(), queue);
            self.entries.insert(id, Arc::new(alone));
        }
    }

    /// Takes listener `id` out of the routes (and its lane, moving it out
    /// to a queue of its own): its entry, and that queue, to route anew.
    fn unroute(&mut self, id: ListenerId) -> Option<(Arc<Entry>, Arc<OwnQueue>)> {
        let entry = self.entries.get(&id)?.clone();
        let queue = match &entry.inbox {
            Inbox::Own(queue) => {
                let target = Target::Own(queue.clone());
                self.routes
                    .remove(&target, &entry.filter, &entry.membership);
                queue.clone()
            }
            Inbox::Seat(lane, seat) => {
                let queue = lane.move_out(seat, id);
                self.unseat(lane, &entry);
                queue
            }
        };
        self.unpair(&entry);
        Some((entry, queue))
    }

    /// Every target an event of `kind` for `audience` (not everyone)
    /// reaches, each once, into `out`: its principals' and labels' through
    /// their indexes, and the listeners it names by id, each through its
    /// own queue (see [`seat_alone`](Self::seat_alone)) if its filter
    /// matches.
    pub(crate) fn targets_of(&self, kind: &EventKind, audience: &Audience, out: &mut Vec<Target>) {
        let Some(members) = audience.members() else {
            out.extend(
                self.routes
                    .everyone
                    .matches(kind)
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
            return;
        };
        self.routes.for_members(kind, members, out);
        for id in &members.listeners {
            let Some(entry) = self.entries.get(&ListenerId(*id)) else {
                continue;
            };
            if !audience_reached(out, entry) && entry.filter.matches(kind) {
                out.extend(entry.target());
            }
        }
    }

    /// The listeners `audience` names that sit in a lane: each needs a
    /// queue of its own before an event for it alone is pushed.
    pub(crate) fn seated_among(&self, audience: &Audience) -> Vec<ListenerId> {
        let Some(members) = audience.members() else {
            return Vec::new();
        };
        members
            .listeners
            .iter()
            .filter_map(|id| self.entries.get(&ListenerId(*id)))
            .filter(|entry| matches!(entry.inbox, Inbox::Seat(..)))
            .map(|entry| entry.id)
            .collect()
    }

    /// The open listeners `audience` names (every one, for everyone).
    pub(crate) fn members_of(&self, audience: &Audience) -> Vec<ListenerId> {
        let Some(members) = audience.members() else {
            return self.entries.keys().copied().collect();
        };
        let principals = members.principals.iter().cloned().map(Member::Principal);
        let labels = members.labels.iter().cloned().map(Member::Label);
        let mut ids: HashSet<ListenerId> = principals
            .chain(labels)
            .filter_map(|member| self.members.get(&member))
            .flatten()
            .copied()
            .collect();
        ids.extend(
            members
                .listeners
                .iter()
                .map(|id| ListenerId(*id))
                .filter(|id| self.entries.contains_key(id)),
        );
        ids.into_iter().collect()
    }

    /// Stops counting `entry` among the listeners that could open a lane.
    fn unpair(&mut self, entry: &Entry) {
        if let Some(hash) = entry.unpaired
            && let hash_map::Entry::Occupied(mut alike) = self.unpaired.entry(hash)
        {
            *alike.get_mut() -= 1;
            if *alike.get() == 0 {
                alike.remove();
            }
        }
    }

    /// One listener fewer in `lane`, `entry`'s; the last one takes the lane
    /// out of the routes.
    fn unseat(&mut self, lane: &Lane, entry: &Entry) {
        let (filter, membership) = (&entry.filter, &entry.membership);
        let key = lane.key(filter, membership);
        let Some(lanes) = self.lanes.get_mut(&key) else {
            return;
        };
        let Some(at) = lanes.iter().position(|(l, _)| std::ptr::eq(&**l, lane)) else {
            return;
        };
        lanes[at].1 -= 1;
        if lanes[at].1 == 0 {
            let (lane, _) = lanes.swap_remove(at);
            if lanes.is_empty() {
                self.lanes.remove(&key);
            }
            self.routes.remove(&Target::Lane(lane), filter, membership);
        }
    }

    /// Moves every lane's members out to queues of their own, routed in
    /// their lanes' place, and opens no lane from then on: the next event
    /// has a succession and reaches a lane (see `lane`).
    pub(crate) fn close_lanes(&mut self) {
        self.lanes_closed = true;
        self.lanes = HashMap::new();
        self.unpaired = HashMap::new();
        let mut unrouted = HashSet::new();
        for entry in self.entries.values_mut() {
            let Inbox::Seat(lane, seat) = &entry.inbox else {
                continue;
            };
            let (filter, membership) = (&entry.filter, &entry.membership);
            if unrouted.insert(Arc::as_ptr(lane)) {
                self.routes
                    .remove(&Target::Lane(lane.clone()), filter, membership);
            }
            let queue = lane.move_out(seat, entry.id);
            self.routes
                .insert(&Target::Own(queue.clone()), filter, membership);
            // The listener keeps the old entry (and with it the seat) until
            // it finds the seat moved; the registry's is the queue's.
            *entry = Arc::new(entry.in_queue(entry.filter.clone(), queue));
        }
    }

    /// Refuses new listeners and stops every queue taking events; each
    /// listener stays registered until it has drained and seen `Complete`.
    /// Returns the waiters to wake once the registry is unlocked.
    pub(crate) fn complete(&mut self) -> Vec<Waiter> {
        self.completed = true;
        self.routes = Routes::default();
        self.lanes = HashMap::new();
        self.unpaired = HashMap::new();
        self.interest.complete();
        self.entries
            .values()
            .filter_map(|entry| entry.inbox.complete())
            .collect()
    }
}

/// The most listeners one lane seats; the next alike opens another lane.
/// Members read the ring without the lane's lock, but each read of a slot
/// writes the slot's lock and count, so the members of one lane share
/// that cache line; 64 keep it to a few cores' worth, while a publish
/// pushes once per lane, which over 64 members costs each a fraction of
/// an instruction (BENCHMARKS.md measures both).
pub(crate) const SEATS_PER_LANE: usize = 64;

/// Whether `entry`'s own queue is among `targets` already (a listener the
/// audience names by id and by principal or label is pushed once).
fn audience_reached(targets: &[Target], entry: &Entry) -> bool {
    entry
        .target()
        .is_some_and(|own| targets.iter().any(|t| t.id() == own.id()))
}
