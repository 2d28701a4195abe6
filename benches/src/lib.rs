//! The measurements shared by the criterion benches (`benches/*.rs`) and the
//! `bench_report` binary, so that both time exactly the same work.
//!
//! Each scenario is set up once and then run for a number of iterations,
//! returning the time those took (criterion's `iter_custom` shape); the
//! report samples it with [`Scenario::per_iteration`]. Two measurements are
//! not times alone, and each is made here, once, for both users:
//!
//! - latency: [`Latency`] is a paced fan-out whose listeners note when each
//!   event reached them; criterion times an event's way to the last of
//!   them, the report takes the percentiles of every listener's samples;
//! - the keep-up regime: [`KeepUp`] publishes one event at a time, each
//!   read by every listener before the next, and counts what the
//!   publisher's thread paid (wakes issued, CPU time) beside the rate;
//! - memory: [`held_by_idle_listeners`] counts the heap bytes that idle
//!   listeners hold, through an instrumented allocator that this crate
//!   installs for every binary built on it, so that the benches and the
//!   report run on the same allocator.

mod audiences;
mod catalog;
mod client;
#[cfg(feature = "relay")]
mod cluster;
mod fanout;
mod gateway;
mod held;
#[cfg(feature = "relay")]
mod herd;
mod http;
mod keepup;
mod latency;
mod memory;
#[cfg(feature = "relay")]
mod relay;
mod render;
mod sparse;

use std::time::Duration;

pub use audiences::{Ending, Revocation, Scoped, Streams};
pub use catalog::{
    CatalogHeld, Host, StormRun, held_by_catalog, staleness, storm, typescript_client_available,
};
pub use client::{ClientBench, ClientRun, ListenClient};
#[cfg(feature = "relay")]
pub use cluster::{ClusterSpread, cluster_spread, redis_cluster_on_path};
pub use fanout::{Alike, Fanout, Via, reader_polls_per_event};
pub use gateway::{Downstream, Sharing, example_server, latency as gateway_latency, sharing};
pub use held::{Held, HeldStreams, HerdSeen, become_held_child};
#[cfg(feature = "relay")]
pub use herd::{Herd, HerdRun};
pub use http::{EndToEnd, Outcome, Publisher, Server, listen_on, listen_over, read, serve};
pub use keepup::{KeepUp, Paid};
pub use latency::Latency;
pub use memory::{
    held, held_by_idle_listeners, held_by_idle_listeners_apart, held_by_stalled_listener,
};
#[cfg(feature = "relay")]
pub use relay::{RedisServer, Replicas, one_channel, redis_on_path};
pub use render::{Reserialize, Stamp};
pub use sparse::{BroadcastSparse, HubSparse};

/// The `p` quantile of `sorted`, in milliseconds; infinite when empty.
pub fn quantile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::INFINITY;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at].as_secs_f64() * 1e3
}

/// Events per fan-out iteration.
pub const BURST: usize = 32;

/// Something to time: `run(iters)` does `iters` iterations and says how long
/// they took.
pub trait Scenario {
    /// Does `iters` iterations; the time they took.
    fn run(&mut self, iters: u64) -> Duration;

    /// The mean time per iteration over at least `budget`, after one
    /// iteration of warm-up, doubling the iterations until a run lasts that
    /// long: the report's sampling (criterion does its own).
    fn per_iteration(&mut self, budget: Duration) -> Duration {
        self.run(1);
        let mut iters = 1u64;
        loop {
            let took = self.run(iters);
            if took >= budget {
                return took / iters as u32;
            }
            iters *= 2;
        }
    }
}
