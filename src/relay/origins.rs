//! What a relay knows of the other replicas (origins), from their catalog
//! messages, and when that says messages may have been lost: a gap in a
//! replica's catalog sequence, a rise in what its heartbeats say it
//! dropped, its silence, and a first hearing that may follow a loss.
//!
//! A replica heard for the first time has published nothing its peers
//! could have missed: a new process starts with an empty outbound queue.
//! It costs nothing, unless a replica forgotten for its silence, without a
//! goodbye, is outstanding: that one may have died holding changes it
//! could not send after its peers resynced for its silence, and the
//! process taking its place is the only sign that follows. So a first
//! hearing resyncs while any such replica is outstanding, and settles them
//! all; a forgotten replica that speaks again (a partition healed) resyncs
//! and is settled alone. A replica that says goodbye (it stopped
//! gracefully, after sending what it held) is dropped, and is never
//! outstanding.
//!
//! The list survives this relay's own reconnects: each replica's silence
//! clock starts again and its next sequence number is taken as it comes,
//! since the reconnect's own resync covers what was missed while away.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

/// What a catalog message of another replica tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Heard {
    /// Nothing was lost.
    Known,
    /// A replica never heard before, with no silent replica outstanding:
    /// nothing was lost.
    Joined,
    /// A replica heard for the first time while a replica forgotten for
    /// its silence is outstanding, or that forgotten one speaking again:
    /// the forgotten one may have died holding changes, so resync.
    Rejoined,
    /// Its sequence has a gap or its dropped count rose: resync.
    Lost,
}

struct Origin {
    /// The catalog sequence number expected next; `None` after this relay
    /// reconnected, when the next message sets it.
    next_seq: Option<u64>,
    /// The most its heartbeats have said it dropped, kept across this
    /// relay's reconnects so that a rise while away is seen too.
    dropped: u64,
    last_seen: Instant,
}

#[derive(Default)]
pub(crate) struct Origins {
    known: HashMap<String, Origin>,
    /// Replicas forgotten for their silence, without a goodbye, that no
    /// first hearing has settled since.
    outstanding: HashSet<String>,
}

impl Origins {
    /// Notes a catalog message of `origin` numbered `seq`, with the dropped
    /// count of a heartbeat.
    pub(crate) fn heard(
        &mut self,
        origin: &str,
        seq: u64,
        dropped: Option<u64>,
        now: Instant,
    ) -> Heard {
        match self.known.entry(origin.to_owned()) {
            Entry::Vacant(entry) => {
                entry.insert(Origin {
                    next_seq: Some(seq + 1),
                    dropped: dropped.unwrap_or(0),
                    last_seen: now,
                });
                if self.outstanding.remove(origin) {
                    Heard::Rejoined
                } else if self.outstanding.is_empty() {
                    Heard::Joined
                } else {
                    self.outstanding.clear();
                    Heard::Rejoined
                }
            }
            Entry::Occupied(entry) => {
                let origin = entry.into_mut();
                let gap = origin.next_seq.is_some_and(|next| next != seq);
                let rose = dropped.is_some_and(|dropped| dropped > origin.dropped);
                origin.next_seq = Some(seq + 1);
                origin.dropped = origin.dropped.max(dropped.unwrap_or(0));
                origin.last_seen = now;
                if gap || rose {
                    Heard::Lost
                } else {
                    Heard::Known
                }
            }
        }
    }

    /// This relay is back on the bus: every replica is kept, its silence
    /// clock started again and its next sequence number taken as it comes.
    pub(crate) fn rejoin(&mut self, now: Instant) {
        for origin in self.known.values_mut() {
            origin.last_seen = now;
            origin.next_seq = None;
        }
    }

    /// Forgets the replicas not heard for `silent`, holding them
    /// outstanding; how many.
    pub(crate) fn forget_silent(&mut self, now: Instant, silent: Duration) -> usize {
        let before = self.known.len();
        let outstanding = &mut self.outstanding;
        self.known.retain(|name, origin| {
            let heard = now.duration_since(origin.last_seen) < silent;
            if !heard {
                outstanding.insert(name.clone());
            }
            heard
        });
        before - self.known.len()
    }

