//! The example server run as a real process: its command line, rmcp's own
//! client against it, its tasks, and two replicas joined by `--relay`
//! through a real broker, and clients of an older revision.

// The example server is built with the crate's default features: every
// test here needs them, and says only what it needs more.
#![cfg(all(
    feature = "stdio",
    feature = "http",
    feature = "channel",
    feature = "metrics",
    feature = "tasks"
))]

#[path = "../support/broker.rs"]
mod broker;
#[path = "../support/mod.rs"]
mod support;

mod cli;
mod edge;
mod example_audiences;
mod example_relay;
mod example_server;
mod example_tasks;
mod files;
mod herd;
mod older_clients;
mod open_files;
mod sdk_recipes;
mod teardown;
mod unix_socket;
mod vanished;
