//! Which keys the hub's listeners watch, told to whoever asks as it
//! changes: what a relay needs to subscribe to a broker's per-key channels
//! only while some local listener needs the key.
//!
//! A key is watched while at least one open listener's granted filter names
//! it: a resource URI in `resourceSubscriptions`, or one key of an
//! extension's id list (a task id in `taskIds`). The registry counts, per
//! key, the listeners that name it, and only while someone watches: the
//! first [`InterestWatch`] makes it count the listeners already open, and
//! once the last watch is dropped the counting stops, so a hub nobody
//! watches pays nothing for it.
//!
//! # Pushed, never pulled
//!
//! Opening and retiring a listener (under the registry's write lock, which
//! they hold anyway) push a change onto each watch's own queue only when a
//! key's count goes from zero to one ([`InterestChange::Watched`]) or back
//! to zero ([`InterestChange::Unwatched`]). Publishing never touches any of
//! this: it takes only the registry's read lock and never changes who
//! listens.
//!
//! A watch's queue is unbounded, but it holds at most one pending change
//! per key: a change that undoes a pending one (a key watched and
//! unwatched before the watch read either) cancels it instead of being
//! queued, so the queue is bounded by the number of distinct keys.
//!
//! # Waking
//!
//! The watch's reader is woken after the registry's lock is released, like
//! a listener's: a waker may run executor code that drops a task owning a
//! listener, and retiring that listener takes the same lock.
//!
//! # Match-everything listeners
//!
//! A [match-everything](crate::Filter::everything) listener (the
//! notification channel) and one that takes a whole extension field
//! (`"taskIds": true`) name no key, so they add no interest.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::task::{Context, Poll, Waker};

use super::entry::Entry;
use crate::filter::{Filter, InterestKey};
use crate::sync::{Arc, Mutex};
use crate::util::holds::{Arrival, Holds, Leaving};

/// A change in the set of watched keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterestChange {
    /// The first open listener that names the key arrived.
    Watched(InterestKey),
    /// The last open listener that named the key left.
    Unwatched(InterestKey),
}

/// One watch's pending changes and its waiting reader.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The changes in the order they happened, at most one per key.
    changes: VecDeque<InterestChange>,
    /// The hub completed: no change follows what is queued.
    ended: bool,
    waker: Option<Waker>,
}

impl Pending {
    /// Queues `change`, or cancels the pending opposite change of the same
    /// key (the reader never saw it, so nothing is lost).
    fn push(&mut self, change: InterestChange) -> Option<Waker> {
        let (key, watched) = match &change {
            InterestChange::Watched(key) => (key, true),
            InterestChange::Unwatched(key) => (key, false),
        };
        let opposite = self.changes.iter().position(|pending| match pending {
            InterestChange::Watched(k) => !watched && k == key,
            InterestChange::Unwatched(k) => watched && k == key,
        });
        match opposite {
            Some(at) => {
                self.changes.remove(at);
                None
            }
            None => {
                self.changes.push_back(change);
                self.waker.take()
            }
        }
    }
}

/// What the registry keeps for the watches: the per-key counts (only while
/// some watch is alive) and each watch's queue.
#[derive(Debug, Default)]
pub(crate) struct Interest {
    /// The listeners that name each key.
    counts: Holds<InterestKey>,
    watches: Vec<Arc<Mutex<Pending>>>,
    /// Readers to wake once the registry's lock is released.
    wake: Vec<Waker>,
}

