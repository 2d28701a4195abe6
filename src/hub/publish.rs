//! The publish path: how one event travels from [`Hub::publish`] to the
//! queues and lanes its kind routes to (the essay is on [`Hub`]), and the
//! report of what it did.
//!
//! [`Hub`]: super::Hub
//! [`Hub::publish`]: super::Hub::publish

use std::borrow::Cow;
use std::cell::Cell;
use std::ops::Deref;
use std::task::Waker;

use super::index::Target;
use super::registry::Registry;
use super::shared::Shared;
use super::stats::Retirement;
use crate::event::{Event, EventKind};
use crate::queue::Pushed;
use crate::queue::reader::Waiter;
use crate::sync::Ordering;

/// The outcome of one [`Hub::publish`](crate::Hub::publish), counted in
/// listeners.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct PublishReport {
    /// Listeners whose granted filter matched the event.
    pub matched: usize,
    /// Listeners that queued it.
    pub queued: usize,
    /// Listeners that evicted their oldest event to queue it
    /// ([`DropOldest`](crate::Overflow::DropOldest)); also counted in
    /// `queued`. Each evicted one event.
    pub evicted: usize,
    /// Listeners that already held the same idempotent signal and absorbed
    /// it (see [`HubBuilder::coalesce`](crate::hub::HubBuilder::coalesce)).
    pub coalesced: usize,
    /// Listeners disconnected because it did not fit
    /// ([`Disconnect`](crate::Overflow::Disconnect)); each lost everything
    /// it held, as [`HubStats::events_dropped`](crate::hub::HubStats) counts.
    pub disconnected: usize,
}

thread_local! {
    /// The readers a publish wakes, kept for this thread's next publish, so
    /// that waking many costs no allocation each time.
    static WAITERS: Cell<Vec<Option<Waiter>>> = const { Cell::new(Vec::new()) };
}

/// The most waiters a thread keeps room for between publishes; a larger
/// buffer (after a publish that woke more) is freed.
const KEPT_WAITERS: usize = 4_096;

/// `targets`, each once, starting at a place that the publish's
/// `number` spreads over them (Fibonacci hashing) and going round.
///
/// Publishers that run side by side, each walking the same targets from
/// the first, would meet at the first target's lock and then follow each
/// other target by target, each waiting for the one ahead (a convoy).
/// Started apart, they push into different queues and lanes at the same
/// time. Events from one thread still reach each listener in order: a
/// publish pushes into every target before it returns.
fn round_from<T>(targets: &[T], number: u64) -> impl Iterator<Item = &T> {
    const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
    let spread = u128::from(number.wrapping_mul(GOLDEN));
    // The top of `spread * len / 2^64`: below `len`, and consecutive
    // numbers land far apart.
    let start = ((spread * targets.len() as u128) >> 64) as usize;
    let (before, from) = targets.split_at(start);
    from.iter().chain(before)
}

impl Shared {
    /// Delivers `event` to this hub's listeners (never to a relay).
    pub(crate) fn publish_here(&self, event: Event) -> PublishReport {
        let number = self.published.fetch_add(1, Ordering::Relaxed);
        let routed = self.routed_kind(event.kind());
        // Pushes tallied by outcome (one increment each, in the loop that
        // runs once per listener), turned into the report after it.
        let mut tally = [0; Pushed::COUNT];
        let mut overflowed = Vec::new();
        let mut waiters = WAITERS.take();
        {
            // A read lock: publishers run side by side, and only opening,
            // closing and completing (all brief) exclude them.
            let registry = self.registry_for(&event, &routed);
            let mut push = |target: &Target| match target {
                Target::Own(queue) => {
                    let (pushed, waiter) = queue.push(&event);
                    tally[pushed as usize] += 1;
                    if waiter.is_some() {
                        waiters.push(waiter);
                    }
                    if pushed == Pushed::Disconnected {
                        overflowed.push(queue.id());
                    }
                }
                Target::Lane(lane) => lane.push(&event, &mut tally, &mut waiters),
            };
            let mut walk = |targets: &[Target]| round_from(targets, number).for_each(&mut push);
            match event.audience().members().map(|m| registry.routes.sole(m)) {
                // The common case walks the index's own slices.
                None => registry
                    .routes
                    .everyone
                    .matches(&routed)
                    .into_iter()
                    .for_each(walk),
                // So does an event for one principal or one label.
                Some(Some(sole)) => sole
                    .into_iter()
                    .flat_map(|index| index.matches(&routed))
                    .for_each(walk),
                Some(None) => {
                    let mut targets = Vec::new();
                    registry.targets_of(&routed, event.audience(), &mut targets);
                    walk(&targets);
                }
            }
        }
        let count = |pushed: Pushed| tally[pushed as usize];
        let report = PublishReport {
            matched: tally.iter().sum::<usize>() - count(Pushed::NotOpen),
            queued: count(Pushed::Queued) + count(Pushed::DroppedOldest),
            evicted: count(Pushed::DroppedOldest),
            coalesced: count(Pushed::Coalesced),
            disconnected: count(Pushed::Disconnected),
        };
        // Readers are woken with no lock held: waking runs executor code,
        // which may drop a task owning a listener, and that takes the lock.
        for waiter in waiters.drain(..).flatten() {
            waiter.wake();
        }
        if waiters.capacity() <= KEPT_WAITERS {
            WAITERS.set(waiters);
        }
        // Retiring needs the write lock, so it waits until the read lock is
        // released; the failed queues take no events in between.
        if !overflowed.is_empty() {
            let mut registry = self.registry.write();
            let retired: Vec<_> = overflowed
                .into_iter()
                .filter_map(|id| registry.retire(id, Retirement::Overflow))
                .collect();
            let watchers = registry.interest.take_wakers();
            drop(registry);
            watchers.into_iter().for_each(Waker::wake);
            for retired in retired {
                tracing::warn!(
                    target: "mcp_subscriptions",
                    listener = retired.id.as_u64(),
                    dropped = retired.events.dropped,
                    "listener disconnected for overflow"
                );
                retired.trace();
            }
        }
        report
    }

