//! Target 4, memory per idle listener: the hub's, within its budget, with
//! a `broadcast` receiver's beside it.

use harness::{Via, held_by_idle_listeners};

use crate::rows::Row;

/// Idle listeners counted over.
const LISTENERS: u64 = 100_000;

/// The section's row.
pub(crate) fn rows() -> Vec<Row> {
    let per = |via| held_by_idle_listeners(via, LISTENERS) / LISTENERS as f64;
    let (per_listener, per_receiver) = (per(Via::Hub), per(Via::Broadcast));
    let mut row = Row::new(
        "memory_per_idle_listener",
        LISTENERS as usize,
        per_listener,
        "budget 1 KiB",
        1_024.0,
        1_024.0 / per_listener,
        1.0,
    );
    row.target = format!("<= 1024 B (broadcast receiver: {per_receiver:.0} B)");
    vec![row]
}
