//! The bounded buffer between a subscription's transport and its reader:
//! the only state the pump task and the reader share.
//!
//! It is the engine's public [`Queue`], holding the client's items: the
//! events, and the markers of a re-listen and a resync in their place among
//! them, ended by the client's [`End`]. Under [`BufferPolicy::Wait`](crate::BufferPolicy::Wait) the
//! pump waits for room before it reads, so the queue itself is never full;
//! the other policies are the queue's own.

use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::item::{End, Item};
use crate::options::SubscribeOptions;
use mcp_subscriptions::Event;
use mcp_subscriptions::Filter;
use mcp_subscriptions::queue::{Popped, Pushed, Queue, Queued};

/// Where every event the transport delivered is now, for one subscription.
/// `received = delivered + dropped + coalesced + buffered + discarded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BufferStats {
    /// Events read from the transport.
    pub received: u64,
    /// Events handed to the reader.
    pub delivered: u64,
    /// Events evicted ([`BufferPolicy::DropOldest`](crate::BufferPolicy::DropOldest))
    /// or lost to an overflow ([`BufferPolicy::Disconnect`](crate::BufferPolicy::Disconnect)).
    pub dropped: u64,
    /// Duplicates of a pending idempotent signal, absorbed.
    pub coalesced: u64,
    /// Events waiting for the reader.
    pub buffered: u64,
    /// Events still buffered when the subscription was cancelled.
    pub discarded: u64,
    /// Times the client listened again and was acknowledged.
    pub resyncs: u64,
    /// Copies of an event that came on both the old stream and the new
    /// one while the filter changed ([`Subscription::set_filter`](crate::Subscription::set_filter)),
    /// dropped; not counted as received.
    pub duplicates: u64,
}

struct State {
    items: Queue<Item, End>,
    granted: Filter,
    resyncs: u64,
    duplicates: u64,
}

/// What the pump and the reader share.
pub(super) struct Shared {
    state: Mutex<State>,
    /// The bound the pump keeps by waiting ([`BufferPolicy::Wait`](crate::BufferPolicy::Wait)):
    /// how many events, and how many bytes.
    room: Option<(usize, usize)>,
    /// Woken when the reader takes an item: a pump waiting for room reads
    /// on.
    made_room: Notify,
    /// Cancelled by the reader (cancel or drop); the pump ends the stream.
    pub(super) cancel: CancellationToken,
}

impl From<Event> for Item {
    fn from(event: Event) -> Self {
        Self::Event(event)
    }
}

impl Queued for Item {
    fn event(&self) -> Option<&Event> {
        match self {
            Self::Event(event) => Some(event),
            _ => None,
        }
    }
}

/// Wakes the reader, if it waits, once the buffer's lock is released, so
/// that it does not wake only to block on it.
fn wake(wakeup: Option<Waker>) {
    wakeup.into_iter().for_each(Waker::wake);
}

impl Shared {
    pub(super) fn new(options: &SubscribeOptions, granted: Filter) -> Self {
        let buffer = options.buffer;
        let (settings, room) = if options.wait_for_room {
            // The pump keeps the bound by waiting for room.
            let unbounded = buffer.with_capacity(usize::MAX).with_max_bytes(usize::MAX);
            (unbounded, Some((buffer.capacity(), buffer.max_bytes())))
        } else {
            (buffer, None)
        };
        Self {
            state: Mutex::new(State {
                items: Queue::new(settings),
                granted,
                resyncs: 0,
                duplicates: 0,
            }),
            room,
            made_room: Notify::new(),
            cancel: CancellationToken::new(),
        }
    }

    pub(super) fn granted(&self) -> Filter {
        self.state.lock().granted.clone()
    }

    pub(super) fn stats(&self) -> BufferStats {
        let state = self.state.lock();
        let counts = state.items.counts();
        BufferStats {
            received: counts.matched,
            delivered: counts.delivered,
            dropped: counts.dropped,
            coalesced: counts.coalesced,
            buffered: counts.queued,
            discarded: counts.discarded,
            resyncs: state.resyncs,
            duplicates: state.duplicates,
        }
    }

    /// The grant of a changed filter's new stream.
    pub(super) fn set_granted(&self, granted: Filter) {
        self.state.lock().granted = granted;
    }

    /// One more copy of an event dropped while the filter changed.
    pub(super) fn add_duplicate(&self) {
        self.state.lock().duplicates += 1;
    }