impl Interest {
    /// A new watch, told first that every key open `entries` name is
    /// watched.
    pub(crate) fn watch<'a>(
        &mut self,
        entries: impl Iterator<Item = &'a Arc<Entry>>,
    ) -> Arc<Mutex<Pending>> {
        // Watches whose reader is gone count for nothing.
        self.watches
            .retain(|pending| Arc::strong_count(pending) > 1);
        if self.watches.is_empty() {
            self.counts.clear();
            for entry in entries {
                for key in entry.filter.interest_keys() {
                    self.counts.hold(key, || ());
                }
            }
        }
        let mut initial: Vec<_> = self.counts.keys().cloned().collect();
        initial.sort_unstable();
        let pending = Arc::new(Mutex::new(Pending {
            changes: initial.into_iter().map(InterestChange::Watched).collect(),
            ..Pending::default()
        }));
        self.watches.push(pending.clone());
        pending
    }

    /// Counts the keys of a listener just admitted.
    pub(crate) fn admit(&mut self, filter: &Filter) {
        if self.watches.is_empty() {
            return;
        }
        for key in filter.interest_keys() {
            if self.counts.hold(key.clone(), || ()).0 == Arrival::First {
                self.tell(InterestChange::Watched(key));
            }
        }
    }

    /// Uncounts the keys of a listener just retired.
    pub(crate) fn retire(&mut self, filter: &Filter) {
        if self.watches.is_empty() {
            return;
        }
        for key in filter.interest_keys() {
            if self.counts.release(&key, None) == Leaving::Last {
                self.counts.remove(&key);
                self.tell(InterestChange::Unwatched(key));
            }
        }
    }

    /// Ends every watch: the hub completed, and no listener opens again.
    pub(crate) fn complete(&mut self) {
        for pending in self.watches.drain(..) {
            let mut pending = pending.lock();
            pending.ended = true;
            self.wake.extend(pending.waker.take());
        }
        self.counts.clear();
    }

    fn tell(&mut self, change: InterestChange) {
        self.watches
            .retain(|pending| Arc::strong_count(pending) > 1);
        if self.watches.is_empty() {
            // The last watch went away: stop counting.
            self.counts.clear();
            return;
        }
        for pending in &self.watches {
            self.wake.extend(pending.lock().push(change.clone()));
        }
    }

    /// The readers to wake; the caller wakes them once the registry's
    /// lock is released.
    pub(crate) fn take_wakers(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.wake)
    }
}

/// The changes to the set of keys a hub's listeners watch, from
/// [`Hub::watch_interest`](crate::Hub::watch_interest).
///
/// It starts with a [`Watched`](InterestChange::Watched) for every key
/// watched when it was made, then reports each key's first listener
/// arriving and last listener leaving, in the order they happened. A key
/// watched and unwatched again before the watch is read is reported not at
/// all. Reading ends ([`None`]) once the hub has completed and every change
/// has been read.
///
/// ```
/// use mcp_subscriptions::{Filter, Hub};
/// use mcp_subscriptions::hub::InterestChange;
/// use mcp_subscriptions::hub::InterestKey;
///
/// let hub = Hub::new();
/// let watch = hub.watch_interest();
/// let listener = hub.listen(&Filter::new().with_resource("file:///a")).unwrap();
/// let a = InterestKey::Resource("file:///a".into());
/// assert_eq!(watch.try_next(), Some(InterestChange::Watched(a.clone())));
/// drop(listener);
/// assert_eq!(watch.try_next(), Some(InterestChange::Unwatched(a)));
/// assert_eq!(watch.try_next(), None);
/// ```
#[derive(Debug)]
pub struct InterestWatch {
    pending: Arc<Mutex<Pending>>,
}

impl InterestWatch {
    pub(crate) fn new(pending: Arc<Mutex<Pending>>) -> Self {
        Self { pending }
    }

    /// The next change, if one is pending; never waits.
    pub fn try_next(&self) -> Option<InterestChange> {
        self.pending.lock().changes.pop_front()
    }

    /// The next change, waiting for one; `None` once the hub has completed
    /// and every change has been read.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a change is taken only when it is returned.
    pub async fn next(&self) -> Option<InterestChange> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<InterestChange>> {
        let mut pending = self.pending.lock();
        if let Some(change) = pending.changes.pop_front() {
            return Poll::Ready(Some(change));
        }
        if pending.ended {
            return Poll::Ready(None);
        }
        pending.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Whether the hub has completed (changes may still be pending).
    pub fn is_ended(&self) -> bool {
        self.pending.lock().ended
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;

    fn uri(uri: &str) -> InterestKey {
        InterestKey::Resource(uri.to_owned())
    }

    #[test]
    fn an_undone_change_cancels_the_pending_one() {
        let mut pending = Pending::default();
        assert!(pending.push(InterestChange::Watched(uri("a"))).is_none());
        pending.push(InterestChange::Watched(uri("b")));
        pending.push(InterestChange::Unwatched(uri("a")));
        assert_eq!(
            Vec::from(pending.changes),
            [InterestChange::Watched(uri("b"))]
        );
    }

    #[test]
    fn nothing_is_counted_without_a_watch() {
        let mut interest = Interest::default();
        interest.admit(&Filter::new().with_resource("a"));
        assert_eq!(interest.counts.len(), 0);
    }
}
