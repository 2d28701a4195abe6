//! The measurements shared by the criterion benches and
//! `examples/bench_report.rs`, so that both time exactly the same work.
//!
//! Each scenario is set up once and then run for a number of iterations,
//! returning the time those took (criterion's `iter_custom` shape).

#![allow(dead_code, unused_imports, unreachable_pub)] // each user takes the scenarios it needs

mod fanout;
mod render;
mod sparse;

use std::time::Duration;

pub use fanout::{Fanout, Via, reader_polls_per_event};
pub use render::{Reserialize, Stamp};
pub use sparse::{BroadcastSparse, HubSparse};

/// Events per fan-out iteration.
pub const BURST: usize = 32;

/// Something to time: `run(iters)` does `iters` iterations and says how long
/// they took.
pub trait Scenario {
    fn run(&mut self, iters: u64) -> Duration;
}
