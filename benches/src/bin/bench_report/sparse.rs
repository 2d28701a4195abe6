//! Target 2, sparse routing: an update for the one subscriber among many.

use harness::{BroadcastSparse, HubSparse, Scenario};

use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    let ns_per =
        |scenario: &mut dyn Scenario| scenario.per_iteration(settings.budget).as_nanos() as f64;
    let at_10 = ns_per(&mut HubSparse::new(10));
    let at_100k = ns_per(&mut HubSparse::new(100_000));
    let hub_10k = ns_per(&mut HubSparse::new(10_000));
    let broadcast_10k = ns_per(&mut BroadcastSparse::new(10_000));
    vec![
        Row::new(
            "sparse_100k_vs_10",
            100_000,
            at_100k,
            "hub at 10 listeners",
            at_10,
            at_10 / at_100k,
            0.5,
        ),
        Row::new(
            "sparse_vs_broadcast_filtered",
            10_000,
            hub_10k,
            "broadcast + receiver filtering",
            broadcast_10k,
            broadcast_10k / hub_10k,
            100.0,
        ),
    ]
}
