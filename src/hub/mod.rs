//! The hub: filter-aware bounded queues per listener, routed through an
//! index, with overflow policies and delivery counters. The essay on how an
//! event travels is on [`Hub`] itself.
//!
//! The files, from the bottom up (each imports only those above it in this
//! list):
//!
//! - `id`, `config`, `report`, `budget`: a listener's id, the hub's
//!   options, what one publish did, the hub-wide bound on queued bytes;
//! - `succession`: what a queue remembers of the successions it has seen;
//! - `queue`: one listener's own bounded queue, state that a publisher and
//!   that listener's reader share;
//! - `ring`: the events a lane's members have yet to read, held once, with
//!   a count of members at each position;
//! - `lane`: listeners whose queues would be alike share one ring, each
//!   keeping its position (split into own queues by a succession);
//! - `inbox`: where a listener's events wait, its own queue or a lane seat;
//! - `stats`: the snapshots read from the queues;
//! - `entry`: one listener as the hub sees it (its id, filter and inbox);
//! - `index`: the routing index over listeners with their own queue, and
//!   lanes;
//! - `interest`: the keys listeners watch, pushed to whoever watches them;
//! - `registry`: every live entry, the lanes, the index, and the totals of
//!   retired listeners (lock order: registry, then a lane, then a queue,
//!   never the reverse);
//! - `shared`: what every handle and listener of one hub share;
//! - `listener`: the reading end;
//! - `handle`: the `Hub` handle, and the hub as a [`Source`](crate::Source);
//! - `builder`: options.

mod budget;
mod builder;
mod config;
mod entry;
mod forward;
mod handle;
mod id;
mod inbox;
mod index;
mod interest;
mod lane;
mod listener;
pub(crate) mod queue;
mod registry;
mod report;
mod ring;
mod shared;
mod stats;
mod succession;

pub use crate::counts::Counts;
pub use builder::HubBuilder;
pub use config::{DEFAULT_CAPACITY, DEFAULT_MAX_LISTENERS, DEFAULT_MAX_QUEUED_BYTES};
#[cfg(any(feature = "redis", feature = "nats"))]
pub(crate) use forward::Forward;
pub use handle::Hub;
pub use id::ListenerId;
pub use interest::{InterestChange, InterestKey, InterestWatch};
pub use listener::{Listener, NextItem};
pub use report::PublishReport;
pub use stats::{ClosedCounts, HubStats, ListenerStats};
