//! The bounded buffer between a subscription's transport and its reader:
//! the only state the pump task and the reader share.

use std::collections::{HashSet, VecDeque};
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::item::{End, Item};
use super::options::{BufferPolicy, SubscribeOptions};
use crate::event::{Event, EventKind};
use crate::filter::Filter;

/// Where every event the transport delivered is now, for one subscription.
/// `received = delivered + dropped + coalesced + buffered + discarded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BufferStats {
    /// Events read from the transport.
    pub received: u64,
    /// Events handed to the reader.
    pub delivered: u64,
    /// Events evicted ([`BufferPolicy::DropOldest`]) or lost to an overflow
    /// ([`BufferPolicy::Disconnect`]).
    pub dropped: u64,
    /// Duplicates of a pending idempotent signal, absorbed.
    pub coalesced: u64,
    /// Events waiting for the reader.
    pub buffered: u64,
    /// Events still buffered when the subscription was cancelled.
    pub discarded: u64,
    /// Times the client listened again and was acknowledged.
    pub resyncs: u64,
}

struct State {
    items: VecDeque<Item>,
    /// How many of `items` are events: the capacity bounds these only
    /// (markers such as `Resynced` are few and always kept).
    events: usize,
    /// The idempotent kinds pending, when coalescing.
    pending: HashSet<EventKind>,
    /// Events lost since the reader last read, reported before the next
    /// item.
    lagged: u64,
    end: Option<End>,
    /// The end was handed to the reader: nothing more comes.
    finished: bool,
    granted: Filter,
    reader: Option<Waker>,
    stats: BufferStats,
}

/// What the pump and the reader share.
pub(super) struct Shared {
    state: Mutex<State>,
    capacity: usize,
    policy: BufferPolicy,
    coalesce: bool,
    /// Woken when the reader takes an item: a pump waiting for room
    /// ([`BufferPolicy::Wait`]) reads on.
    room: Notify,
    /// Cancelled by the reader (cancel or drop); the pump ends the stream.
    pub(super) cancel: CancellationToken,
}

/// What pushing an event did.
pub(super) enum Pushed {
    Buffered,
    /// The buffer overflowed under `Disconnect`: the subscription ended.
    Overflowed(u64),
}

