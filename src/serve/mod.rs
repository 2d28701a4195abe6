//! Serving `subscriptions/listen` streams from any [`Source`](crate::Source),
//! whatever the transport.
//!
//! [`ListenService`] validates a listen request and opens a
//! [`ListenStream`]; the stream yields the messages to write, in order, and
//! enforces the protocol's serving rules. The transports (stdio, Streamable
//! HTTP, the notification channel) are thin loops around it. What a server
//! advertises comes from what its source serves:
//! [`Capabilities::advertise`](crate::Capabilities::advertise).

mod authorize;
#[cfg(any_transport)]
pub(crate) mod demand;
pub(crate) mod limits;
pub(crate) mod pull;
mod service;
mod stream;
mod teardown;
mod unknown;

pub use authorize::{Authorize, Grant};
#[cfg(any_transport)]
pub use demand::{Demand, Presence};
pub use limits::CapPolicy;
pub use service::ListenService;
pub use stream::ListenStream;
pub use teardown::Teardown;
