//! Target 3, latency: a paced publisher, 256 listeners, the hub against
//! `broadcast`; percentiles of every listener's samples.

use harness::{Latency, Scenario, Via};

use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows: p50, p99 (the target) and the single worst sample.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    // Rounds alternate between the hub and `broadcast`, so that a noisy
    // moment on a shared machine falls on both; every round's samples are
    // pooled.
    let (rounds, events) = if settings.quick { (3, 100) } else { (10, 400) };
    let (mut hub, mut broadcast) = (Latency::new(Via::Hub), Latency::new(Via::Broadcast));
    let (mut hub_samples, mut broadcast_samples) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (latency, samples) in [
            (&mut hub, &mut hub_samples),
            (&mut broadcast, &mut broadcast_samples),
        ] {
            latency.run(events);
            samples.extend(latency.samples());
        }
    }
    hub_samples.sort_unstable();
    broadcast_samples.sort_unstable();
    let mut rows = Vec::new();
    for (name, p) in [
        ("latency_p50", 0.5),
        ("latency_p99", 0.99),
        ("latency_max", 1.0),
    ] {
        let (ours, anchor) = (micros_at(&hub_samples, p), micros_at(&broadcast_samples, p));
        let ratio = anchor.max(1.0) / ours.max(1.0);
        let row = Row::new(
            name,
            Latency::LISTENERS,
            ours,
            "tokio::sync::broadcast (µs)",
            anchor,
            ratio,
            1.0,
        );
        // Only p99 has a target; p50 and the single worst sample are context.
        rows.push(if name == "latency_p99" {
            row
        } else {
            row.reported()
        });
    }
    rows
}

/// The `p` percentile of `sorted` nanoseconds, in microseconds.
fn micros_at(sorted: &[u64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p) as usize] as f64 / 1_000.0
}
