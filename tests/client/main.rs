//! The client: against the crate's own example server, against servers
//! that break the protocol on purpose, and against servers no one here
//! wrote (the TypeScript and Python SDKs, rmcp).

#[path = "../support/mod.rs"]
mod support;

mod catalog;
mod catalog_example;
mod client;
mod client_misbehaving;
#[cfg(feature = "gateway")]
mod gateway;
#[cfg(feature = "gateway")]
mod gateway_callers;
#[cfg(feature = "gateway")]
mod gateway_example;
#[cfg(feature = "gateway")]
mod gateway_isolation;
#[cfg(feature = "gateway")]
mod gateway_server;
mod interop;
mod refilter;
mod tls;
#[cfg(feature = "gateway")]
#[path = "../support/waiting.rs"]
mod waiting;