    /// The kind `kind` is routed as: an extension notification whose
    /// extension does not list its method reaches only match-everything
    /// listeners (channels), never a listen stream, as if it had no selector.
    fn routed_kind<'a>(&self, kind: &'a EventKind) -> Cow<'a, EventKind> {
        match kind {
            EventKind::Extension {
                method,
                selector: Some(selector),
            } if !self.config.capabilities.routes(method, selector.field()) => {
                Cow::Owned(EventKind::Extension {
                    method: method.clone(),
                    selector: None,
                })
            }
            _ => Cow::Borrowed(kind),
        }
    }

    /// The registry, read-locked for a publish of `event` (routed as
    /// `routed`), once what the event needs of lanes holds: an event with a
    /// succession must reach no lane, so lanes are closed first when it
    /// would (see `lane`), and a listener an event names by id must have a
    /// queue of its own. Checked under the read lock that the publish then
    /// pushes under, so no lane can open or be joined in between.
    pub(crate) fn registry_for(
        &self,
        event: &Event,
        routed: &EventKind,
    ) -> impl Deref<Target = Registry> + '_ {
        loop {
            let registry = self.registry.read();
            let seated = registry.seated_among(event.audience());
            let is_lane = |target: &Target| matches!(target, Target::Lane(_));
            let reaches_lane = || {
                if event.audience().is_everyone() {
                    let targets = registry.routes.everyone.matches(routed).into_iter();
                    return targets.flatten().any(is_lane);
                }
                let mut targets = Vec::new();
                registry.targets_of(routed, event.audience(), &mut targets);
                targets.iter().any(is_lane)
            };
            let closes_lanes = event.succession().is_some() && reaches_lane();
            if seated.is_empty() && !closes_lanes {
                return registry;
            }
            drop(registry);
            let mut registry = self.registry.write();
            seated.into_iter().for_each(|id| registry.seat_alone(id));
            if closes_lanes {
                registry.close_lanes();
            }
        }
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::round_from;

    #[test]
    fn a_walk_takes_every_target_once_going_round_from_its_start() {
        for len in 0..12 {
            let targets: Vec<usize> = (0..len).collect();
            for number in 0..64 {
                let walked: Vec<usize> = round_from(&targets, number).copied().collect();
                let start = walked.first().copied().unwrap_or(0);
                let expected: Vec<usize> = (0..len).map(|i| (start + i) % len).collect();
                assert_eq!(walked, expected, "{len} targets, publish {number}");
            }
        }
    }

    #[test]
    fn publishes_in_a_row_start_apart() {
        let targets: Vec<usize> = (0..64).collect();
        let start = |number| *round_from(&targets, number).next().unwrap();
        let starts: Vec<usize> = (0..8).map(start).collect();
        for pair in starts.windows(2) {
            // A golden-ratio step: about 0.62 of the way round, or 0.38.
            let gap = (pair[1] + 64 - pair[0]) % 64;
            assert!((20..=44).contains(&gap), "{starts:?}");
        }
        let mut distinct = starts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), starts.len(), "{starts:?}");
    }
}
