//! One listener as the hub sees it: its id, its granted filter, and where
//! its events wait.

use super::id::ListenerId;
use super::inbox::Inbox;
use super::stats::ListenerStats;
use crate::filter::Filter;

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) id: ListenerId,
    /// The granted filter, which the index routes by.
    pub(crate) filter: Filter,
    pub(crate) inbox: Inbox,
    /// For a queue of its own that a lane could hold: the hash its lane
    /// key is counted under until a listener alike opens the lane.
    pub(crate) unpaired: Option<u64>,
}

impl Entry {
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
            lane.release(*seat);
        }
    }
}
