//! One backoff for every retry in the crate (the client listening again,
//! the relay connecting again) and one random source for their jitter, the
//! relay's resync delay and its replica ids: `rand`'s thread-local
//! generator, seeded by the operating system.
//!
//! A wait's bound doubles from a first bound up to a largest one; each
//! wait is drawn uniformly between half its bound and the bound. Half at
//! least, so that no one retries sooner than that; spread over the other
//! half, so that a crowd that failed together (the clients of a replica
//! that died, relays after a broker restart) does not come back in step.

use std::time::Duration;

use rand::RngExt;

/// A bound doubling from `initial` up to `max`, per attempt (the client's
/// and the relay's; a stream's lifetime needs only the random source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The bound of the first attempt.
    pub initial: Duration,
    /// The most any bound grows to.
    pub max: Duration,
}

impl Backoff {
    /// The bound of attempt `attempt` (1-based), at least a millisecond.
    pub fn bound(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.initial
            .saturating_mul(1 << doublings)
            .min(self.max)
            .max(Duration::from_millis(1))
    }

    /// The wait before attempt `attempt` (1-based): uniformly random
    /// between half its bound and the bound.
    pub fn delay(&self, attempt: u32) -> Duration {
        let bound = self.bound(attempt);
        let half = bound / 2;
        half + random_below(bound - half)
    }
}

/// A duration uniformly random in `[0, limit)`; zero when `limit` is.
pub(crate) fn random_below(limit: Duration) -> Duration {
    let nanos = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return Duration::ZERO;
    }
    Duration::from_nanos(rand::rng().random_range(0..nanos))
}

/// 64 random bits.
// The relay names its replica with them; the client needs none.
#[cfg_attr(not(any_relay), allow(dead_code))]
pub(crate) fn random_u64() -> u64 {
    rand::rng().random()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_lies_between_half_its_doubling_bound_and_the_bound() {
        let backoff = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
        };
        for attempt in 1..40 {
            let bound = Duration::from_millis(100 * (1u64 << (attempt - 1).min(20)))
                .min(Duration::from_secs(1));
            assert_eq!(backoff.bound(attempt), bound);
            let delay = backoff.delay(attempt);
            assert!(delay >= bound / 2 && delay <= bound, "{attempt}: {delay:?}");
        }
        let delays: std::collections::HashSet<_> = (0..20).map(|_| backoff.delay(5)).collect();
        assert!(delays.len() > 1, "jittered");
    }

    #[test]
    fn random_below_stays_below() {
        assert_eq!(random_below(Duration::ZERO), Duration::ZERO);
        assert_eq!(random_below(Duration::from_nanos(1)), Duration::ZERO);
        let limit = Duration::from_millis(3);
        assert!((0..100).all(|_| random_below(limit) < limit));
    }
}
