//! Target 5, rendering: one listener's copy of an event, spliced from the
//! shared rendering against serialized again, and the splice's cost as the
//! payload grows.

use harness::{Reserialize, Scenario, Stamp};

use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Vec<Row> {
    let ns_per_copy =
        |scenario: &mut dyn Scenario| scenario.per_iteration(settings.budget / 4).as_nanos() as f64;
    let mut rows = Vec::new();
    let mut stamp_at = Vec::new();
    for payload in [100, 10_000, 100_000] {
        let stamped = ns_per_copy(&mut Stamp::new(payload));
        let reserialized = ns_per_copy(&mut Reserialize::new(payload));
        stamp_at.push((stamped, reserialized));
        let row = Row::new(
            "render_stamp_vs_reserialize",
            payload,
            stamped,
            "serde_json per listener (ns)",
            reserialized,
            reserialized / stamped,
            1.0,
        );
        rows.push(row.reported());
    }
    let ((small, serde_small), (large, serde_large)) = (stamp_at[0], stamp_at[2]);
    let mut flat = Row::new(
        "render_cost_100kb_vs_100b",
        100_000,
        large,
        "hub at 100 B (ns)",
        small,
        small / large,
        0.8,
    );
    flat.target = format!(
        ">= 0.8x: independent of payload size (serde_json: {:.4}x)",
        serde_small / serde_large
    );
    rows.push(flat);
    rows
}
