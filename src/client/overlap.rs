//! While a subscription's filter changes, the old streams are still read a
//! little (what was in flight on them arrives) as the new ones already
//! deliver, so an event published in between may come on several. Each
//! copy after the first, from another stream, is dropped.
//!
//! An old stream has caught up once it carries a copy of an event the newer
//! one delivered (or the newer one a copy of the old's): everything the old
//! one had from before the newer was acknowledged came before that event,
//! so the old one is closed then, without waiting for the overlap to end.
//! Only an event with data of its own tells that for sure; an idempotent
//! signal (a list changed, a URI updated) may be the same signal published
//! twice, so it only drops copies.
//!
//! A copy is told apart by its content alone (the protocol numbers
//! nothing), so of two identical events, one published before the new
//! stream was acknowledged and one after, the pairing may match the wrong
//! two: the same number of identical events is delivered either way, and
//! an idempotent signal carries nothing that tells them apart.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use crate::event::Event;

/// An event delivered during an overlap, and the streams whose copy of it
/// was dropped since.
struct Delivered {
    from: u64,
    /// The newest stream that may carry a copy: one opened later was
    /// registered after the event was published, so the same event
    /// coming on it is a later publish, never this one's copy.
    newest: u64,
    matched: Vec<u64>,
    until: Instant,
}

/// The events delivered during an overlap, by content.
#[derive(Default)]
pub(super) struct Overlap {
    delivered: HashMap<String, VecDeque<Delivered>>,
}

impl Overlap {
    /// Whether `event` from stream `from` (streams are numbered as they
    /// open) is a copy of one another stream delivered: that stream's
    /// number. Otherwise it is remembered until `until` (when given), as
    /// an event streams up to `newest` may carry a copy of.
    pub(super) fn copy_of(
        &mut self,
        event: &Event,
        from: u64,
        newest: u64,
        now: Instant,
        until: Option<Instant>,
    ) -> Option<u64> {
        if self.delivered.is_empty() && until.is_none() {
            return None;
        }
        let key = event.to_plain_json();
        let copies = self.delivered.entry(key.clone()).or_default();
        copies.retain(|copy| copy.until > now);
        if let Some(copy) = copies
            .iter_mut()
            .find(|copy| copy.from != from && from <= copy.newest && !copy.matched.contains(&from))
        {
            copy.matched.push(from);
            return Some(copy.from);
        }
        match until {
            Some(until) => copies.push_back(Delivered {
                from,
                newest,
                matched: Vec::new(),
                until,
            }),
            None if copies.is_empty() => {
                self.delivered.remove(&key);
            }
            None => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_stream_copy_after_the_first_is_dropped_once() {
        let now = Instant::now();
        let until = Some(now + Duration::from_secs(1));
        let mut overlap = Overlap::default();
        let a = Event::resource_updated("file:///a");
        let b = Event::resource_updated("file:///b");
        // Published once, while three streams were open.
        assert_eq!(overlap.copy_of(&a, 1, 3, now, until), None);
        assert_eq!(overlap.copy_of(&a, 2, 3, now, until), Some(1));
        assert_eq!(overlap.copy_of(&a, 3, 3, now, until), Some(1));
        // Published again: delivered again.
        assert_eq!(overlap.copy_of(&a, 3, 3, now, until), None);
        assert_eq!(overlap.copy_of(&a, 1, 3, now, until), Some(3));
        // Another event is no copy; nothing is a copy once the overlap is
        // over, and nothing is remembered outside one.
        assert_eq!(overlap.copy_of(&b, 2, 3, now, until), None);
        let later = now + Duration::from_secs(2);
        assert_eq!(overlap.copy_of(&b, 1, 3, later, None), None);
        assert!(!overlap.delivered.contains_key(&b.to_plain_json()));
    }

    #[test]
    fn a_stream_opened_after_a_delivery_carries_no_copy_of_it() {
        let now = Instant::now();
        let until = Some(now + Duration::from_secs(1));
        let mut overlap = Overlap::default();
        let a = Event::resource_updated("file:///a");
        // Delivered by stream 1 while 2 was open, and its copy on 2 dropped.
        assert_eq!(overlap.copy_of(&a, 1, 2, now, until), None);
        assert_eq!(overlap.copy_of(&a, 2, 2, now, until), Some(1));
        // Stream 3 opened since: the same signal on it is published anew,
        // and delivered, even if stream 1 closes before it brings its own.
        assert_eq!(overlap.copy_of(&a, 3, 3, now, until), None);
        assert_eq!(overlap.copy_of(&a, 1, 3, now, until), Some(3));
    }
}