    /// `origin` said goodbye: it sent everything it held, so it is dropped
    /// with nothing owed. Whether it was known.
    pub(crate) fn left(&mut self, origin: &str) -> bool {
        self.outstanding.remove(origin);
        self.known.remove(origin).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.known.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_joins_then_loses_by_a_gap_or_a_rise_in_drops() {
        let now = Instant::now();
        let mut origins = Origins::default();
        assert_eq!(origins.heard("b", 1, Some(0), now), Heard::Joined);
        assert_eq!(origins.heard("b", 2, None, now), Heard::Known);
        assert_eq!(
            origins.heard("b", 4, None, now),
            Heard::Lost,
            "3 is missing"
        );
        assert_eq!(origins.heard("b", 5, Some(0), now), Heard::Known);
        assert_eq!(
            origins.heard("b", 6, Some(2), now),
            Heard::Lost,
            "it dropped"
        );
        assert_eq!(origins.heard("b", 7, Some(2), now), Heard::Known);
        assert_eq!(origins.len(), 1);
    }

    #[test]
    fn a_rejoin_keeps_replicas_and_their_drops_but_not_their_sequence() {
        let now = Instant::now();
        let mut origins = Origins::default();
        origins.heard("b", 1, Some(3), now);
        origins.rejoin(now);
        assert_eq!(origins.heard("b", 40, Some(3), now), Heard::Known);
        origins.rejoin(now);
        assert_eq!(origins.heard("b", 90, Some(4), now), Heard::Lost);
    }

    #[test]
    fn the_silent_are_forgotten_and_heard_as_new_again() {
        let start = Instant::now();
        let mut origins = Origins::default();
        origins.heard("b", 1, None, start);
        origins.heard("c", 1, None, start + Duration::from_secs(2));
        let later = start + Duration::from_secs(3);
        assert_eq!(origins.forget_silent(later, Duration::from_secs(2)), 1);
        assert_eq!(origins.len(), 1);
        origins.rejoin(later + Duration::from_secs(10));
        assert_eq!(
            origins.forget_silent(later + Duration::from_secs(11), Duration::from_secs(2)),
            0,
            "a rejoin restarts the clocks"
        );
        assert_eq!(origins.heard("b", 9, None, later), Heard::Rejoined);
    }

    #[test]
    fn a_first_hearing_costs_nothing_unless_a_silent_replica_is_outstanding() {
        let start = Instant::now();
        let silent = Duration::from_secs(2);
        let mut origins = Origins::default();
        assert_eq!(origins.heard("b", 1, None, start), Heard::Joined);
        assert_eq!(origins.heard("c", 1, None, start), Heard::Joined);
        // c goes silent and is forgotten without a goodbye.
        origins.heard("b", 2, None, start + Duration::from_secs(2));
        assert_eq!(
            origins.forget_silent(start + Duration::from_secs(3), silent),
            1
        );
        // Its replacement's first hearing resyncs, and settles it...
        assert_eq!(origins.heard("c2", 1, None, start), Heard::Rejoined);
        // ...so the next one costs nothing again.
        assert_eq!(origins.heard("d", 1, None, start), Heard::Joined);
    }

    #[test]
    fn a_replica_that_says_goodbye_is_owed_nothing() {
        let start = Instant::now();
        let mut origins = Origins::default();
        origins.heard("b", 1, None, start);
        assert!(origins.left("b"));
        assert_eq!(origins.len(), 0);
        // Nothing is forgotten for silence, so nothing is outstanding.
        assert_eq!(
            origins.forget_silent(start + Duration::from_secs(60), Duration::from_secs(2)),
            0
        );
        assert_eq!(origins.heard("b2", 1, None, start), Heard::Joined);
    }
}
