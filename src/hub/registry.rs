//! Who is listening: every live listener, the lanes that listeners with
//! alike queues share, the routing index over those that still take events,
//! and the totals of those that are gone.
//!
//! The registry sits behind the hub's one read-write lock. Publishing only
//! reads it (many publishers at once); opening, retiring and completing
//! write it, briefly. Lock order is always registry, then a lane, then a
//! listener's queue, never the reverse.

use std::collections::{HashMap, hash_map};
use std::hash::BuildHasher;

use super::entry::Entry;
use super::id::ListenerId;
use super::inbox::{Inbox, Seat};
use super::index::{Index, Target};
use super::interest::Interest;
use super::lane::{Lane, LaneKey};
use super::queue::{Queue, Waiter};
use super::stats::{ClosedCounts, Retired, Retirement};
use crate::counts::Counts;
use crate::filter::Filter;
use crate::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) entries: HashMap<ListenerId, Arc<Entry>>,
    /// Each lane, with how many registered listeners sit in it.
    lanes: HashMap<LaneKey, (Arc<Lane>, usize)>,
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
    /// Where a new listener whose queue a lane could hold (its lane key is
    /// `key`, its filter `filter`) keeps its events: a seat in the lane for
    /// `key` if there is one, or if a listener alike already has a queue of
    /// its own; else `queue`, with the hash it is counted under in
    /// `unpaired`.
    pub(crate) fn place(
        &mut self,
        key: LaneKey,
        filter: &Filter,
        queue: impl FnOnce() -> Queue,
    ) -> (Inbox, Option<u64>) {
        if !self.lanes.contains_key(&key) {
            let hash = self.unpaired.hasher().hash_one(&key);
            let alike = self.unpaired.entry(hash).or_default();
            if *alike == 0 {
                *alike = 1;
                return (Inbox::Own(Box::new(queue())), Some(hash));
            }
        }
        (Inbox::Seat(self.seat(key, filter)), None)
    }

    /// A seat in the lane for `key`, which is made and indexed (routed by
    /// `filter`) when it is the first.
    fn seat(&mut self, key: LaneKey, filter: &Filter) -> Seat {
        let (lane, seated) = self.lanes.entry(key).or_insert_with_key(|key| {
            let lane = Arc::new(Lane::new(key));
            self.index.insert(&Target::Lane(lane.clone()), filter);
            (lane, 0)
        });
        *seated += 1;
        Seat::join(lane.clone())
    }

    pub(crate) fn admit(&mut self, entry: Arc<Entry>) {
        if let Inbox::Own(_) = entry.inbox {
            self.index
                .insert(&Target::Listener(entry.clone()), &entry.filter);
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
            Inbox::Own(_) => self
                .index
                .remove(&Target::Listener(entry.clone()), &entry.filter),
            Inbox::Seat(seat) => self.unseat(&seat.lane, &entry.filter),
        }
        if let Some(hash) = entry.unpaired
            && let hash_map::Entry::Occupied(mut alike) = self.unpaired.entry(hash)
        {
            *alike.get_mut() -= 1;
            if *alike.get() == 0 {
                alike.remove();
            }
        }
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
