//! The transports, each behind its feature, and what they share.
//!
//! Each transport is a folder here (`stdio/`, `http/`, `channel/`, and
//! `session/`, the older revisions' sessions on the stdio and HTTP
//! transports); the crate root re-exports the public ones. What they share
//! sits beside them in files of its own: the handle on the streams they
//! serve (`streams.rs`), the Host/Origin guard of the HTTP-based ones
//! (`hosts.rs`), and a peek at JSON-RPC requests (`incoming.rs`,
//! `request.rs`). The transports import what they share, never one
//! another, and nothing here imports a transport.
//!
//! rmcp answers `subscriptions/listen` itself only after sending the
//! acknowledgement, cannot refuse a request with `-32602` or `-32603`
//! first, and drops extension filter fields such as `taskIds`. So the stdio
//! and HTTP transports take listen requests before rmcp sees them and serve
//! them with a [`ListenStream`](crate::ListenStream); every other message
//! goes to rmcp unchanged.

#[cfg(http_edge)]
pub(crate) mod hosts;
#[cfg(rmcp_session)]
pub(crate) mod incoming;
#[cfg(rmcp_session)]
pub(crate) mod request;
pub(crate) mod streams;

#[cfg(feature = "channel")]
pub mod channel;
#[cfg(feature = "http")]
pub mod http;
// The older revisions' sessions, beside the transports that carry them.
#[cfg(rmcp_session)]
pub(crate) mod session;
#[cfg(feature = "stdio")]
pub mod stdio;
