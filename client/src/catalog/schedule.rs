//! When each part of a catalog is fetched. Per part, at most one fetch is
//! in flight, and a change during it schedules exactly one more. A first
//! change after a quiet spell is fetched after a short gather (a burst from
//! one loop rides along), so an isolated change is seen at once; changes
//! that keep coming (during a fetch, or before the gathered one started)
//! wait until they pause for the debounce, but never longer than the most
//! a change may wait, so a storm makes one fetch per that bound, not one
//! per change. A failure is retried after backoff when it may pass, and
//! otherwise waits for the next change.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::entry::CatalogKind;

/// What one fetch brings in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Part {
    /// `server/discover`.
    Discovery,
    /// One list, every page.
    List(CatalogKind),
    /// One watched resource's contents.
    Contents(String),
}

/// How long changes wait before they are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Timing {
    /// A first change after a quiet spell waits this long for others.
    pub(super) gather: Duration,
    /// Changes that keep coming wait until they pause this long...
    pub(super) debounce: Duration,
    /// ...but no change waits longer than this.
    pub(super) max_delay: Duration,
}

#[derive(Debug, Default)]
struct Slot {
    /// When the next fetch starts, unless one is in flight.
    due: Option<Instant>,
    in_flight: bool,
    /// The first change the next fetch is for, if one is pending.
    pending_since: Option<Instant>,
    /// The latest change.
    last_change: Option<Instant>,
    /// Failures in a row.
    failures: u32,
}

impl Slot {
    /// When the pending changes are fetched: once they pause for the
    /// debounce, or at their bound, whichever is first.
    fn trailing(&self, timing: &Timing) -> Option<Instant> {
        let since = self.pending_since?;
        let last = self.last_change.unwrap_or(since);
        Some((last + timing.debounce).min(since + timing.max_delay))
    }
}

#[derive(Debug)]
pub(super) struct Schedule {
    slots: BTreeMap<Part, Slot>,
    timing: Timing,
}

impl Schedule {
    pub(super) fn new(timing: Timing) -> Self {
        Self {
            slots: BTreeMap::new(),
            timing,
        }
    }

    /// Fetches `part` at `at` at the latest (a fetch already due sooner
    /// stays so), or once more after the one in flight.
    pub(super) fn due_by(&mut self, part: &Part, at: Instant) {
        let slot = self.slots.entry(part.clone()).or_default();
        if slot.in_flight {
            slot.pending_since.get_or_insert(at);
        } else {
            slot.due = Some(slot.due.map_or(at, |due| due.min(at)));
        }
    }

    /// `part` changed at `now`.
    pub(super) fn changed(&mut self, part: &Part, now: Instant) {
        let timing = self.timing;
        let slot = self.slots.entry(part.clone()).or_default();
        // Quiet: nothing pending, and the last change a pause ago.
        let quiet = slot.pending_since.is_none()
            && !slot.in_flight
            && slot
                .last_change
                .is_none_or(|last| now >= last + timing.debounce);
        slot.last_change = Some(now);
        slot.pending_since.get_or_insert(now);
        if slot.in_flight {
            return;
        }
        let gathered = now + timing.gather;
        slot.due = if quiet {
            Some(slot.due.map_or(gathered, |due| due.min(gathered)))
        } else {
            slot.trailing(&timing)
        };
    }

    /// The parts due by `now`, each now in flight (it covers every change
    /// so far).
    pub(super) fn start_due(&mut self, now: Instant) -> Vec<Part> {
        let mut started = Vec::new();
        for (part, slot) in &mut self.slots {
            if !slot.in_flight && slot.due.is_some_and(|due| due <= now) {
                slot.due = None;
                slot.pending_since = None;
                slot.in_flight = true;
                started.push(part.clone());
            }
        }
        started
    }

