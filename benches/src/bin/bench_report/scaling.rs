//! The scaling table: fan-out with 1, 4 and 16 publisher threads sharing
//! each burst, readers on each worker count asked for (`--workers`),
//! against `broadcast` with as many senders and workers, in the same run.
//! The hub is measured twice: listeners alike (sharing lanes) and
//! listeners apart (each a queue of its own). For each, a last row says
//! whether the hub's rate on the most workers is at least its rate on
//! the fewest: fan-out that grows with cores instead of falling.

use harness::{BURST, Fanout, Scenario, Via};

use crate::rows::Row;
use crate::settings::Settings;

/// The worker counts of the table unless `--workers` says otherwise.
pub(crate) const DEFAULT_WORKERS: [usize; 4] = [2, 4, 8, 16];

/// The hub's ways of keeping its listeners, as the rows name them.
const KEPT: [(&str, Via); 2] = [("alike", Via::Hub), ("apart", Via::HubApart)];

/// The section's rows for `workers`, in ascending order.
pub(crate) fn rows(settings: &Settings, workers: &[usize]) -> Vec<Row> {
    let mut rows = Vec::new();
    for n in [256, 4_096] {
        for publishers in [1, 4, 16] {
            let deliveries = (n * BURST) as f64;
            let rate = |via, workers| {
                let mut fanout = Fanout::parallel(via, n, publishers, workers);
                deliveries / fanout.per_iteration(settings.budget).as_secs_f64()
            };
            // The hub's rate per way of keeping, per worker count.
            let mut hub_rates = [const { Vec::new() }; KEPT.len()];
            for &workers in workers {
                let broadcast = rate(Via::Broadcast, workers);
                for ((kept, via), rates) in KEPT.into_iter().zip(&mut hub_rates) {
                    let hub = rate(via, workers);
                    rates.push(hub);
                    rows.push(Row::new(
                        &format!("fanout_scaling_{kept}_publishers_{publishers}_workers_{workers}"),
                        n,
                        hub,
                        "tokio::sync::broadcast, as many senders and workers",
                        broadcast,
                        hub / broadcast,
                        1.2,
                    ));
                }
            }
            let (Some(fewest), Some(most)) = (workers.first(), workers.last()) else {
                continue;
            };
            if fewest == most {
                continue;
            }
            for ((kept, _), rates) in KEPT.into_iter().zip(&hub_rates) {
                let (on_fewest, on_most) = (rates[0], rates[rates.len() - 1]);
                rows.push(Row::new(
                    &format!(
                        "fanout_scaling_{kept}_publishers_{publishers}_workers_{most}_vs_{fewest}"
                    ),
                    n,
                    on_most,
                    &format!("the hub itself, readers on {fewest} workers"),
                    on_fewest,
                    on_most / on_fewest,
                    1.0,
                ));
            }
        }
    }
    rows
}