    fn is_full(&self) -> bool {
        self.room.is_some_and(|(events, bytes)| {
            let state = self.state.lock();
            state.items.counts().queued >= events as u64 || state.items.bytes() >= bytes
        })
    }

    /// Waits until the buffer has room (only [`BufferPolicy::Wait`](crate::BufferPolicy::Wait)
    /// ever waits).
    pub(super) async fn room(&self) {
        loop {
            // Registered before the check, so a read between the check and
            // the wait still wakes us.
            let notified = self.made_room.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.is_full() {
                return;
            }
            notified.await;
        }
    }

    /// Buffers `event` under the policy; the events lost when the policy
    /// disconnected the subscription.
    pub(super) fn push_event(&self, event: Event) -> Result<(), u64> {
        let (outcome, wakeup) = {
            let mut state = self.state.lock();
            let outcome = match state.items.push(&event) {
                Pushed::Disconnected => Err(state.items.counts().dropped),
                _ => Ok(()),
            };
            (outcome, state.items.wakeup())
        };
        wake(wakeup);
        outcome
    }

    /// Buffers a marker after what is buffered: a re-listen replaces a
    /// re-listen still unread, and a resync takes its grant.
    pub(super) fn push_marker(&self, item: Item) {
        let wakeup = {
            let mut state = self.state.lock();
            if let Item::Resynced(granted) = &item {
                state.granted = granted.clone();
                state.resyncs += 1;
            }
            let relistening = matches!(item, Item::Relistening(_));
            state.items.push_marker(item, |last| {
                relistening && matches!(last, Item::Relistening(_))
            });
            state.items.wakeup()
        };
        wake(wakeup);
    }

    /// Events the source lost before they reached the buffer.
    pub(super) fn add_lag(&self, lost: u64) {
        let wakeup = {
            let mut state = self.state.lock();
            state.items.add_lag(lost);
            state.items.wakeup()
        };
        wake(wakeup);
    }

    /// Ends the subscription with `end` after what is buffered (the first
    /// end stays), or at once, discarding it, when cancelled.
    pub(super) fn finish(&self, end: End) {
        let wakeup = {
            let mut state = self.state.lock();
            if end == End::Cancelled {
                state.items.close(end)
            } else {
                state.items.finish(end)
            }
        };
        wake(wakeup);
    }