    /// When the next fetch is due, if any is.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.slots
            .values()
            .filter(|slot| !slot.in_flight)
            .filter_map(|slot| slot.due)
            .min()
    }

    /// A fetch of `part` succeeded at `now`; with no change since, the next
    /// one is `refresh` later (a list no stream tells of, gone stale), or
    /// none.
    pub(super) fn succeeded(&mut self, part: &Part, now: Instant, refresh: Option<Duration>) {
        let timing = self.timing;
        let Some(slot) = self.slots.get_mut(part) else {
            return;
        };
        slot.in_flight = false;
        slot.failures = 0;
        slot.due = match slot.trailing(&timing) {
            Some(at) => Some(at.max(now)),
            None => refresh.map(|after| now + after),
        };
    }

    /// A fetch of `part` failed at `now`; `retry` gives the delay before
    /// the next attempt from the failures in a row, or `None` for a failure
    /// that waits for the next change. Whether it will be retried.
    pub(super) fn failed(
        &mut self,
        part: &Part,
        now: Instant,
        retry: impl FnOnce(u32) -> Option<Duration>,
    ) -> bool {
        let Some(slot) = self.slots.get_mut(part) else {
            return false;
        };
        slot.in_flight = false;
        slot.pending_since = None;
        slot.failures += 1;
        slot.due = retry(slot.failures).map(|delay| now + delay);
        slot.due.is_some()
    }

    /// Stops fetching `part`; a fetch in flight is ignored when it ends.
    pub(super) fn forget(&mut self, part: &Part) {
        self.slots.remove(part);
    }

    /// Whether `part` is still scheduled (a fetch that ends for a part
    /// forgotten meanwhile is dropped).
    pub(super) fn knows(&self, part: &Part) -> bool {
        self.slots.contains_key(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMING: Timing = Timing {
        gather: Duration::from_millis(20),
        debounce: Duration::from_millis(100),
        max_delay: Duration::from_secs(1),
    };
    const TOOLS: Part = Part::List(CatalogKind::Tools);

    fn ms(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn an_isolated_change_is_fetched_after_the_gather() {
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        schedule.changed(&TOOLS, t);
        assert_eq!(schedule.next_due(), Some(ms(t, 20)));
        assert_eq!(schedule.start_due(ms(t, 20)), [TOOLS]);
        schedule.succeeded(&TOOLS, ms(t, 30), None);
        assert_eq!(schedule.next_due(), None, "nothing changed since");
    }

    #[test]
    fn a_burst_makes_one_fetch_once_it_pauses() {
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        for n in 0..50 {
            schedule.changed(&TOOLS, ms(t, n));
        }
        assert!(schedule.start_due(ms(t, 148)).is_empty());
        assert_eq!(schedule.start_due(ms(t, 149)), [TOOLS]);
        schedule.succeeded(&TOOLS, ms(t, 160), None);
        assert_eq!(schedule.next_due(), None);
    }

    /// Fetches for a change a millisecond for `length` ms, each fetch
    /// taking 5 ms.
    fn storm(length: u64) -> usize {
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        let mut fetches = 0;
        let mut fetch_ends = None;
        for n in 0..length + 2_000 {
            let now = ms(t, n);
            if fetch_ends == Some(n) {
                schedule.succeeded(&TOOLS, now, None);
                fetch_ends = None;
            }
            if n < length {
                schedule.changed(&TOOLS, now);
            }
            if !schedule.start_due(now).is_empty() {
                fetches += 1;
                fetch_ends = Some(n + 5);
            }
        }
        assert_eq!(schedule.next_due(), None);
        fetches
    }

    #[test]
    fn changes_that_keep_coming_wait_for_their_bound_even_when_fetches_are_quick() {
        // A change every 50 ms, each fetched in 2 ms: never a pause of the
        // debounce, so one fetch per bound.
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        let mut fetches = 0;
        for n in 0..3_000 {
            let now = ms(t, n);
            if n % 50 == 0 {
                schedule.changed(&TOOLS, now);
            }
            if !schedule.start_due(now).is_empty() {
                fetches += 1;
                schedule.succeeded(&TOOLS, ms(t, n + 2), None);
            }
        }
        assert!((3..=4).contains(&fetches), "{fetches}");
    }

    #[test]
    fn a_storm_is_fetched_once_per_bound_and_once_after_it() {
        assert_eq!(storm(1_000), 1, "a second of changes: one fetch after it");
        assert_eq!(storm(1_500), 2, "at the bound, then after the storm");
        assert_eq!(storm(5_000), 5);
    }

    #[test]
    fn changes_during_a_fetch_schedule_exactly_one_more() {
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        schedule.due_by(&TOOLS, t);
        assert_eq!(schedule.start_due(t), [TOOLS]);
        for n in 1..20 {
            schedule.changed(&TOOLS, ms(t, n));
            assert!(
                schedule.start_due(ms(t, n + 500)).is_empty(),
                "one in flight"
            );
        }
        schedule.succeeded(&TOOLS, ms(t, 300), None);
        assert_eq!(
            schedule.next_due(),
            Some(ms(t, 300)),
            "they paused long ago"
        );
        assert_eq!(schedule.start_due(ms(t, 300)), [TOOLS]);
        schedule.succeeded(&TOOLS, ms(t, 310), None);
        assert_eq!(schedule.next_due(), None);
    }

    #[test]
    fn a_failure_is_retried_by_its_backoff_or_waits_for_a_change() {
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        schedule.due_by(&TOOLS, t);
        schedule.start_due(t);
        let mut attempts = Vec::new();
        assert!(schedule.failed(&TOOLS, t, |n| {
            attempts.push(n);
            Some(Duration::from_secs(1))
        }));
        assert_eq!(schedule.next_due(), Some(ms(t, 1000)));
        // A change sooner than the retry fetches sooner.
        schedule.changed(&TOOLS, ms(t, 10));
        assert_eq!(schedule.next_due(), Some(ms(t, 30)));
        schedule.start_due(ms(t, 30));
        assert!(schedule.failed(&TOOLS, ms(t, 40), |n| {
            attempts.push(n);
            Some(Duration::from_secs(2))
        }));
        assert_eq!(attempts, [1, 2], "failures in a row count up");
        schedule.start_due(ms(t, 2040));
        assert!(!schedule.failed(&TOOLS, ms(t, 2050), |_| None));
        assert_eq!(schedule.next_due(), None, "a permanent failure waits");
        schedule.changed(&TOOLS, ms(t, 3000));
        schedule.start_due(ms(t, 3020));
        schedule.succeeded(&TOOLS, ms(t, 3030), Some(Duration::from_secs(30)));
        assert_eq!(
            schedule.next_due(),
            Some(ms(t, 33_030)),
            "refreshed by its ttl"
        );
    }

    #[test]
    fn a_forgotten_part_is_not_fetched() {
        let t = Instant::now();
        let mut schedule = Schedule::new(TIMING);
        let part = Part::Contents("file:///a".into());
        schedule.changed(&part, t);
        schedule.forget(&part);
        assert!(!schedule.knows(&part));
        assert!(schedule.start_due(ms(t, 1000)).is_empty());
    }
}
