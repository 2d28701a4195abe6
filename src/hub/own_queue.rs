//! One listener's own bounded queue: the only state a publisher and that
//! listener's reader share, a [`Queue`] under one lock.
//!
//! Everything here happens under one short lock per listener, never held
//! across an `.await` or a wake-up: a publisher pushes and takes the reader's
//! waiter (if it is waiting at all), unlocks, then wakes it. A reader that is
//! not waiting has no waiter registered, so publishing to it costs no
//! wake-up.

use std::collections::VecDeque;

use super::end::{ListenerEnd, ListenerReader};
use super::id::ListenerId;
use crate::event::Event;
use crate::queue::budget::Budget;
use crate::queue::reader::{Snapshot, Waiter};
use crate::queue::{Bounded, Pushed, Queue, Settings};
use crate::source::Next;
use crate::sync::{Arc, Mutex};

#[derive(Debug)]
pub(crate) struct OwnQueue {
    /// Whose queue it is, for the publish that disconnects it.
    id: ListenerId,
    /// Every publish to this listener reads and writes it, so it is kept
    /// small: fewer cache lines to move between the publisher's core and
    /// the reader's.
    state: Mutex<Queue<Event, ListenerEnd>>,
}

impl OwnQueue {
    /// An empty queue with `settings`, counting against the hub-wide
    /// `budget` when there is one.
    pub(crate) fn new(id: ListenerId, settings: Settings, budget: Option<Arc<Budget>>) -> Self {
        let events = Bounded::new(settings, budget, VecDeque::new(), 0);
        Self::with(id, ListenerReader::default(), events)
    }

    /// A queue that goes on from where a lane's seat was when it moved out
    /// (see `lane`): its reader, what it had yet to read, and how many
    /// events it matched so far.
    pub(crate) fn handed_over(
        id: ListenerId,
        settings: Settings,
        reader: ListenerReader,
        unread: VecDeque<Event>,
        matched: u64,
    ) -> Self {
        Self::with(id, reader, Bounded::new(settings, None, unread, matched))
    }

    fn with(id: ListenerId, reader: ListenerReader, events: Bounded) -> Self {
        Self {
            id,
            state: Mutex::new(Queue::with(reader, events)),
        }
    }

    pub(crate) fn id(&self) -> ListenerId {
        self.id
    }

    /// Offers `event` under the overflow policy. Never blocks on the reader.
    ///
    /// Returns the reader's waiter, if it was waiting, for the caller to wake
    /// once it holds no lock at all: waking runs executor code, which must
    /// not find the hub locked (it may drop a task that owns a listener).
    #[inline(always)]
    pub(crate) fn push(&self, event: &Event) -> (Pushed, Option<Waiter>) {
        let mut queue = self.state.lock();
        let pushed = queue.push(event);
        // Only a reader parked on an empty queue registered a waiter; taking
        // it here means a busy reader is never woken needlessly. Nothing new
        // to read after a refusal or an absorbed duplicate.
        let waiter = match pushed {
            Pushed::NotOpen | Pushed::Coalesced => None,
            _ => queue.reader().waiter.take(),
        };
        (pushed, waiter)
    }

    /// As [`Queue::pop`], letting `register` install a waiter when there is
    /// nothing yet (see `Reader::pop_or_register`).
    #[inline(always)]
    pub(crate) fn pop_or_register(
        &self,
        register: impl FnOnce(&mut Option<Waiter>),
    ) -> Option<Next> {
        self.state.lock().pop_or_register(register)
    }

    /// Removes a waiter that gave up (a dropped future, a timed-out wait).
    pub(crate) fn forget_waiter(&self) {
        self.state.lock().reader().waiter = None;
    }

    /// Stops taking events: the reader drains them, then gets
    /// [`Next::Complete`]. Returns the waiter to wake.
    pub(crate) fn complete(&self) -> Option<Waiter> {
        self.state.lock().reader().finish(ListenerEnd::Complete)
    }

    /// Ends the queue, discarding what it holds. Idempotent. Returns the
    /// waiter to wake, as [`push`](Self::push) does.
    pub(crate) fn stop(&self) -> Option<Waiter> {
        self.state.lock().stop()
    }

    /// As [`stop`](Self::stop), but the reader is told it was revoked.
    pub(crate) fn revoke(&self) -> Option<Waiter> {
        self.state.lock().close_with(ListenerEnd::Revoked)
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        self.state.lock().snapshot()
    }
}

