//! When each part of a catalog is fetched. Per part, at most one fetch is
//! in flight; the first change starts a debounce window and every change
//! within it rides along (one fetch for a burst); a change during a fetch
//! schedules exactly one more; a failure is retried after backoff when it
//! may pass, and otherwise waits for the next change.

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

#[derive(Debug, Default)]
struct Slot {
    /// When the next fetch starts, unless one is in flight.
    due: Option<Instant>,
    in_flight: bool,
    /// A change arrived while the fetch in flight was under way.
    again: bool,
    /// Failures in a row.
    failures: u32,
}

#[derive(Debug)]
pub(super) struct Schedule {
    slots: BTreeMap<Part, Slot>,
    debounce: Duration,
}

impl Schedule {
    pub(super) fn new(debounce: Duration) -> Self {
        Self {
            slots: BTreeMap::new(),
            debounce,
        }
    }

    /// Fetches `part` at `at` at the latest (a fetch already due sooner
    /// stays so), or once more after the one in flight.
    pub(super) fn due_by(&mut self, part: &Part, at: Instant) {
        let slot = self.slots.entry(part.clone()).or_default();
        if slot.in_flight {
            slot.again = true;
        } else {
            slot.due = Some(slot.due.map_or(at, |due| due.min(at)));
        }
    }

    /// `part` changed at `now`: fetched once the debounce is over.
    pub(super) fn changed(&mut self, part: &Part, now: Instant) {
        self.due_by(part, now + self.debounce);
    }

    /// The parts due by `now`, each now in flight.
    pub(super) fn start_due(&mut self, now: Instant) -> Vec<Part> {
        let mut started = Vec::new();
        for (part, slot) in &mut self.slots {
            if !slot.in_flight && slot.due.is_some_and(|due| due <= now) {
                slot.due = None;
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
        let Some(slot) = self.slots.get_mut(part) else {
            return;
        };
        slot.in_flight = false;
        slot.failures = 0;
        slot.due = if std::mem::take(&mut slot.again) {
            Some(now + self.debounce)
        } else {
            refresh.map(|after| now + after)
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
        slot.again = false;
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

    const DEBOUNCE: Duration = Duration::from_millis(100);
    const TOOLS: Part = Part::List(CatalogKind::Tools);

    fn ms(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn a_burst_within_the_debounce_makes_one_fetch() {
        let t = Instant::now();
        let mut schedule = Schedule::new(DEBOUNCE);
        for n in 0..50 {
            schedule.changed(&TOOLS, ms(t, n));
        }
        assert!(schedule.start_due(ms(t, 99)).is_empty());
        assert_eq!(schedule.next_due(), Some(ms(t, 100)));
        assert_eq!(schedule.start_due(ms(t, 100)), [TOOLS]);
        assert_eq!(schedule.next_due(), None);
        schedule.succeeded(&TOOLS, ms(t, 120), None);
        assert_eq!(schedule.next_due(), None, "nothing changed since");
    }

    #[test]
    fn changes_during_a_fetch_schedule_exactly_one_more() {
        let t = Instant::now();
        let mut schedule = Schedule::new(DEBOUNCE);
        schedule.due_by(&TOOLS, t);
        assert_eq!(schedule.start_due(t), [TOOLS]);
        for n in 1..20 {
            schedule.changed(&TOOLS, ms(t, n));
            assert!(
                schedule.start_due(ms(t, n + 500)).is_empty(),
                "one in flight"
            );
        }
        schedule.succeeded(&TOOLS, ms(t, 30), None);
        assert_eq!(schedule.start_due(ms(t, 130)), [TOOLS]);
        schedule.succeeded(&TOOLS, ms(t, 140), None);
        assert_eq!(schedule.next_due(), None);
    }

    #[test]
    fn a_failure_is_retried_by_its_backoff_or_waits_for_a_change() {
        let t = Instant::now();
        let mut schedule = Schedule::new(DEBOUNCE);
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
        assert_eq!(schedule.next_due(), Some(ms(t, 110)));
        schedule.start_due(ms(t, 110));
        assert!(schedule.failed(&TOOLS, ms(t, 120), |n| {
            attempts.push(n);
            Some(Duration::from_secs(2))
        }));
        assert_eq!(attempts, [1, 2], "failures in a row count up");
        schedule.start_due(ms(t, 2120));
        assert!(!schedule.failed(&TOOLS, ms(t, 2130), |_| None));
        assert_eq!(schedule.next_due(), None, "a permanent failure waits");
        schedule.changed(&TOOLS, ms(t, 3000));
        schedule.start_due(ms(t, 3100));
        schedule.succeeded(&TOOLS, ms(t, 3110), Some(Duration::from_secs(30)));
        assert_eq!(
            schedule.next_due(),
            Some(ms(t, 33_110)),
            "refreshed by its ttl"
        );
    }

    #[test]
    fn a_forgotten_part_is_not_fetched() {
        let t = Instant::now();
        let mut schedule = Schedule::new(DEBOUNCE);
        let part = Part::Contents("file:///a".into());
        schedule.changed(&part, t);
        schedule.forget(&part);
        assert!(!schedule.knows(&part));
        assert!(schedule.start_due(ms(t, 1000)).is_empty());
    }
}
