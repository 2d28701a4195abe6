//! Interleaved rounds: each figure measured several times, alternating with
//! its anchor (ours, anchor, ours, anchor, ...), so that a noisy moment on
//! a shared machine falls on both; the median is the figure, the least and
//! greatest its spread.

use serde::Serialize;

/// One figure's measurements, a round each.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rounds(Vec<f64>);

impl Rounds {
    pub(crate) fn push(&mut self, value: f64) {
        self.0.push(value);
    }

    fn sorted(&self) -> Vec<f64> {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        sorted
    }

    /// The middle round (the mean of the two middle ones for an even
    /// count).
    pub(crate) fn median(&self) -> f64 {
        let sorted = self.sorted();
        let mid = sorted.len() / 2;
        if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        }
    }

    /// The round at fraction `p` of the sorted rounds (0.5 the middle one
    /// of an odd count, 1.0 the greatest), as the latency section takes its
    /// percentiles.
    pub(crate) fn percentile(&self, p: f64) -> f64 {
        let sorted = self.sorted();
        sorted[((sorted.len() - 1) as f64 * p) as usize]
    }

    pub(crate) fn min(&self) -> f64 {
        self.sorted()[0]
    }

    pub(crate) fn max(&self) -> f64 {
        self.sorted()[self.0.len() - 1]
    }

    /// The least of the rounds' ratios, each round's figure over the
    /// anchor's figure of the same round.
    pub(crate) fn least_ratio_to(&self, anchor: &Rounds) -> f64 {
        self.0
            .iter()
            .zip(&anchor.0)
            .map(|(ours, theirs)| ours / theirs)
            .fold(f64::INFINITY, f64::min)
    }
}

/// Measures each of `figures` `rounds` times, taking them in turn within
/// each round.
pub(crate) fn interleaved<const K: usize>(
    rounds: usize,
    mut figures: [&mut dyn FnMut() -> f64; K],
) -> [Rounds; K] {
    let mut measured: [Rounds; K] = std::array::from_fn(|_| Rounds::default());
    for _ in 0..rounds {
        for (figure, rounds) in figures.iter_mut().zip(&mut measured) {
            rounds.push(figure());
        }
    }
    measured
}

/// The spread behind a row whose `ours` and `anchor_value` are medians of
/// rounds: extra keys of the row's JSON.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Spread {
    pub(crate) rounds: usize,
    pub(crate) ours_min: f64,
    pub(crate) ours_max: f64,
    pub(crate) anchor_min: f64,
    pub(crate) anchor_max: f64,
}

impl Spread {
    pub(crate) fn of(ours: &Rounds, anchor: &Rounds) -> Self {
        Self {
            rounds: ours.0.len(),
            ours_min: ours.min(),
            ours_max: ours.max(),
            anchor_min: anchor.min(),
            anchor_max: anchor.max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_and_max() {
        let mut odd = Rounds::default();
        [3.0, 1.0, 2.0].into_iter().for_each(|v| odd.push(v));
        assert_eq!((odd.median(), odd.min(), odd.max()), (2.0, 1.0, 3.0));
        odd.push(10.0);
        assert_eq!(odd.median(), 2.5);
        assert_eq!((odd.percentile(0.0), odd.percentile(0.99)), (1.0, 3.0));
        assert_eq!(odd.percentile(1.0), 10.0);
    }

    #[test]
    fn figures_alternate_within_each_round() {
        let order = std::cell::RefCell::new(Vec::new());
        let (mut a, mut b) = (
            || {
                order.borrow_mut().push('a');
                1.0
            },
            || {
                order.borrow_mut().push('b');
                2.0
            },
        );
        let [ra, rb] = interleaved(3, [&mut a, &mut b]);
        assert_eq!(order.into_inner(), ['a', 'b', 'a', 'b', 'a', 'b']);
        assert_eq!((ra.median(), rb.median()), (1.0, 2.0));
    }

    #[test]
    fn the_least_ratio_pairs_rounds() {
        let rounds = |values: [f64; 3]| {
            let mut rounds = Rounds::default();
            values.into_iter().for_each(|v| rounds.push(v));
            rounds
        };
        // Sorted, the ratios would be 1.0 at least; round by round, 0.5.
        let (ours, anchor) = (rounds([4.0, 2.0, 6.0]), rounds([2.0, 4.0, 3.0]));
        assert_eq!(ours.least_ratio_to(&anchor), 0.5);
    }
}
