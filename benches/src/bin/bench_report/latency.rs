//! Target 3, latency: a paced publisher, 256 listeners, the hub against
//! `broadcast`; percentiles of every listener's samples, the median of
//! interleaved rounds.

use harness::{Latency, Scenario, Via};

use crate::rounds::Rounds;
use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows: p50 and p99 (the targets) and the single worst
/// sample, each the median of its rounds.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    // Rounds alternate between the hub and `broadcast`, so that a noisy
    // moment on a shared machine falls on both; each round's percentiles
    // are taken over every listener's samples of that round.
    let (rounds, events) = if settings.quick { (5, 100) } else { (10, 400) };
    let (mut hub, mut broadcast) = (Latency::new(Via::Hub), Latency::new(Via::Broadcast));
    let percentiles = [0.5, 0.99, 1.0];
    let mut measured = [(); 3].map(|_| (Rounds::default(), Rounds::default()));
    for _ in 0..rounds {
        for (latency, ours) in [(&mut hub, true), (&mut broadcast, false)] {
            latency.run(events);
            let mut samples = latency.samples();
            samples.sort_unstable();
            for (p, (hub_rounds, broadcast_rounds)) in percentiles.iter().zip(&mut measured) {
                let rounds = if ours { hub_rounds } else { broadcast_rounds };
                rounds.push(micros_at(&samples, *p));
            }
        }
    }
    ["latency_p50", "latency_p99", "latency_max"]
        .into_iter()
        .zip(&measured)
        .map(|(name, (ours, anchor))| {
            let row = Row::cost_rounds(
                name,
                Latency::LISTENERS,
                ours,
                "tokio::sync::broadcast (µs)",
                anchor,
                1.0,
            );
            // The single worst sample is context, not a target.
            if name == "latency_max" {
                row.reported()
            } else {
                row
            }
        })
        .collect()
}

/// The `p` percentile of `sorted` nanoseconds, in microseconds.
fn micros_at(sorted: &[u64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize] as f64 / 1_000.0
}
