//! The bounded queue between publishers and the broker.
//!
//! A publisher pushes under a short lock and returns; the relay's task
//! takes events off to send them. When the broker is slow or away the queue
//! fills, and then it drops its oldest event (counted) rather than make a
//! publisher wait. An idempotent signal (a list changed, a URI updated)
//! that is already queued is not queued again (counted as coalesced): a
//! second copy would tell the other replicas nothing more.

use std::collections::{HashMap, VecDeque};

use crate::event::{Event, EventKind};

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pushed {
    Queued,
    /// Queued, and the oldest event was dropped to make room.
    DroppedOldest,
    /// An identical signal was already queued.
    Coalesced,
}

#[derive(Debug)]
pub(crate) struct Outbound {
    events: VecDeque<Event>,
    /// How many of each idempotent kind are queued (at most one each, but
    /// counted so that taking or dropping one stays exact).
    signals: HashMap<EventKind, usize>,
    capacity: usize,
}

impl Outbound {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            events: VecDeque::new(),
            signals: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    pub(crate) fn push(&mut self, event: Event) -> Pushed {
        if event.is_idempotent() && self.signals.contains_key(event.kind()) {
            return Pushed::Coalesced;
        }
        let mut pushed = Pushed::Queued;
        if self.events.len() >= self.capacity {
            self.pop();
            pushed = Pushed::DroppedOldest;
        }
        if event.is_idempotent() {
            *self.signals.entry(event.kind().clone()).or_default() += 1;
        }
        self.events.push_back(event);
        pushed
    }

    fn pop(&mut self) -> Option<Event> {
        let event = self.events.pop_front()?;
        if event.is_idempotent()
            && let Some(count) = self.signals.get_mut(event.kind())
        {
            *count -= 1;
            if *count == 0 {
                self.signals.remove(event.kind());
            }
        }
        Some(event)
    }

    /// The oldest `max` events, or all of them when fewer are queued.
    pub(crate) fn take(&mut self, max: usize) -> Vec<Event> {
        std::iter::from_fn(|| self.pop()).take(max).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_drops_the_oldest_and_signals_coalesce() {
        let mut queue = Outbound::new(2);
        assert_eq!(queue.push(Event::tools_list_changed()), Pushed::Queued);
        assert_eq!(queue.push(Event::tools_list_changed()), Pushed::Coalesced);
        assert_eq!(queue.push(Event::resource_updated("a")), Pushed::Queued);
        assert_eq!(
            queue.push(Event::resource_updated("b")),
            Pushed::DroppedOldest
        );
        // The dropped tools signal is no longer pending: a new one queues.
        assert_eq!(
            queue.push(Event::tools_list_changed()),
            Pushed::DroppedOldest
        );
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.take(1), [Event::resource_updated("b")]);
        assert_eq!(queue.take(5), [Event::tools_list_changed()]);
        assert_eq!(queue.pop(), None);
        assert_eq!(queue.push(Event::resource_updated("b")), Pushed::Queued);
    }
}
