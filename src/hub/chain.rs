//! Chained wake-ups: a push into a lane wakes a few of the members that
//! wait, and hands the others' wake-ups to those members, each passing a
//! few on as it reads.
//!
//! # Why
//!
//! When readers keep up with the publisher, as they do on many cores,
//! every delivery is a wait: each reader is asleep when each event comes.
//! Waking every one of them from the publisher's thread is serial work on
//! that thread (and, for an async reader, a push through its runtime's
//! queue for wake-ups from outside), so it caps one publisher's rate
//! whatever the number of cores. A woken reader runs on a worker of its
//! own runtime, where a wake-up is cheap and runs beside the others. So a
//! push wakes at most [`DIRECT`] of the members a lane's chain holds and
//! leaves the others in the chain; every member, as it takes an item,
//! wakes up to [`PASSED`] of them. The woken grow as a tree: the
//! publisher's share of the wake-ups is a few per lane, not one per
//! member.
//!
//! # Liveness
//!
//! A wake-up left in a chain is not lost:
//!
//! - the push hands the wake-ups to the chain before the event can be
//!   read, so any member that reads it (woken by the publisher, by another
//!   member, or polled for reasons of its own) sees them, and passes some
//!   on; the publisher's direct wake-ups go to members that had not read
//!   it, which read it when woken;
//! - a member that gives up waiting (its future dropped, its timeout
//!   passed), closes or is dropped passes on every wake-up the chain holds,
//!   so a member that goes away strands none;
//! - a push that finds wake-ups still in the chain (the last wave has not
//!   finished: readers are behind the publisher, in a burst) wakes them all
//!   itself, as it did before chains: members that do not keep up cost the
//!   publisher one wake-up each per burst, not per event.
//!
//! What a chain cannot help: a woken member whose task does not read (a
//! stalled runtime, or a task that registered through
//! [`Stream`](futures_core::Stream) and went on to await something else)
//! holds back the wave until another member reads or the next push.
//!
//! Listeners with queues of their own are woken by the publisher, one each:
//! their wake-ups could be handed over only once each queue's event was
//! already readable, so a reader could take its event before the hand-over,
//! and if the publisher's direct wake-ups fell on such readers, nobody
//! would pass the rest on (a loom model found it).

use crate::queue::reader::Waiter;
use crate::sync::{AtomicUsize, Mutex, Ordering};

/// The most readers of a chain a push wakes itself. One in the loom
/// models, so that two readers already make a chain.
#[cfg(not(mcp_subscriptions_loom))]
pub(crate) const DIRECT: usize = 2;
#[cfg(mcp_subscriptions_loom)]
pub(crate) const DIRECT: usize = 1;

/// The most wake-ups a reader passes on each time it takes an item.
pub(crate) const PASSED: usize = 8;

/// The wake-ups a push handed to the readers it woke.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    /// How many wait in `waiters`: read without the lock by every reader
    /// after each item it takes (a load of a line written once per wave
    /// step, not per read), written under it.
    pending: AtomicUsize,
    /// A reader that gave up waiting leaves `None` where its waiter was.
    waiters: Mutex<Vec<Option<Waiter>>>,
}

impl Chain {
    /// Hands the waiters a push found, `fresh`, to the chain, and moves
    /// into `wake` those the publisher wakes itself: [`DIRECT`] of them, or
    /// all of them and every wake-up still in the chain when its last wave
    /// has not finished. `fresh` is left empty, with the capacity the
    /// chain had, so that a list kept for the next publish is swapped
    /// back and forth, not copied. Wakes nothing itself, so it may be
    /// called under the publisher's locks.
    pub(crate) fn hand(&self, fresh: &mut Vec<Option<Waiter>>, wake: &mut Vec<Option<Waiter>>) {
        if fresh.is_empty() {
            return;
        }
        let mut waiters = self.waiters.lock();
        if waiters.is_empty() {
            std::mem::swap(&mut *waiters, fresh);
            // Waiters, not places: a place left by a reader that gave up
            // would waste a direct wake-up, and could leave the wave with
            // nobody awake to pass it on.
            let mut woken = 0;
            while woken < DIRECT
                && let Some(place) = waiters.pop()
            {
                if place.is_some() {
                    woken += 1;
                    wake.push(place);
                }
            }
        } else {
            // Readers are behind: the publisher wakes them, as once per
            // burst it must.
            wake.append(&mut waiters);
            wake.append(fresh);
        }
        // Before the lock is let go and before any reader is woken: a woken
        // reader finds its share.
        self.pending.store(waiters.len(), Ordering::Release);
    }

    /// Wakes up to [`PASSED`] of the readers left in the chain; a load and
    /// nothing more when none is. Called by a reader that took an item,
    /// holding no lock.
    #[inline(always)]
    pub(crate) fn pass_on(&self) {
        if self.pending.load(Ordering::Acquire) != 0 {
            self.pass_on_some();
        }
    }

