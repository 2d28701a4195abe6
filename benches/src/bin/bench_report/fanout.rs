//! Target 1, fan-out throughput: every listener matching, no drops, the
//! hub against `broadcast` and a per-listener `mpsc`; and why it trails
//! `broadcast`, in reader polls per event.

use harness::{BURST, Fanout, Scenario, Via, reader_polls_per_event};

use crate::plot::CurvePoint;
use crate::rows::Row;
use crate::settings::Settings;

/// The section's rows; each point of the curve goes to `curve` for the
/// plot.
pub(crate) fn rows(settings: &Settings, curve: &mut Vec<CurvePoint>) -> Vec<Row> {
    let Settings { quick, budget } = *settings;
    let mut rows = Vec::new();
    for n in [16, 256, 1_024, 4_096] {
        let deliveries = (n * BURST) as f64;
        let rate = |via| deliveries / Fanout::new(via, n).per_iteration(budget).as_secs_f64();
        let (hub, broadcast, mpsc) = (rate(Via::Hub), rate(Via::Broadcast), rate(Via::Mpsc));
        curve.push((n, hub, broadcast, mpsc));
        if n == 256 || n == 4_096 {
            rows.push(Row::new(
                "fanout_vs_broadcast",
                n,
                hub,
                "tokio::sync::broadcast",
                broadcast,
                hub / broadcast,
                1.0,
            ));
            rows.push(Row::new(
                "fanout_vs_mpsc",
                n,
                hub,
                "per-listener tokio mpsc",
                mpsc,
                hub / mpsc,
                1.5,
            ));
        }
    }

    // Why fan-out trails `broadcast`: how often readers wake per event.
    let bursts = if quick { 20 } else { 200 };
    let (hub_polls, broadcast_polls) = (
        reader_polls_per_event(Via::Hub, 4_096, bursts),
        reader_polls_per_event(Via::Broadcast, 4_096, bursts),
    );
    rows.push(
        Row::new(
            "fanout_reader_polls_per_event",
            4_096,
            hub_polls,
            "tokio::sync::broadcast",
            broadcast_polls,
            broadcast_polls / hub_polls,
            1.0,
        )
        .reported(),
    );
    rows
}
