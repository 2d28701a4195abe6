//! The accounting of matched events: where each one is now.

use std::ops::AddAssign;

/// Where every event matched to a listener (or to all of a hub's
/// listeners) is now.
///
/// # The accounting identity
///
/// Every event matched to a listener is, at any moment, exactly one of:
/// delivered to its reader, dropped by its overflow policy, absorbed by a
/// pending duplicate (coalesced), still queued, or discarded when the
/// listener closed. Hence, in every snapshot,
///
/// ```text
/// matched == delivered + dropped + coalesced + queued + discarded
/// ```
///
/// which [`is_balanced`](Self::is_balanced) checks. Counts are taken under
/// the same short lock as the work they count, so a snapshot never catches
/// an event between two states.
///
/// ```
/// use mcp_subscriptions::{Filter, Hub};
///
/// let hub = Hub::new();
/// let _listener = hub.listen(&Filter::new().with_tools_list_changed()).unwrap();
/// hub.notify_tools_list_changed();
/// let events = hub.stats().events;
/// assert_eq!((events.matched, events.queued), (1, 1));
/// assert!(events.is_balanced());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Counts {
    /// Event × listener matches: each event counts once per listener it
    /// reached.
    pub matched: u64,
    /// Handed to readers.
    pub delivered: u64,
    /// Lost to an overflow policy.
    pub dropped: u64,
    /// Duplicate signals absorbed by a pending copy (coalescing queues).
    pub coalesced: u64,
    /// Waiting in queues now.
    pub queued: u64,
    /// Still queued when their listener closed.
    pub discarded: u64,
}

impl Counts {
    /// Whether the [accounting identity](Self#the-accounting-identity)
    /// holds. It always should; tests assert it.
    pub fn is_balanced(&self) -> bool {
        self.matched
            == self.delivered + self.dropped + self.coalesced + self.queued + self.discarded
    }
}

/// Sums the counts of several listeners.
impl AddAssign for Counts {
    fn add_assign(&mut self, other: Counts) {
        self.matched += other.matched;
        self.delivered += other.delivered;
        self.dropped += other.dropped;
        self.coalesced += other.coalesced;
        self.queued += other.queued;
        self.discarded += other.discarded;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_only_when_every_match_is_somewhere() {
        let mut counts = Counts {
            matched: 5,
            delivered: 1,
            dropped: 1,
            coalesced: 1,
            queued: 1,
            discarded: 1,
        };
        assert!(counts.is_balanced());
        counts += Counts {
            matched: 1,
            ..Counts::default()
        };
        assert!(!counts.is_balanced());
    }
}
