//! What the transports share: the handle on the streams they serve, the
//! Host/Origin guard of the HTTP-based ones, and a peek at JSON-RPC
//! requests. The transports themselves (`stdio`, `http`, `channel`) sit
//! above this module and never import one another.
//!
//! rmcp answers `subscriptions/listen` itself only after sending the
//! acknowledgement, cannot refuse a request with `-32602` or `-32603`
//! first, and drops extension filter fields such as `taskIds`. So the stdio
//! and HTTP transports take listen requests before rmcp sees them and serve
//! them with a [`ListenStream`](crate::ListenStream); every other message
//! goes to rmcp unchanged.

#[cfg(any(feature = "http", feature = "channel"))]
pub(crate) mod hosts;
#[cfg(any(feature = "stdio", feature = "http"))]
pub(crate) mod incoming;
#[cfg(any(feature = "stdio", feature = "http"))]
pub(crate) mod request;
mod streams;

/// Marks a request the HTTP transport hands to an rmcp service that serves
/// statelessly: there no older revision's session outlives its request,
/// so none is promised notifications on it.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stateless;

pub use streams::{Drained, Streams};
