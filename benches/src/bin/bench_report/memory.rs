//! Target 4, memory per idle listener: the hub's, within its budget, with
//! a `broadcast` receiver's beside it, both when listeners alike share a
//! lane and when each watches a URI of its own; and memory bounded in
//! bytes: what a stalled listener on a stream of 100 KB updates holds,
//! against its bound.

use harness::{
    Via, held_by_idle_listeners, held_by_idle_listeners_apart, held_by_stalled_listener,
};

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
    let apart = held_by_idle_listeners_apart(LISTENERS) / LISTENERS as f64;
    let mut row_apart = Row::new(
        "memory_per_idle_listener_apart",
        LISTENERS as usize,
        apart,
        "budget 1 KiB",
        1_024.0,
        1_024.0 / apart,
        1.0,
    );
    row_apart.target = "<= 1024 B, each listener its own URI (none alike)".to_owned();
    vec![row, row_apart, stalled()]
}

/// The byte bound of the stalled listener, and its stream.
const BOUND: usize = 1024 * 1024;
const UPDATES: usize = 1_000;
const UPDATE_SIZE: usize = 100 * 1024;

/// A listener that never reads, on 1,000 updates of 100 KB (about 100 MB
/// published): the heap it holds, hub included, against its 1 MiB bound.
fn stalled() -> Row {
    let held = held_by_stalled_listener(BOUND, UPDATES, UPDATE_SIZE);
    let mut row = Row::new(
        "memory_stalled_listener_bytes",
        UPDATES,
        held,
        "byte bound",
        BOUND as f64,
        BOUND as f64 / held,
        1.0,
    );
    row.target = format!(
        "<= {BOUND} B held of {} MB published",
        UPDATES * UPDATE_SIZE / 1_000_000
    );
    row
}
