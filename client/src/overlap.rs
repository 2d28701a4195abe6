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
//! stream was registered and one after, the pairing may match the wrong
//! two: a newer stream's copy of the later one is dropped for the old
//! stream's earlier one. The same number is delivered either way, as long
//! as the old stream brings its own copy of the later one; but when the
//! old stream is closed first, that one is lost. So a newer stream's
//! idempotent signal dropped for an old stream's is *claimed* by the old
//! stream, and when the old stream is closed, the signals claimed in the
//! last half of the overlap (which it may still have in flight) are
//! delivered again, and none is dropped for its deliveries any more. A copy
//! dropped earlier is settled: the old stream's own copy of it has had
//! half an overlap to arrive, far more than the two streams of one server
//! drift apart.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use mcp_subscriptions::Event;

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
    /// Its stream was closed since: a signal is no longer dropped for it,
    /// since a later publish that stream would have brought never comes.
    closed: bool,
}

/// The events delivered during an overlap, by content.
#[derive(Default)]
pub(super) struct Overlap {
    delivered: HashMap<String, VecDeque<Delivered>>,
    /// By stream: the idempotent signals whose copy from a newer stream
    /// was dropped for that stream's, with when the last was.
    claimed: HashMap<u64, HashMap<String, (Event, Instant)>>,
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
        if let Some(copy) = copies.iter_mut().find(|copy| {
            copy.from != from
                && from <= copy.newest
                && !copy.matched.contains(&from)
                && !(copy.closed && event.is_idempotent())
        }) {
            copy.matched.push(from);
            if copy.from < from && event.is_idempotent() {
                self.claimed
                    .entry(copy.from)
                    .or_default()
                    .insert(key, (event.clone(), now));
            }
            return Some(copy.from);
        }
        match until {
            Some(until) => copies.push_back(Delivered {
                from,
                newest,
                matched: Vec::new(),
                until,
                closed: false,
            }),
            None if copies.is_empty() => {
                self.delivered.remove(&key);
            }
            None => {}
        }
        None
    }

    /// Stream `from` is closed `now`: the signals claimed for it in the
    /// last half of `overlap`, of which it may have had a later publish
    /// still in flight, to deliver again.
    pub(super) fn closed(&mut self, from: u64, now: Instant, overlap: Duration) -> Vec<Event> {
        for copy in self.delivered.values_mut().flatten() {
            copy.closed |= copy.from == from;
        }
        let since = now.checked_sub(overlap / 2);
        self.claimed
            .remove(&from)
            .unwrap_or_default()
            .into_values()
            .filter(|(_, at)| since.is_none_or(|since| *at >= since))
            .map(|(event, _)| event)
            .collect()
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
    fn a_newer_stream_s_signal_dropped_late_for_an_old_one_s_is_delivered_again_at_its_close() {
        let start = Instant::now();
        let overlap = Duration::from_millis(400);
        let until = Some(start + overlap);
        let mut overlap_of = Overlap::default();
        let (a, b) = (
            Event::resource_updated("file:///a"),
            Event::resource_updated("file:///b"),
        );
        // Stream 1 brought each first; stream 2's copies were dropped, of
        // a early in the overlap and of b late in it.
        assert_eq!(overlap_of.copy_of(&a, 1, 2, start, until), None);
        assert_eq!(overlap_of.copy_of(&a, 2, 2, start, until), Some(1));
        let late = start + Duration::from_millis(300);
        assert_eq!(overlap_of.copy_of(&b, 1, 2, late, until), None);
        assert_eq!(overlap_of.copy_of(&b, 2, 2, late, until), Some(1));
        // Stream 2 closing gives nothing back; stream 1 closing gives b,
        // which it may still have had in flight, once.
        let close = start + overlap;
        assert!(overlap_of.closed(2, close, overlap).is_empty());
        assert_eq!(overlap_of.closed(1, close, overlap), vec![b.clone()]);
        assert!(overlap_of.closed(1, close, overlap).is_empty());
        // Once stream 1 is gone, what stream 2 brings is delivered, not
        // taken for a copy of what stream 1 did.
        let c = Event::resource_updated("file:///c");
        assert_eq!(overlap_of.copy_of(&c, 1, 2, late, until), None);
        overlap_of.closed(1, close, overlap);
        assert_eq!(overlap_of.copy_of(&c, 2, 2, close, until), None);
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
