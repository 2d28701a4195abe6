//! Token buckets by key: a burst at once, then a steady rate.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// A rate with a burst: `burst` at once, then `per_second` on average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    per_second: f64,
    burst: u32,
}

impl Rate {
    /// `burst` at once, then `per_second` on average.
    ///
    /// # Panics
    ///
    /// When `per_second` is not a positive finite number, or `burst` is
    /// zero.
    pub fn new(per_second: f64, burst: u32) -> Self {
        assert!(
            per_second.is_finite() && per_second > 0.0,
            "a rate must be positive and finite, not {per_second}"
        );
        assert!(burst > 0, "a burst must be at least 1");
        Self { per_second, burst }
    }

    /// How many on average each second.
    pub fn per_second(&self) -> f64 {
        self.per_second
    }

    /// How many at once.
    pub fn burst(&self) -> u32 {
        self.burst
    }
}

/// A bucket per key, each holding up to the rate's burst of tokens and
/// refilled at its rate; a key whose bucket would be full again is
/// forgotten, so only keys that came lately cost memory.
#[derive(Debug)]
pub(super) struct Buckets<K> {
    rate: Rate,
    buckets: Mutex<Tally<K>>,
}

#[derive(Debug)]
struct Tally<K> {
    by_key: HashMap<K, Bucket>,
    /// How many keys there may be before the full buckets are swept out.
    sweep_at: usize,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Keys kept at least before a sweep: sweeping costs a pass over them.
const FIRST_SWEEP: usize = 1024;

impl<K: Hash + Eq + Clone> Buckets<K> {
    pub(super) fn new(rate: Rate) -> Self {
        Self {
            rate,
            buckets: Mutex::new(Tally {
                by_key: HashMap::new(),
                sweep_at: FIRST_SWEEP,
            }),
        }
    }

    /// Takes a token from `key`'s bucket; when it has none, how long until
    /// it has one.
    pub(super) fn take(&self, key: &K) -> Result<(), Duration> {
        let now = Instant::now();
        let mut tally = self.buckets.lock();
        if tally.by_key.len() >= tally.sweep_at {
            let rate = self.rate;
            tally
                .by_key
                .retain(|_, bucket| bucket.now(rate, now) < f64::from(rate.burst()));
            // Twice what is left: each sweep is paid for by as many takes.
            tally.sweep_at = (tally.by_key.len() * 2).max(FIRST_SWEEP);
        }
        let full = Bucket {
            tokens: f64::from(self.rate.burst()),
            at: now,
        };
        let bucket = tally.by_key.entry(key.clone()).or_insert(full);
        bucket.tokens = bucket.now(self.rate, now);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64(
            (1.0 - bucket.tokens) / self.rate.per_second(),
        ))
    }

    #[cfg(test)]
    fn keys(&self) -> usize {
        self.buckets.lock().by_key.len()
    }
}

impl Bucket {
    /// Its tokens at `now`.
    fn now(self, rate: Rate, now: Instant) -> f64 {
        let refilled = now.duration_since(self.at).as_secs_f64() * rate.per_second();
        (self.tokens + refilled).min(f64::from(rate.burst()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_at_once_then_the_rate() {
        let buckets = Buckets::new(Rate::new(2.0, 3));
        for _ in 0..3 {
            buckets.take(&"a").unwrap();
        }
        let wait = buckets.take(&"a").unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        buckets.take(&"b").expect("another key has its own bucket");
        tokio::time::advance(Duration::from_millis(500)).await;
        buckets.take(&"a").expect("refilled at the rate");
        assert!(buckets.take(&"a").is_err());
        tokio::time::advance(Duration::from_secs(10)).await;
        for _ in 0..3 {
            buckets.take(&"a").expect("up to the burst again");
        }
        assert!(buckets.take(&"a").is_err(), "never more than the burst");
    }

    #[tokio::test(start_paused = true)]
    async fn keys_whose_buckets_are_full_again_are_forgotten() {
        let buckets = Buckets::new(Rate::new(1.0, 1));
        for key in 0..FIRST_SWEEP {
            buckets.take(&key).unwrap();
        }
        tokio::time::advance(Duration::from_secs(1)).await;
        buckets.take(&FIRST_SWEEP).unwrap();
        assert_eq!(buckets.keys(), 1, "only the newest is not full");
    }
}
