//! The bounded queue between publishers and the broker.
//!
//! A publisher pushes under a short lock and returns; the relay's task
//! takes events off to send them. When the broker is slow or away the queue
//! fills, and then it drops its oldest event (counted) rather than make a
//! publisher wait. An idempotent signal (a list changed, a URI updated)
//! that is already queued is not queued again (counted as coalesced): a
//! second copy would tell the other replicas nothing more; nor is a status
//! older than one already queued or sent for the same thing (a
//! [succession](crate::Succession)), and a newer one takes a pending older
//! one's place.
//!
//! It is a [`Queue`](crate::queue::Queue) under drop-oldest
//! with coalescing, with no reader waiting on it: the relay's task takes
//! what is queued when the broker is ready.
//!
//! Revocations wait beside the events: rare, and never dropped for room (a
//! stream that outlives its revocation is worse than a late event), so a
//! plain list. They are taken with each batch, under the same lock, and
//! sent ahead of it, so an event published after a revocation never
//! reaches another replica before it.

use crate::audience::Audience;
use crate::event::Event;
use crate::queue::{Popped, Pushed, Queue, Settings};

#[derive(Debug)]
pub(crate) struct Outbound {
    /// The relay counts from what each push did, not from its counts.
    events: Queue,
    revocations: Vec<Audience>,
}

impl Outbound {
    pub(crate) fn new(capacity: usize) -> Self {
        let settings = Settings::new(capacity.max(1))
            .with_max_bytes(usize::MAX)
            .with_coalesce(true);
        Self {
            events: Queue::new(settings),
            revocations: Vec::new(),
        }
    }

    /// Queues the revocation of `audience`, ahead of every event queued
    /// after it.
    pub(crate) fn revoke(&mut self, audience: Audience) {
        self.revocations.push(audience);
    }

    /// Puts back revocations the broker did not take, ahead of any queued
    /// since.
    pub(crate) fn unsend(&mut self, mut revocations: Vec<Audience>) {
        revocations.append(&mut self.revocations);
        self.revocations = revocations;
    }

    /// Queues `event`: [`Pushed::Queued`], [`Pushed::DroppedOldest`] or
    /// [`Pushed::Coalesced`] (drop-oldest never disconnects, and the queue
    /// never closes).
    pub(crate) fn push(&mut self, event: Event) -> Pushed {
        self.events.push(&event)
    }

    fn pop(&mut self) -> Option<Event> {
        loop {
            match self.events.pop()? {
                Popped::Item(event) => return Some(event),
                // Drops are counted in the relay's stats; the broker is owed
                // no lag.
                Popped::Lagged(_) => {}
                // It never ends.
                _ => return None,
            }
        }
    }

    /// Every queued revocation, and the oldest `max` events (all of them
    /// when fewer are queued): the revocations go first.
    pub(crate) fn take(&mut self, max: usize) -> (Vec<Audience>, Vec<Event>) {
        let revocations = std::mem::take(&mut self.revocations);
        (
            revocations,
            std::iter::from_fn(|| self.pop()).take(max).collect(),
        )
    }

    pub(crate) fn len(&self) -> usize {
        usize::try_from(self.events.counts().queued).expect("a queue's length fits")
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
        assert_eq!(queue.take(1).1, [Event::resource_updated("b")]);
        assert_eq!(queue.take(5).1, [Event::tools_list_changed()]);
        assert_eq!(queue.pop(), None);
        assert_eq!(queue.push(Event::resource_updated("b")), Pushed::Queued);
    }

    #[test]
    fn a_newer_status_takes_the_place_of_a_pending_older_one() {
        let status = |version| {
            Event::extension("x/status", Default::default(), None)
                .with_succession(crate::Succession::new("t", version))
        };
        let mut queue = Outbound::new(8);
        queue.push(Event::tools_list_changed());
        assert_eq!(queue.push(status(1)), Pushed::Queued);
        assert_eq!(queue.push(status(3)), Pushed::Queued);
        assert_eq!(
            queue.push(status(2)),
            Pushed::Coalesced,
            "older than pending"
        );
        assert_eq!(queue.take(5).1, [Event::tools_list_changed(), status(3)]);
    }

    #[test]
    fn a_signal_for_some_is_no_duplicate_of_one_for_others() {
        let mut queue = Outbound::new(8);
        let for_alice = || Event::tools_list_changed().with_audience(Audience::principal("alice"));
        assert_eq!(queue.push(for_alice()), Pushed::Queued);
        assert_eq!(queue.push(Event::tools_list_changed()), Pushed::Queued);
        assert_eq!(queue.push(for_alice()), Pushed::Coalesced);
        assert_eq!(
            queue.push(Event::tools_list_changed().with_audience(Audience::nobody())),
            Pushed::Queued
        );
        assert_eq!(queue.take(8).1.len(), 3);
    }

    #[test]
    fn revocations_go_ahead_of_the_events_queued_after_them() {
        let mut queue = Outbound::new(8);
        queue.push(Event::tools_list_changed());
        queue.revoke(Audience::principal("alice"));
        queue.push(Event::prompts_list_changed());
        let (revocations, events) = queue.take(1);
        assert_eq!(revocations, [Audience::principal("alice")]);
        assert_eq!(events, [Event::tools_list_changed()]);
        queue.revoke(Audience::label("b"));
        queue.unsend(revocations);
        let (revocations, events) = queue.take(8);
        assert_eq!(
            revocations,
            [Audience::principal("alice"), Audience::label("b")]
        );
        assert_eq!(events, [Event::prompts_list_changed()]);
    }
}
