//! The hub: filter-aware bounded queues per listener, routed through an
//! index, with overflow policies and delivery counters. The essay on how an
//! event travels is on [`Hub`] itself.
//!
//! The files, from the bottom up (each imports only those above it in this
//! list):
//!
//! - `id`, `config`, `budget`: a listener's id, the hub's options, the
//!   hub-wide bound on queued bytes;
//! - `succession`: what a queue remembers of the successions it has seen;
//! - `reader`: a listener's reading end, one state machine (lifecycle,
//!   lag, waiter, counts) over either storage below;
//! - `chain`: the wake-ups a push into a lane hands to the members it
//!   wakes, each member that reads passing a few on;
//! - `bounded`: the events of a listener's own queue, under its bounds,
//!   overflow policy and coalescing;
//! - `queue`: one listener's own queue, its reader and its bounded events
//!   under one lock that a publisher and the reader share;
//! - `ring`: the events a lane's members have yet to read, held once, with
//!   a count of members at each position, and a member's cursor into it;
//! - `lane`: listeners whose queues would be alike share one ring, up to
//!   64 a lane, each keeping its reader and cursor (moved out to queues of
//!   their own before a succession reaches the lane);
//! - `inbox`: where a listener's events wait, its own queue or a lane seat;
//! - `stats`: the snapshots read from the queues;
//! - `index`: the routing index over listeners' own queues, and lanes;
//! - `entry`: one listener as the hub sees it (its id, filter, inbox and
//!   membership);
//! - `routes`: the index over everyone, and one per principal and label,
//!   so an event for an audience walks only its members' targets;
//! - `interest`: the keys listeners watch, pushed to whoever watches them;
//! - `registry`: every live entry, the lanes, the index, and the totals of
//!   retired listeners (lock order: registry, then a lane, then a queue,
//!   never the reverse);
//! - `shared`: what every handle and listener of one hub share;
//! - `publish`: the publish path, from an event to its queues and lanes,
//!   and the report of what one publish did;
//! - `listener`: the reading end;
//! - `handle`: the `Hub` handle, and the hub as a [`Source`](crate::Source);
//! - `builder`: options.
//!
//! The loom models of both storages and of the lane's wake path are in
//! `loom`, compiled only under `--cfg mcp_subscriptions_loom`; the census
//! of shared writes over the fan-out's regimes is in `census`, compiled
//! only under `--cfg mcp_subscriptions_census`.

mod builder;
#[cfg(all(test, mcp_subscriptions_census))]
mod census;
mod chain;
mod config;
mod end;
mod entry;
mod forward;
mod handle;
mod id;
mod inbox;
mod index;
mod interest;
mod lane;
mod listener;
#[cfg(all(test, mcp_subscriptions_loom))]
mod loom;
mod own_queue;
mod publish;
mod registry;
mod ring;
mod routes;
mod shared;
mod stats;

pub use crate::filter::DEFAULT_MAX_URIS;
pub use crate::filter::InterestKey;
pub use crate::queue::Counts;
pub use crate::queue::{DEFAULT_CAPACITY, DEFAULT_MAX_QUEUED_BYTES};
pub use builder::HubBuilder;
pub use config::DEFAULT_MAX_LISTENERS;
#[cfg(any_relay)]
pub(crate) use forward::Forward;
pub use handle::Hub;
pub use id::ListenerId;
pub use interest::{InterestChange, InterestWatch};
pub use listener::{Listener, NextItem};
pub use publish::PublishReport;
pub use stats::{ClosedCounts, HubStats, ListenerStats};
