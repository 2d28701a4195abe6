//! Serving listen streams over Streamable HTTP (feature `http`): listen
//! POSTs become SSE responses served by the crate; everything else goes to
//! rmcp's `StreamableHttpService` (or any service).

mod admission;
mod answers;
mod connections;
mod endpoint;
mod headers;
mod route;
mod server;
mod signal;
mod socket;
mod sse;
mod transport;

// Public for the fuzz crate alone (`fuzz/src/lib.rs` drives the front
// door's classification, which every HTTP body and stdio line goes
// through); not part of the API, so hidden from the docs.
#[doc(hidden)]
pub use crate::transport::incoming::{Incoming, classify};
pub use admission::{AdmissionLimits, RATE_LIMITED_ERROR_CODE, Rate, RateLimited};
pub use connections::ConnectionStats;
pub use endpoint::endpoint;
pub use server::{
    DEFAULT_IDLE_TIMEOUT, DEFAULT_REQUEST_DEADLINE, DEFAULT_UNACKNOWLEDGED_TIMEOUT, Server, serve,
    serve_until_drained,
};
pub use socket::Listener;
/// The socket path's classifier of a first request, public for the fuzz
/// crate alone (`fuzz/fuzz_targets/first_request.rs`); not part of the API.
#[doc(hidden)]
pub mod first_request {
    pub use crate::transport::http::socket::{Classified, classify};
}
pub use signal::{DEFAULT_DEADLINE, shutdown_signal};
pub use transport::{DEFAULT_KEEPALIVE, DEFAULT_PROTOCOL_VERSIONS, HttpTransport};
