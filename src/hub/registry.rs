//! Who is listening: every live listener, the lanes that listeners with
//! alike queues share, the routing index over those that still take events,
//! and the totals of those that are gone.
//!
//! The registry sits behind the hub's one read-write lock. Publishing only
//! reads it (many publishers at once); opening, retiring and completing
//! write it, briefly. Lock order is always registry, then a lane, then a
//! listener's queue, never the reverse.

use std::collections::{HashMap, HashSet, hash_map};
use std::hash::BuildHasher;

use super::entry::Entry;
use super::id::ListenerId;
use super::inbox::Inbox;
use super::index::{Index, Target};
use super::interest::Interest;
use super::lane::{Lane, LaneKey};
use super::queue::Queue;
use super::reader::Waiter;
use super::stats::{ClosedCounts, Retired, Retirement};
use crate::counts::Counts;
use crate::filter::Filter;
use crate::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) entries: HashMap<ListenerId, Arc<Entry>>,
    /// Each lane, with how many registered listeners sit in it.
    lanes: HashMap<LaneKey, (Arc<Lane>, usize)>,
    /// An event with a succession was about to reach a lane: every member
    /// moved out to a queue of its own, and no lane opens from then on.
    lanes_closed: bool,
    /// Listeners with a queue of their own that a lane could hold, counted
    /// by their lane key's hash, while no lane has that key: the next
    /// listener alike opens the lane, so one alike to no other pays for no
    /// lane.
    unpaired: HashMap<u64, usize>,
    pub(crate) index: Index,
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
        queue: impl FnOnce() -> Queue,
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
        let (lane, seated) = self.lanes.entry(key).or_insert_with_key(|key| {
            let lane = Arc::new(Lane::new(key));
            self.index.insert(&Target::Lane(lane.clone()), filter);
            (lane, 0)
        });
        *seated += 1;
        (Inbox::Seat(lane.clone(), lane.join()), None)
    }

    pub(crate) fn admit(&mut self, entry: Arc<Entry>) {
        if let Inbox::Own(queue) = &entry.inbox {
            self.index
                .insert(&Target::Queue(queue.clone()), &entry.filter);
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
            Inbox::Own(queue) => self
                .index
                .remove(&Target::Queue(queue.clone()), &entry.filter),
            Inbox::Seat(lane, _) => self.unseat(lane, &entry.filter),
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
        let entry = self.entries.get(&id)?.clone();
        let queue = match &entry.inbox {
            Inbox::Own(queue) => {
                self.index
                    .remove(&Target::Queue(queue.clone()), &entry.filter);
                queue.clone()
            }
            Inbox::Seat(lane, seat) => {
                let queue = lane.move_out(*seat, id);
                self.unseat(lane, &entry.filter);
                queue
            }
        };
        self.unpair(&entry);
        self.index.insert(&Target::Queue(queue.clone()), &filter);
        // Admitted before the old is retired: a key in both stays watched.
        self.interest.admit(&filter);
        self.interest.retire(&entry.filter);
        let refiltered = Arc::new(Entry {
            id,
            filter,
            inbox: Inbox::Own(queue),
            unpaired: None,
        });
        self.entries.insert(id, refiltered.clone());
        Some(refiltered)
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

    /// One listener fewer in `lane` (whose members' filter is `filter`); the
    /// last one takes the lane out of the index.
    fn unseat(&mut self, lane: &Lane, filter: &Filter) {
        let key = lane.key(filter);
        let Some((_, seated)) = self.lanes.get_mut(&key) else {
            return;
        };
        *seated -= 1;
        if *seated == 0
            && let Some((lane, _)) = self.lanes.remove(&key)
        {
            self.index.remove(&Target::Lane(lane), filter);
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
            let (lane, seat) = (lane.clone(), *seat);
            if unrouted.insert(Arc::as_ptr(&lane)) {
                self.index
                    .remove(&Target::Lane(lane.clone()), &entry.filter);
            }
            let queue = lane.move_out(seat, entry.id);
            self.index
                .insert(&Target::Queue(queue.clone()), &entry.filter);
            // The listener keeps the old entry (and with it the seat) until
            // it finds the seat moved; the registry's is the queue's.
            *entry = Arc::new(Entry {
                id: entry.id,
                filter: entry.filter.clone(),
                inbox: Inbox::Own(queue),
                unpaired: None,
            });
        }
    }

    /// Refuses new listeners and stops every queue taking events; each
    /// listener stays registered until it has drained and seen `Complete`.
    /// Returns the waiters to wake once the registry is unlocked.
    pub(crate) fn complete(&mut self) -> Vec<Waiter> {
        self.completed = true;
        self.index = Index::default();
        self.lanes = HashMap::new();
        self.unpaired = HashMap::new();
        self.interest.complete();
        self.entries
            .values()
            .filter_map(|entry| entry.inbox.complete())
            .collect()
    }
}
