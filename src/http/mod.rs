//! Serving listen streams over Streamable HTTP (feature `http`): listen
//! POSTs become SSE responses served by the crate; everything else goes to
//! rmcp's `StreamableHttpService` (or any service).

mod answers;
mod endpoint;
mod first;
mod headers;
mod held;
mod rewind;
mod route;
mod serve;
mod signal;
mod spare;
mod sse;
mod stop;
mod transport;

// Public for the fuzz crate alone (`fuzz/src/lib.rs` drives the front
// door's classification, which every HTTP body and stdio line goes
// through); not part of the API, so hidden from the docs.
#[doc(hidden)]
pub use crate::transport::incoming::{Incoming, classify};
pub use endpoint::endpoint;
pub use serve::{serve, serve_until_drained};
pub use signal::{DEFAULT_DEADLINE, shutdown_signal};
pub use transport::{DEFAULT_KEEPALIVE, DEFAULT_PROTOCOL_VERSIONS, HttpTransport};
