//! Who is listening: every live listener, the routing index over those that
//! still take events, and the totals of those that are gone.
//!
//! The registry sits behind the hub's one read-write lock. Publishing only
//! reads it (many publishers at once); opening, retiring and completing
//! write it, briefly. Lock order is always registry, then a listener's
//! queue, never the reverse.

use std::collections::HashMap;

use super::entry::Entry;
use super::id::ListenerId;
use super::index::Index;
use super::interest::Interest;
use super::queue::Waiter;
use super::stats::{ClosedCounts, Retired, Retirement};
use crate::counts::Counts;
use crate::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) entries: HashMap<ListenerId, Arc<Entry>>,
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
    pub(crate) fn admit(&mut self, entry: Arc<Entry>) {
        self.index.insert(&entry);
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
        self.index.remove(&entry);
        self.interest.retire(&entry.filter);
        let snap = entry.queue.snapshot();
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

    /// Refuses new listeners and stops every queue taking events; each
    /// listener stays registered until it has drained and seen `Complete`.
    /// Returns the waiters to wake once the registry is unlocked.
    pub(crate) fn complete(&mut self) -> Vec<Waiter> {
        self.completed = true;
        self.index = Index::default();
        self.interest.complete();
        self.entries
            .values()
            .filter_map(|entry| entry.queue.complete())
            .collect()
    }
}