impl Shared {
    pub(super) fn new(options: &SubscribeOptions, granted: Filter) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                events: 0,
                pending: HashSet::new(),
                lagged: 0,
                end: None,
                finished: false,
                granted,
                reader: None,
                stats: BufferStats::default(),
            }),
            capacity: options.capacity.get(),
            policy: options.policy,
            coalesce: options.coalesce,
            room: Notify::new(),
            cancel: CancellationToken::new(),
        }
    }

    pub(super) fn granted(&self) -> Filter {
        self.state.lock().granted.clone()
    }

    pub(super) fn stats(&self) -> BufferStats {
        let state = self.state.lock();
        BufferStats {
            buffered: state.events as u64,
            ..state.stats
        }
    }

    /// Whether the pump must wait before reading the transport again.
    fn is_full(&self) -> bool {
        self.policy == BufferPolicy::Wait && self.state.lock().events >= self.capacity
    }

    /// Waits until the buffer has room for one more event (only under
    /// [`BufferPolicy::Wait`]; the other policies always read on).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it takes nothing.
    pub(super) async fn room(&self) {
        loop {
            // Registered before the check, so a read between the check and
            // the wait still wakes us.
            let notified = self.room.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.is_full() {
                return;
            }
            notified.await;
        }
    }

    /// Buffers one event under the policy.
    pub(super) fn push_event(&self, event: Event) -> Pushed {
        let (pushed, waker) = {
            let mut state = self.state.lock();
            state.stats.received += 1;
            let idempotent = self.coalesce && event.is_idempotent();
            if idempotent && state.pending.contains(event.kind()) {
                state.stats.coalesced += 1;
                return Pushed::Buffered;
            }
            if state.events >= self.capacity {
                match self.policy {
                    // The pump waited for room; a full buffer here means
                    // only that the capacity is exceeded by a marker's
                    // worth, which `Wait` tolerates.
                    BufferPolicy::Wait => {}
                    BufferPolicy::DropOldest => {
                        if let Some(at) =
                            state.items.iter().position(|i| matches!(i, Item::Event(_)))
                        {
                            if let Some(Item::Event(old)) = state.items.remove(at) {
                                state.pending.remove(old.kind());
                            }
                            state.events -= 1;
                            state.lagged += 1;
                            state.stats.dropped += 1;
                        }
                    }
                    BufferPolicy::Disconnect => {
                        let dropped = state.events as u64 + 1;
                        state.stats.dropped += dropped;
                        state.items.retain(|i| !matches!(i, Item::Event(_)));
                        state.events = 0;
                        state.pending.clear();
                        state.end = Some(End::Overflowed { dropped });
                        let waker = state.reader.take();
                        drop(state);
                        if let Some(waker) = waker {
                            waker.wake();
                        }
                        return Pushed::Overflowed(dropped);
                    }
                }
            }
            if idempotent {
                state.pending.insert(event.kind().clone());
            }
            state.items.push_back(Item::Event(event));
            state.events += 1;
            (Pushed::Buffered, state.reader.take())
        };
        // Woken after the lock is released, so the reader does not wake
        // only to block on it.
        if let Some(waker) = waker {
            waker.wake();
        }
        pushed
    }

    /// Buffers a marker (a re-listen attempt, a resync): always kept, and a
    /// pending attempt report is replaced by the newer one rather than
    /// piling up while the reader is away.
    pub(super) fn push_marker(&self, item: Item) {
        let waker = {
            let mut state = self.state.lock();
            if let Item::Resynced(granted) = &item {
                state.granted = granted.clone();
                state.stats.resyncs += 1;
            }
            if matches!(item, Item::Relistening(_))
                && matches!(state.items.back(), Some(Item::Relistening(_)))
            {
                state.items.pop_back();
            }
            state.items.push_back(item);
            state.reader.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Reports events lost upstream (an in-process source's own lag).
    pub(super) fn add_lag(&self, lost: u64) {
        let waker = {
            let mut state = self.state.lock();
            state.lagged += lost;
            state.reader.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Ends the subscription, unless it already ended (an overflow keeps
    /// its own end). A cancel discards what was buffered.
    pub(super) fn finish(&self, end: End) {
        let waker = {
            let mut state = self.state.lock();
            if state.end.is_none() {
                if end == End::Cancelled {
                    state.stats.discarded += state.events as u64;
                    state.items.clear();
                    state.events = 0;
                    state.lagged = 0;
                }
                state.end = Some(end);
            }
            state.reader.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The next item: the lag first, then the buffered items in order, then
    /// the end once; `None` when nothing is ready (with `cx`, the reader is
    /// woken when something is) or after the end was read.
    pub(super) fn pop(&self, cx: Option<&Context<'_>>) -> Poll<Option<Item>> {
        let item = {
            let mut state = self.state.lock();
            if state.finished {
                return Poll::Ready(None);
            }
            if state.lagged > 0 {
                Some(Item::Lagged(std::mem::take(&mut state.lagged)))
            } else if let Some(item) = state.items.pop_front() {
                if let Item::Event(event) = &item {
                    state.events -= 1;
                    state.stats.delivered += 1;
                    if self.coalesce && event.is_idempotent() {
                        state.pending.remove(event.kind());
                    }
                }
                Some(item)
            } else if let Some(end) = state.end.clone() {
                state.finished = true;
                Some(Item::End(end))
            } else {
                if let Some(cx) = cx {
                    match &state.reader {
                        Some(waker) if waker.will_wake(cx.waker()) => {}
                        _ => state.reader = Some(cx.waker().clone()),
                    }
                }
                None
            }
        };
        match item {
            Some(item) => {
                // Room was made: a pump waiting under `Wait` reads on.
                self.room.notify_one();
                Poll::Ready(Some(item))
            }
            None => Poll::Pending,
        }
    }

    /// Whether the reader has read the end.
    pub(super) fn is_finished(&self) -> bool {
        self.state.lock().finished
    }
}