    pub(super) fn pop(&self, cx: Option<&Context<'_>>) -> Poll<Option<Item>> {
        let popped = {
            let mut state = self.state.lock();
            match cx {
                Some(cx) => state.items.poll_pop(cx),
                None => state.items.pop().map_or(Poll::Pending, Poll::Ready),
            }
        };
        let item = match popped {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Popped::Item(item)) => item,
            Poll::Ready(Popped::Lagged(lost)) => Item::Lagged(lost),
            Poll::Ready(Popped::End(end)) => Item::End(end),
            Poll::Ready(Popped::Overflowed { dropped }) => Item::End(End::Overflowed { dropped }),
            Poll::Ready(_) => return Poll::Ready(None),
        };
        // Room was made: a pump waiting under `Wait` reads on.
        self.made_room.notify_one();
        Poll::Ready(Some(item))
    }

    pub(super) fn is_finished(&self) -> bool {
        self.state.lock().items.is_closed()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::item::Relistening;
    use crate::options::BufferPolicy;

    fn next(shared: &Shared) -> Option<Item> {
        match shared.pop(None) {
            Poll::Ready(item) => item,
            Poll::Pending => None,
        }
    }

    #[test]
    fn markers_keep_their_place_take_no_room_and_a_relisten_replaces_an_unread_one() {
        let options = SubscribeOptions::default()
            .with_capacity(1)
            .with_policy(BufferPolicy::DropOldest);
        let shared = Shared::new(&options, Filter::new());
        let relistening = |attempt| {
            Item::Relistening(Relistening {
                attempt,
                delay: Duration::ZERO,
                reason: String::new(),
            })
        };
        let granted = Filter::new().with_tools_list_changed();
        shared.push_event(Event::resource_updated("a")).unwrap();
        shared.push_marker(relistening(1));
        shared.push_marker(relistening(2));
        shared.push_marker(Item::Resynced(granted.clone()));
        // The buffer holds one event: the next evicts the first, not a
        // marker.
        shared.push_event(Event::resource_updated("b")).unwrap();
        assert_eq!(next(&shared), Some(Item::Lagged(1)));
        assert_eq!(next(&shared), Some(relistening(2)));
        assert_eq!(next(&shared), Some(Item::Resynced(granted.clone())));
        assert_eq!(next(&shared), Some(Event::resource_updated("b").into()));
        assert_eq!(next(&shared), None);
        assert_eq!(shared.granted(), granted);
        let stats = shared.stats();
        assert_eq!(
            (
                stats.received,
                stats.delivered,
                stats.dropped,
                stats.resyncs
            ),
            (2, 1, 1, 1)
        );
    }

    #[test]
    fn cancelling_discards_what_is_buffered_and_wakes_a_waiting_reader() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::task::Wake;

        struct Flag(AtomicBool);
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let waiting = Shared::new(&SubscribeOptions::default(), Filter::new());
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = std::task::Waker::from(flag.clone());
        assert!(waiting.pop(Some(&Context::from_waker(&waker))).is_pending());
        waiting.finish(End::Cancelled);
        assert!(flag.0.load(Ordering::SeqCst), "the waiting reader is woken");
        assert_eq!(next(&waiting), Some(Item::End(End::Cancelled)));

        let holding = Shared::new(&SubscribeOptions::default(), Filter::new());
        holding.push_event(Event::resource_updated("a")).unwrap();
        holding.push_event(Event::resource_updated("b")).unwrap();
        holding.finish(End::Cancelled);
        assert_eq!(next(&holding), Some(Item::End(End::Cancelled)));
        let stats = holding.stats();
        assert_eq!((stats.received, stats.discarded, stats.buffered), (2, 2, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_room_counts_events_and_bytes_and_a_read_makes_room() {
        let len = Event::resource_updated("a").rendered_len();
        let by_count = Shared::new(&SubscribeOptions::default().with_capacity(2), Filter::new());
        by_count.push_event(Event::resource_updated("a")).unwrap();
        assert!(!by_count.is_full(), "one of two");
        by_count.push_event(Event::resource_updated("b")).unwrap();
        assert!(by_count.is_full());
        let waiting = tokio::time::timeout(Duration::from_secs(1), by_count.room());
        assert!(waiting.await.is_err(), "no room while full");
        assert!(next(&by_count).is_some());
        tokio::time::timeout(Duration::from_secs(1), by_count.room())
            .await
            .expect("a read made room");

        let mut options = SubscribeOptions::default()
            .with_buffer(mcp_subscriptions::queue::Settings::new(100).with_max_bytes(2 * len));
        options.wait_for_room = true;
        let by_bytes = Shared::new(&options, Filter::new());
        by_bytes.push_event(Event::resource_updated("a")).unwrap();
        assert!(!by_bytes.is_full(), "half the bytes");
        by_bytes.push_event(Event::resource_updated("b")).unwrap();
        assert!(by_bytes.is_full(), "two events fill the byte bound");
        // Other policies never wait: the queue keeps its own bound.
        let dropping = Shared::new(
            &SubscribeOptions::default()
                .with_capacity(1)
                .with_policy(BufferPolicy::DropOldest),
            Filter::new(),
        );
        dropping.push_event(Event::resource_updated("a")).unwrap();
        assert!(!dropping.is_full());
    }

    #[test]
    fn disconnect_ends_with_every_event_lost_and_then_nothing() {
        let options = SubscribeOptions::default()
            .with_capacity(1)
            .with_policy(BufferPolicy::Disconnect);
        let shared = Shared::new(&options, Filter::new());
        shared.push_event(Event::resource_updated("a")).unwrap();
        assert_eq!(shared.push_event(Event::resource_updated("b")), Err(2));
        assert!(!shared.is_finished());
        assert_eq!(
            next(&shared),
            Some(Item::End(End::Overflowed { dropped: 2 }))
        );
        assert!(shared.is_finished());
        assert_eq!(next(&shared), None);
        assert_eq!(shared.stats().dropped, 2);
    }

    #[test]
    fn a_grant_duplicates_and_upstream_lag_are_kept() {
        let shared = Shared::new(&SubscribeOptions::default(), Filter::new());
        let granted = Filter::new().with_prompts_list_changed();
        shared.set_granted(granted.clone());
        assert_eq!(shared.granted(), granted);
        shared.add_duplicate();
        shared.add_duplicate();
        assert_eq!(shared.stats().duplicates, 2);
        shared.add_lag(3);
        assert_eq!(next(&shared), Some(Item::Lagged(3)));
        assert_eq!(shared.stats().received, 0, "lost upstream: never received");
    }
}
