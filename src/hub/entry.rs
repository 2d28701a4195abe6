//! One listener as the hub sees it: its id, its granted filter, and where
//! its events wait.

use super::id::ListenerId;
use super::inbox::Inbox;
use super::index::Target;
use super::own_queue::OwnQueue;
use super::stats::ListenerStats;
use crate::audience::Membership;
use crate::filter::Filter;
use crate::sync::Arc;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) id: ListenerId,
    /// The granted filter, which the index routes by.
    pub(crate) filter: Filter,
    pub(crate) inbox: Inbox,
    /// Its principal and labels: the audiences it is in.
    pub(crate) membership: Membership,
    /// For a queue of its own that a lane could hold: the hash its lane
    /// key is counted under until a listener alike opens the lane.
    pub(crate) unpaired: Option<u64>,
}

impl Entry {
    /// The same listener with its events in `queue`, its own, as a seat
    /// moved out of its lane leaves it (`filter` unless it changed).
    pub(crate) fn in_queue(&self, filter: Filter, queue: Arc<OwnQueue>) -> Self {
        Self {
            id: self.id,
            filter,
            inbox: Inbox::Own(queue),
            membership: self.membership.clone(),
            unpaired: None,
        }
    }

    /// Its own queue as a publish's target; `None` while it sits in a lane.
    pub(crate) fn target(&self) -> Option<Target> {
        match &self.inbox {
            Inbox::Own(queue) => Some(Target::Own(queue.clone())),
            Inbox::Seat(..) => None,
        }
    }

    pub(crate) fn stats(&self) -> ListenerStats {
        let snap = self.inbox.snapshot();
        ListenerStats {
            id: self.id,
            filter: self.filter.clone(),
            events: snap.counts,
            lag: snap.lag,
            max_queue_depth: snap.max_depth,
            queued_bytes: snap.bytes as u64,
            max_queued_bytes: snap.settings.max_bytes,
            capacity: snap.settings.capacity,
            overflow: snap.settings.overflow,
            coalesce: snap.settings.coalesce,
        }
    }
}

impl Drop for Entry {
    /// A seat is given back once both the registry and the listener are
    /// done with its entry.
    fn drop(&mut self) {
        if let Inbox::Seat(lane, seat) = &self.inbox {
            lane.release(seat);
        }
    }
}
