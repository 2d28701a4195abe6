//! The scaling table: fan-out with 1, 4 and 16 publisher threads sharing
//! each burst, readers on a worker per core, against `broadcast` with as
//! many senders.

use harness::{BURST, Fanout, Scenario, Via};

use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    let mut rows = Vec::new();
    for n in [256, 4_096] {
        for publishers in [1, 4, 16] {
            let deliveries = (n * BURST) as f64;
            let rate = |via| {
                let mut fanout = Fanout::parallel(via, n, publishers);
                deliveries / fanout.per_iteration(settings.budget).as_secs_f64()
            };
            let (hub, broadcast) = (rate(Via::Hub), rate(Via::Broadcast));
            let row = Row::new(
                &format!("fanout_scaling_publishers_{publishers}"),
                n,
                hub,
                "tokio::sync::broadcast, as many senders",
                broadcast,
                hub / broadcast,
                1.0,
            );
            rows.push(row.reported());
        }
    }
    rows
}