#[cfg(test)]
impl OwnQueue {
    /// Listener 0's, under no hub-wide budget.
    pub(crate) fn of(settings: Settings) -> Self {
        Self::new(ListenerId(0), settings, None)
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;
    use crate::error::StreamError;
    use crate::event::Succession;
    use crate::queue::Counts;
    use crate::queue::Overflow;

    fn queue(capacity: usize, overflow: Overflow, coalesce: bool) -> OwnQueue {
        OwnQueue::of(
            Settings::new(capacity)
                .with_overflow(overflow)
                .with_coalesce(coalesce),
        )
    }

    /// A queue of 100 events at most, bounded to `max_bytes`.
    fn bounded(overflow: Overflow, max_bytes: usize, budget: Option<Arc<Budget>>) -> OwnQueue {
        let settings = Settings::new(100)
            .with_overflow(overflow)
            .with_max_bytes(max_bytes);
        OwnQueue::new(ListenerId(0), settings, budget)
    }

    fn uri(next: Option<Next>) -> String {
        match next {
            Some(Next::Event(event)) => match event.kind() {
                crate::EventKind::ResourceUpdated { uri } => uri.clone(),
                other => panic!("unexpected {other:?}"),
            },
            other => panic!("expected an event, got {other:?}"),
        }
    }

    fn pop(queue: &OwnQueue) -> Option<Next> {
        queue.pop_or_register(|_| {})
    }

    #[test]
    fn drop_oldest_keeps_the_newest_and_reports_lag_first() {
        let queue = queue(2, Overflow::DropOldest, false);
        for i in 0..5 {
            queue.push(&Event::resource_updated(i.to_string()));
        }
        assert_eq!(pop(&queue), Some(Next::Lagged(3)));
        assert_eq!(uri(pop(&queue)), "3");
        assert_eq!(uri(pop(&queue)), "4");
        assert_eq!(pop(&queue), None);
        let snap = queue.snapshot();
        assert_eq!(
            snap.counts,
            Counts {
                matched: 5,
                delivered: 2,
                dropped: 3,
                ..Counts::default()
            }
        );
        assert_eq!(snap.max_depth, 2);
    }

    #[test]
    fn disconnect_fails_once_then_closes() {
        let queue = queue(2, Overflow::Disconnect, false);
        assert_eq!(queue.push(&Event::tools_list_changed()).0, Pushed::Queued);
        assert_eq!(queue.push(&Event::tools_list_changed()).0, Pushed::Queued);
        assert_eq!(
            queue.push(&Event::tools_list_changed()).0,
            Pushed::Disconnected
        );
        assert_eq!(queue.push(&Event::tools_list_changed()).0, Pushed::NotOpen);
        assert_eq!(
            pop(&queue),
            Some(Next::Failed(StreamError::Overflow { dropped: 3 }))
        );
        assert_eq!(pop(&queue), Some(Next::Closed));
        assert_eq!(queue.snapshot().counts.dropped, 3);
    }

    fn status(key: &str, version: i128, terminal: bool) -> Event {
        let mut succession = Succession::new(key, version);
        if terminal {
            succession = succession.terminal();
        }
        Event::extension("x/status", Default::default(), None).with_succession(succession)
    }

    fn version(next: Option<Next>) -> (String, i128) {
        match next {
            Some(Next::Event(event)) => {
                let succession = event.succession().unwrap();
                (succession.key().to_owned(), succession.version())
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn a_newer_version_replaces_the_pending_one_and_older_ones_never_follow() {
        let queue = queue(8, Overflow::DropOldest, false);
        queue.push(&status("a", 1, false));
        queue.push(&status("b", 1, false));
        assert_eq!(queue.push(&status("a", 3, false)).0, Pushed::Queued);
        assert_eq!(queue.push(&status("a", 2, false)).0, Pushed::Coalesced);
        assert_eq!(version(pop(&queue)), ("a".into(), 3), "in the place of a:1");
        assert_eq!(version(pop(&queue)), ("b".into(), 1));
        assert_eq!(queue.push(&status("a", 2, false)).0, Pushed::Coalesced);
        assert_eq!(pop(&queue), None, "older than what the reader took");
        let snap = queue.snapshot();
        assert_eq!((snap.counts.coalesced, snap.counts.delivered), (3, 2));
        assert!(snap.counts.is_balanced());
    }

    #[test]
    fn drop_oldest_spares_terminal_versions_while_others_are_queued() {
        let queue = queue(2, Overflow::DropOldest, false);
        queue.push(&status("done", 9, true));
        for i in 0..5 {
            queue.push(&status(&format!("k{i}"), 1, false));
        }
        assert_eq!(pop(&queue), Some(Next::Lagged(4)));
        assert_eq!(version(pop(&queue)), ("done".into(), 9));
        assert_eq!(version(pop(&queue)), ("k4".into(), 1));
        assert!(queue.snapshot().counts.is_balanced());
    }

    fn sized(n: usize) -> Event {
        let params = serde_json::json!({"blob": "x".repeat(n)});
        Event::extension("x/big", params.as_object().unwrap().clone(), None)
    }

    #[test]
    fn a_byte_bound_evicts_the_oldest_until_the_new_event_fits() {
        let len = sized(1_000).rendered_len();
        let queue = bounded(Overflow::DropOldest, 3 * len, None);
        for _ in 0..5 {
            queue.push(&sized(1_000));
        }
        let snap = queue.snapshot();
        assert_eq!((snap.counts.queued, snap.bytes), (3, 3 * len));
        assert_eq!(snap.counts.dropped, 2);
        assert_eq!(pop(&queue), Some(Next::Lagged(2)));
        // An event larger than the whole bound is queued alone.
        assert_eq!(queue.push(&sized(10_000)).0, Pushed::DroppedOldest);
        let snap = queue.snapshot();
        assert_eq!(snap.counts.queued, 1);
        assert!(snap.counts.is_balanced());
        while pop(&queue).is_some() {}
        assert_eq!(queue.snapshot().bytes, 0, "every byte given back");
    }

    #[test]
    fn a_byte_bound_disconnects_a_strict_listener() {
        let len = sized(1_000).rendered_len();
        let queue = bounded(Overflow::Disconnect, 2 * len, None);
        queue.push(&sized(1_000));
        queue.push(&sized(1_000));
        assert_eq!(queue.push(&sized(1_000)).0, Pushed::Disconnected);
        assert_eq!(
            pop(&queue),
            Some(Next::Failed(StreamError::Overflow { dropped: 3 }))
        );
        assert_eq!(queue.snapshot().bytes, 0);
    }

    #[test]
    fn the_hub_wide_budget_is_shared_and_given_back() {
        let len = sized(1_000).rendered_len();
        let budget = Arc::new(Budget::new(3 * len));
        let a = bounded(Overflow::DropOldest, usize::MAX, Some(budget.clone()));
        let b = bounded(Overflow::DropOldest, usize::MAX, Some(budget.clone()));
        a.push(&sized(1_000));
        a.push(&sized(1_000));
        b.push(&sized(1_000));
        // The hub is full: b makes room in its own queue.
        assert_eq!(b.push(&sized(1_000)).0, Pushed::DroppedOldest);
        assert_eq!(a.snapshot().counts.queued, 2, "a keeps what it holds");
        assert!(!budget.fits(1));
        a.stop();
        assert!(budget.fits(2 * len), "a closed queue gives its bytes back");
    }

    #[test]
    fn complete_drains_then_ends() {
        let queue = queue(4, Overflow::DropOldest, false);
        queue.push(&Event::resource_updated("a"));
        queue.complete();
        assert_eq!(queue.push(&Event::resource_updated("b")).0, Pushed::NotOpen);
        assert_eq!(uri(pop(&queue)), "a");
        assert_eq!(pop(&queue), Some(Next::Complete));
        assert_eq!(pop(&queue), Some(Next::Closed));
    }

    #[test]
    fn coalescing_absorbs_pending_duplicates_and_keeps_their_place() {
        let queue = queue(3, Overflow::DropOldest, true);
        for uri in ["a", "b", "a", "a", "c", "b"] {
            queue.push(&Event::resource_updated(uri));
        }
        assert_eq!(
            queue.push(&Event::tools_list_changed()).0,
            Pushed::DroppedOldest
        );
        assert_eq!(
            queue.push(&Event::tools_list_changed()).0,
            Pushed::Coalesced
        );
        // "a" was evicted, so a new "a" queues again.
        assert_eq!(
            queue.push(&Event::resource_updated("a")).0,
            Pushed::DroppedOldest
        );
        let extension = Event::extension("x/y", Default::default(), None);
        queue.push(&extension);
        queue.push(&extension);
        let snap = queue.snapshot();
        assert_eq!(snap.counts.coalesced, 4);
        assert_eq!(snap.counts.queued, 3);
        assert!(snap.counts.is_balanced());
        assert!(matches!(pop(&queue), Some(Next::Lagged(_))));
        let mut order = Vec::new();
        while let Some(Next::Event(event)) = pop(&queue) {
            order.push(event.method().to_owned());
        }
        assert_eq!(order, ["notifications/resources/updated", "x/y", "x/y"]);
        // Once delivered, a signal queues again.
        assert_eq!(queue.push(&Event::resource_updated("a")).0, Pushed::Queued);
    }

    #[test]
    fn close_discards_and_counts() {
        let queue = queue(4, Overflow::DropOldest, false);
        queue.push(&Event::resource_updated("a"));
        queue.push(&Event::resource_updated("b"));
        queue.stop();
        queue.stop();
        assert_eq!(pop(&queue), Some(Next::Closed));
        let snap = queue.snapshot();
        assert_eq!((snap.counts.discarded, snap.counts.queued), (2, 0));
    }

    #[test]
    fn registers_a_waiter_only_when_empty_and_push_takes_it() {
        let queue = queue(4, Overflow::DropOldest, false);
        let mut registered = false;
        assert_eq!(
            queue.pop_or_register(|slot| {
                registered = true;
                *slot = Some(Waiter::Task(std::task::Waker::noop().clone()));
            }),
            None
        );
        assert!(registered);
        let (_, waiter) = queue.push(&Event::tools_list_changed());
        assert!(matches!(waiter, Some(Waiter::Task(_))));
        assert!(queue.state.lock().reader().waiter.is_none());
        let next = queue.pop_or_register(|_| panic!("must not register when an event is ready"));
        assert!(matches!(next, Some(Next::Event(_))));
    }
}