    #[cold]
    fn pass_on_some(&self) {
        let mut passed = [const { None }; PASSED];
        {
            let mut waiters = self.waiters.lock();
            for slot in &mut passed {
                *slot = waiters.pop().flatten();
            }
            self.pending.store(waiters.len(), Ordering::Release);
        }
        // Woken with the chain's lock released: waking runs executor code.
        passed.into_iter().flatten().for_each(Waiter::wake);
    }

    /// Wakes every reader left in the chain: a reader that goes away must
    /// not strand the wave it was part of.
    pub(crate) fn pass_on_all(&self) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let waiters = {
            let mut waiters = self.waiters.lock();
            self.pending.store(0, Ordering::Release);
            std::mem::take(&mut *waiters)
        };
        waiters.into_iter().flatten().for_each(Waiter::wake);
    }
}

/// A waiter that counts its wakes, for the tests of the chain and of what
/// hands it wake-ups.
#[cfg(all(test, not(mcp_subscriptions_loom)))]
pub(crate) fn counted_waiter() -> (std::sync::Arc<AtomicUsize>, Waiter) {
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    struct Counted(Arc<AtomicUsize>);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    let count = Arc::new(AtomicUsize::new(0));
    let waker = Waker::from(Arc::new(Counted(count.clone())));
    (count, Waiter::Task(waker))
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn waiters(n: usize) -> (Vec<Arc<AtomicUsize>>, Vec<Option<Waiter>>) {
        (0..n)
            .map(|_| counted_waiter())
            .map(|(c, w)| (c, Some(w)))
            .unzip()
    }

    fn woken(counted: &[Arc<AtomicUsize>]) -> usize {
        counted.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    #[test]
    fn a_publish_wakes_a_few_and_readers_pass_the_rest_on() {
        let chain = Chain::default();
        // Two full passes and one of a single wake-up.
        let n = DIRECT + 2 * PASSED + 1;
        let (counted, mut fresh) = waiters(n);
        let mut wake = Vec::new();
        chain.hand(&mut fresh, &mut wake);
        assert!(fresh.is_empty());
        assert_eq!(wake.len(), DIRECT);
        wake.into_iter().flatten().for_each(Waiter::wake);
        assert_eq!(woken(&counted), DIRECT);
        chain.pass_on();
        assert_eq!(woken(&counted), DIRECT + PASSED);
        chain.pass_on();
        assert_eq!(woken(&counted), DIRECT + 2 * PASSED);
        chain.pass_on();
        assert_eq!(woken(&counted), n, "the last pass wakes what is left");
        chain.pass_on();
        assert_eq!(woken(&counted), n, "each waiter once");
        assert!(counted.iter().all(|c| c.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn a_publish_behind_its_last_wave_wakes_everything_itself() {
        let chain = Chain::default();
        let (first, mut fresh) = waiters(6);
        let mut wake = Vec::new();
        chain.hand(&mut fresh, &mut wake);
        assert_eq!(wake.len(), DIRECT);
        let (second, mut fresh) = waiters(3);
        let mut wake = Vec::new();
        chain.hand(&mut fresh, &mut wake);
        assert!(fresh.is_empty());
        assert_eq!(wake.len(), 6 - DIRECT + 3);
        wake.into_iter().flatten().for_each(Waiter::wake);
        assert_eq!(woken(&first), 6 - DIRECT);
        assert_eq!(woken(&second), 3);
        chain.pass_on();
        assert_eq!(woken(&first), 6 - DIRECT, "nothing left in the chain");
    }

    #[test]
    fn the_publisher_wakes_waiters_not_the_places_of_those_that_gave_up() {
        let chain = Chain::default();
        let (counted, mut fresh) = waiters(5);
        // The last two to register gave up: the two before are woken.
        fresh[3] = None;
        fresh[4] = None;
        let mut wake = Vec::new();
        chain.hand(&mut fresh, &mut wake);
        wake.into_iter().flatten().for_each(Waiter::wake);
        assert_eq!(woken(&counted[1..3]), DIRECT);
        chain.pass_on();
        assert_eq!(woken(&counted), 5 - 2, "the chain wakes the rest");
    }

    #[test]
    fn a_reader_going_away_passes_everything_on() {
        let chain = Chain::default();
        let (counted, mut fresh) = waiters(20);
        // One gave up waiting.
        fresh[7] = None;
        let mut wake = Vec::new();
        chain.hand(&mut fresh, &mut wake);
        chain.pass_on_all();
        assert_eq!(woken(&counted), 20 - DIRECT - 1);
        let mut wake = Vec::new();
        chain.hand(&mut Vec::new(), &mut wake);
        assert!(wake.is_empty(), "an empty hand wakes nobody");
    }
}
