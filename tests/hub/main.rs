//! The hub and the crate's core, without a transport: routing, overflow,
//! accounting (a model proptest), byte bounds, coalescing, interest, the
//! lifecycle's traces, metrics, a stress run, the `Source` contract,
//! `Send`/`Sync` of every handle, and the layers of the source tree.

#[path = "../support/mod.rs"]
mod support;

mod accounting;
mod audiences;
mod byte_bounds;
mod coalescing;
mod hub;
mod interest;
mod layers;
mod lifecycle;
mod metrics;
mod refilter;
mod send_sync;
mod source;
mod stress;
